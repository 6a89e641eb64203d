"""Criteria called as ``criterion(module_output, y)``, or ``criterion(module_output, y,
sample_weight=w)`` with per-sample loss weights ``w (B,)`` (see ``estimators.base.TrainingNet``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .attention import AttentionOutput, conicity

__all__ = ["OutputCrossEntropy", "DiversityLoss", "logits_of", "weighted_mean"]


def logits_of(output) -> torch.Tensor:
    """The logits of a module output: the tensor itself or the first element of a tuple."""
    return output[0] if isinstance(output, tuple) else output


def weighted_mean(values: torch.Tensor, sample_weight=None) -> torch.Tensor:
    """Mean of per-sample ``values (B,)``, or ``sum(w * values) / sum(w)`` with
    ``sample_weight`` w (B,) (a weight of 2 counts a sample twice)."""
    if sample_weight is None:
        return values.mean()
    return (values * sample_weight).sum() / sample_weight.sum()


class OutputCrossEntropy(nn.Module):
    """Cross-entropy on the logits of a module output (tensor or tuple whose first item is the
    logits ``(B, C)``), optionally weighted per sample."""

    def forward(self, output, y: torch.Tensor, sample_weight=None) -> torch.Tensor:
        if sample_weight is None:
            return F.cross_entropy(logits_of(output), y)
        return weighted_mean(F.cross_entropy(logits_of(output), y, reduction="none"),
                             sample_weight)


class DiversityLoss(OutputCrossEntropy):
    """``cross_entropy(logits, y) + weight * mean_b conicity(H_b)`` over real tokens (both
    means weighted by ``sample_weight`` when given); ``absolute`` averages ``|cos|`` in the
    conicity (the authors' code) instead of the signed cosine."""

    def __init__(self, weight: float, absolute: bool = False):
        super().__init__()
        self.weight = float(weight)
        self.absolute = bool(absolute)

    def forward(self, output: AttentionOutput, y: torch.Tensor, sample_weight=None
                ) -> torch.Tensor:
        loss = super().forward(output, y, sample_weight)
        if self.weight:
            loss = loss + self.weight * weighted_mean(conicity(output.hidden, output.mask,
                                                               absolute=self.absolute),
                                                      sample_weight)
        return loss
