"""Building blocks of SEAT (Hu et al., AAAI 2023): torch only, batched.

Notation follows the paper: ``w`` is the vanilla attention (B, T), ``w_tilde`` the stable
attention (B, T), ``mask`` (B, T) bool marks real tokens. Objective (6)::

    D1(y(x, w~), y(x, w)) + lambda_topk * L_topk(w, w~)
        + lambda_stability * max_{||delta|| <= R} D2(y(x, w~), y(x, w~ + delta))

The inner maximisation is solved by projected gradient ascent on ``delta``
(:func:`pgd_attention`); ``L_topk`` is the surrogate (5) of the top-k overlap ``V_k``.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from .attack import projected_gradient_ascent
from .attention import AttentionTextModule, lengths_to_mask
from .losses import weighted_mean

__all__ = [
    "top_k_mask",
    "top_k_overlap",
    "topk_surrogate_loss",
    "prediction_divergence",
    "project_ball",
    "pgd_attention",
    "SEATLoss",
    "seat_objective",
    "SEATForward",
    "SEATTrainer",
    "SEATCriterion",
    "RobustTrainer",
    "RobustCriterion",
]

_NEG = torch.finfo(torch.float32).min


def _check_pair(w: torch.Tensor, w_tilde: torch.Tensor, mask: torch.Tensor | None):
    if w.dim() != 2 or w.shape != w_tilde.shape:
        raise ValueError(
            f"attention tensors must both be (B, T); got {tuple(w.shape)} and "
            f"{tuple(w_tilde.shape)}"
        )
    if mask is None:
        mask = torch.ones_like(w, dtype=torch.bool)
    elif mask.shape != w.shape:
        raise ValueError(f"mask must be {tuple(w.shape)}, got {tuple(mask.shape)}")
    return mask.bool()


def top_k_mask(scores: torch.Tensor, k: int, mask: torch.Tensor | None = None) -> torch.Tensor:
    """Boolean (B, T) mask of each row's top-``k`` entries among the real tokens.

    Rows with fewer than ``k`` real tokens select all of them. Ties are broken by position.
    """
    if int(k) < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if mask is None:
        mask = torch.ones_like(scores, dtype=torch.bool)
    k = min(int(k), scores.shape[1])
    filled = scores.detach().masked_fill(~mask.bool(), _NEG)
    idx = filled.topk(k, dim=1).indices
    selected = torch.zeros_like(mask, dtype=torch.bool).scatter_(1, idx, True)
    return selected & mask.bool()


def top_k_overlap(
    w: torch.Tensor, w_tilde: torch.Tensor, k: int, mask: torch.Tensor | None = None
) -> torch.Tensor:
    """Top-k overlap ``V_k(w, w~) = |T_k(w) ∩ T_k(w~)| / k`` per row, shape (B,).

    For a row with ``n < k`` real tokens ``k`` is taken as ``n`` (the overlap is then 1).
    """
    mask = _check_pair(w, w_tilde, mask)
    inter = (top_k_mask(w, k, mask) & top_k_mask(w_tilde, k, mask)).sum(1).float()
    k_eff = mask.sum(1).clamp(min=1).clamp(max=int(k)).float()
    return inter / k_eff


def topk_surrogate_loss(
    w: torch.Tensor,
    w_tilde: torch.Tensor,
    k: int,
    mask: torch.Tensor | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Surrogate (5) of ``-V_k``: ``(‖w_S − w~_S‖₁ + ‖w_S~ − w~_S~‖₁) / 2k``.

    ``S`` / ``S~`` are the top-k index sets of ``w`` / ``w~`` (their union is covered; an
    index in both sets counts in both norms, as in the paper). Gradients flow through the
    values, not the index selection. Returns (B,) for ``reduction="none"``, else a scalar.
    """
    mask = _check_pair(w, w_tilde, mask)
    diff = (w - w_tilde).abs()
    weight = top_k_mask(w, k, mask).float() + top_k_mask(w_tilde, k, mask).float()
    per_row = (diff * weight).sum(1) / (2.0 * int(k))
    return _reduce(per_row, reduction)


def _reduce(values: torch.Tensor, reduction: str) -> torch.Tensor:
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
    return _reduce(out, reduction)


def _row_norm(delta: torch.Tensor, norm: str) -> torch.Tensor:
    if norm == "l2":
        return delta.norm(dim=1, keepdim=True)
    if norm == "linf":
        return delta.abs().amax(dim=1, keepdim=True)
    raise ValueError(f"norm must be 'l2' or 'linf', got {norm!r}")


