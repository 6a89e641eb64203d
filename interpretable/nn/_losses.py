"""Training criteria and divergences.

Criteria are called as ``criterion(module_output, y)``, or with per-sample loss inputs as
keywords, e.g. ``criterion(module_output, y, sample_weight=w)`` with loss weights ``w (B,)`` (see
``interpretable.estimators.core._nets.TrainingNet``): cross-entropy on the logits, its
distillation from a teacher's probabilities, the one-hot
binary cross-entropy of B-cos networks, the conicity-regularised loss of the diversity LSTM and
the per-position loss of the sequence models. :func:`prediction_divergence` compares predicted
class distributions (SEAT's D1 / D2)."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.nn._attention import AttentionOutput, conicity

__all__ = ["logits_of"]

#: target value of positions that are not scored (padding, context-only positions)
IGNORE_INDEX = -100


def logits_of(output: torch.Tensor | tuple[Any, ...]) -> torch.Tensor:
    """The logits of a module output: the tensor itself or the first element of a tuple."""
    return output[0] if isinstance(output, tuple) else output


def explained_logits(logits: torch.Tensor, target: torch.Tensor,
                     contrast: torch.Tensor | None = None) -> torch.Tensor:
    """What an explanation explains: the ``target`` logit of each sample, or with ``contrast``
    that logit minus the ``contrast``-weighted sum of all logits.

    ``logits (B, ..., K)`` (e.g. per model term ``(B, T, K)``), ``target (B,)`` class indices,
    ``contrast (B, K)`` weights over the classes (``1/K`` each: the mean logit; a one-hot row:
    another class's logit) -> ``(B, ...)``. The difference is linear in the logits, so the
    exact decompositions of the logits carry over to it term by term."""
    shape = (len(logits),) + (1,) * (logits.dim() - 1)
    index = target.to(logits.device).long().view(shape).expand(*logits.shape[:-1], 1)
    chosen = logits.gather(-1, index).squeeze(-1)
    if contrast is None:
        return chosen
    weights = contrast.to(logits).view(*shape[:-1], logits.shape[-1])
    return chosen - (logits * weights).sum(-1)


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


class DistillationLoss(nn.Module):
    """Knowledge distillation (Hinton et al., 2015): per sample
    ``(1 - weight) * CE(z, y) + weight * T² * KL(softmax(log p / T) ‖ softmax(z / T))``, with
    the student's logits ``z (B, C)``, the teacher's class probabilities ``p (B, C)``
    (``teacher_probabilities``) and the temperature ``T``; the mean is weighted by
    ``sample_weight`` when given. ``T²`` keeps the soft term's gradient scale independent of
    ``T``."""

    def __init__(self, weight: float, temperature: float):
        super().__init__()
        self.weight = float(weight)
        self.temperature = float(temperature)

    def forward(self, output, y: torch.Tensor, sample_weight=None,
                teacher_probabilities=None) -> torch.Tensor:
        logits = logits_of(output)
        loss = F.cross_entropy(logits, y, reduction="none")
        if teacher_probabilities is not None and self.weight:
            t = self.temperature
            soft = F.softmax(torch.log(teacher_probabilities.to(logits).clamp_min(1e-12)) / t, -1)
            divergence = prediction_divergence(soft, logits / t, kind="kl")
            loss = (1 - self.weight) * loss + self.weight * t * t * divergence
        return weighted_mean(loss, sample_weight)


class OneHotBCE(nn.Module):
    """Binary cross-entropy on sigmoid outputs against one-hot targets (B-cos training),
    optionally weighted per sample. ``off_value``: the target of the other classes (0; the
    B-cos v2 models train with 1/n_classes, ``"uniform"``, whose logit is the logit bias
    log(1/(n_classes-1)): a wrong class needs no contribution, not an unbounded negative one)."""

    def __init__(self, off_value: float | str = 0.0):
        super().__init__()
        self.off_value = off_value

    def forward(self, logits: torch.Tensor, y: torch.Tensor, sample_weight=None) -> torch.Tensor:
        k = logits.shape[1]
        off = 1.0 / k if self.off_value == "uniform" else float(self.off_value)
        target = F.one_hot(y.long(), k).to(logits.dtype) * (1.0 - off) + off
        if sample_weight is None:
            return F.binary_cross_entropy_with_logits(logits, target)
        return weighted_mean(F.binary_cross_entropy_with_logits(
            logits, target, reduction="none").mean(1), sample_weight)


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


def reduce_loss(values: torch.Tensor, reduction: str) -> torch.Tensor:
    """Per-sample ``values (B,)`` as they are (``"none"``), or their mean or sum."""
    if reduction == "none":
        return values
    if reduction == "mean":
        return values.mean()
    if reduction == "sum":
        return values.sum()
    raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")


def prediction_divergence(
    target_probs: torch.Tensor,
    logits: torch.Tensor,
    kind: str = "bce",
    reduction: str = "none",
) -> torch.Tensor:
    """Divergence of predicted class distributions, ``D(target, softmax(logits))``.

    target_probs: (B, C) probabilities; logits: (B, C). ``kind``:
    ``"bce"`` cross-entropy with soft targets (the paper's D1/D2; binary cross-entropy for
    two classes), ``"kl"`` KL divergence (same gradient, zero at equality), ``"tvd"`` total
    variation ``½‖p − q‖₁``. Returns (B,) for ``reduction="none"``.
    """
    if target_probs.shape != logits.shape:
        raise ValueError(
            f"target_probs {tuple(target_probs.shape)} and logits {tuple(logits.shape)} differ"
        )
    log_q = F.log_softmax(logits, dim=-1)
    if kind == "bce":
        out = -(target_probs * log_q).sum(-1)
    elif kind == "kl":
        out = (target_probs * (torch.log(target_probs.clamp_min(1e-12)) - log_q)).sum(-1)
    elif kind == "tvd":
        out = 0.5 * (target_probs - log_q.exp()).abs().sum(-1)
    else:
        raise ValueError(f"divergence must be 'bce', 'kl' or 'tvd', got {kind!r}")
    return reduce_loss(out, reduction)
