"""Perturbation attacks, all on one loop: projected gradient ascent onto norm balls.

* :func:`projected_gradient_ascent`: the one attack loop (normalised or sign steps, each
  followed by a projection);
* :func:`project_ball`: the one projection onto ``{‖δ‖ ≤ r}`` (ℓ2 or ℓ∞, along any axis);
* :func:`pgd_attention`: SEAT's inner maximisation over attention perturbations;
* :func:`embedding_pgd`: the SEAT authors' attack on word embeddings (gold-label margin);
* :func:`embedding_attack`: PGD on the embeddings of selected tokens (faithfulness metrics).

Shapes: ``B`` batch, ``T`` tokens, ``E`` embedding size, ``C`` classes.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F

from interpretable.nn._losses import prediction_divergence

#: the norms of the balls perturbations are projected onto
NORMS = ("l2", "linf")


def projected_gradient_ascent(objective: Callable[[torch.Tensor], torch.Tensor],
                              delta: torch.Tensor,
                              project: Callable[[torch.Tensor], torch.Tensor], *, steps: int,
                              step_size, norm_dim: int | None = -1,
                              grad_mask: torch.Tensor | None = None) -> torch.Tensor:
    """Maximise ``objective(delta)`` (a scalar, e.g. summed over the batch) by ``steps``
    normalised gradient steps, each followed by ``project``.

    A step moves ``delta`` by ``step_size`` (a float or a tensor broadcastable to ``delta``)
    along the gradient divided by its L2 norm over ``norm_dim`` (``None``: its sign, the
    ``linf`` ascent of Madry et al. 2018). ``grad_mask`` zeroes the gradient where the
    perturbation is not allowed. Returns the detached ``delta``.
    """
    for _ in range(steps):
        delta = delta.detach().requires_grad_(True)
        with torch.enable_grad():
            (grad,) = torch.autograd.grad(objective(delta), delta)
        with torch.no_grad():
            if grad_mask is not None:
                grad = grad * grad_mask
            if norm_dim is None:
                step = grad.sign()
            else:
                step = grad / grad.norm(dim=norm_dim, keepdim=True).clamp_min(1e-12)
            delta = project(delta + step_size * step)
    return delta.detach()


def project_ball(delta: torch.Tensor, radius: float | torch.Tensor, norm: str = "l2",
                 dim: int = -1) -> torch.Tensor:
    """Euclidean projection of every vector of ``delta`` along ``dim`` onto ``{‖δ‖ ≤ r}``.

    ``radius`` is a float, a (B,) tensor of per-sample radii or a tensor broadcastable to
    ``delta``; ``norm`` is ``"l2"`` or ``"linf"`` (clipping every entry to ``[-r, r]``).
    E.g. rows of attention perturbations (B, T) with ``dim=-1``, or every token of embedding
    perturbations (B, T, E) with ``dim=-1``.
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be one of {list(NORMS)}, got {norm!r}")
    radius = torch.as_tensor(radius, dtype=delta.dtype, device=delta.device)
    if radius.dim() == 1:
        radius = radius.reshape((-1,) + (1,) * (delta.dim() - 1))
    if norm == "linf":
        return torch.maximum(torch.minimum(delta, radius), -radius)
    scale = (radius / delta.norm(dim=dim, keepdim=True).clamp_min(1e-12)).clamp(max=1.0)
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
    """SEAT's inner maximisation of (6): ``argmax_{‖δ‖≤R} D2(y(x, w), y(x, w + δ))`` by PGD.

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


def gold_margin(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """``½|y − p_y|`` per row = ``½(1 − softmax(logits)[label])``, (B,): the SEAT authors'
    attack objective ``½|y − σ(logit)|`` (their TVD to the gold label; equal for two classes).

    logits: (B, C); labels: (B,) class indices."""
    p_gold = F.softmax(logits, dim=-1).gather(1, labels.long()[:, None])[:, 0]
    return 0.5 * (1.0 - p_gold)


def check_clamp(clamp, name: str = "clamp"):
    """Raise a ValueError unless ``clamp`` is None or ``(low, high)`` with ``low < high``."""
    if clamp is not None and not (len(clamp) == 2 and clamp[0] < clamp[1]):
        raise ValueError(f"{name} must be None or (low, high) with low < high, got {clamp!r}.")


def embedding_pgd(predict: Callable[[torch.Tensor], torch.Tensor], embedded: torch.Tensor,
                  mask: torch.Tensor, labels: torch.Tensor, radius: float, *, steps: int = 10,
                  step_size: float | None = None, norm: str = "linf",
                  clamp: tuple[float, float] | None = None,
                  generator: torch.Generator | None = None) -> torch.Tensor:
    """The SEAT authors' embedding attack: PGD ascending :func:`gold_margin` of ``labels``.

    predict: maps embeddings (B, T, E) to logits (B, C); embedded: clean (B, T, E) (detached
    here); mask: (B, T) bool, padding stays unperturbed. Start uniform in ``[−r, r]``, then
    ``steps`` steps of ``step_size`` (default ``2r/steps``): ``sign(g)`` in the ``"linf"``
    ball ``|δ|∞ ≤ r``, ``g/‖g_t‖₂`` in the ``"l2"`` ball ``‖δ_t‖₂ ≤ r`` of every token.
    ``clamp=(lo, hi)`` clamps ``e + δ`` into ``[lo, hi]`` after every projection (the
    authors' code uses ``(0, 1)``: a destructive step, ``δ`` then exceeds ``r``). Returns the
    detached offset ``δ`` (B, T, E) (perturbed embeddings ``e + δ``).
    """
    if norm not in NORMS:
        raise ValueError(f"norm must be 'linf' or 'l2', got {norm!r}")
    check_clamp(clamp)
    if radius < 0 or steps < 0:
        raise ValueError(f"radius and steps must be >= 0, got {radius!r} and {steps!r}")
    e = embedded.detach()
    if radius == 0 or steps == 0:
        return torch.zeros_like(e)
    real = mask[..., None].to(e.dtype)

    def project(delta):
        delta = project_ball(delta, radius, norm)
        if clamp is not None:
            delta = (e + delta).clamp(*clamp) - e
        return delta * real

    noise = torch.rand(e.shape, generator=generator, dtype=e.dtype).to(e.device)
    return projected_gradient_ascent(
        lambda d: gold_margin(predict(e + d), labels).sum(), project((2 * noise - 1) * radius),
        project, steps=steps, step_size=2 * radius / steps if step_size is None else step_size,
        norm_dim=None if norm == "linf" else -1, grad_mask=real)


def embedding_attack(objective: Callable[[torch.Tensor], torch.Tensor], delta: torch.Tensor,
                     radius, *, steps: int, mask: torch.Tensor) -> torch.Tensor:
    """PGD on token embeddings from ``delta`` (B, T, E): maximise ``objective(delta)`` with
    every token's ``‖δ_t‖₂ ≤ radius`` (``radius`` broadcastable to ``(B, 1, 1)``), steps of
    ``2.5·radius/steps``; ``mask (B, T, 1)`` marks the tokens that may move."""
    return projected_gradient_ascent(
        objective, delta, lambda d: project_ball(d, radius) * mask, steps=steps,
        step_size=2.5 * radius / steps, norm_dim=-1, grad_mask=mask)
