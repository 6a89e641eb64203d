"""Shared machinery of the estimators over symbol sequences (:mod:`.language_model`,
:mod:`.tagger`).

* :class:`SequenceEstimator` — the alphabet with its unknown-symbol policy, encoding, training
  through ``_fit_net`` with :class:`~interpretable.nn.losses.SequenceLoss`, per-sequence
  outputs and what the per-step explainers need (:mod:`.explainers.sequence`).
* :class:`ISANBase` — what the ISAN language model and tagger share: the
  :class:`~interpretable.nn.isan.ISAN` module (exactly decomposed by the ISAN explainer),
  substring composition and change of basis.
* :func:`next_symbol_windows` — the language models' training and evaluation windows.

Unknown-symbol policy: symbols seen fewer than ``min_count`` times in ``fit`` are mapped to a
dedicated unknown symbol (id 0, :data:`UNKNOWN`) during training, so its transition is learned
from rare symbols; at predict time every symbol outside the alphabet maps to it too — nothing
crashes.
"""

from __future__ import annotations

import copy
from collections import Counter
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import GradientNormClipping

from ..nn.isan import ISAN
from ..nn.losses import IGNORE_INDEX, SequenceLoss
from ..nn.tensors import pad_sequences
from .base import Batch, NeuralEstimator

__all__ = ["UNKNOWN", "SequenceEstimator", "ISANBase", "next_symbol_windows"]

UNKNOWN = "<unk>"
DTYPES = {"float32": torch.float32, "float64": torch.float64}


def _sort_key(symbol):
    return (type(symbol).__name__, symbol)


