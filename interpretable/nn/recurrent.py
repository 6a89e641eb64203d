"""Recurrent encoders for attention text models.

All encoders take ``embedded (B, T, E)`` and a boolean ``mask (B, T)`` (True on real tokens;
padding at the end of each row) and return ``hidden (B, T, output_size)`` that is exactly zero
on padding.

:class:`OrthogonalLSTM` is the cell of Mohankumar et al. (ACL 2020, eqs. 1-2): each LSTM output
``ĥ_t`` loses its component along ``h̄_t = Σ_{i<t} h_i``, the sum of the previous (orthogonalised)
hidden states, and the orthogonalised ``h_t`` is fed back into the recurrence.
"""
from __future__ import annotations

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

__all__ = ["OrthogonalLSTM", "RecurrentEncoder", "orthogonal_lstm", "RECURRENT_KINDS"]

RECURRENT_KINDS = ("rnn", "lstm", "bilstm", "orthogonal")

#: below this squared norm, ``h̄_t`` is treated as zero (``t = 0`` or cancelled states).
_EPS = 1e-12


def _orthogonal_lstm_reference(xw, mask, weight_hh):
    """Plain autograd recurrence (reference for tests). Same contract as :func:`orthogonal_lstm`."""
    B, T, H4 = xw.shape
    H = H4 // 4
    h = xw.new_zeros(B, H)
    c = xw.new_zeros(B, H)
    s = xw.new_zeros(B, H)
    outs = []
    m = mask.to(xw.dtype).unsqueeze(-1)
    for t in range(T):
        z = xw[:, t] + h @ weight_hh
        i, f, g, o = z.chunk(4, 1)
        c_new = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        hh = torch.sigmoid(o) * torch.tanh(c_new)
        ss = (s * s).sum(1, keepdim=True)
        coef = torch.where(ss > _EPS, (hh * s).sum(1, keepdim=True) / ss.clamp_min(_EPS),
                           torch.zeros_like(ss))
        h_new = hh - coef * s
        mt = m[:, t]
        h = mt * h_new + (1 - mt) * h
        c = mt * c_new + (1 - mt) * c
        s = s + mt * h_new
        outs.append(mt * h_new)
    return torch.stack(outs, 1)


class _OrthogonalLSTMFunction(torch.autograd.Function):
    """Fused orthogonal-LSTM scan with a hand-written backward pass through time.

    Forward keeps only what backward needs (gates, cell states, projection coefficients), so no
    autograd graph is built per time step; backward runs one fused loop. This is what makes the
    Python-level recurrence fast (see benchmarks/bench_diversity_lstm.py).
    """

    @staticmethod
    def forward(ctx, xw, mask, weight_hh):
        B, T, H4 = xw.shape
        H = H4 // 4
        m = mask.to(xw.dtype).unsqueeze(-1)  # (B, T, 1)
        gates = torch.empty(T, B, H4, dtype=xw.dtype, device=xw.device)   # i f g o, activated
        cells = torch.empty(T + 1, B, H, dtype=xw.dtype, device=xw.device)  # c_{-1} .. c_{T-1}
        hprev = torch.empty(T + 1, B, H, dtype=xw.dtype, device=xw.device)  # recurrent inputs
        sums = torch.empty(T + 1, B, H, dtype=xw.dtype, device=xw.device)   # h̄_t before step t
        tanh_c = torch.empty(T, B, H, dtype=xw.dtype, device=xw.device)     # tanh(c_t) (unmasked)
        coefs = torch.empty(T, B, 1, dtype=xw.dtype, device=xw.device)
        out = torch.empty(B, T, H, dtype=xw.dtype, device=xw.device)
        cells[0].zero_()
        hprev[0].zero_()
        sums[0].zero_()
        xw_t = xw.transpose(0, 1)
        for t in range(T):
            z = torch.addmm(xw_t[t], hprev[t], weight_hh)
            g = gates[t]
            torch.sigmoid(z, out=g)
            g[:, 2 * H:3 * H].copy_(torch.tanh(z[:, 2 * H:3 * H]))
            i, f, gg, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
            c_new = torch.addcmul(f * cells[t], i, gg)
            tc = torch.tanh(c_new, out=tanh_c[t])
            hh = o * tc
            s = sums[t]
            ss = (s * s).sum(1, keepdim=True)
            coef = torch.where(ss > _EPS, (hh * s).sum(1, keepdim=True) / ss.clamp_min(_EPS),
                               torch.zeros_like(ss))
            h_new = hh - coef * s
            mt = m[:, t]
            coefs[t] = coef
            torch.lerp(cells[t], c_new, mt, out=cells[t + 1])
            torch.lerp(hprev[t], h_new, mt, out=hprev[t + 1])
            y = mt * h_new
            torch.add(s, y, out=sums[t + 1])
            out[:, t] = y
        ctx.save_for_backward(m, weight_hh, gates, cells, hprev, sums, tanh_c, coefs)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        m, weight_hh, gates, cells, hprev, sums, tanh_c, coefs = ctx.saved_tensors
        T, B, H4 = gates.shape
        H = H4 // 4
        grad_out = grad_out.transpose(0, 1)
        dz_all = torch.empty(T, B, H4, dtype=gates.dtype, device=gates.device)
        dh = torch.zeros(B, H, dtype=gates.dtype, device=gates.device)   # dL/d h_{t} (recurrent)
        dc = torch.zeros(B, H, dtype=gates.dtype, device=gates.device)   # dL/d c_{t}
        ds = torch.zeros(B, H, dtype=gates.dtype, device=gates.device)   # dL/d h̄_{t+1}
        weight_t = weight_hh.t()
        for t in range(T - 1, -1, -1):
            mt = m[:, t]
            s = sums[t]
            coef = coefs[t]
            # outputs of step t: y_t = m h_new, hprev[t+1] = lerp(hprev[t], h_new, m),
            # sums[t+1] = s + m h_new, cells[t+1] = lerp(cells[t], c_new, m)
            dh_new = mt * (grad_out[t] + dh + ds)
            dc_new = mt * dc
            dh_keep = (1 - mt) * dh
            dc_keep = (1 - mt) * dc
            # h_new = hh - coef s, coef = (hh·s)/(s·s) (0 when s ≈ 0)
            ss = (s * s).sum(1, keepdim=True)
            active = (ss > _EPS).to(s.dtype)
            dcoef = -(dh_new * s).sum(1, keepdim=True) * active
            inv = active / ss.clamp_min(_EPS)
            dhh = dh_new + dcoef * inv * s
            g = gates[t]
            i, f, gg, o = g[:, :H], g[:, H:2 * H], g[:, 2 * H:3 * H], g[:, 3 * H:]
            tc = tanh_c[t]
            ds_prev = ds - coef * dh_new + dcoef * inv * (o * tc - 2 * coef * s)
            # hh = o tanh(c_new)
            dc_new = dc_new + dhh * o * (1 - tc * tc)
            dz = dz_all[t]
            dz[:, :H] = dc_new * gg * i * (1 - i)
            dz[:, H:2 * H] = dc_new * cells[t] * f * (1 - f)
            dz[:, 2 * H:3 * H] = dc_new * i * (1 - gg * gg)
            dz[:, 3 * H:] = dhh * tc * o * (1 - o)
            dc = dc_keep + dc_new * f
            dh = dh_keep + dz @ weight_t
            ds = ds_prev
        grad_xw = dz_all.transpose(0, 1) if ctx.needs_input_grad[0] else None
        grad_w = None
        if ctx.needs_input_grad[2]:
            grad_w = hprev[:-1].reshape(T * B, H).t() @ dz_all.reshape(T * B, H4)
        return grad_xw, None, grad_w


