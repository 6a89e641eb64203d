"""Layers of the B-cos BERT encoder (B-cos LM, Wang et al., TMLR 2025), as converted from a
pretrained BERT: B-cos linear layers without MaxOut or scale factor, ``x·Φ(x)``, bias-free
LayerNorm and post-LN attention / feed-forward blocks.

Each is dynamic linear (see :mod:`interpretable.nn.bcos`): the attention probabilities, the
GELU gate ``Φ(x)``, the LayerNorm scale ``1/σ`` and the B-cos factors ``|cos|^(B-1)`` are
dynamic weights, constants inside :func:`~interpretable.nn.bcos.explanation_mode`.
"""
from __future__ import annotations

import math

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from interpretable.nn.bcos._layers import (
    BcosLinear,
    bcos_epilogue,
    constant_attention,
    constant_scale_layer_norm,
    dynamic_weight,
    explaining,
    normal_cdf,
    parameter,
    prescaled_bcos,
    scaled_unit_rows,
)


def alignment_gain(fan_in: int, b: float) -> float:
    """``E|ŵᵀx| / E(|cos(x, ŵ)|^(B-1) |ŵᵀx|)`` for inputs of random direction (``cos ~
    N(0, 1/fan_in)``): ``√2 · fan_in^((B-1)/2) / (2^(B/2) Γ((B+1)/2))``, 1 at B = 1 (4.1 for
    384 inputs at B = 1.5, 15.6 at B = 2). A B-cos layer scaled by it has, at conversion, the
    output magnitude of the plain linear map of its unit-norm rows."""
    return math.sqrt(2) * fan_in ** ((b - 1) / 2) / (2 ** (b / 2) * math.gamma((b + 1) / 2))


class BertBcosLinear(BcosLinear):
    """The B-cos linear layer of a converted BERT (one unit per output): a constant gain
    (``matched``: :func:`alignment_gain` of its exponent), an exponent that can be annealed
    from 1 while training (:meth:`anneal`), and a forward pass without gradients computed in
    place: ``a · (|a| / ‖x‖)^(B-1)`` in four passes over the outputs and one allocation
    (``sqrt`` at B = 1.5), three where outputs outnumber inputs (the inputs scaled instead,
    :func:`~interpretable.nn.bcos._layers.prescaled_bcos`). With gradients (training,
    explanation mode) the forward pass is :class:`BcosLinear`'s.

    ``row_gains``: a fixed (not trained) gain ``g_i`` per output, the buffer ``row_gain``
    (ones until set, e.g. to the row norms of the converted checkpoint: then at B = 1 the
    layer is exactly the pretrained bias-free map ``wᵀx``; B-cosification, Arya et al. 2024,
    keeps the raw weights). Output ``g_i γ |cos(x, ŵ_i)|^(B-1) ŵ_iᵀx``; a constant, so the layer
    stays dynamic linear. Without it (the default) every row is unit-norm (B-cos LM)."""

    def __init__(self, in_features: int, out_features: int, b: float, matched: bool = False,
                 row_gains: bool = False):
        gain = alignment_gain(in_features, b) if matched else 1.0
        super().__init__(in_features, out_features, b=b, max_out=1,
                         scale=gain * math.sqrt(in_features))  # γ = scale / √in_features
        self.target_b, self.matched = float(b), bool(matched)
        # None: not in the state dict (models saved without row gains load unchanged)
        self.register_buffer("row_gain", torch.ones(out_features) if row_gains else None)

    def _scaled_unit_weight(self) -> torch.Tensor:
        """``(γ g_i)^(1/B) ŵ_i``: for ``a = (γ g_i)^(1/B) ŵ_iᵀx``, ``|a/‖x‖|^(B-1) a =
        g_i γ |cos|^(B-1) ŵ_iᵀx``, so the row gains, like γ, cost no pass over the outputs."""
        if self.row_gain is None:
            return super()._scaled_unit_weight()
        w = parameter(self.weight)
        return scaled_unit_rows(w, (self.row_gain.to(w.dtype) * self.scale) ** (1.0 / self.b))

    def anneal(self, progress: float) -> None:
        """Set the exponent to ``1 + progress · (B - 1)`` (``progress`` in [0, 1]; 1: the
        layer's own B) and the gain to match it."""
        self.b = 1.0 + min(max(progress, 0.0), 1.0) * (self.target_b - 1.0)
        self.scale = alignment_gain(self.in_features, self.b) if self.matched else 1.0

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if torch.is_grad_enabled() or self.b == 1:
            return super().forward(x)
        if self.out_features > self.in_features:  # one pass over the inputs for one over outputs
            rows = prescaled_bcos(x.reshape(-1, self.in_features), self._scaled_unit_weight(),
                                  self.b)
            return rows.view(*x.shape[:-1], self.out_features)
        return bcos_epilogue(F.linear(x, self._scaled_unit_weight()), self._inv_norm(x), self.b)


