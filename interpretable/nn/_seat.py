"""Building blocks of SEAT (Hu et al., AAAI 2023): torch only, batched.

Notation follows the paper: ``w`` is the vanilla attention (B, T), ``w_tilde`` the stable
attention (B, T), ``mask`` (B, T) bool marks real tokens. Objective (6)::

    D1(y(x, w~), y(x, w)) + lambda_topk * L_topk(w, w~)
        + lambda_stability * max_{||delta|| <= R} D2(y(x, w~), y(x, w~ + delta))

The inner maximisation is solved by projected gradient ascent on ``delta``
(:func:`~interpretable.nn._attacks.pgd_attention`); ``L_topk`` is the surrogate (5) of the
top-k overlap ``V_k``.

The authors' code (kaustpradalab/SEAT) trains differently: the whole model, by
``BCE(f(x), y) + λ1·BCE(f(x + δ*), y) + λ2·topk-L1(att(x + δ*), att(x))`` with ``δ*`` the
ℓ∞ PGD attack on the word embeddings of
:func:`~interpretable.nn._attacks.embedding_pgd` (:func:`authors_objective`,
:class:`AuthorsSEATTrainer`).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from interpretable.nn._attacks import embedding_pgd, pgd_attention
from interpretable.nn._attention import AttentionTextModule, lengths_to_mask
from interpretable.nn._losses import prediction_divergence, reduce_loss, weighted_mean


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
    filled = scores.detach().masked_fill(~mask.bool(), torch.finfo(scores.dtype).min)
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
    return reduce_loss(per_row, reduction)


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
            hidden = core.hidden_states(core.embed(tokens), mask)
            q = core.query_state(query, query_lengths) if core.pair else None
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
        hidden = core.hidden_states(embedded, mask)
        q = core.query_state(query, query_lengths) if core.pair else None
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


# ---------------------------------------------------------------------------- the authors' code
def authors_topk_loss(w_a: torch.Tensor, w_b: torch.Tensor, k: int,
                      mask: torch.Tensor | None = None) -> torch.Tensor:
    """The authors' ``topk_overlap_loss`` (metric ``"l1"``), a scalar: the mean over the batch
    *and* the ``k`` selected entries of ``(|Δ_S| + |Δ_S~|) / 2k``, i.e.
    :func:`topk_surrogate_loss` divided by ``k``."""
    return topk_surrogate_loss(w_a, w_b, k, mask) / int(k)


class AuthorsLoss(NamedTuple):
    """Terms of the authors' loss, each a scalar (batch mean; ``topk`` unweighted)."""

    total: torch.Tensor
    clean: torch.Tensor
    adversarial: torch.Tensor
    topk: torch.Tensor


def authors_objective(logits, attention, perturbed_logits, perturbed_attention, labels, mask,
                      k: int, lambda_adversarial: float, lambda_topk: float) -> AuthorsLoss:
    """``CE(f(x), y) + λ1·CE(f(x + δ*), y) + λ2·topk-L1(att(x + δ*), att(x))`` for one batch.

    logits, perturbed_logits: (B, C); attention, perturbed_attention: (B, T); labels: (B,);
    mask: (B, T). Cross-entropy of the softmax equals the authors' BCE of one sigmoid output
    for two classes; they sum over the batch where this takes the mean (Adam is invariant to
    the scale). Gradients flow through both attentions, as in their code.
    """
    clean = F.cross_entropy(logits, labels)
    adversarial = F.cross_entropy(perturbed_logits, labels)
    topk = authors_topk_loss(perturbed_attention, attention, k, mask)
    total = clean + lambda_adversarial * adversarial + lambda_topk * topk
    return AuthorsLoss(total, clean, adversarial, topk)


class AuthorsForward(NamedTuple):
    """Output of :class:`AuthorsSEATTrainer` for one batch."""

    logits: torch.Tensor               # (B, C) f(x)
    attention: torch.Tensor            # (B, T) att(x)
    perturbed_logits: torch.Tensor     # (B, C) f(x + delta*)
    perturbed_attention: torch.Tensor  # (B, T) att(x + delta*)
    labels: torch.Tensor               # (B,)
    mask: torch.Tensor                 # (B, T)


#: the authors' optimiser groups of :class:`AuthorsSEATTrainer` (skorch ``param_groups``):
#: attention (no weight decay) and decoder at Adam lr 1e-3; embedding and encoder at the net's lr
AUTHORS_PARAM_GROUPS = [("core.attention.*", {"lr": 1e-3, "weight_decay": 0.0}),
                        ("core.output.*", {"lr": 1e-3}), ("core.combine_*", {"lr": 1e-3})]


class AuthorsSEATTrainer(nn.Module):
    """The authors' SEAT step: clean forward, :func:`embedding_pgd` on the embeddings, and the
    forward at ``e + δ*`` (``δ*`` and the perturbed embeddings detached, as in their code).
    All parameters of ``core`` train; ``attack`` holds the keywords of :func:`embedding_pgd`."""

    def __init__(self, core: AttentionTextModule, attack: dict, seed: int):
        super().__init__()
        self.core, self.attack = core, dict(attack)
        self.generator = torch.Generator().manual_seed(int(seed))

    def forward(self, tokens, lengths, labels, query=None, query_lengths=None) -> AuthorsForward:
        core = self.core
        embedded = core.embed(tokens)
        clean = core(tokens, lengths, query, query_lengths, embedded=embedded)

        def predict(e):
            return core(tokens, lengths, query, query_lengths, embedded=e).logits

        delta = embedding_pgd(predict, embedded, clean.mask, labels, generator=self.generator,
                              **self.attack)
        adv = core(tokens, lengths, query, query_lengths, embedded=embedded.detach() + delta)
        return AuthorsForward(clean.logits, clean.attention, adv.logits, adv.attention, labels,
                              clean.mask)


class AuthorsSEATCriterion(nn.Module):
    """:func:`authors_objective`; the batch's terms are kept in ``last_terms``."""

    def __init__(self, k, lambda_adversarial, lambda_topk):
        super().__init__()
        self.k, self.lambda_adversarial, self.lambda_topk = k, lambda_adversarial, lambda_topk
        self.last_terms = {}

    def forward(self, out: AuthorsForward, y=None):
        loss = authors_objective(out.logits, out.attention, out.perturbed_logits,
                                 out.perturbed_attention, out.labels, out.mask, self.k,
                                 self.lambda_adversarial, self.lambda_topk)
        self.last_terms = {name: float(getattr(loss, name).detach())
                           for name in ("clean", "adversarial", "topk")}
        return loss.total
