"""B-cos layers (Böhle et al., "B-cos Networks" and "Holistically Explainable Vision
Transformers"): the B-cos linear and convolution layers, the ``[x, 1 - x]`` image encoding and
the per-thread explanation mode shared by every B-cos network of the package.

Each layer computes with the implementation chosen at construction (``implementation=``, default
``"auto"``) or for the calls of one thread (:func:`~interpretable.nn.bcos._kernels.
bcos_implementation`): the reference computation, or fused kernels that give the same outputs
and explanations faster (see :mod:`interpretable.nn.bcos`).

Every component is *dynamic linear*: its output is ``W(x) x`` for an input-dependent matrix
``W(x)``. Inside :func:`explanation_mode` the dynamic parts of ``W(x)`` (the ``|cos|^(B-1)``
scales, MaxOut selections, attention matrices, LayerNorm on the query/key path) are treated as
constants, so one backward pass gives ``x.grad == W(x)`` and ``W(x) ⊙ x`` sums exactly to the
output (minus the fixed logit bias). Layers with biases (a B-cosified network's start, see
:mod:`interpretable.nn.bcos`) add them through :func:`add_constant`, so that
:func:`recording_constants` can report their exact share too.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from collections.abc import Iterator, Sequence

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

from interpretable.nn._tensors import product_dtype
from interpretable.nn.bcos._kernels import (
    bcos_implementation,
    check_implementation,
    compiled,
    linear,
    resolve_implementation,
)

__all__ = ["BcosLinear", "BcosConv2d", "bcos_implementation", "explanation_mode", "explaining",
           "dynamic_weight", "parameter", "encode_image"]

# A context variable, not a module attribute: explaining in one thread never changes what
# another thread computes with the same module (new threads start with the default).
_EXPLAINING: contextvars.ContextVar[bool] = contextvars.ContextVar("bcos_explaining",
                                                                  default=False)


_CONSTANT_PARAMETERS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "bcos_constant_parameters", default=False)


@contextlib.contextmanager
def explanation_mode(*, constant_parameters: bool = False) -> Iterator[None]:
    """Treat the dynamic weights of every B-cos component as constants, in this thread only.

    Within the context the forward pass is numerically unchanged, but gradients flow only
    through the effective linear maps, so ``d out / d x == W(x)``. No module is modified.

    ``constant_parameters=True`` (for explanations, which need input gradients only) makes the
    parameters constants too: autograd records no path to them (no graph through the weight
    normalisation, no layer inputs kept for weight gradients), so the forward and backward
    passes take less time and memory; gradients with respect to parameters are then None.
    """
    tokens = (_EXPLAINING.set(True), _CONSTANT_PARAMETERS.set(constant_parameters))
    try:
        yield
    finally:
        _CONSTANT_PARAMETERS.reset(tokens[1])
        _EXPLAINING.reset(tokens[0])


def explaining() -> bool:
    """Whether this thread is inside :func:`explanation_mode`."""
    return _EXPLAINING.get()


_CONSTANTS: contextvars.ContextVar[list | None] = contextvars.ContextVar("bcos_constants",
                                                                      default=None)


@contextlib.contextmanager
def recording_constants() -> Iterator[list[torch.Tensor]]:
    """Record the additive constants (biases, class tokens) of the forward passes in the
    context, in this thread only.

    Yields the list that :func:`add_constant` fills with one per-sample leaf tensor per added
    constant. In explanation mode a network is linear in its input and these leaves together,
    so ``sum(leaf.grad * leaf)`` over them is the exact contribution of the constants.
    """
    token = _CONSTANTS.set([])
    try:
        yield _CONSTANTS.get()
    finally:
        _CONSTANTS.reset(token)


def add_constant(x: torch.Tensor, constant: torch.Tensor | None) -> torch.Tensor:
    """``x + constant`` (``constant`` broadcast to x; None adds nothing).

    While :func:`recording_constants` records and autograd is on, the constant enters as a
    detached per-sample copy of x's shape (a leaf requiring grad) appended to the recording;
    the value is the same.
    """
    if constant is None:
        return x
    recorded = _CONSTANTS.get()
    if recorded is None or not torch.is_grad_enabled():
        return x + parameter(constant)
    leaf = constant.detach().to(x.dtype).expand_as(x).clone().requires_grad_(True)
    recorded.append(leaf)
    return x + leaf


def parameter(tensor: torch.Tensor) -> torch.Tensor:
    """A module's parameter as this thread computes with it: detached (a constant) inside
    ``explanation_mode(constant_parameters=True)``, itself otherwise."""
    return tensor.detach() if _CONSTANT_PARAMETERS.get() else tensor


def constant_attention(q: torch.Tensor, k: torch.Tensor, scale: float,
                       bias: torch.Tensor | None = None) -> torch.Tensor:
    """Attention probabilities ``softmax(scale · q kᵀ + bias)`` over the keys, computed
    without autograd (a dynamic weight held constant): the scale goes into the contiguous copy
    of q that the product needs anyway, and the bias and the softmax are written over the
    scores (one temporary of the scores' size instead of three).
    q (..., N, d), k (..., M, d), bias broadcastable to (..., N, M) or None -> (..., N, M)."""
    scaled = torch.mul(q, scale, out=torch.empty(q.shape, dtype=q.dtype, device=q.device))
    scores = scaled @ k.contiguous().transpose(-1, -2)
    if bias is not None:  # in place unless the sum promotes (a float32 mask under autocast)
        same = torch.result_type(scores, bias) == scores.dtype
        scores = scores.add_(bias) if same else scores + bias
    return torch.softmax(scores, -1, out=scores)


def dynamic_weight() -> contextlib.AbstractContextManager:
    """Context for computing a dynamic weight: a constant (no autograd graph) in explanation
    mode, differentiable otherwise."""
    return torch.no_grad() if _EXPLAINING.get() else contextlib.nullcontext()


def normal_cdf(x: torch.Tensor) -> torch.Tensor:
    """The standard normal CDF ``Φ(x) = (1 + erf(x / √2)) / 2``, elementwise: (...) -> (...).

    The erf form of GELU's gate (as ``transformers`` and torch's ``F.gelu`` compute it), about
    3x faster on CPU than ``torch.special.ndtr``; computed in place on its own temporary when
    no gradient is recorded."""
    scaled = x * math.sqrt(0.5)
    if scaled.requires_grad:
        return 0.5 * (1.0 + torch.erf(scaled))
    return scaled.erf_().add_(1.0).mul_(0.5)


class _MaxOut2(torch.autograd.Function):
    """MaxOut over two units: ``max(a, b)`` of the contiguous halves ``a, b`` of ``lin`` along
    ``dim``. The gradient goes to ``a`` where ``a >= b``, else to ``b``, computed in place in
    the gradient of ``lin`` (``torch.maximum``'s backward, which splits ties, allocates and
    passes over the data several times more)."""

    @staticmethod
    def forward(ctx, lin: torch.Tensor, dim: int) -> torch.Tensor:
        ctx.save_for_backward(lin)
        ctx.dim = dim
        return torch.maximum(*lin.chunk(2, dim))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        lin, = ctx.saved_tensors
        a, b = lin.chunk(2, ctx.dim)
        grad_lin = torch.empty_like(lin)
        grad_a, grad_b = grad_lin.chunk(2, ctx.dim)
        # a - b >= 0 exactly when a >= b (gradual underflow); a float mask, no bool temporaries
        torch.sub(a, b, out=grad_a).ge_(0).mul_(grad)
        torch.sub(grad, grad_a, out=grad_b)
        return grad_lin, None


class _CosineScale(torch.autograd.Function):
    """The B-cos scale in training: ``a · f`` with ``f = max(|a| · inv, 1e-12)^(B-1)`` for the
    winners ``a`` and the inverse input norms ``inv`` (broadcast), both gradients written out
    (``c = |a| · inv``; where ``c`` is clamped the factor is a constant):
    ``∂/∂a = f · (1 + (B-1)·[c > 1e-12])`` and ``∂/∂inv = (B-1) Σ grad · a f [c > 1e-12] / inv``
    over the broadcast dimensions. About half the passes over the outputs of autograd's chain
    of ``abs``, ``mul``, ``clamp`` and ``pow`` (B = 2 needs neither clamp nor power). ``a`` is
    the layer's own temporary: the output overwrites it (one allocation less)."""

    @staticmethod
    def forward(ctx, a: torch.Tensor, inv: torch.Tensor, b: float) -> torch.Tensor:
        factor = a.abs().mul_(inv)
        if b != 2:
            factor.clamp_min_(1e-12).pow_(b - 1)
        out = a.mul_(factor)
        ctx.mark_dirty(a)
        ctx.save_for_backward(factor, out, inv)
        ctx.b = b
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        factor, out, inv = ctx.saved_tensors
        b = ctx.b
        # B = 2: no clamp, every element varies; else those above the clamp's constant, all
        # of them unless some |cos| < 1e-12 (checked by one reduction: a mask and torch.where
        # cost several passes)
        floor = 1e-12 ** (b - 1)
        varies = None if b == 2 or not factor.numel() or factor.amin() > floor \
            else factor > floor
        grad_a = grad_inv = None
        if ctx.needs_input_grad[0]:
            slope = factor * b if varies is None else torch.where(varies, factor * b, factor)
            grad_a = slope.mul_(grad)
        if ctx.needs_input_grad[1]:
            product = torch.mul(grad, out)
            if varies is not None:
                product.mul_(varies)
            grad_inv = product.sum_to_size(inv.shape).div_(inv).mul_(b - 1)
        return grad_a, grad_inv, None


