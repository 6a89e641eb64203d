"""Criteria called as ``criterion(module_output, y)`` (see ``estimators.base.TrainingNet``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["OutputCrossEntropy", "logits_of"]


def logits_of(output) -> torch.Tensor:
    """The logits of a module output: the tensor itself or the first element of a tuple."""
    return output[0] if isinstance(output, tuple) else output


class OutputCrossEntropy(nn.Module):
    """Cross-entropy on the logits of a module output (tensor or tuple whose first item is the
    logits ``(B, C)``)."""

    def forward(self, output, y: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits_of(output), y)
