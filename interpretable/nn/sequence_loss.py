"""Per-position loss of the sequence models (language models and taggers), called as
``criterion(module_output, y)`` (see ``estimators.base.TrainingNet``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["IGNORE_INDEX", "SequenceLoss"]

#: target value of positions that are not scored (padding, context-only positions)
IGNORE_INDEX = -100


class SequenceLoss(nn.Module):
    """Loss over positions and target groups, ignoring targets equal to :data:`IGNORE_INDEX`.

    outputs (B, T, sum(group_sizes)); y (B, T, G) long, class indices per group.
    ``"cross_entropy"``: one softmax per group; ``"squared"``: squared error against the one-hot
    code of each group. Returned per scored target (nats for cross entropy).
    """

    def __init__(self, group_sizes, loss: str = "cross_entropy"):
        super().__init__()
        if loss not in ("cross_entropy", "squared"):
            raise ValueError(f"loss must be 'cross_entropy' or 'squared', got {loss!r}.")
        self.group_sizes = [int(g) for g in group_sizes]
        self.loss = loss

    def forward(self, outputs: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        total, count = outputs.new_zeros(()), 0
        for g, chunk in enumerate(torch.split(outputs, self.group_sizes, dim=-1)):
            target = y[..., g].reshape(-1)
            chunk = chunk.reshape(-1, chunk.shape[-1])
            keep = target != IGNORE_INDEX
            if self.loss == "cross_entropy":
                total = total + F.cross_entropy(chunk, target, ignore_index=IGNORE_INDEX,
                                                reduction="sum")
            else:
                onehot = F.one_hot(target.clamp(min=0), chunk.shape[-1]).to(chunk.dtype)
                total = total + ((chunk - onehot) ** 2).sum(-1)[keep].sum()
            count += int(keep.sum())
        return total / max(count, 1)