def next_symbol_windows(encoded, seq_len: int, train: bool):
    """Cut id sequences into windows of ``seq_len`` inputs and their next-symbol targets.

    Training windows do not overlap. Evaluation windows overlap by half, and each target is
    scored in exactly one window where it has at least ``seq_len // 2`` symbols of context
    (except at the start of a sequence): the same context every model sees.
    Returns inputs (N, L) long and targets (N, L, 1) long (``IGNORE_INDEX`` = not scored), or
    ``(None, None)`` when no sequence has two symbols.
    """
    L = seq_len
    stride = L if train else max(L // 2, 1)
    inputs, targets = [], []
    for ids in encoded:
        n = len(ids) - 1  # number of (input, next) pairs
        for start in range(0, max(n, 0), stride):
            x = ids[start: start + L]
            t = ids[start + 1: start + L + 1].copy()
            x = x[: len(t)]
            if not train and start > 0:
                t[: L - stride] = IGNORE_INDEX  # scored by the previous window
            inputs.append(x)
            targets.append(t[:, None])
            if start + L >= n:
                break
    if not inputs:
        return None, None
    return pad_sequences(inputs, 0)[0], pad_sequences(targets, IGNORE_INDEX)[0]


class SequenceEstimator(NeuralEstimator):
    """Base of the estimators whose inputs are symbol sequences (str, or lists of symbols).

    Subclasses implement ``_check_inputs(X)`` (the validated sequences), ``_fit`` (through
    :meth:`_learn_vocabulary` and :meth:`_train`), ``_build_module`` (x (B, T) long → outputs
    (B, T, O)), :meth:`explained_outputs` and :meth:`output_names`.

    Parameters
    ----------
    hidden_size : int
        State size H.
    min_count : int
        Symbols seen fewer times in ``fit`` share the unknown symbol.
    dtype : {"float32", "float64"}
        Parameter precision.
    clip_grad : float or None
        Gradient-norm clipping threshold.
    {training_parameters}

    Attributes
    ----------
    symbols_ : list
        Id → symbol; ``symbols_[0]`` is the unknown symbol.
    vocabulary_ : dict
        Symbol → id.
    n_symbols_ : int
        Size of the alphabet, unknown symbol included.
    n_outputs_ : int
        Number of outputs per step.
    module_ : torch.nn.Module
        The fitted network.
    history_ : list of dict
        Per-epoch training record.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
    >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    >>> tagger.symbols_
    ['<unk>', 'a', 'b', 'c']
    """

    _parameter_constraints = {
        **NeuralEstimator._parameter_constraints,
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "dtype": [StrOptions(set(DTYPES))],
        "clip_grad": [Interval(Real, 0, None, closed="neither"), None],
    }
    #: accepted ``level`` of explanations: units are symbols ("char") or groups of them
    levels: tuple[str, ...] = ("char",)

    def _check_inputs(self, X) -> list:
        """Validated sequences of ``X`` (raises on bad input)."""
        raise NotImplementedError

    # ---------------------------------------------------------------- alphabet and encoding
    def _learn_vocabulary(self, sequences) -> None:
        counts = Counter()
        for s in sequences:
            counts.update(s)
        kept = sorted((c for c, n in counts.items() if n >= self.min_count), key=_sort_key)
        if not kept:
            raise ValueError(
                f"the alphabet is empty: no symbol occurs at least min_count={self.min_count} "
                "times in X.")
        self._set_symbols([UNKNOWN, *kept])

    def _set_symbols(self, symbols: list) -> None:
        self.symbols_ = list(symbols)
        self.vocabulary_ = {c: i for i, c in enumerate(self.symbols_) if i}
        self.n_symbols_ = len(self.symbols_)

    def encode_symbols(self, sequence) -> np.ndarray:
        """Return the ids of the symbols of one sequence.

        Parameters
        ----------
        sequence : str or list
            One sequence.

        Returns
        -------
        ndarray of shape (len(sequence),)
            Ids (int64); symbols outside the alphabet map to 0 (:data:`UNKNOWN`).

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.encode_symbols("abz")
        array([1, 2, 0])
        """
        check_is_fitted(self, "vocabulary_")
        vocab = self.vocabulary_
        return np.fromiter((vocab.get(c, 0) for c in sequence), dtype=np.int64,
                           count=len(sequence))

    def encode(self, X) -> Batch:
        """Validate sequences and encode them as module inputs.

        Parameters
        ----------
        X : sequence of str or of symbol lists, of shape (n_samples,)
            The sequences.

        Returns
        -------
        Batch
            ``inputs``: ids ``x (n, T)`` right-padded with 0 and ``lengths (n,)``; ``units``:
            the sequences.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.encode(["ab", "c"]).inputs["x"]
        tensor([[1, 2],
                [3, 0]])
        """
        self._check_fitted()
        seqs = self._check_inputs(X)
        x, lengths = pad_sequences([self.encode_symbols(s) for s in seqs], 0)
        return Batch({"x": x, "lengths": lengths}, units=seqs)

    # ---------------------------------------------------------------- training
    def _train(self, inputs, targets, *, seed, group_sizes, loss="cross_entropy",
               sample_weight=None) -> None:
        """Train on ids (N, L) and targets (N, L, G) (class index per group, ``IGNORE_INDEX``
        where unscored), continuing the previous weights with ``warm_start``; sets
        ``n_outputs_``, ``module_`` and ``history_``. Per-position losses take no
        ``sample_weight``."""
        if sample_weight is not None:
            raise ValueError(f"{type(self).__name__} does not support sample_weight.")
        self.n_outputs_ = int(sum(group_sizes))
        callbacks = []
        if self.clip_grad is not None:
            callbacks.append(("clip", GradientNormClipping(self.clip_grad)))
        self._fit_net(self._warm_started(self._build_module), SequenceLoss(group_sizes, loss),
                      {"x": inputs}, targets, seed=seed, callbacks=callbacks)

    # ---------------------------------------------------------------- inference
    def _trim_batch(self, batch: dict) -> dict:
        """Cut the per-position tensors of a batch with ``lengths`` to its longest sequence."""
        if "lengths" not in batch:
            return batch
        longest = int(batch["lengths"].max())
        return {k: v if v.dim() == 1 else v[:, :longest] for k, v in batch.items()}

    def forward_batch(self, batch: dict, **options):
        """Run the module on a batch of device tensors.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            ``{"x": ids (b, L), ...}``, from :meth:`iter_batches`.
        **options
            Keyword arguments of the module's ``forward``.

        Returns
        -------
        torch.Tensor of shape (b, L, O)
            The outputs at every position.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> _, batch = next(tagger.iter_batches(tagger.encode(["ab"]).inputs))
        >>> tagger.forward_batch(batch).shape
        torch.Size([1, 2, 3])
        """
        return self.module_(batch["x"], **options)

    def _inference_order(self, inputs) -> torch.Tensor | None:
        if "lengths" not in inputs:
            return None
        return torch.argsort(inputs["lengths"], descending=True)

    def _outputs(self, inputs: dict, batch_size=None) -> list[torch.Tensor]:
        """Module outputs of encoded ``inputs``: one (len_i, O) CPU tensor per sequence."""
        out = [None] * len(inputs["lengths"])
        with torch.no_grad():
            for index, batch in self.iter_batches(inputs, batch_size, ordered=True):
                outputs = self.forward_batch(batch).cpu()
                for j, (i, n) in enumerate(zip(index.tolist(), batch["lengths"].tolist())):
                    out[i] = outputs[j, :n]
        return out

    # ---------------------------------------------------------------- explanation
    def explained_targets(self, batch: Batch, target) -> list:
        """Return one explained target per sequence of an encoded batch.

        Parameters
        ----------
        batch : Batch
            Encoded sequences (:meth:`encode`).
        target : object or list
            One target for all sequences, or a list of one per sequence;
            :meth:`explained_outputs` resolves each into steps.

        Returns
        -------
        list
            The targets, one per sequence.

        Raises
        ------
        ValueError
            If a list ``target`` does not have one entry per sequence.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.explained_targets(tagger.encode(["ab", "c"]), 1)
        [1, 1]
        """
        n = len(batch)
        targets = target if isinstance(target, list) else [target] * n
        if len(targets) != n:
            raise ValueError(f"target has {len(targets)} entries but X has {n} sequences.")
        return targets

    def explained_outputs(self, ids: torch.Tensor, target, predicted: torch.Tensor
                          ) -> torch.Tensor:
        """Output ids ``(T,)`` to explain at each step of one sequence (ids ``(T,)``), given
        the predicted ones ``(T,)``."""
        raise NotImplementedError

    def output_names(self) -> np.ndarray:
        """Names of the outputs (O,), shown as target / prediction in explanations."""
        raise NotImplementedError

    def split_units(self, sequence, level: str) -> list:
        """Split a sequence into the units of explanations at ``level``.

        Parameters
        ----------
        sequence : str or list
            One sequence.
        level : str
            One of :attr:`levels` (``"char"``: every symbol).

        Returns
        -------
        list
            The units; each covers consecutive symbols.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.split_units("abc", "char")
        ['a', 'b', 'c']
        """
        return list(sequence)

    # ---------------------------------------------------------------- persistence
    def _get_fitted_state(self) -> dict:
        return {"symbols": self.symbols_, "n_outputs": self.n_outputs_}

    def _set_fitted_state(self, state: dict) -> None:
        self._set_symbols(state["symbols"])
        self.n_outputs_ = int(state["n_outputs"])


class ISANBase(SequenceEstimator):
    """What the ISAN language model and tagger share: ``h_t = W_{x_t} h_{t-1} + b_{x_t}``,
    outputs ``W_ro h_t + b_ro``, learned ``h_{-1}``; one ``(W_c, b_c)`` per symbol of the
    alphabet; the exact ``"inherent"`` explanation.

    Its parameters are those of :class:`SequenceEstimator` (``dtype="float64"`` makes the
    decomposition exact to ~1e-12), plus ``init_gain``: the maps ``W_c`` start at
    ``init_gain · I`` (plus small noise). Explained exactly by
    :class:`~interpretable.estimators.explainers.sequence.ISANContributions`.

    See Also
    --------
    interpretable.ISANLanguageModel : The character language model.
    interpretable.ISANSequenceTagger : The tagger.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
    >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    >>> A, b = tagger.compose("ab")  # the affine map of reading "ab"
    >>> A.shape, b.shape
    ((8, 8), (8,))
    """

    _parameter_constraints = {**SequenceEstimator._parameter_constraints,
                              "init_gain": [Interval(Real, None, None, closed="neither")]}

    def _build_module(self):
        module = ISAN(self.n_symbols_, self.hidden_size, self.n_outputs_, init_gain=self.init_gain)
        return module.to(DTYPES[self.dtype])

    def _with_module(self, module) -> "ISANBase":
        """A copy of this fitted estimator that runs ``module``."""
        new = copy.copy(self)
        new.module_ = module.eval()
        new.history_ = list(self.history_)
        return new

    # ---------------------------------------------------------------- composition and basis
    def compose(self, substring):
        """Return the affine map ``h → A h + b`` of reading a whole substring.

        Parameters
        ----------
        substring : str or list
            A non-empty sequence of symbols.

        Returns
        -------
        A : ndarray of shape (H, H)
            The linear part.
        b : ndarray of shape (H,)
            The offset.

        Raises
        ------
        ValueError
            If ``substring`` is empty or not a sequence.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> A, b = tagger.compose("abc")
        >>> A.shape, b.shape
        ((8, 8), (8,))
        """
        self._check_fitted()
        if not isinstance(substring, (str, list, tuple)) or len(substring) == 0:
            raise ValueError(
                f"substring must be a non-empty str or symbol list, got {substring!r:.60}.")
        ids = torch.as_tensor(self.encode_symbols(substring))[None].to(self.device_)
        A, b = self.module_.compose(ids)
        return A[0].cpu().numpy(), b[0].cpu().numpy()

    def readout_basis(self) -> Bunch:
        """Return an orthonormal basis splitting the state into readout and computation.

        The readout subspace is the span of the rows of ``W_ro``; the computational subspace
        its orthogonal complement.

        Returns
        -------
        Bunch
            ``Q`` (H, H), ``rank``, ``readout`` = ``Q[:, :rank]``, ``computational`` =
            ``Q[:, rank:]``.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> basis = tagger.readout_basis()
        >>> basis.Q.shape, basis.rank
        ((8, 8), 3)
        """
        self._check_fitted()
        Q, rank = self.module_.readout_basis()
        Q = Q.cpu().numpy()
        return Bunch(Q=Q, rank=rank, readout=Q[:, :rank], computational=Q[:, rank:])

    def to_basis(self, Q) -> "ISANBase":
        """Return a copy of this fitted model in another basis of its state, ``h' = Q⁻¹ h``.

        All predictions are identical; the parameters are re-expressed in the new basis.

        Parameters
        ----------
        Q : array-like of shape (H, H)
            An invertible matrix.

        Returns
        -------
        ISANBase
            The copy.

        Raises
        ------
        ValueError
            If ``Q`` has the wrong shape, is not finite or is singular.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> rotated = tagger.to_basis(tagger.readout_basis().Q)
        >>> rotated.predict(["ab"])[0].tolist() == tagger.predict(["ab"])[0].tolist()
        True
        """
        self._check_fitted()
        Q = np.asarray(Q, dtype=np.float64)
        H = self.module_.hidden_size
        if Q.shape != (H, H) or not np.isfinite(Q).all():
            raise ValueError(f"Q must be a finite ({H}, {H}) matrix, got shape {Q.shape}.")
        if np.linalg.cond(Q) > 1e12:
            raise ValueError(
                "Q is singular (or numerically so); a change of basis must be invertible.")
        return self._with_module(self.module_.to_basis(torch.as_tensor(Q)))
