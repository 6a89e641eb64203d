"""Shared machinery of the estimators over symbol sequences (:mod:`.language_model`,
:mod:`.tagger`).

* :class:`SequenceEstimator` — the alphabet with its unknown-symbol policy, encoding, training
  through ``_fit_net`` with :class:`~interpretable.nn.sequence_loss.SequenceLoss`, per-sequence
  outputs and per-step explanations.
* :class:`ISANBase` — what the ISAN language model and tagger share: the
  :class:`~interpretable.nn.isan.ISAN` module, its exact decomposition, substring composition
  and change of basis.
* :func:`next_symbol_windows` — the language models' training and evaluation windows.

Unknown-symbol policy: symbols seen fewer than ``min_count`` times in ``fit`` are mapped to a
dedicated unknown symbol (id 0, :data:`UNKNOWN`) during training, so its transition is learned
from rare symbols; at predict time every symbol outside the alphabet maps to it too — nothing
crashes.
"""

from __future__ import annotations

import copy
import functools
from collections import Counter
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils import Bunch
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import GradientNormClipping

from ..explanation import SequenceExplanation
from ..nn.isan import ISAN
from ..nn.sequence_loss import IGNORE_INDEX, SequenceLoss
from ..validation import pad_sequences
from .base import Batch, NeuralEstimator

__all__ = ["UNKNOWN", "SequenceEstimator", "ISANBase", "next_symbol_windows"]

UNKNOWN = "<unk>"
DTYPES = {"float32": torch.float32, "float64": torch.float64}
#: largest (steps × symbols) explanation, in bytes, built without ``positions=``
DENSE_EXPLANATION_LIMIT = 4 * 2**30


def _sort_key(symbol):
    return (type(symbol).__name__, symbol)


