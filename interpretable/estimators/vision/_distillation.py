"""Distillation for the image classifiers: :class:`TeacherMixin` gives an estimator the
``teacher``, ``teacher_weight`` and ``teacher_temperature`` parameters of
:class:`~interpretable.BcosTextClassifier` (a fitted classifier whose probabilities of the
training images the student learns to match beside the labels, Hinton et al. 2015; see
:mod:`interpretable.estimators.core`)."""
from __future__ import annotations

import os
from numbers import Real

from interpretable.estimators.core._teacher import TEACHER_PROBABILITIES, teacher_probabilities
from interpretable.nn import DistillationLoss
from interpretable.utils import HasMethods, Interval

__all__: list[str] = []  # a building block of the vision estimators

#: the parameters the mixin adds, with their constraints
TEACHER_CONSTRAINTS = {
    "teacher": [None, str, os.PathLike, HasMethods(["predict_proba"])],
    "teacher_weight": [Interval(Real, 0, 1, closed="both")],
    "teacher_temperature": [Interval(Real, 0, None, closed="neither")],
}


class TeacherMixin:
    """Mixin of an image classifier (before its family base): with a ``teacher``, the loss is
    :class:`~interpretable.nn._losses.DistillationLoss` (the estimator's ``_criterion`` returns
    ``self._distilled(its loss)``) and each fit computes the teacher's
    probabilities of the training images once, as the fit was given them (the teacher's own
    inputs); the teacher is borrowed (shared by clones, never saved)."""

    _borrowed_params = ("teacher",)

    def _distilled(self, criterion):
        """``criterion`` (the labels' loss), or with a ``teacher`` its distillation loss."""
        if self.teacher is None:
            return criterion
        return DistillationLoss(self.teacher_weight, self.teacher_temperature)

    def _fit(self, X, y, sample_weight=None):
        self._taught = X  # read by _phase once the classes are known
        return super()._fit(X, y, sample_weight)

    def _phase(self, n_samples: int) -> dict:
        phase = super()._phase(n_samples)
        taught = vars(self).pop("_taught", None)
        if self.teacher is not None:
            phase["loss_inputs"] = {TEACHER_PROBABILITIES: teacher_probabilities(
                self.teacher, taught, self.classes_, self.device_)}
        return phase
