"""Self-attention of :class:`torch.nn.MultiheadAttention` computed head by head, with the
attention weights kept in the autograd graph (torch only; the per-head attribution built on it
is :mod:`interpretable.attribution`)."""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F


def check_mha(mha: nn.MultiheadAttention) -> None:
    """Raise unless ``mha`` is a :class:`torch.nn.MultiheadAttention` without extra keys."""
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


def mha_heads(mha: nn.MultiheadAttention, query: torch.Tensor, key: torch.Tensor,
              value: torch.Tensor, attn_mask=None, key_padding_mask=None, dropout: float = 0.0
              ) -> tuple[torch.Tensor, torch.Tensor]:
    """Batch-first (B, L, E) query and (B, S, ·) key/value -> (head outputs (B, H, L, d),
    attention (B, H, L, S)), before the output projection; masks as for ``mha.forward``.

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


def mha_forward(mha: nn.MultiheadAttention, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Self-attention with attention weights kept in the autograd graph.

    x: batch-first (B, L, E) -> (output (B, L, E), attention (B, H, L, L)); numerically the
    same as ``mha(x, x, x)`` in eval mode, and gradients w.r.t. the attention are available.
    """
    check_mha(mha)
    heads, attn = mha_heads(mha, x, x, x, dropout=mha.dropout if mha.training else 0.0)
    bsz, _, n, _ = heads.shape
    concat = heads.transpose(1, 2).reshape(bsz, n, mha.embed_dim)
    return mha.out_proj(concat), attn