class _InverseNorm(torch.autograd.Function):
    """``1 / max(‖x‖, 1e-12)`` over the last dimension: (..., D) -> (..., 1), its gradient
    ``-grad · x / ‖x‖³`` (zero for clamped rows) in one pass over x; autograd's chain through
    ``vector_norm``, ``clamp_min`` and ``reciprocal`` passes over x three times."""

    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        norm = torch.linalg.vector_norm(x, dim=-1, keepdim=True)
        inv = norm.clamp_min(1e-12).reciprocal_()
        ctx.save_for_backward(x, inv, norm < 1e-12)
        return inv

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, inv, clamped = ctx.saved_tensors
        return x * (grad * inv.pow(3)).neg_().masked_fill_(clamped, 0.0)


def inverse_norms(x: torch.Tensor) -> torch.Tensor:
    """``1 / max(‖x‖, 1e-12)`` over the last dimension: (..., D) -> (..., 1); differentiable
    by :class:`_InverseNorm` where autograd records x (plain operations otherwise: a Python
    function's call costs more than they do)."""
    if torch.is_grad_enabled() and x.requires_grad:
        return _InverseNorm.apply(x)
    return torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min_(1e-12).reciprocal_()


def scaled_unit_rows(weight: torch.Tensor, gains: torch.Tensor | float) -> torch.Tensor:
    """``gains · w / max(‖w‖, 1e-12)`` for every row ``w`` of ``weight`` (norms over all but
    the first dimension; ``gains`` a float or one per row): (out, ...) -> (out, ...).

    Where autograd differentiates a contiguous CPU weight (training), torch's fused weight-norm
    kernel, which passes over each row once (forward and backward in a quarter to a fifth of
    the time of autograd's chain through norm, clamp, division and product), unless a row's
    norm is below 1e-12 (then the clamped formula: the kernel would divide by it). Without
    gradients the formula (the kernel's gain there is smaller than its fixed cost)."""
    shape = (weight.shape[0],) + (1,) * (weight.dim() - 1)
    if (torch.is_grad_enabled() and weight.requires_grad and weight.device.type == "cpu"
            and weight.is_contiguous()):
        row_gains = (gains.to(weight.dtype).reshape(shape).contiguous()
                     if isinstance(gains, torch.Tensor)
                     else torch.full(shape, gains, dtype=weight.dtype))
        unit, norms = torch._weight_norm_interface(weight, row_gains, 0)
        if norms.amin() >= 1e-12:
            return unit
    if isinstance(gains, torch.Tensor):
        gains = gains.reshape(shape)
    norm = torch.linalg.vector_norm(weight, dim=tuple(range(1, weight.dim())), keepdim=True)
    return weight * (gains / norm.clamp_min(1e-12))


