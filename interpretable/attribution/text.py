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
    """Token attributions of a batch, as :func:`attribute_tokens` returns them.

    Parameters
    ----------
    scores : torch.Tensor of shape (B, T)
        The attributions, zero where ``mask`` is False.
    baseline_logit : torch.Tensor of shape (B,) or None
        The target logit at the all-zero embedding (integrated gradients only, else None).

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution.text import TokenAttributions
    >>> TokenAttributions(scores=torch.zeros(1, 3), baseline_logit=None).scores.shape
    torch.Size([1, 3])
    """
    scores: torch.Tensor
    baseline_logit: Optional[torch.Tensor]


def attribute_tokens(forward: Callable[..., torch.Tensor], embedded: torch.Tensor,
                     target: torch.Tensor, method: str = "integrated_gradients", *,
                     mask: torch.Tensor, additional_forward_args: tuple = (),
                     n_steps: int = 50) -> TokenAttributions:
    """Attribute each sample's ``target`` logit to its tokens with a captum gradient method.

    Parameters
    ----------
    forward : callable
        ``forward(embedded (B, T, E), *additional_forward_args) -> logits (B, C)``.
    embedded : torch.Tensor of shape (B, T, E)
        Embeddings (detached).
    target : torch.Tensor of shape (B,)
        Class indices whose logit is explained.
    method : str, default="integrated_gradients"
        One of :data:`GRADIENT_METHODS`.
    mask : torch.Tensor of shape (B, T)
        Bool, True on the real tokens.
    additional_forward_args : tuple, default=()
        Further arguments of ``forward``.
    n_steps : int, default=50
        Integration steps of integrated gradients.

    Returns
    -------
    TokenAttributions
        The scores (B, T) and, for integrated gradients, the baseline logit.

    Examples
    --------
    >>> import torch
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.attribution.text import attribute_tokens
    >>> clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, device="cpu")
    >>> clf = clf.fit(["good film", "bad film"], [1, 0])
    >>> _, batch = next(clf.iter_batches(clf.encode(["good film"]).inputs))
    >>> result = attribute_tokens(lambda embedded: clf.forward_batch(batch, embedded=embedded),
    ...                           clf.embed(batch), torch.tensor([1]),
    ...                           mask=torch.ones(1, 2, dtype=torch.bool), n_steps=8)
    >>> result.scores.shape, result.baseline_logit.shape
    (torch.Size([1, 2]), torch.Size([1]))
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