def project_ball(
    delta: torch.Tensor, radius: float | torch.Tensor, norm: str = "l2"
) -> torch.Tensor:
    """Euclidean projection of each row of ``delta`` (B, T) onto ``{‖δ‖ ≤ radius}``.

    ``radius`` is a float or a (B,) / (B, 1) tensor of per-row radii.
    """
    radius = torch.as_tensor(radius, dtype=delta.dtype, device=delta.device)
    if radius.dim() == 1:
        radius = radius[:, None]
    if norm == "linf":
        return torch.maximum(torch.minimum(delta, radius), -radius)
    scale = (radius / _row_norm(delta, norm).clamp_min(1e-12)).clamp(max=1.0)
    return delta * scale


def pgd_attention(
    predict: Callable[[torch.Tensor], torch.Tensor],
    attention: torch.Tensor,
    mask: torch.Tensor,
    radius: float,
    steps: int = 5,
    step_size: float | None = None,
    norm: str = "l2",
    divergence: str = "bce",
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """Inner maximisation of (6): ``argmax_{‖δ‖≤R} D2(y(x, w), y(x, w + δ))`` by PGD.

    predict: maps attention (B, T) to logits (B, C) (hidden states held fixed).
    attention: (B, T) attention ``w~`` (detached here). mask: (B, T) bool; padding stays 0.
    Each row gets its own ``δ``: a random start inside the ball (D2 has zero gradient at
    ``δ = 0``), then ``steps`` normalised ascent steps (``g/‖g‖₂`` or ``sign(g)`` for
    ``linf``, Madry et al. 2018) each followed by projection onto the ball. Returns the
    detached ``δ*`` (B, T).
    """
    if radius < 0 or steps < 0:
        raise ValueError(f"radius and steps must be >= 0, got {radius!r} and {steps!r}")
    mask_f = mask.float()
    attention = attention.detach()
    if radius == 0 or steps == 0:
        return torch.zeros_like(attention)
    if step_size is None:
        step_size = 2.5 * radius / steps
    with torch.no_grad():
        target = F.softmax(predict(attention), dim=-1)
        noise = torch.rand(attention.shape, generator=generator, dtype=attention.dtype)
        noise = noise.to(attention.device)
        delta = project_ball((2 * noise - 1) * radius * mask_f, radius, norm)
    return projected_gradient_ascent(
        lambda d: prediction_divergence(target, predict(attention + d), divergence).sum(),
        delta, lambda d: project_ball(d, radius, norm) * mask_f, steps=steps,
        step_size=step_size, norm_dim=None if norm == "linf" else 1, grad_mask=mask_f)


class SEATLoss(NamedTuple):
    """Terms of objective (6), each a scalar (batch mean)."""

    total: torch.Tensor
    closeness: torch.Tensor
    topk: torch.Tensor
    stability: torch.Tensor


def seat_objective(
    logits_tilde: torch.Tensor,
    attention_tilde: torch.Tensor,
    logits_perturbed: torch.Tensor,
    vanilla_probs: torch.Tensor,
    vanilla_attention: torch.Tensor,
    mask: torch.Tensor,
    k: int,
    lambda_topk: float,
    lambda_stability: float,
    divergence: str = "bce",
) -> SEATLoss:
    """Objective (6) for one batch.

    logits_tilde: (B, C) ``y(x, w~)``; attention_tilde: (B, T) ``w~``; logits_perturbed:
    (B, C) ``y(x, w~ + δ*)``; vanilla_probs: (B, C) ``y(x, w)``; vanilla_attention: (B, T)
    ``w``. ``D1 = D(y(x, w), y(x, w~))``; ``D2 = D(y(x, w~), y(x, w~ + δ*))`` with the
    unperturbed prediction as (detached) target, so D2 pulls ``y(x, w~ + δ*)`` back to it.
    ``lambda_topk`` weights ``L_topk`` (the paper's λ2) and ``lambda_stability`` weights D2
    (the paper's λ1).
    """
    closeness = prediction_divergence(vanilla_probs.detach(), logits_tilde, divergence).mean()
    topk = topk_surrogate_loss(vanilla_attention.detach(), attention_tilde, k, mask)
    stability = prediction_divergence(
        F.softmax(logits_tilde.detach(), dim=-1), logits_perturbed, divergence
    ).mean()
    total = closeness + lambda_topk * topk + lambda_stability * stability
    return SEATLoss(total, closeness, topk, stability)


# ---------------------------------------------------------------------------- training modules
class SEATForward(NamedTuple):
    """Output of :class:`SEATTrainer` for one batch (the inputs of objective (6))."""

    logits: torch.Tensor            # (B, C) y(x, w~)
    attention: torch.Tensor         # (B, T) w~
    perturbed_logits: torch.Tensor  # (B, C) y(x, w~ + delta*)
    vanilla_probs: torch.Tensor     # (B, C) y(x, w)
    vanilla_attention: torch.Tensor  # (B, T) w
    mask: torch.Tensor              # (B, T)


class SEATTrainer(nn.Module):
    """One step of Algorithm 1 per batch: PGD on ``delta`` (inner max), then the terms of (6).

    Only ``core.attention`` (the copy producing ``w~``) has trainable parameters; the hidden
    states, the decoder and the vanilla attention are shared and frozen. Always in eval mode.
    """

    def __init__(self, core: AttentionTextModule, vanilla_attention: nn.Module, radius, steps,
                 step_size, norm, divergence, seed):
        super().__init__()
        self.core = core
        self.vanilla_attention = vanilla_attention
        self.pgd = dict(radius=radius, steps=steps, step_size=step_size, norm=norm,
                        divergence=divergence)
        self.generator = torch.Generator().manual_seed(int(seed))

    def train(self, mode: bool = True):
        return super().train(False)

    def forward(self, tokens, lengths, query=None, query_lengths=None) -> SEATForward:
        core = self.core
        with torch.no_grad():
            mask = lengths_to_mask(lengths.to(tokens.device), tokens.shape[1])
            hidden = core.encode(core.embed(tokens), mask)
            q = core.encode_query(query, query_lengths) if core.pair else None
            w = self.vanilla_attention(hidden, mask, q)
            vanilla_probs = F.softmax(core.decode(hidden, w, q), dim=-1)
        w_tilde = core.attention_weights(hidden, mask, q)
        delta = pgd_attention(lambda a: core.decode(hidden, a, q), w_tilde, mask,
                              generator=self.generator, **self.pgd)
        return SEATForward(core.decode(hidden, w_tilde, q), w_tilde,
                            core.decode(hidden, w_tilde + delta, q), vanilla_probs, w, mask)


class SEATCriterion(nn.Module):
    """Objective (6); the batch's terms are kept in ``last_terms`` for the history."""

    def __init__(self, k, lambda_topk, lambda_stability, divergence):
        super().__init__()
        self.k, self.lambda_topk, self.lambda_stability = k, lambda_topk, lambda_stability
        self.divergence = divergence
        self.last_terms = {}

    def forward(self, out: SEATForward, y=None):
        loss = seat_objective(out.logits, out.attention, out.perturbed_logits, out.vanilla_probs,
                              out.vanilla_attention, out.mask, self.k, self.lambda_topk,
                              self.lambda_stability, self.divergence)
        self.last_terms = {name: float(getattr(loss, name).detach())
                           for name in ("closeness", "topk", "stability")}
        return loss.total


class RobustTrainer(nn.Module):
    """Clean and perturbed forward passes of the baselines; returns ``(clean, perturbed
    logits)``. ``labels`` (B,) give the adversarial directions (``*-at``)."""

    def __init__(self, core: AttentionTextModule, method: str, epsilon: float, seed: int):
        super().__init__()
        self.core, self.method, self.epsilon = core, method, float(epsilon)
        self.generator = torch.Generator().manual_seed(int(seed))

    def _direction(self, grad, mask):
        """Unit-ℓ2 direction per sample (over all real positions)."""
        m = mask.to(grad.dtype).reshape(mask.shape + (1,) * (grad.dim() - 2))
        grad = grad * m
        norm = grad.flatten(1).norm(dim=1).clamp_min(1e-12)
        return grad / norm.reshape((-1,) + (1,) * (grad.dim() - 1))

    def forward(self, tokens, lengths, labels, query=None, query_lengths=None):
        core = self.core
        mask = lengths_to_mask(lengths.to(tokens.device), tokens.shape[1])
        embedded = core.embed(tokens)
        if self.method == "word-at" and not embedded.requires_grad:
            embedded = embedded.detach().requires_grad_(True)
        hidden = core.encode(embedded, mask)
        q = core.encode_query(query, query_lengths) if core.pair else None
        w = core.attention_weights(hidden, mask, q)
        logits = core.decode(hidden, w, q)
        if self.method == "attention-rp":
            noise = torch.randn(w.shape, generator=self.generator).to(w.device)
            r = self.epsilon * self._direction(noise, mask)
            return logits, core.decode(hidden, w + r, q)
        target = embedded if self.method == "word-at" else w
        (grad,) = torch.autograd.grad(F.cross_entropy(logits, labels), target, retain_graph=True)
        r = self.epsilon * self._direction(grad.detach(), mask)
        if self.method == "attention-at":
            return logits, core.decode(hidden, w + r, q)
        adv = core(tokens, lengths, query, query_lengths, embedded=embedded + r)
        return logits, adv.logits


class RobustCriterion(nn.Module):
    def forward(self, out, y, sample_weight=None):
        clean, perturbed = out
        if sample_weight is None:
            return F.cross_entropy(clean, y) + F.cross_entropy(perturbed, y)
        return weighted_mean(F.cross_entropy(clean, y, reduction="none")
                             + F.cross_entropy(perturbed, y, reduction="none"), sample_weight)
