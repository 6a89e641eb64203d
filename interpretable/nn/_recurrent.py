"""Recurrent encoders for attention text models.

All encoders take ``embedded (B, T, E)`` and a boolean ``mask (B, T)`` (True on real tokens;
padding at the end of each row) and return ``hidden (B, T, output_size)`` that is exactly zero
on padding.

:class:`OrthogonalLSTM` is the cell of Mohankumar et al. (ACL 2020, eqs. 1-2): each LSTM output
``ĥ_t`` loses its component along ``h̄_t = Σ_{i<t} h_i``, the sum of the previous (orthogonalised)
hidden states, and the orthogonalised ``h_t`` is fed back into the recurrence.

Mixed precision: torch's fused recurrent kernels may lack autocast's dtype on a device (oneDNN's
bfloat16 LSTM, which torch runs on x86 CPUs, needs AVX-512: it is missing on other processors
and where oneDNN is capped below it, ``ONEDNN_MAX_CPU_ISA``). :func:`autocast_failure` probes
that once per process, :func:`recurrent_forward` then runs such a layer in its parameters'
float32, and :func:`autocast_fallbacks` lists the layers of a model it concerns.
"""
from __future__ import annotations

import functools
import re
from typing import NamedTuple

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from interpretable.nn._tensors import autocast_dtype

__all__ = ["OrthogonalLSTM", "orthogonal_lstm"]

RECURRENT_KINDS = ("rnn", "lstm", "bilstm", "orthogonal")

#: ``ε`` in the projection's denominator ``‖h̄_t‖² + ε``: ``h̄_0 = 0`` removes nothing, and the
#: projection stays smooth where ``h̄_t`` vanishes (negligible against any real ``‖h̄_t‖²``).
_EPS = 1e-12


def _pack(mask):
    """Packed layout of a ``(B, T)`` mask with padding at the end of each row.

    Returns ``index (N,)``, the positions ``b * T + t`` of the real tokens ordered by step, then
    by decreasing length (stable), and ``sizes``, the number of sequences running at each step
    (``B_t``, non-increasing, up to the longest sequence).
    """
    T = mask.shape[1]
    order = torch.argsort(mask.sum(1), descending=True, stable=True)
    running = mask[order].t()                                       # (T, B)
    positions = order * T + torch.arange(T, device=mask.device)[:, None]
    # a batch without tokens runs one empty step
    return positions[running], [n for n in running.sum(1).tolist() if n] or [0]


def _unpack(packed, index, shape):
    """Scatter packed rows back to a zero-padded ``shape = (B, T, ·)`` tensor."""
    return packed.new_zeros(shape[0] * shape[1], shape[2]).index_copy_(0, index, packed).view(shape)


def _blocks(x, sizes, shift=0):
    """Per-step row blocks of a packed ``(N, ...)`` tensor (``sizes``: rows per step): entry
    ``t`` is the block of step ``t + shift``, empty past the last step."""
    return x[sum(sizes[:shift]):].split(sizes[shift:] + [0] * shift)


def _heads(blocks, sizes):
    """The first ``sizes[t]`` rows of ``blocks[t]``."""
    return [block[:n] for block, n in zip(blocks, sizes, strict=True)]


def _carried(blocks, sizes):
    """What step ``t`` reads of a state written per step: the first ``B_t`` rows of step
    ``t - 1``'s block (zeros at ``t = 0``)."""
    return [blocks[0].new_zeros(blocks[0].shape), *_heads(blocks[:-1], sizes[1:])]


