"""Sequence-to-sequence ISAN: per-position targets of symbol sequences, explained exactly.

``fit(X, Y)``: ``X`` is a list of symbol sequences (str or lists of hashable symbols) and
``Y`` a matching list of per-position integer targets, shape ``(len,)`` or ``(len, G)`` for
``G`` independent target groups (e.g. one nesting count per bracket type).
``loss="cross_entropy"`` uses one softmax per group, ``loss="squared"`` regresses the one-hot
code of each group (as the ISAN paper does for parentheses counting). Unknown symbols follow
the policy of :mod:`.base`.
"""

from __future__ import annotations

from numbers import Integral
from typing import TYPE_CHECKING

import numpy as np
import torch

from interpretable._validation import check_sequence_targets, check_sequences
from interpretable.estimators.core._base import TABULAR_CHECKS
from interpretable.estimators.sequence._base import ISANBase
from interpretable.nn import IGNORE_INDEX, pad_sequences
from interpretable.utils import StrOptions

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from accelerate import Accelerator
    from numpy.typing import ArrayLike
    from skorch.callbacks import Callback

__all__ = ["ISANSequenceTagger"]


class ISANSequenceTagger(ISANBase):
    """Input switched affine network tagger: one output vector per input position.

    The ISAN of Foerster et al. (ICML 2017) as a sequence tagger (e.g. its parentheses
    counting task, :func:`~interpretable.datasets.make_parentheses`).

    ``h_t = W_{x_t} h_{t-1} + b_{x_t}``, outputs ``W_ro h_t + b_ro`` (the concatenated groups'
    scores), learned ``h_{-1}``; one ``(W_c, b_c)`` per symbol of the alphabet learned in ``fit``.
    ``explain(X, target=None, dtype=None)`` gives the exact contribution of every symbol to one
    output unit at every step: ``target`` None (the largest output at each step) or an output
    index in ``[0, n_outputs_)`` (the units of group ``g`` follow those of groups ``< g``), or a
    list of one per sequence.

    Parameters
    ----------
    hidden_size : int, default=128
        State size H.
    loss : {"cross_entropy", "squared"}, default="cross_entropy"
        ``"squared"``: regress the one-hot code of each group (``predict_proba`` then returns
        the raw outputs).
    min_count : int, default=2
        Symbols seen fewer times in ``fit`` share the unknown symbol.
    dtype : {"float32", "float64"}, default="float32"
        Parameter precision (``"float64"`` makes the decomposition exact to ~1e-12).
    clip_grad : float or None, default=1.0
        Gradient-norm clipping threshold.
    init_gain : float, default=1.0
        The maps ``W_c`` start at ``init_gain · I`` (plus small noise).
    lr : float > 0, default=0.002
        Learning rate.
    max_epochs : int >= 1, default=10
        Number of passes over the training data.
    batch_size : int >= 1, default=32
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}, default="adam"
        The torch optimizer.
    weight_decay : float >= 0, default=0.0
        L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
    device : "auto", "cpu", "cuda", "cuda:N" or torch.device, default="auto"
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
        is left untouched.
    verbose : int, default=0
        When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
        logging takes it, else printed: plain text unless standard output is a terminal) and,
        on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
        ``explain`` (see :mod:`interpretable._progress`).
    callbacks : list or None, default=None
        The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
        your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
        with deep copies: the callbacks passed here are never changed.
    validation_fraction : float in (0, 1) or None, default=None
        Share of the training data held out (stratified for classifiers, seeded by
        ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
        (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
    early_stopping : bool, default=False
        Stop when the validation loss (the training loss without ``validation_fraction``) has
        not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
        (skorch's ``EarlyStopping(load_best=True)``).
    n_iter_no_change : int >= 1, default=5
        Patience of ``early_stopping``, in epochs.
    warm_start : bool, default=False
        When True, fitting a fitted estimator continues training its weights (the vocabulary,
        classes and input size stay those of the first fit; other labels, a changed input
        size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
        state starts afresh.
    precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
        the weights stay float32), while prediction and explanations always run in the
        parameters' own precision, so inherent explanations stay exact. Recurrent layers that
        torch cannot run in bfloat16 on the device (such as the LSTM on an x86 CPU without
        AVX-512) train in float32, with one warning per fit.
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    Attributes
    ----------
    target_classes_ : list of ndarray
        The labels of each of the G target groups.
    classes_ : ndarray or list of ndarray
        ``target_classes_[0]`` for one group, else ``target_classes_``.
    symbols_ : list
        Id → symbol; ``symbols_[0]`` is the unknown symbol.
    n_outputs_ : int
        Outputs per step (the sum of the groups' sizes).
    module_ : ISAN
        The fitted network.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    ISANLanguageModel : The ISAN character language model.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
    >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    >>> tagger.predict(["ab"])[0].shape
    (2,)
    >>> tagger.explain(["ab"], target=0).units
    [['a', 'b']]
    """

    saved_as = "ISANSequenceTagger"
    _expected_failed_checks = {
        **dict.fromkeys(TABULAR_CHECKS + ("check_fit2d_1sample",),
                        "fits on 2-d numeric data with one label per sample: the tagger takes "
                        "symbol sequences with one label per position"),
        "check_fit1d": "fits on a 1-d float array: a number is not a sequence, refused with a "
                       "TypeError where the check wants a ValueError",
    }

    _parameter_constraints = {**ISANBase._parameter_constraints,
                              "loss": [StrOptions({"cross_entropy", "squared"})]}

    def __init__(self, hidden_size: int = 128, *, loss: str = "cross_entropy",
                 min_count: int = 2, dtype: str = "float32", clip_grad: float | None = 1.0,
                 init_gain: float = 1.0, lr: float = 2e-3, max_epochs: int = 10,
                 batch_size: int = 32,
                 optimizer: str = "adam", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", accelerator: Accelerator | None = None):
        self.hidden_size = hidden_size
        self.loss = loss
        self.min_count = min_count
        self.dtype = dtype
        self.clip_grad = clip_grad
        self.init_gain = init_gain
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.accelerator = accelerator

    def _check_inputs(self, X) -> list:
        return check_sequences(X)

    def __sklearn_tags__(self):
        """Symbol sequences with per-position targets ``y``, which ``fit`` requires."""
        tags = super().__sklearn_tags__()
        tags.target_tags.required = True
        return tags

    def _fit(self, X, y, sample_weight=None):
        seed = self._start_fit()
        seqs = check_sequences(X)
        if y is None:
            raise ValueError(f"{type(self).__name__} requires y to be passed, but the target y "
                             "is None; it needs per-position targets: fit(X, Y).")
        Y = check_sequence_targets(y, [len(s) for s in seqs])
        stacked = np.concatenate(Y)
        if not self._continues():
            self._learn_vocabulary(seqs)
            self._set_target_classes([np.unique(stacked[:, g]) for g in range(stacked.shape[1])])
        elif stacked.shape[1] != len(self.target_classes_) or any(
                np.setdiff1d(stacked[:, g], c).size for g, c in enumerate(self.target_classes_)):
            raise ValueError("warm_start=True continues the previous model, but Y has target "
                             "groups or values it was not fitted on. Refit with "
                             "warm_start=False.")
        inputs, _ = pad_sequences([self.encode_symbols(s) for s in seqs], 0)
        targets, _ = pad_sequences([self._encode_targets(t) for t in Y], IGNORE_INDEX)
        self._train(inputs, targets, seed=seed, group_sizes=self.group_sizes_, loss=self.loss,
                    sample_weight=sample_weight)

    def _set_target_classes(self, target_classes: list) -> None:
        self.target_classes_ = [np.asarray(c) for c in target_classes]
        self.classes_ = self.target_classes_[0] if len(target_classes) == 1 \
            else self.target_classes_
        self.group_sizes_ = [len(c) for c in self.target_classes_]

    def _encode_targets(self, y: np.ndarray) -> np.ndarray:
        out = np.empty_like(y)
        for g, classes in enumerate(self.target_classes_):
            out[:, g] = np.searchsorted(classes, y[:, g])
        return out

    def _get_fitted_state(self) -> dict:
        return {**super()._get_fitted_state(), "target_classes": self.target_classes_}

    def _set_fitted_state(self, state: dict) -> None:
        super()._set_fitted_state(state)
        self._set_target_classes(state["target_classes"])

    # ---------------------------------------------------------------- prediction
    def _group_outputs(self, X) -> list[list[torch.Tensor]]:
        """Per sequence, per group: probabilities (len, group size) (``loss="squared"``: the
        raw outputs), float64."""
        out = []
        for o in self._outputs(self.encode(X).inputs):
            chunks = torch.split(o.double(), self.group_sizes_, dim=-1)
            out.append([torch.softmax(c, -1) for c in chunks] if self.loss == "cross_entropy"
                       else list(chunks))
        return out

    def predict_proba(self, X: Sequence[str | Sequence[Hashable]] | ArrayLike) -> list[np.ndarray]:
        """Predict the group-wise probabilities at every position of each sequence.

        Parameters
        ----------
        X : sequence of str or of symbol lists, of shape (n_samples,)
            The sequences.

        Returns
        -------
        list of ndarray of shape (len_i, n_outputs)
            Per sequence, the probabilities of every group's labels (``loss="squared"``: the
            raw regression outputs).

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.predict_proba(["ab"])[0].sum(axis=1)
        array([1., 1.])
        """
        return [torch.cat(groups, -1).numpy() for groups in self._group_outputs(X)]

    def predict(self, X: Sequence[str | Sequence[Hashable]] | ArrayLike) -> list[np.ndarray]:
        """Predict the labels at every position of each sequence.

        Parameters
        ----------
        X : sequence of str or of symbol lists, of shape (n_samples,)
            The sequences.

        Returns
        -------
        list of ndarray of shape (len_i,) or (len_i, G)
            Per sequence, the labels (one group) or the labels of each group.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> [p.shape for p in tagger.predict(["ab", "cab"])]
        [(2,), (3,)]
        """
        preds = []
        for groups in self._group_outputs(X):
            p = np.stack([c[g.argmax(-1).numpy()]
                          for c, g in zip(self.target_classes_, groups, strict=True)], 1)
            preds.append(p[:, 0] if p.shape[1] == 1 else p)
        return preds

    def score(self, X: Sequence[str | Sequence[Hashable]] | ArrayLike,
              y: Sequence[ArrayLike] | None = None) -> float:
        """Return the share of positions whose every target group is predicted correctly.

        Parameters
        ----------
        X : sequence of str or of symbol lists, of shape (n_samples,)
            The sequences.
        y : sequence of array-like
            Per sequence, the labels ``(len_i,)`` or ``(len_i, G)``.

        Returns
        -------
        float
            The accuracy over all positions.

        Raises
        ------
        ValueError
            If ``y`` is missing.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> 0.0 <= tagger.score(["abc"], [[0, 1, 2]]) <= 1.0
        True
        """
        self._check_fitted()
        seqs = check_sequences(X)
        if y is None:
            raise ValueError("y is required to score a tagger.")
        Y = check_sequence_targets(y, [len(s) for s in seqs])
        hits = [np.all(p.reshape(len(t), -1) == t, axis=1)
                for p, t in zip(self.predict(seqs), Y, strict=True)]
        return float(np.concatenate(hits).mean())

    # ---------------------------------------------------------------- explanation
    def output_names(self) -> np.ndarray:
        """Return the names of the outputs: their indices.

        Returns
        -------
        ndarray of shape (n_outputs,)
            ``0 .. n_outputs_ - 1``.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> tagger.output_names()
        array([0, 1, 2])
        """
        return np.arange(self.n_outputs_)

    def explained_outputs(self, ids: torch.Tensor, target: int | None, predicted: torch.Tensor
                          ) -> torch.Tensor:
        """Return the output ids to explain at each step of one sequence.

        Parameters
        ----------
        ids : torch.Tensor of shape (T,)
            The sequence's symbol ids.
        target : int or None
            None: the largest output at each step; or an output index.
        predicted : torch.Tensor of shape (T,)
            The largest outputs.

        Returns
        -------
        torch.Tensor of shape (T,)
            Output ids.

        Raises
        ------
        ValueError
            If ``target`` is not None or an output index.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> import torch
        >>> tagger.explained_outputs(torch.tensor([1, 2]), 2, torch.tensor([0, 1]))
        tensor([2, 2])
        """
        if target is None:
            return predicted
        if (isinstance(target, (bool, np.bool_)) or not isinstance(target, Integral)
                or not 0 <= target < self.n_outputs_):
            raise ValueError(f"target must be None or an output index in [0, {self.n_outputs_}),"
                             f" got {target!r}.")
        return torch.full_like(predicted, int(target))
