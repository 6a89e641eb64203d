"""The training callbacks of the BERT-family text classifiers
(:mod:`interpretable.estimators.bcos_text`): BERT's learning-rate schedule
(:class:`WarmupLinearSchedule`: linear warm-up, linear decay to 0), the annealing of the B-cos
exponent (:class:`AnnealExponent`) and the divergence guard that also checks the weights'
norms (:class:`WeightNormGuard`).
"""
from __future__ import annotations

import math

import torch
from skorch.callbacks import Callback

from .nets import DivergenceGuard

__all__ = ["AnnealExponent", "WarmupLinearSchedule", "WeightNormGuard"]


class WarmupLinearSchedule(Callback):
    """BERT's learning-rate schedule as a skorch callback: the rate rises linearly from 0 over
    the first ``warmup`` share of the training steps, then falls linearly to 0 at the last
    step (the steps of ``max_epochs`` epochs of the training split); set after every batch."""

    def __init__(self, warmup: float = 0.1):
        self.warmup = warmup

    def on_train_begin(self, net, **kwargs):
        self.base_lrs_ = [group["lr"] for group in net.optimizer_.param_groups]
        self.step_, self.total_ = 0, None

    def on_epoch_begin(self, net, dataset_train=None, **kwargs):
        if self.total_ is None:
            self.total_ = math.ceil(len(dataset_train) / net.batch_size) * net.max_epochs
            self._set(net)

    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            self.step_ += 1
            self._set(net)

    def factor(self, step: int) -> float:
        """The learning rate of ``step`` (0-based) relative to the set one."""
        rising = max(1, round(self.warmup * self.total_)) if self.warmup else 0
        if step < rising:
            return (step + 1) / rising
        return max(0.0, (self.total_ - step) / max(1, self.total_ - rising))

    def _set(self, net):
        for group, base in zip(net.optimizer_.param_groups, self.base_lrs_):
            group["lr"] = base * self.factor(self.step_)


class AnnealExponent(WarmupLinearSchedule):
    """Raise the B-cos exponent of every layer linearly from 1 to its B over the first
    ``share`` of the training steps (``module.anneal(progress)``); the trained module ends at
    its B."""

    def __init__(self, share: float = 0.5):
        self.share = share

    def on_train_begin(self, net, **kwargs):
        self.step_, self.total_ = 0, None

    def on_train_end(self, net, **kwargs):
        net.module_.anneal(1.0)

    def _set(self, net):
        net.module_.anneal(self.step_ / max(1.0, self.share * self.total_))


class WeightNormGuard(DivergenceGuard):
    """:class:`~.nets.DivergenceGuard` for networks that normalise weights and activations
    (B-cos rows, LayerNorm): such a network never produces a non-finite loss, but once a
    weight's norm overflows its layer silently outputs zeros, so the norms are checked too."""

    def _check_weights(self, net):
        super()._check_weights(net)
        if not all(torch.isfinite(torch.linalg.vector_norm(p.detach()))
                   for p in net.module_.parameters()):
            self._diverged(net, "the norm of a weight overflowed")