class _OrthogonalLSTMFunction(torch.autograd.Function):
    """Orthogonal-LSTM scan over packed sequences with a hand-written backward through time.

    The real tokens are packed as in a :class:`~torch.nn.utils.rnn.PackedSequence` (see
    :func:`_pack`): step ``t`` is a block of ``B_t`` rows, the sequences still running (longest
    first), so padding costs nothing and the first ``B_{t+1}`` rows of a step carry on into the
    next. Every ``(N, ·)`` buffer uses that layout; both passes run one Python loop of in-place /
    ``out=`` ops on a step's row blocks, without an autograd graph. Each step runs one GEMM of
    ``[x_t, h_{t-1}]`` against ``[W_ih, W_hh]`` (cheaper than a separate input projection with
    ``E = 50`` on CPU), and ``tanh`` runs as ``2σ(2x) - 1`` (several times faster than
    ``torch.tanh`` on CPU): the cell candidate's weights are doubled so that one sigmoid covers
    all four gates.
    """

    @staticmethod
    def forward(ctx, x, mask, weight_ih, weight_hh, bias):
        B, T, E = x.shape
        H = weight_hh.shape[1]
        index, sizes = _pack(mask)
        N = len(index)
        nxt = sizes[1:] + [0]                  # B_{t+1}
        weight = torch.cat([weight_ih, weight_hh], 1)                       # (4H, E + H)
        scale = x.new_tensor([1.0, 1.0, 2.0, 1.0]).repeat_interleave(H)  # σ(2 z_g)
        weight_scaled = (weight * scale.unsqueeze(1)).t()
        bias_scaled = bias * scale
        # constants as 0-dim tensors: a Python scalar costs a conversion per op
        minus_one, eps = x.new_tensor(-1.0), x.new_tensor(_EPS)
        inputs = x.new_empty(N, E + H)         # [x_t, h_{t-1}]
        inputs[:, :E] = x.reshape(B * T, E)[index]
        inputs[:sizes[0], E:] = 0
        gates = x.new_empty(N, 4 * H)          # σ(z_i), σ(z_f), σ(2 z_g), σ(z_o)
        cand, cells, tanh_c, h_hat, hidden, sums, s_q = x.new_empty(7, N, H)
        # g_t = tanh(z_g), c_t, tanh(c_t), ĥ_t = o_t tanh(c_t), h_t, h̄_t = Σ_{i<t} h_i, h̄_t / q_t
        sums[:sizes[0]] = 0
        sqnorm, coef = x.new_empty(2, N, 1)    # q_t = ‖h̄_t‖² + ε, coef_t = ĥ_t·h̄_t / q_t
        i, f, ag, o = gates.unflatten(1, (4, H)).unbind(1)
        cells_b, hidden_b, sums_b = (_blocks(b, sizes) for b in (cells, hidden, sums))
        steps = zip(*(_blocks(b, sizes) for b in (inputs, gates, i, f, ag, o, cand, tanh_c, h_hat,
                                                   sqnorm, s_q, coef)),
                    _carried(cells_b, sizes), cells_b, hidden_b, sums_b, _heads(hidden_b, nxt),
                    _heads(sums_b, nxt), _blocks(inputs[:, E:], sizes, 1), _blocks(sums, sizes, 1),
                    strict=True)
        for (inp, a, i, f, ag, o, g, tc, hh, q, sq, k, c_prev, c, h, s, h_on, s_on, h_next,
             s_next) in steps:
            torch.addmm(bias_scaled, inp, weight_scaled, out=a).sigmoid_()
            torch.add(minus_one, ag, alpha=2, out=g)
            torch.mul(f, c_prev, out=c).addcmul_(i, g)
            torch.add(c, c, out=tc).sigmoid_()
            torch.add(minus_one, tc, alpha=2, out=tc)
            torch.mul(o, tc, out=hh)
            torch.linalg.vecdot(s, s, out=q.squeeze(1)).add_(eps)
            torch.div(s, q, out=sq)
            torch.linalg.vecdot(hh, sq, out=k.squeeze(1))
            torch.addcmul(hh, k, s, value=-1, out=h)
            # the sequences still running at t + 1 carry h_t and h̄_{t+1} on
            h_next.copy_(h_on)
            torch.add(s_on, h_on, out=s_next)
        ctx.sizes = sizes
        ctx.save_for_backward(index, weight, inputs, gates, cand, cells, tanh_c, h_hat, hidden,
                              sums, s_q, coef)
        return _unpack(hidden, index, (B, T, H))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        index, weight, inputs, gates, cand, cells, tanh_c, h_hat, hidden, sums, s_q, coef = \
            ctx.saved_tensors
        sizes = ctx.sizes
        nxt = sizes[1:] + [0]
        B, T, _ = grad_out.shape
        N, H4 = gates.shape
        H = H4 // 4
        E = inputs.shape[1] - H
        need_x = ctx.needs_input_grad[0]
        if not need_x:
            weight = weight[:, E:]                      # dL/dh_{t-1} only
        four = gates.new_tensor(4.0)
        grad_hidden = grad_out.reshape(B * T, H).index_select(0, index)
        dz = torch.empty_like(gates)                    # dL/dz_t, z_t: gate pre-activations
        d_inputs = gates.new_empty(N, weight.shape[1])  # dL/d[x_t, h_{t-1}] through z_t
        # scratch for the rows of the running step: dL/dh_t, dL/dĥ_t, ∂ĥ_t/∂c_t = o (1 - tanh² c_t)
        dh, dhh, dc_dhh = gates.new_empty(3, sizes[0], H)
        da = gates.new_empty(sizes[0], 1)               # -dL/dcoef_t / q_t
        dc, ds = gates.new_zeros(2, sizes[0], H)        # dL/dc_t, dL/dh̄_{t+1}
        i, f, _, o = gates.unflatten(1, (4, H)).unbind(1)
        dz_i, dz_f, dz_g, dz_o = dz.unflatten(1, (4, H)).unbind(1)
        dh_b = [dh[:n] for n in sizes]
        steps = zip(*([b[:n] for n in sizes] for b in (dhh, dc_dhh, da, dc, ds)),
                    dh_b, _heads(dh_b, nxt), _blocks(d_inputs[:, -H:], sizes, 1),
                    *(_blocks(b, sizes) for b in (grad_hidden, dz, dz_i, dz_f, dz_g, dz_o, d_inputs,
                                                 gates, i, f, o, cand, tanh_c, h_hat, hidden, sums,
                                                 s_q, coef)),
                    _carried(_blocks(cells, sizes), sizes), strict=True)
        for (dhh, dc_dhh, da, dc, ds, dh, dh_on, dh_next, dy, dz_t, dz_i, dz_f, dz_g, dz_o, d_inp,
             a, i, f, o, g, tc, hh, h, s, sq, k, c_prev) in reversed(list(steps)):
            # h_t feeds y_t, h̄_{t+1} = h̄_t + h_t and (if still running) z_{t+1}
            torch.add(dy, ds, out=dh)
            dh_on.add_(dh_next)
            # h_t = ĥ_t - coef_t h̄_t, coef_t = ĥ_t·h̄_t / q_t
            torch.linalg.vecdot(dh, sq, out=da.squeeze(1))
            torch.addcmul(dh, da, s, value=-1, out=dhh)
            ds.addcmul_(k, dhh, value=-1).addcmul_(da, h, value=-1)
            # ĥ_t = o tanh(c_t), c_t = f c_{t-1} + i g; gates are σ(z) (g = 2σ(2 z_g) - 1)
            dc.addcmul_(dhh, torch.addcmul(o, hh, tc, value=-1, out=dc_dhh))
            torch.mul(dc, g, out=dz_i)
            torch.mul(dc, c_prev, out=dz_f)
            torch.mul(dc, i, out=dz_g).mul_(four)
            torch.mul(dhh, tc, out=dz_o)
            torch.ops.aten.sigmoid_backward.grad_input(dz_t, a, grad_input=dz_t)  # · σ(1 - σ)
            torch.mm(dz_t, weight, out=d_inp)
            dc.mul_(f)
        grad_x = _unpack(d_inputs[:, :E], index, (B, T, E)) if need_x else None
        grad_w = dz.t() @ inputs
        return grad_x, None, grad_w[:, :E], grad_w[:, E:], dz.sum(0)


