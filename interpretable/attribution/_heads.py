"""Multi-head attention as a sum over heads.

Concatenating the H head outputs and projecting with ``W_O`` (D×D) equals projecting each head
with its own column slice ``W_O[:, h·d:(h+1)·d]`` (D×d) and summing over heads, so the output of
:class:`torch.nn.MultiheadAttention` splits exactly into one term per head (plus the output
bias).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from interpretable.nn import check_mha, mha_heads

__all__ = ["HeadContributions", "head_contributions"]


class HeadContributions(NamedTuple):
    """The output of a multi-head attention split into one term per head.

    ``terms.sum(-2) + bias`` equals the module output.

    Parameters
    ----------
    terms : torch.Tensor of shape (B, L, H, E), (L, B, H, E) or (L, H, E)
        One term per head: batch-first, sequence-first or unbatched, as the input.
    bias : torch.Tensor of shape (E,)
        The output-projection bias (zeros when the module has none).
    attention : torch.Tensor of shape (B, H, L, S)
        The attention weights (before dropout).

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import head_contributions
    >>> mha = torch.nn.MultiheadAttention(8, num_heads=2, batch_first=True).eval()
    >>> x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(0))
    >>> parts = head_contributions(mha, x)
    >>> parts.terms.shape, parts.attention.shape
    (torch.Size([1, 5, 2, 8]), torch.Size([1, 2, 5, 5]))
    """

    terms: torch.Tensor
    bias: torch.Tensor
    attention: torch.Tensor


def _batch_first(mha, x):
    if x is None:
        return None
    return x.transpose(0, 1) if not mha.batch_first else x


def head_contributions(mha: nn.MultiheadAttention, x: torch.Tensor, key: torch.Tensor | None = None,
                       value: torch.Tensor | None = None, *,
                       attn_mask: torch.Tensor | None = None,
                       key_padding_mask: torch.Tensor | None = None) -> HeadContributions:
    """Split the output of ``mha(x, key, value)`` into per-head project-then-sum terms.

    Dropout is not applied (the identity holds in eval mode or with dropout=0).

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention
        The module.
    x : torch.Tensor of shape (B, L, E), (L, B, E) or (L, E)
        The queries: (B, L, E) if ``mha.batch_first`` else (L, B, E), or unbatched (L, E).
    key : torch.Tensor or None, default=None
        The keys (None: ``x``, self-attention).
    value : torch.Tensor or None, default=None
        The values (None: ``key``).
    attn_mask : torch.Tensor or None, default=None
        As for ``mha.forward``.
    key_padding_mask : torch.Tensor or None, default=None
        As for ``mha.forward``.

    Returns
    -------
    HeadContributions
        ``terms``, ``bias`` and ``attention``; ``terms.sum(-2) + bias`` is the output.

    Raises
    ------
    ValueError
        If ``x`` has the wrong shape or the module is not supported.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import head_contributions
    >>> mha = torch.nn.MultiheadAttention(8, num_heads=2, batch_first=True).eval()
    >>> x = torch.randn(1, 5, 8, generator=torch.Generator().manual_seed(0))
    >>> parts = head_contributions(mha, x)
    >>> output, _ = mha(x, x, x)
    >>> torch.allclose(parts.terms.sum(-2) + parts.bias, output, atol=1e-6)
    True
    """
    check_mha(mha)
    if x.dim() not in (2, 3) or x.shape[-1] != mha.embed_dim:
        raise ValueError(f"x must have shape (B, L, {mha.embed_dim}) or (L, {mha.embed_dim}), "
                         f"got {tuple(x.shape)}.")
    key = x if key is None else key
    value = key if value is None else value
    unbatched = x.dim() == 2
    if unbatched:
        x, key, value = x.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
        if key_padding_mask is not None:
            key_padding_mask = key_padding_mask.unsqueeze(0)
    elif not mha.batch_first:
        x, key, value = (_batch_first(mha, t) for t in (x, key, value))
    heads, attn = mha_heads(mha, x, key, value, attn_mask, key_padding_mask)
    w_o = mha.out_proj.weight.view(mha.embed_dim, mha.num_heads, mha.head_dim)
    terms = torch.einsum("bhld,ehd->blhe", heads, w_o)
    bias = mha.out_proj.bias
    if bias is None:
        bias = terms.new_zeros(mha.embed_dim)
    if unbatched:
        terms = terms.squeeze(0)
    elif not mha.batch_first:
        terms = terms.transpose(0, 1)
    return HeadContributions(terms, bias, attn)