def _maxout(lin: torch.Tensor, max_out: int, dim: int) -> torch.Tensor:
    """Elementwise maximum over the ``max_out`` contiguous blocks of units of ``lin`` along
    ``dim``: (..., max_out·C, ...) -> (..., C, ...). ``lin`` is a temporary (it may be
    overwritten)."""
    if max_out == 1:
        return lin
    if max_out == 2:
        if not torch.is_grad_enabled():  # no graph: overwrite the first half, no allocation
            a, b = lin.chunk(2, dim)
            return torch.maximum(a, b, out=a)
        return _MaxOut2.apply(lin, dim)
    return functools.reduce(torch.maximum, lin.chunk(max_out, dim))


class _ConstantScaleLayerNorm(torch.autograd.Function):
    """LayerNorm over the last dimension, ``(x - mean(x)) · rstd ⊙ weight``, whose scale
    ``rstd = 1/σ(x)`` is a constant for the backward pass (a dynamic weight in explanation
    mode): the fused ``native_layer_norm`` forward, and ``∂/∂x = (g - mean(g)) · rstd`` for
    ``g = grad ⊙ weight`` (the linear map's transpose), ``∂/∂weight = Σ grad ⊙ x̂``; a few
    passes where autograd's chain through mean, subtraction, square, mean, square root,
    division and product takes many more."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
        out, mean, rstd = torch.native_layer_norm(x, weight.shape, weight, None, eps)
        # x only for the weight's gradient (none for a constant weight: one tensor less kept)
        ctx.save_for_backward(x if weight.requires_grad else None, weight, mean, rstd)
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: torch.Tensor):
        x, weight, mean, rstd = ctx.saved_tensors
        grad_x = grad_weight = None
        if ctx.needs_input_grad[0]:
            weighted = grad * weight
            grad_x = weighted.sub_(weighted.mean(-1, keepdim=True)).mul_(rstd)
        if ctx.needs_input_grad[1]:
            grad_weight = ((x - mean) * rstd).mul_(grad).sum_to_size(weight.shape)
        return grad_x, grad_weight, None


def constant_scale_layer_norm(x: torch.Tensor, weight: torch.Tensor, eps: float
                              ) -> torch.Tensor:
    """Bias-free LayerNorm over the last dimension with ``1/σ(x)`` a dynamic weight: a
    constant for gradients inside :func:`explanation_mode`, differentiable outside it (then
    exactly ``F.layer_norm``). (..., D), weight (D,) -> (..., D)."""
    if not (_EXPLAINING.get() and torch.is_grad_enabled()):
        return F.layer_norm(x, weight.shape, weight, None, eps)
    return _ConstantScaleLayerNorm.apply(x, parameter(weight), eps)


def prescaled_bcos(x: torch.Tensor, weight: torch.Tensor, b: float, max_out: int = 1
                   ) -> torch.Tensor:
    """B-cos outputs ``a · (|a| / ‖x‖)^(B-1)`` of the MaxOut winners ``a`` of ``weight``'s
    responses to the rows of x, scaling the inputs rather than the outputs: the responses
    ``a'`` to ``x · ‖x‖^((1-B)/B)`` give ``a' · |a'|^(B-1)``, the same values, so one pass over
    the inputs replaces one over the outputs (for layers with more outputs than inputs). No
    clamp of ``|cos|`` at 1e-12 (B = 2 needs none). Without autograd, or in explanation mode,
    where the input scale and ``|a'|^(B-1)`` are dynamic weights (constants; the same
    gradients as the outputs' scale). Under autocast the scaled inputs are written in its
    dtype (the product's input: no second pass to cast them).
    x: (n, in), weight: (max_out·out, in) -> (n, out)."""
    with dynamic_weight():
        inv = inverse_norms(x)
        scale = inv.sqrt_() if b == 2 else inv.pow_((b - 1) / b)
    if torch.is_grad_enabled():  # explanation mode (recorded: the product and the scales)
        a = _maxout(linear(x * scale, weight), max_out, -1)
        factor = a.detach().abs()
        return a.mul_(factor if b == 2 else factor.pow_(b - 1))
    scaled = torch.empty(x.shape, dtype=product_dtype(x), device=x.device)
    torch.mul(x, scale, out=scaled)
    return bcos_epilogue(linear(scaled, weight), None, b, max_out)


#: bytes of a layer's output that the inference epilogue (:func:`bcos_epilogue`) handles at
#: once, so that a block and its temporary stay in a core's L2 cache between the passes over
#: them. Measured on one CPU thread (2 MB of L2): the epilogue of a 1,568 × 768 output 2.3x and
#: of a 64 × 32 × 28 × 28 feature map 4.9x faster than passes over the whole tensor, each of
#: which went to memory and to fresh pages; the v2 ViT-Ti forward 4-6 % and the holistic ViT's
#: 3-9 % faster (64 KB blocks: more calls than they save; 512 KB: as fast or slower)
EPILOGUE_BLOCK_BYTES = 1 << 18


def _row_blocks(t: torch.Tensor) -> Iterator[slice]:
    """Slices of t's first dimension of about :data:`EPILOGUE_BLOCK_BYTES` each on CPU (all of
    it on other devices, where each block would cost kernel launches, and for tensors of fewer
    than two dimensions, whose first dimension holds the units)."""
    if t.dim() < 2 or t.device.type != "cpu":
        yield slice(None)
        return
    row_bytes = t.numel() // max(1, t.shape[0]) * t.element_size()
    rows = max(1, EPILOGUE_BLOCK_BYTES // max(1, row_bytes))
    for start in range(0, t.shape[0], rows):
        yield slice(start, start + rows)


def bcos_epilogue(lin: torch.Tensor, inv: torch.Tensor | None, b: float, max_out: int = 1,
                  dim: int = -1) -> torch.Tensor:
    """MaxOut and the B-cos scale without autograd, written over the temporary ``lin`` block by
    block along its first dimension: the winners ``a`` of the ``max_out`` contiguous blocks of
    units along ``dim``, times ``(|a| · inv)^(B-1)`` (``inv`` None: ``|a|^(B-1)``, for inputs
    already scaled). No clamp of ``|cos|`` at 1e-12 (B = 2 needs none; ``sqrt`` at B = 1.5).
    lin: (n, ..., max_out·C, ...), inv: broadcastable, its first dimension n or 1, or None
    -> (n, ..., C, ...): lin itself (max_out 1) or a view of it."""
    if max_out == 1 and b == 1:
        return lin
    units = lin.shape[dim] // max_out
    winners = lin if max_out == 1 else lin.narrow(dim, 0, units)
    for rows in _row_blocks(lin):
        a = winners[rows]
        for k in range(1, max_out):
            torch.maximum(a, lin[rows].narrow(dim, k * units, units), out=a)
        if b == 1:
            continue
        factor = a.abs()
        if inv is not None:
            factor.mul_(inv if inv.dim() < 2 or inv.shape[0] == 1 else inv[rows])
        if b == 1.5:
            factor.sqrt_()
        elif b != 2:
            factor.pow_(b - 1)
        a.mul_(factor)
    return winners


def _scale_winners(lin: torch.Tensor, inv_norm: torch.Tensor, b: float, max_out: int, dim: int,
                   explaining: bool) -> torch.Tensor:
    """MaxOut and the B-cos scale in one expression (the ``"compiled"`` epilogue: one kernel):
    the winners ``a`` of ``lin`` (gradient to the first block on ties, as :class:`_MaxOut2`)
    times ``|a · inv_norm|^(B-1)``, a constant when ``explaining``."""
    blocks = lin.chunk(max_out, dim)
    if max_out == 2:
        selected = torch.where(blocks[0] >= blocks[1], *blocks)
    else:
        selected = functools.reduce(torch.maximum, blocks)
    if b == 1:
        return selected
    factor = selected.abs() * inv_norm
    if b != 2:
        factor = factor.clamp_min(1e-12).pow(b - 1)
    if explaining:
        factor = factor.detach()
    return selected * factor.to(selected.dtype)


def conv_layout(x: torch.Tensor) -> torch.Tensor:
    """``x`` (B, C, H, W) in the faster memory layout for the convolutions of its device.

    On CPU channels-last convolutions are several times faster, and their (B, h, w, D) output
    is already the token layout; cuDNN's channels-last float32 kernels for a 6-channel input
    are slower than the default layout (1.25 ms vs well under 1 ms for a ViT-Ti stem on an
    H100), so other devices keep it.
    """
    return x.contiguous(memory_format=torch.channels_last) if x.device.type == "cpu" else x


def encode_image(x: torch.Tensor) -> torch.Tensor:
    """``[x, 1 - x]`` channel encoding: (B, C, H, W) in [0, 1] -> (B, 2C, H, W).

    The color of each pixel is then fixed by the angle of its encoding vector, which makes
    ``W(x)`` visualisable in color.
    """
    return torch.cat([x, 1.0 - x], dim=1)


class _BcosBase(nn.Module):
    """Shared B-cos computation: ``out = γ · |cos(x, ŵ)|^(B-1) · ŵᵀx``, MaxOut over units.

    The weight's first dimension holds ``max_out`` contiguous blocks of ``out_features``
    units; output j is the maximum over the blocks of their unit j. ``implementation`` is one of
    :data:`~interpretable.nn.bcos._kernels.IMPLEMENTATIONS`.
    """

    implementation = "auto"  # the class defaults keep modules pickled before them loadable
    normalize = True

    def __init__(self, fan_in: int, out_features: int, b: float, max_out: int,
                 scale: float | None, implementation: str = "auto", normalize: bool = True):
        super().__init__()
        self.implementation = check_implementation(implementation)
        if max_out < 1:
            raise ValueError(f"max_out must be >= 1, got {max_out}")
        if b < 1:
            raise ValueError(f"b (the B-cos exponent) must be >= 1, got {b}")
        self.fan_in = fan_in
        self.out_features = out_features
        self.b = float(b)
        self.max_out = int(max_out)
        self.normalize = bool(normalize)
        # γ = f / sqrt(fan_in); f = 1 unless given (the paper's f = 15, 20, 25).
        self.scale = (1.0 if scale is None else float(scale)) / math.sqrt(fan_in)

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def _scaled_unit_weight(self) -> torch.Tensor:
        """``γ^(1/B) ŵ`` with unit-norm rows ``ŵ``. For ``a = γ^(1/B) ŵᵀx``,
        ``|a / ‖x‖|^(B-1) · a = γ |cos(x, ŵ)|^(B-1) ŵᵀx``: γ costs no pass over the outputs.
        Without ``normalize``, ``γ^(1/B) w`` (the weights as they are: B = 1 and γ = 1 give a
        plain linear layer)."""
        w = parameter(self.weight)
        if not self.normalize:
            return w * self.scale ** (1.0 / self.b)
        return scaled_unit_rows(w, self.scale ** (1.0 / self.b))

    def _inv_norm(self, x: torch.Tensor) -> torch.Tensor:
        """``1/‖x‖`` of every input vector (patch), broadcastable to the outputs."""
        raise NotImplementedError

    def _responses(self, x: torch.Tensor, weight: torch.Tensor, fused: bool) -> torch.Tensor:
        """Responses ``weightᵀx`` of all units (units along :attr:`_unit_dim`)."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        implementation = resolve_implementation(self.implementation, x, _EXPLAINING.get())
        lin = self._responses(x, self._scaled_unit_weight(), implementation != "reference")
        if implementation != "compiled" or self.b == 1:
            return self._bcos(x, lin, blockwise=implementation == "fused")
        with dynamic_weight():
            inv_norm = self._inv_norm(x)
        # the subclass's own compiled copy of _scale_winners (one kernel)
        return self._scale_winners(lin, inv_norm, self.b, self.max_out, self._unit_dim,
                                   _EXPLAINING.get())

    def _factor(self, x: torch.Tensor, selected: torch.Tensor):
        """Dynamic scale ``|a/‖x‖|^(B-1)`` of the MaxOut winners ``a``; a constant in
        explanation mode."""
        if self.b == 1:
            return 1.0
        with dynamic_weight():
            factor = selected.abs().mul_(self._inv_norm(x))
            if self.b != 2:
                factor = factor.clamp_min(1e-12).pow(self.b - 1)
        return factor

    def _bcos(self, x: torch.Tensor, lin: torch.Tensor, blockwise: bool = False
              ) -> torch.Tensor:
        """MaxOut, then the B-cos scale of the winners: responses ``a`` of all units to ``x``
        -> ``|a/‖x‖|^(B-1)·a``. The output increases with ``a`` (``‖x‖`` is shared), so MaxOut
        compares the raw responses. ``blockwise``: without autograd, by :func:`bcos_epilogue`
        (else one operation over the whole output per term)."""
        if blockwise and not torch.is_grad_enabled():
            inv = None if self.b == 1 else self._inv_norm(x)
            return bcos_epilogue(lin, inv, self.b, self.max_out, self._unit_dim)
        selected = _maxout(lin, self.max_out, self._unit_dim)
        if self.b == 1:
            return selected
        if torch.is_grad_enabled() and not _EXPLAINING.get():
            return _CosineScale.apply(selected, self._inv_norm(x), self.b)
        factor = self._factor(x, selected)
        # in place unless autograd needs the winners for the factor's gradient (training)
        return selected * factor if factor.requires_grad else selected.mul_(factor)


