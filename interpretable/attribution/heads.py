"""Multi-head attention as a sum over heads.

Concatenating the H head outputs and projecting with ``W_O`` (D×D) equals projecting each head
with its own column slice ``W_O[:, h·d:(h+1)·d]`` (D×d) and summing over heads, so the output of
:class:`torch.nn.MultiheadAttention` splits exactly into one term per head (plus the output
bias).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

__all__ = ["HeadContributions", "head_contributions", "mha_forward"]


class HeadContributions(NamedTuple):
    """``terms.sum(-2) + bias`` equals the module output.

    terms : (B, L, H, E) for batch-first / (L, B, H, E) otherwise / (L, H, E) unbatched;
    bias : (E,) output-projection bias (zeros when the module has none);
    attention : (B, H, L, S) attention weights (before dropout).
    """

    terms: torch.Tensor
    bias: torch.Tensor
    attention: torch.Tensor


def _check_supported(mha: nn.MultiheadAttention) -> None:
    if not isinstance(mha, nn.MultiheadAttention):
        raise TypeError(f"mha must be a torch.nn.MultiheadAttention, got {type(mha).__name__}.")
    if mha.bias_k is not None or mha.add_zero_attn:
        raise ValueError("add_bias_kv / add_zero_attn modules are not supported.")


def _projections(mha: nn.MultiheadAttention):
    if mha._qkv_same_embed_dim:
        w_q, w_k, w_v = mha.in_proj_weight.chunk(3)
    else:
        w_q, w_k, w_v = mha.q_proj_weight, mha.k_proj_weight, mha.v_proj_weight
    if mha.in_proj_bias is not None:
        b_q, b_k, b_v = mha.in_proj_bias.chunk(3)
    else:
        b_q = b_k = b_v = None
    return (w_q, b_q), (w_k, b_k), (w_v, b_v)


def _heads(mha, query, key, value, attn_mask=None, key_padding_mask=None, dropout=0.0):
    """Batch-first (B, L, E) inputs -> (head outputs (B, H, L, d), attention (B, H, L, S)).

    The returned attention is taken before dropout (as ``nn.MultiheadAttention`` does)."""
    (w_q, b_q), (w_k, b_k), (w_v, b_v) = _projections(mha)
    bsz, n_q, _ = query.shape
    n_k = key.shape[1]
    h, d = mha.num_heads, mha.head_dim
    q = F.linear(query, w_q, b_q).view(bsz, n_q, h, d).transpose(1, 2)
    k = F.linear(key, w_k, b_k).view(bsz, n_k, h, d).transpose(1, 2)
    v = F.linear(value, w_v, b_v).view(bsz, n_k, h, d).transpose(1, 2)
    scores = q @ k.transpose(-1, -2) / math.sqrt(d)
    if attn_mask is not None:
        mask = attn_mask.view(bsz, h, n_q, n_k) if attn_mask.dim() == 3 else attn_mask
        scores = scores.masked_fill(mask, float("-inf")) if mask.dtype == torch.bool \
            else scores + mask
    if key_padding_mask is not None:
        pad = key_padding_mask.view(bsz, 1, 1, n_k)
        scores = scores.masked_fill(pad, float("-inf")) if pad.dtype == torch.bool \
            else scores + pad
    attn = scores.softmax(-1)
    dropped = F.dropout(attn, dropout) if dropout > 0 else attn
    return dropped @ v, attn


def _batch_first(mha, x):
    if x is None:
        return None
    return x.transpose(0, 1) if not mha.batch_first else x


def head_contributions(mha: nn.MultiheadAttention, x: torch.Tensor, key: torch.Tensor | None = None,
                       value: torch.Tensor | None = None, *, attn_mask=None,
                       key_padding_mask=None) -> HeadContributions:
    """Per-head project-then-sum terms of ``mha(x, key, value)`` (self-attention by default).

    ``x``: (B, L, E) if ``mha.batch_first`` else (L, B, E), or unbatched (L, E); masks as for
    ``mha.forward``. Dropout is not applied (the identity holds in eval mode or dropout=0).
    """
    _check_supported(mha)
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
    heads, attn = _heads(mha, x, key, value, attn_mask, key_padding_mask)
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


def mha_forward(mha: nn.MultiheadAttention, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention with attention weights kept in the autograd graph.

    x: batch-first (B, L, E) -> (output (B, L, E), attention (B, H, L, L)); numerically the
    same as ``mha(x, x, x)`` in eval mode, and gradients w.r.t. the attention are available.
    """
    _check_supported(mha)
    heads, attn = _heads(mha, x, x, x, dropout=mha.dropout if mha.training else 0.0)
    bsz, _, n, _ = heads.shape
    concat = heads.transpose(1, 2).reshape(bsz, n, mha.embed_dim)
    return mha.out_proj(concat), attn
