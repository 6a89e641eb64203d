"""Post-hoc token attributions through the embedding layer (captum), captum-style: one call
over a forward function of the embeddings.

Token scores reduce the embedding axis: ``"gradient"`` is the L2 norm of ∂logit/∂e_t (saliency,
non-negative); ``"input_x_gradient"`` and ``"integrated_gradients"`` are summed over the
embedding axis (signed; integrated gradients satisfy completeness against an all-zero embedding
baseline).
"""
from __future__ import annotations

from contextlib import nullcontext
from typing import Callable, NamedTuple, Optional

import torch

__all__ = ["GRADIENT_METHODS", "TokenAttributions", "attribute_tokens"]

GRADIENT_METHODS = ("gradient", "integrated_gradients", "input_x_gradient")
#: embeddings evaluated per forward pass inside integrated gradients (bounds its memory)
_IG_INTERNAL_BATCH = 4096


class TokenAttributions(NamedTuple):
    """``scores (B, T)``, zero where ``mask`` is False; ``baseline_logit (B,)``: the target
    logit at the all-zero embedding (integrated gradients only, else None)."""
    scores: torch.Tensor
    baseline_logit: Optional[torch.Tensor]


def attribute_tokens(forward: Callable[..., torch.Tensor], embedded: torch.Tensor,
                     target: torch.Tensor, method: str = "integrated_gradients", *,
                     mask: torch.Tensor, additional_forward_args: tuple = (),
                     n_steps: int = 50) -> TokenAttributions:
    """Attribute each sample's ``target`` logit to its tokens.

    Args:
        forward: ``forward(embedded (B, T, E), *additional_forward_args) -> logits (B, C)``.
        embedded: ``(B, T, E)`` embeddings (detached).
        target: ``(B,)`` class indices whose logit is explained.
        method: one of :data:`GRADIENT_METHODS`.
        mask: ``(B, T)`` bool, the real tokens.
        n_steps: integration steps of integrated gradients.
    """
    from captum.attr import InputXGradient, IntegratedGradients, Saliency

    if method not in GRADIENT_METHODS:
        raise ValueError(f"method={method!r} is not a gradient method; choose one of "
                         f"{list(GRADIENT_METHODS)}.")
    if isinstance(n_steps, bool) or not isinstance(n_steps, int) or n_steps < 1:
        raise ValueError(f"n_steps must be a positive integer, got {n_steps!r}.")
    embedded = embedded.detach().requires_grad_(True)
    args = tuple(additional_forward_args)
    baseline_logit = None
    # cuDNN RNNs refuse backward in eval mode; the native kernels do not
    cudnn_off = (torch.backends.cudnn.flags(enabled=False) if embedded.device.type == "cuda"
                 else nullcontext())
    with cudnn_off, torch.enable_grad():
        if method == "gradient":
            attr = Saliency(forward).attribute(embedded, target=target, abs=False,
                                               additional_forward_args=args)
            scores = attr.norm(dim=-1)
        elif method == "input_x_gradient":
            scores = InputXGradient(forward).attribute(
                embedded, target=target, additional_forward_args=args).sum(-1)
        else:
            baseline = torch.zeros_like(embedded)
            scores = IntegratedGradients(forward).attribute(
                embedded, baselines=baseline, target=target, additional_forward_args=args,
                n_steps=n_steps, internal_batch_size=max(len(embedded), _IG_INTERNAL_BATCH),
            ).sum(-1)
            with torch.no_grad():
                baseline_logit = forward(baseline, *args).gather(1, target[:, None])[:, 0]
    return TokenAttributions((scores.detach() * mask).double(), baseline_logit)
