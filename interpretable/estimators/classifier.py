"""The classifier surface shared by the text and image classifiers: labels, class weights,
logits, ``decision_function``, ``predict_proba``, ``predict``, ``score`` and explained targets."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import torch
from sklearn.base import ClassifierMixin
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.class_weight import compute_class_weight

from ..nn.losses import logits_of
from .base import NeuralEstimator

__all__ = ["NeuralClassifier"]


def _shown(classes: np.ndarray, limit: int = 20) -> str:
    """The classes for an error message (the first ``limit`` of many)."""
    names = classes.tolist()
    return str(names) if len(names) <= limit else f"{names[:limit]} ... ({len(names)} in all)"


class NeuralClassifier(ClassifierMixin, NeuralEstimator):
    """Classifier outputs shared by the text and image classifiers.

    Subclasses implement :meth:`encode` and a module whose output is the logits ``(B, C)`` (or
    a tuple starting with them), and set ``classes_`` in ``_fit`` (:meth:`_fit_labels`).

    Parameters
    ----------
    {class_weight}
    {training_parameters}
    """

    _parameter_constraints = {
        **NeuralEstimator._parameter_constraints,
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }

    def _fit_labels(self, y) -> np.ndarray:
        """Class indices (n,) of the training labels ``y``; sets ``classes_``, or when the fit
        continues the previous one (``warm_start``) keeps its classes (other labels raise)."""
        if not self._continues():
            self.classes_, index = np.unique(y, return_inverse=True)
            return index.reshape(-1)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError("warm_start=True continues the previous model, fitted on the "
                             f"classes {self.classes_.tolist()[:10]}; y has others: "
                             f"{unseen.tolist()[:5]}. Refit with warm_start=False.")
        return np.searchsorted(self.classes_, y)

    def _training_weights(self, y, sample_weight):
        """``sample_weight`` times the ``class_weight`` of each sample's class index ``y``."""
        weight = super()._training_weights(y, sample_weight)
        if self.class_weight is None:
            return weight
        y = np.asarray(y)
        per_class = compute_class_weight(self.class_weight, classes=self.classes_,
                                         y=self.classes_[y])
        return per_class[y] if weight is None else per_class[y] * weight

    def logits(self, inputs: Mapping[str, torch.Tensor], *, batch_size=None, **options
               ) -> torch.Tensor:
        """Logits ``(n, n_classes)`` (float32, CPU) of encoded ``inputs`` (``Batch.inputs``);
        ``options`` go to :meth:`forward_batch`. Batches run in the inference order."""
        logits = None
        for rows, _, out in self.forward_batches(inputs, batch_size=batch_size, ordered=True,
                                                 **options):
            out = logits_of(out).detach().float().cpu()
            if logits is None:
                logits = out.new_empty(len(next(iter(inputs.values()))), out.shape[1])
            logits[rows] = out
        return logits

    def decision_function(self, X) -> np.ndarray:
        """scikit-learn's convention: the logits ``(n, n_classes)``, or for two classes the
        margin of the positive class ``classes_[1]``, ``logit_1 - logit_0``, shape ``(n,)``."""
        logits = self.logits(self.encode(X).inputs).numpy()
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X) -> np.ndarray:
        """Softmax of the logits, ``(n, n_classes)`` float64."""
        logits = self.logits(self.encode(X).inputs).double()
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X) -> np.ndarray:
        """The class of the largest logit, ``(n,)``, as labels of ``classes_``."""
        logits = self.logits(self.encode(X).inputs)  # raises NotFittedError first
        return self.classes_[logits.numpy().argmax(axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy; labels not seen in ``fit`` raise a ``ValueError``."""
        self._check_fitted()
        y = np.asarray(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y contains labels not seen in fit: {unseen.tolist()[:5]}; the "
                             f"model knows classes_ = {_shown(self.classes_)}.")
        return super().score(X, y, sample_weight=sample_weight)

    def target_indices(self, target, logits) -> np.ndarray:
        """Indices into ``classes_`` of the logits to explain, ``(n,)``: the predicted classes
        for ``target=None`` (from ``logits (n, C)``), else one label for all samples or one
        label per sample."""
        n = len(logits)
        if target is None:
            return np.asarray(logits).argmax(axis=1)
        labels = np.asarray(target)
        if labels.ndim == 0:
            labels = np.full(n, labels.item(), dtype=labels.dtype)
        if labels.ndim != 1 or len(labels) != n:
            raise ValueError(f"target must be one label or {n} labels, got shape {labels.shape}.")
        unseen = sorted(set(labels.tolist()) - set(self.classes_.tolist()), key=str)
        if unseen:
            raise ValueError(f"target contains labels not seen in fit: {unseen[:5]}; the "
                             f"model knows classes_ = {_shown(self.classes_)}.")
        return np.searchsorted(self.classes_, labels)

    def explained_targets(self, batch, target) -> np.ndarray | None:
        """The explained class indices ``(n,)`` of an encoded ``batch``, or None (each sample's
        predicted class, which explainers take from the logits they compute)."""
        return None if target is None else self.target_indices(target, np.empty((len(batch), 0)))
