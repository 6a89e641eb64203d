"""Shared machinery of the estimators over symbol sequences (:mod:`.language_model`,
:mod:`.tagger`).

* :class:`SequenceEstimator` — the alphabet with its unknown-symbol policy and encoding
  (:class:`~.alphabet.SymbolAlphabet`), training through ``_fit_net`` with
  :class:`~interpretable.nn._losses.SequenceLoss`, per-sequence outputs and what the per-step
  explainers need (:mod:`.explainers`).
* :class:`ISANBase` — what the ISAN language model and tagger share: the
  :class:`~interpretable.nn._isan.ISAN` module (exactly decomposed by the ISAN explainer),
  substring composition and change of basis (:class:`~.isan_maps.ISANMaps`).
* :data:`UNKNOWN` and :func:`next_symbol_windows` (the language models' training and
  evaluation windows), from :mod:`.alphabet`.

Unknown-symbol policy: symbols seen fewer than ``min_count`` times in ``fit`` are mapped to a
dedicated unknown symbol (id 0, :data:`UNKNOWN`) during training, so its transition is learned
from rare symbols; at predict time every symbol outside the alphabet maps to it too — nothing
crashes.
"""

from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from skorch.callbacks import GradientNormClipping

from interpretable.estimators.core._base import EncodedInputs, NeuralEstimator
from interpretable.estimators.sequence._alphabet import SymbolAlphabet
from interpretable.estimators.sequence._explainers import ISANContributions
from interpretable.estimators.sequence._isan_maps import ISANMaps
from interpretable.nn import ISAN, SequenceLoss
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from numpy.typing import ArrayLike

    from interpretable.estimators.core._explainer import Explainer
    from interpretable.explanation import SequenceExplanation

__all__ = ["SequenceEstimator", "ISANBase"]

DTYPES = {"float32": torch.float32, "float64": torch.float64}


class SequenceEstimator(SymbolAlphabet, NeuralEstimator):
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
    lr : float > 0
        Learning rate.
    max_epochs : int >= 1
        Number of passes over the training data.
    batch_size : int >= 1
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}
        The torch optimizer.
    weight_decay : float >= 0
        L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
    device : "auto", "cpu", "cuda", "cuda:N" or torch.device
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None
        Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
        is left untouched.
    verbose : int
        When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
        logging takes it, else printed: plain text unless standard output is a terminal) and,
        on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
        ``explain`` (see :mod:`interpretable._progress`).
    callbacks : list or None
        The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
        your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
        with deep copies: the callbacks passed here are never changed.
    validation_fraction : float in (0, 1) or None
        Share of the training data held out (stratified for classifiers, seeded by
        ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
        (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
    early_stopping : bool
        Stop when the validation loss (the training loss without ``validation_fraction``) has
        not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
        (skorch's ``EarlyStopping(load_best=True)``).
    n_iter_no_change : int >= 1
        Patience of ``early_stopping``, in epochs.
    warm_start : bool
        When True, fitting a fitted estimator continues training its weights (the vocabulary,
        classes and input size stay those of the first fit; other labels, a changed input
        size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
        state starts afresh.
    precision : {"float32", "bf16"}
        ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
        the weights stay float32), while prediction and explanations always run in the
        parameters' own precision, so inherent explanations stay exact. Recurrent layers that
        torch cannot run in bfloat16 on the device (such as the LSTM on an x86 CPU without
        AVX-512) train in float32, with one warning per fit.
    accelerator : accelerate.Accelerator or None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

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

    def forward_batch(self, batch: dict[str, torch.Tensor], **options: Any) -> torch.Tensor:
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
                lengths = batch["lengths"].tolist()
                for j, (i, n) in enumerate(zip(index.tolist(), lengths, strict=True)):
                    out[i] = outputs[j, :n]
        return out

    # ---------------------------------------------------------------- explanation
    if TYPE_CHECKING:  # explain (the estimators' own) explains sequences: SequenceExplanation
        def explain(self, X: Sequence[str | Sequence[Hashable]] | ArrayLike,
                    target: Hashable | ArrayLike | None = None, *,
                    contrast: Hashable | ArrayLike | None = None,
                    method: str | Explainer | None = None, batch_size: int | None = None,
                    **options: Any) -> SequenceExplanation:
            ...

    def explained_targets(self, batch: EncodedInputs, target: object) -> list[Any]:
        """Return one explained target per sequence of an encoded batch.

        Parameters
        ----------
        batch : EncodedInputs
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

    def explained_outputs(self, ids: torch.Tensor, target: Any, predicted: torch.Tensor
                          ) -> torch.Tensor:
        """Output ids ``(T,)`` to explain at each step of one sequence (ids ``(T,)``), given
        the predicted ones ``(T,)``."""
        raise NotImplementedError

    def output_names(self) -> np.ndarray:
        """Names of the outputs (O,), shown as target / prediction in explanations."""
        raise NotImplementedError

    def split_units(self, sequence: str | Sequence[Hashable], level: str) -> list[Any]:
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


class ISANBase(ISANMaps, SequenceEstimator):
    """What the ISAN language model and tagger share: ``h_t = W_{x_t} h_{t-1} + b_{x_t}``,
    outputs ``W_ro h_t + b_ro``, learned ``h_{-1}``; one ``(W_c, b_c)`` per symbol of the
    alphabet; the exact ``"inherent"`` explanation.

    Its parameters are those of :class:`SequenceEstimator` (``dtype="float64"`` makes the
    decomposition exact to ~1e-12), plus ``init_gain``: the maps ``W_c`` start at
    ``init_gain · I`` (plus small noise). Explained exactly by
    :class:`~interpretable.estimators.methods.ISANContributions`.

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

    #: the explanation methods it offers, its default first
    explainers = (ISANContributions(),)

    _parameter_constraints = {**SequenceEstimator._parameter_constraints,
                              "init_gain": [Interval(Real, None, None, closed="neither")]}

    def _build_module(self):
        module = ISAN(self.n_symbols_, self.hidden_size, self.n_outputs_, init_gain=self.init_gain)
        return module.to(DTYPES[self.dtype])