def orthogonal_lstm(xw: torch.Tensor, mask: torch.Tensor, weight_hh: torch.Tensor) -> torch.Tensor:
    """Run the orthogonal LSTM recurrence.

    Args:
        xw: ``(B, T, 4H)`` input projections ``W x_t + b`` (gate order i, f, g, o).
        mask: ``(B, T)`` bool, True on real tokens (padding at the end).
        weight_hh: ``(H, 4H)`` recurrent weights (``h_{t-1} @ weight_hh``).

    Returns:
        ``(B, T, H)`` orthogonalised hidden states, zero on padding.
    """
    return _OrthogonalLSTMFunction.apply(xw, mask, weight_hh)


class OrthogonalLSTM(nn.Module):
    """Orthogonal LSTM layer (single layer, unidirectional, batch first).

    ``forward(embedded (B, T, E), mask (B, T)) -> hidden (B, T, H)``.
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = hidden_size
        self.input_proj = nn.Linear(input_size, 4 * hidden_size)
        self.weight_hh = nn.Parameter(torch.empty(hidden_size, 4 * hidden_size))
        self.reset_parameters()

    def reset_parameters(self):
        bound = self.hidden_size ** -0.5
        nn.init.uniform_(self.input_proj.weight, -bound, bound)
        nn.init.uniform_(self.input_proj.bias, -bound, bound)
        nn.init.uniform_(self.weight_hh, -bound, bound)

    def forward(self, embedded: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return orthogonal_lstm(self.input_proj(embedded), mask, self.weight_hh)


class RecurrentEncoder(nn.Module):
    """One-layer recurrent encoder: ``"rnn" | "lstm" | "bilstm" | "orthogonal"``.

    ``forward(embedded (B, T, E), mask (B, T)) -> hidden (B, T, output_size)``, zero on padding.
    ``output_size`` is ``hidden_size`` (``2 * hidden_size`` for ``"bilstm"``).
    """

    def __init__(self, kind: str, input_size: int, hidden_size: int):
        super().__init__()
        if kind not in RECURRENT_KINDS:
            raise ValueError(f"encoder must be one of {RECURRENT_KINDS} or an nn.Module, got {kind!r}")
        self.kind = kind
        self.hidden_size = hidden_size
        if kind == "orthogonal":
            self.rnn = OrthogonalLSTM(input_size, hidden_size)
        elif kind == "rnn":
            self.rnn = nn.RNN(input_size, hidden_size, batch_first=True)
        else:
            self.rnn = nn.LSTM(input_size, hidden_size, batch_first=True,
                               bidirectional=kind == "bilstm")
        self.output_size = 2 * hidden_size if kind == "bilstm" else hidden_size

    def forward(self, embedded: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        if self.kind == "orthogonal":
            return self.rnn(embedded, mask)
        if self.kind == "bilstm":
            # the backward direction must start at each row's last real token: pack
            lengths = mask.sum(1).clamp_min(1).cpu()
            packed = pack_padded_sequence(embedded, lengths, batch_first=True, enforce_sorted=False)
            hidden, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True,
                                            total_length=embedded.shape[1])
        else:
            # right padding never reaches the real positions of a forward recurrence
            hidden = self.rnn(embedded)[0]
        return hidden * mask.unsqueeze(-1).to(hidden.dtype)

    def final_state(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """``(B, output_size)`` summary: last real state (for ``"bilstm"``: forward half at the
        last real token, backward half at the first)."""
        last = (mask.sum(1) - 1).clamp_min(0)
        idx = torch.arange(hidden.shape[0], device=hidden.device)
        final = hidden[idx, last]
        if self.kind == "bilstm":
            H = self.hidden_size
            final = torch.cat([final[:, :H], hidden[:, 0, H:]], dim=1)
        return final
