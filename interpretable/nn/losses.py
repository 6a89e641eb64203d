"""Criteria called as ``criterion(module_output, y)`` (see ``estimators.base.TrainingNet``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .attention import AttentionOutput, conicity

__all__ = ["OutputCrossEntropy", "DiversityLoss", "logits_of"]


def logits_of(output) -> torch.Tensor:
    """The logits of a module output: the tensor itself or the first element of a tuple."""
    return output[0] if isinstance(output, tuple) else output


class OutputCrossEntropy(nn.Module):
    """Cross-entropy on the logits of a module output (tensor or tuple whose first item is the
    logits ``(B, C)``)."""

    def forward(self, output, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits_of(output), y)


class DiversityLoss(OutputCrossEntropy):
    """``cross_entropy(logits, y) + weight * mean_b conicity(H_b)`` over real tokens."""

    def __init__(self, weight: float):
        super().__init__()
        self.weight = float(weight)

    def forward(self, output: AttentionOutput, y: torch.Tensor) -> torch.Tensor:
        loss = super().forward(output, y)
        if self.weight:
            loss = loss + self.weight * conicity(output.hidden, output.mask).mean()
        return loss