def orthogonal_lstm(x: torch.Tensor, mask: torch.Tensor, weight_ih: torch.Tensor,
                    weight_hh: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Run the orthogonal LSTM recurrence.

    Parameters
    ----------
    x : torch.Tensor of shape (B, T, E)
        The inputs.
    mask : torch.Tensor of shape (B, T), bool
        True on real tokens (padding at the end of each row).
    weight_ih, weight_hh, bias : torch.Tensor of shapes (4H, E), (4H, H) and (4H,)
        The gate parameters in :class:`torch.nn.LSTM`'s layout and gate order (i, f, g, o).

    Returns
    -------
    torch.Tensor of shape (B, T, H)
        The orthogonalised hidden states, zero on padding.
    """
    return _OrthogonalLSTMFunction.apply(x, mask, weight_ih, weight_hh, bias)


# ---------------------------------------------------------------------------- mixed precision
#: the torch layer of each recurrent mode (``nn.RNNBase.mode``)
_LAYERS = {"LSTM": nn.LSTM, "GRU": nn.GRU, "RNN_TANH": nn.RNN,
           "RNN_RELU": functools.partial(nn.RNN, nonlinearity="relu")}


@functools.cache
def autocast_failure(mode: str, device: torch.device, dtype: torch.dtype) -> str | None:
    """Why torch cannot run a recurrent layer under autocast; None when it can.

    The layer is one of ``mode``, on ``device``, under autocast in ``dtype``. Probed once per
    process and arguments: a tiny layer (2 inputs, 2 units, 2 steps, built without touching
    the global RNG) runs forward and backward under autocast, with gradients on (also inside
    ``torch.inference_mode`` or ``torch.no_grad``); the first sentence of the ``RuntimeError``
    it raises is the reason (e.g. oneDNN's "could not create a primitive descriptor for the
    LSTM forward propagation primitive").

    Parameters
    ----------
    mode : {"LSTM", "GRU", "RNN_TANH", "RNN_RELU"}
        The layer's ``mode`` (:class:`torch.nn.RNNBase`).
    device : torch.device
        Where it runs.
    dtype : torch.dtype
        Autocast's dtype.

    Returns
    -------
    str or None
        The reason, or None.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn._recurrent import autocast_failure
    >>> autocast_failure("GRU", torch.device("cpu"), torch.bfloat16) is None  # CPU: not cast
    True
    """
    with torch.inference_mode(False), torch.enable_grad():
        with torch.random.fork_rng(devices=[]):
            layer = _LAYERS[mode](2, 2, batch_first=True)
        layer, x = layer.to(device), torch.ones(1, 2, 2, device=device)
        try:
            with torch.autocast(device.type, dtype=dtype):
                out = layer(x)[0]
            out.float().sum().backward()
        except RuntimeError as exc:
            return re.split(r"\.\s|\n", str(exc).strip(), maxsplit=1)[0]
    return None


def _failure(layer: nn.RNNBase, device: torch.device, dtype: torch.dtype | None) -> str | None:
    """Why torch cannot run ``layer`` under autocast in ``dtype`` on ``device``; None when it
    can, or when autocast would not cast it (no ``dtype``, parameters other than float32)."""
    if dtype is None or next(layer.parameters()).dtype != torch.float32:
        return None
    return autocast_failure(layer.mode, device, dtype)


def recurrent_forward(layer: nn.RNNBase, inputs, hx=None):
    """Run a torch recurrent layer, in float32 where autocast's dtype has no kernel for it.

    ``layer(inputs, hx)``, with autocast off and in the parameters' float32 (``inputs`` and
    ``hx`` cast) where torch cannot run ``layer`` in autocast's dtype on its device
    (:func:`autocast_failure`), else as called.

    Parameters
    ----------
    layer : torch.nn.RNNBase
        An ``nn.LSTM``, ``nn.GRU`` or ``nn.RNN``.
    inputs : torch.Tensor or PackedSequence
        Its input.
    hx : torch.Tensor, tuple of torch.Tensor or None, default=None
        Its initial state.

    Returns
    -------
    tuple
        Its output and final state.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn._recurrent import recurrent_forward
    >>> lstm = torch.nn.LSTM(4, 3, batch_first=True)
    >>> recurrent_forward(lstm, torch.zeros(2, 5, 4))[0].shape
    torch.Size([2, 5, 3])
    """
    weight = next(layer.parameters())
    if _failure(layer, weight.device, autocast_dtype(weight.device.type)) is None:
        return layer(inputs, hx)
    if hx is not None:
        hx = hx.to(weight.dtype) if isinstance(hx, torch.Tensor) \
            else tuple(h.to(weight.dtype) for h in hx)
    with torch.autocast(weight.device.type, enabled=False):
        return layer(inputs.to(weight.dtype), hx)


class AutocastFallback(NamedTuple):
    """A recurrent layer whose kernel torch lacks in autocast's dtype.

    What :func:`autocast_fallbacks` finds.

    Parameters
    ----------
    name : str
        Its qualified name in the model.
    kind : {"LSTM", "GRU", "RNN"}
        Its torch layer.
    reason : str
        Why torch cannot run it (:func:`autocast_failure`).
    handled : bool
        Whether its parent runs it through :func:`recurrent_forward` (in float32 then), as
        the modules with a true ``portable_autocast`` do; a layer run otherwise fails.

    Examples
    --------
    >>> from interpretable.nn._recurrent import AutocastFallback
    >>> AutocastFallback("encoder.rnn", "LSTM", "no kernel", handled=True).handled
    True
    """

    name: str
    kind: str
    reason: str
    handled: bool


def autocast_fallbacks(module: nn.Module, device, dtype: torch.dtype) -> list[AutocastFallback]:
    """Find the recurrent layers of a model that torch cannot run under autocast.

    Those of ``module`` whose kernels torch lacks in ``dtype`` on ``device`` (float32 layers
    only: autocast casts no other).

    Parameters
    ----------
    module : torch.nn.Module
        The model.
    device : str or torch.device
        Where it runs (its parameters may still be elsewhere).
    dtype : torch.dtype
        Autocast's dtype.

    Returns
    -------
    list of AutocastFallback
        The layers, in the order of ``module.named_modules()``.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn._recurrent import RecurrentEncoder, autocast_fallbacks
    >>> fallbacks = autocast_fallbacks(RecurrentEncoder("lstm", 4, 3), "cpu", torch.bfloat16)
    >>> all(layer.handled for layer in fallbacks)  # none, or run in float32 by the encoder
    True
    """
    device = torch.device(device)
    parents = {id(child): parent for parent in module.modules() for child in parent.children()}
    found = []
    for name, layer in module.named_modules():
        if isinstance(layer, nn.RNNBase):
            reason = _failure(layer, device, dtype)
            if reason is not None:
                found.append(AutocastFallback(
                    name, layer.mode.split("_")[0], reason,
                    bool(getattr(parents.get(id(layer)), "portable_autocast", False))))
    return found


class OrthogonalLSTM(nn.Module):
    """Orthogonal LSTM layer (single layer, unidirectional, batch first).

    ``forward(embedded (B, T, E), mask (B, T)) -> hidden (B, T, H)``. Parameters as in
    :class:`torch.nn.LSTM` (one bias): ``weight_ih (4H, E)``, ``weight_hh (4H, H)``,
    ``bias (4H,)``.
    """

    def __init__(self, input_size: int, hidden_size: int):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.output_size = hidden_size
        self.weight_ih = nn.Parameter(torch.empty(4 * hidden_size, input_size))
        self.weight_hh = nn.Parameter(torch.empty(4 * hidden_size, hidden_size))
        self.bias = nn.Parameter(torch.empty(4 * hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        bound = self.hidden_size ** -0.5
        for p in self.parameters():
            nn.init.uniform_(p, -bound, bound)

    def forward(self, embedded: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return orthogonal_lstm(embedded, mask, self.weight_ih, self.weight_hh, self.bias)


class RecurrentEncoder(nn.Module):
    """One-layer recurrent encoder: ``"rnn" | "lstm" | "bilstm" | "orthogonal"``.

    ``forward(embedded (B, T, E), mask (B, T)) -> hidden (B, T, output_size)``, zero on padding.
    ``output_size`` is ``hidden_size`` (``2 * hidden_size`` for ``"bilstm"``). Under autocast,
    a torch layer without a kernel in autocast's dtype runs in float32
    (:func:`recurrent_forward`).
    """

    #: its torch layer runs through :func:`recurrent_forward` (see :class:`AutocastFallback`)
    portable_autocast = True

    def __init__(self, kind: str, input_size: int, hidden_size: int):
        super().__init__()
        if kind not in RECURRENT_KINDS:
            raise ValueError(
                f"encoder must be one of {RECURRENT_KINDS} or an nn.Module, got {kind!r}")
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
            hidden, _ = pad_packed_sequence(recurrent_forward(self.rnn, packed)[0],
                                            batch_first=True, total_length=embedded.shape[1])
        else:
            # right padding never reaches the real positions of a forward recurrence
            hidden = recurrent_forward(self.rnn, embedded)[0]
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