def unscaled_bcos_linear(in_features: int, out_features: int, b: float,
                         matched: bool = False, row_gains: bool = False) -> BertBcosLinear:
    """B-cos LM's linear layer ``γ |cos(x, ŵ)|^(B-1) ŵᵀx``: unit-norm rows, no MaxOut and
    γ = 1 (the scale factor f = √in_features cancels :class:`BcosLinear`'s 1/√in_features),
    or with ``matched`` γ = :func:`alignment_gain` (a constant: the layer stays dynamic
    linear). B = 1 gives the plain linear map of the unit-norm rows (``row_gains``: see
    :class:`BertBcosLinear`)."""
    return BertBcosLinear(in_features, out_features, b, matched, row_gains)


def _fusable() -> bool:
    """Whether the attention probabilities may be computed inside a fused kernel: always
    without gradients, and with gradients unless they are dynamic weights held constant
    (explanation mode)."""
    if not torch.is_grad_enabled():
        return True
    with dynamic_weight():
        return torch.is_grad_enabled()


class _BiasedGELU(torch.autograd.Function):
    """``x · Φ(x + bias)`` with a differentiable gate (training), gradients written out with
    the density ``φ``: ``∂/∂x = Φ(z) + x φ(z)``, ``∂/∂bias = Σ x φ(z)`` (``z = x + bias``);
    about half the passes over the activations of autograd's chain through ``erf``."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
        scaled = torch.add(x, bias).mul_(math.sqrt(0.5))  # z / √2
        gate = scaled.erf().add_(1.0).mul_(0.5)
        ctx.save_for_backward(x, scaled, gate)
        ctx.bias_shape = bias.shape
        return x * gate

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, scaled, gate = ctx.saved_tensors
        # grad · x φ(z), with φ(z) = exp(-(z/√2)²) / √(2π); one temporary for both gradients
        grad_x_density = scaled.square().neg_().exp_().mul_(x).mul_(grad)
        grad_x_density.mul_((2 * math.pi) ** -0.5)
        grad_bias = None
        if ctx.needs_input_grad[1]:  # a copy where nothing is summed (sum_to_size: a view)
            grad_bias = grad_x_density.sum_to_size(ctx.bias_shape)
            if grad_bias.shape == grad_x_density.shape:
                grad_bias = grad_bias.clone()
        grad_x = grad_x_density.addcmul_(gate, grad) if ctx.needs_input_grad[0] else None
        return grad_x, grad_bias


def gated_gelu(x: torch.Tensor, gate_bias: torch.Tensor | None = None) -> torch.Tensor:
    """GELU as ``x·Φ(x)`` with the gate ``Φ(x)`` (standard normal CDF) a dynamic weight
    (outside explanation mode, where the gate is differentiable: the fused ``F.gelu``, the same
    function and gradient). ``gate_bias``: the gate is
    ``Φ(x + bias)`` (the pretrained bias kept where it is a dynamic weight; the linear path
    ``x`` stays bias-free). Under autocast (bfloat16 prediction) the gate is computed in
    ``x``'s dtype: the bias is cast to it (a no-op in the parameters' own precision)."""
    if not (torch.is_grad_enabled() and explaining()):  # a differentiable gate
        if gate_bias is None:
            return F.gelu(x)  # the same function and gradient, fused
        if torch.is_grad_enabled():
            return _BiasedGELU.apply(x, gate_bias.to(x.dtype))
    with dynamic_weight():
        gate = normal_cdf(x if gate_bias is None else x + gate_bias.to(x.dtype))
    if not torch.is_grad_enabled():
        return gate.mul_(x)
    return x * gate


class BertBcosLayerNorm(nn.Module):
    """Bias-free LayerNorm ``γ ⊙ (x - mean(x)) / σ(x)`` with ``1/σ(x)`` a dynamic weight:
    (..., D) -> (..., D) (outside explanation mode, where the scale is differentiable: the fused
    ``F.layer_norm``, the same function and gradient)."""

    def __init__(self, dim: int, eps: float = 1e-12):
        super().__init__()
        self.eps = float(eps)
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return constant_scale_layer_norm(x, self.weight, self.eps)

    def extra_repr(self) -> str:
        return f"{self.weight.shape[0]}, eps={self.eps}"


class BcosSelfAttention(nn.Module):
    """Post-LN self-attention block: bias-free Q/K/V, softmax probabilities as a dynamic
    weight, B-cos output projection, residual, :class:`BertBcosLayerNorm`.
    ``forward(x (B, T, H), mask_bias (B, 1, 1, T)) -> (out (B, T, H), probs (B, h, T, T))``."""

    def __init__(self, hidden_size: int, num_heads: int, b: float, eps: float, dropout: float,
                 attention_dropout: float, matched: bool = False, row_gains: bool = False,
                 gate_biases: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.dropout = dropout
        self.attention_dropout = attention_dropout
        # Q and K only shape the probabilities (a dynamic weight): their biases may stay
        self.query = nn.Linear(hidden_size, hidden_size, bias=gate_biases)
        self.key = nn.Linear(hidden_size, hidden_size, bias=gate_biases)
        self.value = nn.Linear(hidden_size, hidden_size, bias=False)
        self.output = unscaled_bcos_linear(hidden_size, hidden_size, b, matched, row_gains)
        self.norm = BertBcosLayerNorm(hidden_size, eps)

    def _split_heads(self, x: torch.Tensor) -> torch.Tensor:
        """(B, T, H) -> (B, heads, T, head_dim)."""
        return x.unflatten(-1, (self.num_heads, self.head_dim)).transpose(1, 2)

    def probabilities(self, x: torch.Tensor, mask_bias: torch.Tensor) -> torch.Tensor:
        """Attention probabilities (B, heads, T, T), exactly 0 on padded keys; a dynamic
        weight."""
        with dynamic_weight():
            query, key = self._split_heads(self.query(x)), self._split_heads(self.key(x))
            if not torch.is_grad_enabled():
                return constant_attention(query, key, self.head_dim ** -0.5, mask_bias)
            scores = query @ key.transpose(-1, -2) / math.sqrt(self.head_dim)
            return (scores + mask_bias).softmax(-1)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor, need_probs: bool = True):
        """``need_probs=False`` returns None for the probabilities and, unless gradients must
        treat them as constants (explanation mode), mixes with the fused
        ``scaled_dot_product_attention`` (the same function, faster)."""
        value = self._split_heads(F.linear(x, parameter(self.value.weight)))
        if need_probs or not _fusable():
            probs = self.probabilities(x, mask_bias)
            mixing = F.dropout(probs, self.attention_dropout, self.training)
            context = mixing @ value
        else:
            probs = None
            context = F.scaled_dot_product_attention(
                self._split_heads(self.query(x)), self._split_heads(self.key(x)), value,
                attn_mask=mask_bias, dropout_p=self.attention_dropout if self.training else 0.0)
        out = F.dropout(self.output(context.transpose(1, 2).flatten(2)), self.dropout,
                        self.training)
        return self.norm(x + out), probs


class BcosFeedForward(nn.Module):
    """Post-LN feed-forward block: B-cos intermediate layer, ``x·Φ(x)`` (``gate_biases``:
    ``x·Φ(x + bias)``), B-cos output layer, residual, :class:`BertBcosLayerNorm`.
    (B, T, H) -> (B, T, H)."""

    def __init__(self, hidden_size: int, intermediate_size: int, b: float, eps: float,
                 dropout: float, matched: bool = False, row_gains: bool = False,
                 gate_biases: bool = False):
        super().__init__()
        self.dropout = dropout
        # the intermediate bias, kept in the GELU gate only (None: Φ(x))
        self.gate_bias = nn.Parameter(torch.zeros(intermediate_size)) if gate_biases else None
        self.intermediate = unscaled_bcos_linear(hidden_size, intermediate_size, b, matched,
                                                 row_gains)
        self.output = unscaled_bcos_linear(intermediate_size, hidden_size, b, matched, row_gains)
        self.norm = BertBcosLayerNorm(hidden_size, eps)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.output(gated_gelu(self.intermediate(x), self.gate_bias))
        return self.norm(x + F.dropout(out, self.dropout, self.training))


class BcosBertLayer(nn.Module):
    """One encoder layer: (B, T, H), mask bias -> ((B, T, H), probabilities (B, h, T, T) or
    None with ``need_probs=False``)."""

    def __init__(self, hidden_size: int, num_heads: int, intermediate_size: int, b: float,
                 eps: float, dropout: float, attention_dropout: float, matched: bool = False,
                 row_gains: bool = False, gate_biases: bool = False):
        super().__init__()
        self.attention = BcosSelfAttention(hidden_size, num_heads, b, eps, dropout,
                                           attention_dropout, matched, row_gains, gate_biases)
        self.feed_forward = BcosFeedForward(hidden_size, intermediate_size, b, eps, dropout,
                                            matched, row_gains, gate_biases)

    def forward(self, x: torch.Tensor, mask_bias: torch.Tensor, need_probs: bool = True):
        x, probs = self.attention(x, mask_bias, need_probs)
        return self.feed_forward(x), probs