def _check_positions(positions, length: int) -> np.ndarray | None:
    """``positions`` as a non-empty int64 array of steps in ``[0, length)`` (None stays None)."""
    if positions is None:
        return None
    steps = np.asarray(positions)
    if steps.ndim != 1 or steps.size == 0 or steps.dtype.kind not in "iu" \
            or steps.min() < 0 or steps.max() >= length:
        raise ValueError(f"positions must be a non-empty list of steps in [0, {length}) (the "
                         f"shortest sequence), got {positions!r:.80}.")
    return steps.astype(np.int64)


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
    (B, T, O)), ``_explained_outputs`` and ``_output_names``.

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
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose
        See :class:`~interpretable.estimators.base.NeuralEstimator`.

    Fitted attributes: ``symbols_`` (id → symbol, ``symbols_[0]`` is :data:`UNKNOWN`),
    ``vocabulary_`` (symbol → id), ``n_symbols_``, ``n_outputs_``, ``module_``, ``history_``.
    """

    _parameter_constraints = {
        **NeuralEstimator._parameter_constraints,
        "hidden_size": [Interval(Integral, 1, None, closed="left")],
        "min_count": [Interval(Integral, 1, None, closed="left")],
        "dtype": [StrOptions(set(DTYPES))],
        "clip_grad": [Interval(Real, 0, None, closed="neither"), None],
    }
    #: accepted ``level`` of explanations: units are symbols ("char") or groups of them
    _levels: tuple[str, ...] = ("char",)

    def __init__(self, *, hidden_size, min_count, dtype, clip_grad, lr, max_epochs, batch_size,
                 optimizer, weight_decay, device, random_state, verbose,
                 callbacks, validation_fraction, early_stopping, n_iter_no_change, warm_start,
                 precision, accelerator):
        super().__init__(
            lr=lr, max_epochs=max_epochs, batch_size=batch_size, optimizer=optimizer,
            weight_decay=weight_decay, device=device, random_state=random_state, verbose=verbose,
            callbacks=callbacks, validation_fraction=validation_fraction,
            early_stopping=early_stopping, n_iter_no_change=n_iter_no_change,
            warm_start=warm_start, precision=precision, accelerator=accelerator,
        )
        self.hidden_size = hidden_size
        self.min_count = min_count
        self.dtype = dtype
        self.clip_grad = clip_grad

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
        """Ids (len,) int64 of one sequence; symbols outside the alphabet map to 0
        (:data:`UNKNOWN`)."""
        check_is_fitted(self, "vocabulary_")
        vocab = self.vocabulary_
        return np.fromiter((vocab.get(c, 0) for c in sequence), dtype=np.int64,
                           count=len(sequence))

    def encode(self, X) -> Batch:
        """Validated sequences as a :class:`Batch`: ``inputs`` = ids ``x (n, T)`` right-padded
        with 0 and ``lengths (n,)``; ``units`` = the sequences."""
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
        """Outputs (b, L, O) of a batch ``{"x": ids (b, L), ...}`` (device tensors)."""
        return self.module_(batch["x"], **options)

    def _by_length(self, inputs: dict, batch_size=None):
        """:meth:`iter_batches` over ``inputs`` sorted by decreasing ``lengths`` (similar
        lengths share a batch): yields (indices of the batch's rows in ``inputs`` (b,), batch)."""
        order = torch.argsort(inputs["lengths"], descending=True)
        for rows, batch in self.iter_batches({k: v[order] for k, v in inputs.items()},
                                             batch_size):
            yield order[rows], batch

    def _outputs(self, inputs: dict, batch_size=None) -> list[torch.Tensor]:
        """Module outputs of encoded ``inputs``: one (len_i, O) CPU tensor per sequence."""
        out = [None] * len(inputs["lengths"])
        with torch.no_grad():
            for index, batch in self._by_length(inputs, batch_size):
                outputs = self.forward_batch(batch).cpu()
                for j, (i, n) in enumerate(zip(index.tolist(), batch["lengths"].tolist())):
                    out[i] = outputs[j, :n]
        return out

    # ---------------------------------------------------------------- explanation
    def _explained_outputs(self, sequence, target, predicted: torch.Tensor) -> torch.Tensor:
        """Output ids (T,) to explain at each step of ``sequence``, given the predicted ones."""
        raise NotImplementedError

    def _output_names(self) -> np.ndarray:
        """Names of the outputs (O,), shown as target / prediction in explanations."""
        raise NotImplementedError

    def _pieces(self, sequence, level: str) -> list:
        """The units of ``sequence`` at ``level``; each covers consecutive symbols."""
        return list(sequence)

    def _explain_steps(self, batch: Batch, target, attribute, *, method, batch_size,
                       level="char", positions=None, window=None) -> SequenceExplanation:
        """Explanation of the outputs chosen by ``target`` at the steps of every sequence.

        target : None (the predicted output), one target for every sequence or a list of one
            per sequence, resolved by :meth:`_explained_outputs`.
        attribute : ``f(inputs, explained (n, T) long, batch_size) -> (values, bias, logit)``,
            per sequence ``(P, len)`` contributions of each symbol to the explained output at
            each explained step (zero after the step) and ``(P,)`` bias and logit (or None for
            both); ``P = len`` when ``positions`` is None.
        level : one of ``_levels``; the contributions of the symbols of each unit (see
            :meth:`_pieces`) are summed.
        positions : None (every step) or the explained steps (P,) of every sequence.
        """
        if level not in self._levels:
            raise ValueError(f"level must be one of {list(self._levels)}, got {level!r}.")
        seqs = batch.units
        targets = target if isinstance(target, list) else [target] * len(seqs)
        if len(targets) != len(seqs):
            raise ValueError(f"target has {len(targets)} entries but X has {len(seqs)} sequences.")
        predicted = [o.argmax(-1) for o in self._outputs(batch.inputs, batch_size)]
        explained = [self._explained_outputs(s, t, p) for s, t, p in zip(seqs, targets, predicted)]
        values, bias, logit = attribute(batch.inputs, pad_sequences(explained, 0)[0], batch_size)
        units = [self._pieces(s, level) for s in seqs]
        if level != "char":
            values = [np.add.reduceat(v, np.cumsum([0] + [len(u) for u in pieces[:-1]]), axis=1)
                      for v, pieces in zip(values, units)]
        names = np.asarray(self._output_names(), dtype=object)
        rows = slice(None) if positions is None else positions
        return SequenceExplanation(
            units=[[str(u) for u in pieces] for pieces in units], values=values,
            target=[names[e.numpy()[rows]] for e in explained],
            prediction=[names[p.numpy()[rows]] for p in predicted],
            method=method, logit=logit, bias=bias, level=level, inputs=list(seqs), window=window,
            steps=None if positions is None else [np.asarray(positions)] * len(seqs))

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

    Parameters: those of :class:`SequenceEstimator` (``dtype="float64"`` makes the
    decomposition exact to ~1e-12), plus ``init_gain`` : float, ``W_c`` start at
    ``init_gain · I`` (plus small noise).
    """

    _parameter_constraints = {**SequenceEstimator._parameter_constraints,
                              "init_gain": [Interval(Real, None, None, closed="neither")]}
    explain_methods = ("inherent",)

    def _build_module(self):
        module = ISAN(self.n_symbols_, self.hidden_size, self.n_outputs_, init_gain=self.init_gain)
        return module.to(DTYPES[self.dtype])

    def _with_module(self, module) -> "ISANBase":
        """A copy of this fitted estimator that runs ``module``."""
        new = copy.copy(self)
        new.module_ = module.eval()
        new.history_ = list(self.history_)
        return new

    # ---------------------------------------------------------------- explanation
    def _explain_inherent(self, batch: Batch, target, *, batch_size, level="char",
                          positions=None, window=None, dtype=None) -> SequenceExplanation:
        """Exact contribution of every symbol (or word) to the explained output at every step.

        level : "char", or "word" for language models (the contributions of the characters
            of each word are summed; a word keeps its leading whitespace).
        positions : None (every step) or the steps to explain in every sequence (ints in
            ``[0, shortest length)``, any order); ``values[i]`` then has one row per position
            in that order, as have ``target``, ``prediction``, ``logit`` and ``bias``.
        window : None, or explain only the last ``window`` symbols before each step: the
            contributions of older symbols are folded exactly into ``bias``; ``values[i]`` is
            then ``(P, window)``, column ``j`` the symbol at ``step - window + 1 + j`` (time and
            memory O(T·window) instead of O(T²) per sequence).
        dtype : None decomposes in the model's own dtype (``logit`` is then the model's own
            output); ``"float64"`` decomposes a float64 copy of the same parameters, which
            removes the float32 rounding from both the contributions and the logits.

        ``values[i][t, s]`` is κ_s^t; ``bias[i][t]`` is the readout bias plus the propagated
        initial state; ``logit[i][t]`` is the model's logit, so ``completeness_error`` checks
        the decomposition (float64: ~1e-13; float32: ~1e-7 of the logit scale). One reverse
        pass per batch of sequences explains all their positions.
        """
        if dtype not in (None, "float64"):
            raise ValueError(f"dtype must be None or 'float64', got {dtype!r}.")
        if window is not None and (isinstance(window, bool) or not isinstance(window, Integral)
                                   or window < 1):
            raise ValueError(f"window must be None or an integer >= 1, got {window!r}.")
        positions = _check_positions(positions, min(len(s) for s in batch.units))
        if window is not None and level != "char":
            raise ValueError("window= counts symbols: use it with level='char'.")
        rows = [len(s) if positions is None else len(positions) for s in batch.units]
        needed = 8 * sum(r * (len(s) if window is None else window)
                         for r, s in zip(rows, batch.units))
        if needed > DENSE_EXPLANATION_LIMIT:
            raise ValueError(
                f"explaining every step of these sequences needs ~{needed / 2**30:.1f} GiB for "
                f"the (steps x symbols) contributions (limit {DENSE_EXPLANATION_LIMIT / 2**30:g} "
                "GiB); pass window= (only the last symbols before each step, the rest folded "
                "into bias) or positions=[...] (only some steps), or shorter texts.")
        model = self if dtype is None else self._with_module(copy.deepcopy(self.module_).double())
        attribute = functools.partial(model._decompose, positions=positions, window=window)
        return model._explain_steps(batch, target, attribute, method="inherent",
                                    batch_size=batch_size, level=level, positions=positions,
                                    window=window)

    def _explainer(self, method: str):
        return self._explain_inherent

    def _decompose(self, inputs: dict, explained: torch.Tensor, batch_size, *, positions,
                   window):
        """κ rows (P, len), bias and logit (P,) per sequence (see ``ISAN.decompose``)."""
        n = len(explained)
        values, bias, logit = [None] * n, [None] * n, [None] * n
        rows = None if positions is None else torch.as_tensor(positions, device=self.device_)
        for index, batch in self._by_length({**inputs, "targets": explained}, batch_size):
            dec = self.module_.decompose(batch["x"], batch["targets"], positions=rows,
                                         window=window)
            rest = dec["initial"] if window is None else dec["history"]
            kappa = dec["kappa"][:, :, 0].cpu().numpy()  # the model's dtype: no float64 copy
            rest, logits = (t[:, :, 0].double().cpu().numpy() for t in (
                rest + dec["bias"], dec["logits"]))
            for j, (i, T) in enumerate(zip(index.tolist(), batch["lengths"].tolist())):
                P = T if positions is None else len(positions)
                # (P, T), or (P, window) at offset s - t + window - 1 (0 before the text)
                values[i] = kappa[j, :P] if window is not None else kappa[j, :P, :T]
                bias[i], logit[i] = rest[j, :P], logits[j, :P]
        return values, bias, logit

    # ---------------------------------------------------------------- composition and basis
    def compose(self, substring):
        """The affine map ``h → A h + b`` of a whole substring: (A (H, H), b (H,)) arrays."""
        self._check_fitted()
        if not isinstance(substring, (str, list, tuple)) or len(substring) == 0:
            raise ValueError(
                f"substring must be a non-empty str or symbol list, got {substring!r:.60}.")
        ids = torch.as_tensor(self.encode_symbols(substring))[None].to(self.device_)
        A, b = self.module_.compose(ids)
        return A[0].cpu().numpy(), b[0].cpu().numpy()

    def readout_basis(self) -> Bunch:
        """Orthonormal basis splitting the state into the readout subspace (span of the rows
        of ``W_ro``) and its orthogonal complement (the computational subspace).

        Returns a Bunch: ``Q`` (H, H), ``rank``, ``readout`` = ``Q[:, :rank]``,
        ``computational`` = ``Q[:, rank:]``.
        """
        self._check_fitted()
        Q, rank = self.module_.readout_basis()
        Q = Q.cpu().numpy()
        return Bunch(Q=Q, rank=rank, readout=Q[:, :rank], computational=Q[:, rank:])

    def to_basis(self, Q) -> "ISANBase":
        """A copy of this fitted model with state ``h' = Q⁻¹ h`` (Q (H, H) invertible): all
        predictions are identical; parameters are re-expressed in the new basis."""
        self._check_fitted()
        Q = np.asarray(Q, dtype=np.float64)
        H = self.hidden_size
        if Q.shape != (H, H) or not np.isfinite(Q).all():
            raise ValueError(f"Q must be a finite ({H}, {H}) matrix, got shape {Q.shape}.")
        if np.linalg.cond(Q) > 1e12:
            raise ValueError(
                "Q is singular (or numerically so); a change of basis must be invertible.")
        return self._with_module(self.module_.to_basis(torch.as_tensor(Q)))
