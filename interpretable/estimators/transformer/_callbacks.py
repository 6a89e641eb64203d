"""The B-cos text classifier's own training callback: the annealing of the B-cos exponent
(:class:`AnnealExponent`). Its learning-rate schedule and divergence guard are every
estimator's (:mod:`interpretable.estimators.core`).
"""
from __future__ import annotations

from interpretable.estimators.core._nets import TrainingStepCallback

__all__: list[str] = []  # the training callback of BcosTextClassifier(b_anneal=...)


class AnnealExponent(TrainingStepCallback):
    """Raise the B-cos exponent of every layer linearly from 1 to its B over the first
    ``share`` of the training steps (``module.anneal(progress)``); the trained module ends at
    its B."""

    def __init__(self, share: float = 0.5):
        self.share = share

    def on_train_end(self, net, **kwargs):
        net.module_.anneal(1.0)

    def at_step(self, net) -> None:
        net.module_.anneal(self.step_ / max(1.0, self.share * self.total_))
