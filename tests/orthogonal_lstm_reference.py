"""The orthogonal LSTM of :mod:`interpretable.nn._recurrent` as a plain autograd loop: the
reference its fused scan (exact forward, hand-written backward) is tested against and the
baseline ``benchmarks/bench_diversity_lstm.py`` times it against.

>>> import torch
>>> x, mask = torch.zeros(2, 3, 4), torch.ones(2, 3, dtype=torch.bool)
>>> weights = torch.zeros(4 * 5, 4), torch.zeros(4 * 5, 5), torch.zeros(4 * 5)
>>> orthogonal_lstm_reference(x, mask, *weights).shape
torch.Size([2, 3, 5])
"""
from __future__ import annotations

import torch

from interpretable.nn._recurrent import _EPS

__all__ = ["orthogonal_lstm_reference"]


def orthogonal_lstm_reference(x, mask, weight_ih, weight_hh, bias) -> torch.Tensor:
    """Plain autograd recurrence over the padded batch, masking every step.

    Same contract as :func:`interpretable.nn._recurrent.orthogonal_lstm`: ``x (B, T, E)``,
    ``mask (B, T)`` (True on real tokens), ``weight_ih (4H, E)``, ``weight_hh (4H, H)``,
    ``bias (4H,)``; returns ``(B, T, H)``, zero on padding.
    """
    B, T, _ = x.shape
    h = c = s = x.new_zeros(B, weight_hh.shape[1])
    xw = x @ weight_ih.t() + bias
    m = mask.to(x.dtype).unsqueeze(-1)
    outs = []
    for t in range(T):
        i, f, g, o = (xw[:, t] + h @ weight_hh.t()).chunk(4, 1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        hh = torch.sigmoid(o) * torch.tanh(c_new)
        coef = (hh * s).sum(1, keepdim=True) / ((s * s).sum(1, keepdim=True) + _EPS)
        h_new = hh - coef * s
        mt = m[:, t]
        h = mt * h_new + (1 - mt) * h
        c = mt * c_new + (1 - mt) * c
        s = s + mt * h_new
        outs.append(mt * h_new)
    return torch.stack(outs, 1)
