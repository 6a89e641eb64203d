"""The one gradient attack loop: projected gradient ascent on a perturbation."""

from __future__ import annotations

from typing import Callable

import torch

__all__ = ["projected_gradient_ascent"]


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