class BcosLinear(_BcosBase):
    """B-cos linear layer: (..., in_features) -> (..., out_features).

    ``b`` is the exponent B (B=1 gives a plain linear layer on unit-norm weights), ``max_out``
    the number of units per output pooled by MaxOut, ``scale`` the factor f in γ = f/√in,
    ``implementation`` how to compute (:mod:`interpretable.nn.bcos`).
    ``normalize=False`` uses the weights as they are and ``bias=True`` adds a bias to the
    responses before MaxOut and the B-cos scale: the layers of a B-cosified network
    (Arya et al., "B-cosification"), a plain ``nn.Linear`` at B = 1 with γ = 1.
    """

    _unit_dim = -1
    _scale_winners = staticmethod(compiled(_scale_winners, "bcos_linear_scale_winners"))

    def __init__(self, in_features: int, out_features: int, b: float = 2.0, max_out: int = 2,
                 scale: float | None = None, implementation: str = "auto",
                 normalize: bool = True, bias: bool = False):
        super().__init__(in_features, out_features, b, max_out, scale, implementation,
                         normalize)
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(self.max_out * out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(self.max_out * out_features)) if bias else None
        self.reset_parameters()

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._parameters.setdefault("bias", None)  # pickled before layers had biases

    def _inv_norm(self, x: torch.Tensor) -> torch.Tensor:
        return inverse_norms(x)

    def _responses(self, x: torch.Tensor, weight: torch.Tensor, fused: bool) -> torch.Tensor:
        return add_constant(linear(x, weight) if fused else F.linear(x, weight), self.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        implementation = resolve_implementation(self.implementation, x, _EXPLAINING.get())
        if implementation == "reference":
            return super().forward(x)
        # fused: on the rows of a 2-d view, the product is no view, so the in-place steps
        # modify it without autograd copying views; one compiled variant for every rank
        rows = x.reshape(-1, self.in_features)
        if implementation == "fused" and self._prescales():
            out = prescaled_bcos(rows, self._scaled_unit_weight(), self.b, self.max_out)
        else:
            out = super().forward(rows)
        return out.view(*x.shape[:-1], self.out_features)

    def _prescales(self) -> bool:
        """Whether this call computes by :func:`prescaled_bcos` (B = 2, no bias): without
        autograd where the responses outnumber the inputs; in explanation mode, where the
        input scale costs a pass over the inputs in the backward pass too, where the outputs
        are more than twice as many as the inputs (measured: a loss on the holistic ViT's
        MaxOut layers of as many outputs as inputs)."""
        if self.b != 2 or self.bias is not None:
            return False
        if not torch.is_grad_enabled():
            return self.max_out * self.out_features > self.in_features
        return _EXPLAINING.get() and self.out_features > 2 * self.in_features

    def forward_parts(self, x: torch.Tensor, parts: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Map each additive part of ``x`` through the effective linear map ``W(x)``.

        The dynamic factors and MaxOut winners come from the full ``x``; when
        ``sum(parts) == x`` the outputs sum exactly to ``forward(x)`` (ValueError with a bias,
        which no part carries). parts: each (..., in) -> list of (..., out).
        """
        if self.bias is not None:
            raise ValueError("the parts of a biased B-cos layer's input do not sum to its "
                             "output; remove the biases first")
        w = self._scaled_unit_weight()
        lin = F.linear(x, w)
        blocks = (self.max_out, self.out_features)
        winner = lin.unflatten(-1, blocks).argmax(-2, keepdim=True)

        def select(responses):
            return responses.unflatten(-1, blocks).gather(-2, winner).squeeze(-2)

        factor = self._factor(x, select(lin))
        return [select(F.linear(p, w)) * factor for p in parts]

    def extra_repr(self) -> str:
        return (f"in_features={self.in_features}, out_features={self.out_features}, "
                f"b={self.b}, max_out={self.max_out}, normalize={self.normalize}, "
                f"bias={self.bias is not None}")


class BcosConv2d(_BcosBase):
    """B-cos convolution: (B, C_in, H, W) -> (B, C_out, H', W'); no bias, zero padding.

    The cosine uses the norm of each input patch (all channels of the kernel window);
    ``patch_norm_eps`` is added to its square (the ``bcos`` package's layers use 1e-6).
    """

    _unit_dim = 1
    _scale_winners = staticmethod(compiled(_scale_winners, "bcos_conv_scale_winners"))

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, b: float = 2.0, max_out: int = 2, scale: float | None = None,
                 patch_norm_eps: float = 0.0, implementation: str = "auto"):
        super().__init__(in_channels * kernel_size ** 2, out_channels, b, max_out, scale,
                         implementation)
        self.in_channels = in_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.patch_norm_eps = float(patch_norm_eps)
        self.weight = nn.Parameter(
            torch.empty(self.max_out * out_channels, in_channels, kernel_size, kernel_size))
        self.reset_parameters()

    def _inv_norm(self, x: torch.Tensor) -> torch.Tensor:
        # ‖patch‖² at every output position: a window sum of the per-pixel squared norms (a
        # sum pool over zero padding, the convolution with ones: 0.5 ms less than that
        # convolution per holistic ViT forward of 64 digits)
        pixel_sq_norm = torch.linalg.vector_norm(x, dim=1, keepdim=True).square()
        sq_norm = F.avg_pool2d(pixel_sq_norm, self.kernel_size, self.stride, self.padding,
                               count_include_pad=True, divisor_override=1)
        return sq_norm.add_(self.patch_norm_eps).clamp_min(1e-24).rsqrt()

    def _responses(self, x: torch.Tensor, weight: torch.Tensor, fused: bool) -> torch.Tensor:
        return F.conv2d(x, weight, stride=self.stride, padding=self.padding)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_features}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, b={self.b}, "
                f"max_out={self.max_out}, patch_norm_eps={self.patch_norm_eps}")
