"""Sequence-to-sequence ISAN: per-position targets of symbol sequences, explained exactly.

``fit(X, Y)``: ``X`` is a list of symbol sequences (str or lists of hashable symbols) and
``Y`` a matching list of per-position integer targets, shape ``(len,)`` or ``(len, G)`` for
``G`` independent target groups (e.g. one nesting count per bracket type).
``loss="cross_entropy"`` uses one softmax per group, ``loss="squared"`` regresses the one-hot
code of each group (as the ISAN paper does for parentheses counting). Unknown symbols follow
the policy of :mod:`.sequence`.
"""

from __future__ import annotations

from numbers import Integral

import numpy as np
import torch
from sklearn.utils._param_validation import StrOptions

from ..nn.losses import IGNORE_INDEX
from ..nn.tensors import pad_sequences
from ..validation import check_sequence_targets, check_sequences
from .sequence import ISANBase
from .params import stores_params

__all__ = ["ISANSequenceTagger"]


class ISANSequenceTagger(ISANBase):
    """Input switched affine network tagger: one output vector per input position.

    ``h_t = W_{x_t} h_{t-1} + b_{x_t}``, outputs ``W_ro h_t + b_ro`` (the concatenated groups'
    scores), learned ``h_{-1}``; one ``(W_c, b_c)`` per symbol of the alphabet learned in ``fit``.
    ``explain(X, target=None, dtype=None)`` gives the exact contribution of every symbol to one
    output unit at every step: ``target`` None (the largest output at each step) or an output
    index in ``[0, n_outputs_)`` (the units of group ``g`` follow those of groups ``< g``), or a
    list of one per sequence.

    Parameters
    ----------
    loss : {"cross_entropy", "squared"}
        ``"squared"``: regress the one-hot code of each group (``predict_proba`` then returns
        the raw outputs).
    hidden_size, min_count, dtype, clip_grad, init_gain, lr, max_epochs, batch_size, ...
        See :class:`~interpretable.estimators.sequence.ISANBase`.

    Attributes
    ----------
    target_classes_ : list of G arrays, the labels of each target group.
    classes_ : ``target_classes_[0]`` for one group, else ``target_classes_``.
    """

    _parameter_constraints = {**ISANBase._parameter_constraints,
                              "loss": [StrOptions({"cross_entropy", "squared"})]}

    @stores_params
    def __init__(self, hidden_size=128, *, loss="cross_entropy", min_count=2, dtype="float32",
                 clip_grad=1.0, init_gain=1.0, lr=2e-3, max_epochs=10, batch_size=32,
                 optimizer="adam", weight_decay=0.0, device="auto",
                 random_state=None, verbose=0, callbacks=None, validation_fraction=None,
                 early_stopping=False, n_iter_no_change=5, warm_start=False, precision="float32",
                 accelerator=None):
        """Store the parameters unchanged (see the class docstring)."""

    def _check_inputs(self, X) -> list:
        return check_sequences(X)

    def _fit(self, X, y, sample_weight=None):
        seed = self._start_fit()
        seqs = check_sequences(X)
        if y is None:
            raise ValueError(f"{type(self).__name__} needs per-position targets: fit(X, Y).")
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

    def predict_proba(self, X) -> list[np.ndarray]:
        """Per sequence, the group-wise probabilities (len, sum of group sizes) (``loss=
        "squared"``: the raw regression outputs)."""
        return [torch.cat(groups, -1).numpy() for groups in self._group_outputs(X)]

    def predict(self, X) -> list[np.ndarray]:
        """Per sequence, the labels (len,) (one group) or (len, G)."""
        preds = []
        for groups in self._group_outputs(X):
            p = np.stack([c[g.argmax(-1).numpy()] for c, g in zip(self.target_classes_, groups)],
                         1)
            preds.append(p[:, 0] if p.shape[1] == 1 else p)
        return preds

    def score(self, X, y=None) -> float:
        """Share of positions whose every target group is predicted correctly."""
        self._check_fitted()
        seqs = check_sequences(X)
        if y is None:
            raise ValueError("y is required to score a tagger.")
        Y = check_sequence_targets(y, [len(s) for s in seqs])
        hits = [np.all(p.reshape(len(t), -1) == t, axis=1) for p, t in zip(self.predict(seqs), Y)]
        return float(np.concatenate(hits).mean())

    # ---------------------------------------------------------------- explanation
    def output_names(self) -> np.ndarray:
        return np.arange(self.n_outputs_)

    def explained_outputs(self, ids: torch.Tensor, target, predicted: torch.Tensor
                          ) -> torch.Tensor:
        """target: None (the largest output at each step) or an output index."""
        if target is None:
            return predicted
        if (isinstance(target, (bool, np.bool_)) or not isinstance(target, Integral)
                or not 0 <= target < self.n_outputs_):
            raise ValueError(f"target must be None or an output index in [0, {self.n_outputs_}),"
                             f" got {target!r}.")
        return torch.full_like(predicted, int(target))
