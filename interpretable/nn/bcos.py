"""B-cos layers and the B-cos Vision Transformer (Böhle et al., "Holistically Explainable
Vision Transformers").

Every component is *dynamic linear*: its output is ``W(x) x`` for an input-dependent matrix
``W(x)``. Inside :func:`explanation_mode` the dynamic parts of ``W(x)`` (the ``|cos|^(B-1)``
scales, MaxOut selections, attention matrices, LayerNorm on the query/key path) are treated as
constants, so one backward pass gives ``x.grad == W(x)`` and ``W(x) ⊙ x`` sums exactly to the
output (minus the fixed logit bias).
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import math
from typing import Iterator, Sequence

import torch
from torch import nn
from torch.autograd.function import once_differentiable
from torch.nn import functional as F

__all__ = [
    "BcosLinear",
    "BcosConv2d",
    "BcosAttention",
    "BcosMLP",
    "BcosBlock",
    "BcosStem",
    "BcosViT",
    "explanation_mode",
    "encode_image",
    "conv_layout",
    "ATTENTION_PRIORS",
]

ATTENTION_PRIORS = ("multiplicative", "additive", "none")

# A context variable, not a module attribute: explaining in one thread never changes what
# another thread computes with the same module (new threads start with the default).
_EXPLAINING: contextvars.ContextVar[bool] = contextvars.ContextVar("bcos_explaining",
                                                                  default=False)


@contextlib.contextmanager
def explanation_mode() -> Iterator[None]:
    """Treat the dynamic weights of every B-cos component as constants, in this thread only.

    Within the context the forward pass is numerically unchanged, but gradients flow only
    through the effective linear maps, so ``d out / d x == W(x)``. No module is modified.
    """
    token = _EXPLAINING.set(True)
    try:
        yield
    finally:
        _EXPLAINING.reset(token)


def _dynamic_weight() -> contextlib.AbstractContextManager:
    """Context for computing a dynamic weight: a constant (no autograd graph) in explanation
    mode, differentiable otherwise."""
    return torch.no_grad() if _EXPLAINING.get() else contextlib.nullcontext()


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

    The colour of each pixel is then fixed by the angle of its encoding vector, which makes
    ``W(x)`` visualisable in colour.
    """
    return torch.cat([x, 1.0 - x], dim=1)


class _BcosBase(nn.Module):
    """Shared B-cos computation: ``out = γ · |cos(x, ŵ)|^(B-1) · ŵᵀx``, MaxOut over units.

    The weight's first dimension holds ``max_out`` contiguous blocks of ``out_features``
    units; output j is the maximum over the blocks of their unit j.
    """

    def __init__(self, fan_in: int, out_features: int, b: float, max_out: int,
                 scale: float | None):
        super().__init__()
        if max_out < 1:
            raise ValueError(f"max_out must be >= 1, got {max_out}")
        if b < 1:
            raise ValueError(f"b (the B-cos exponent) must be >= 1, got {b}")
        self.fan_in = fan_in
        self.out_features = out_features
        self.b = float(b)
        self.max_out = int(max_out)
        # γ = f / sqrt(fan_in); f = 1 unless given (the paper's f = 15, 20, 25).
        self.scale = (1.0 if scale is None else float(scale)) / math.sqrt(fan_in)

    def reset_parameters(self) -> None:
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def _scaled_unit_weight(self) -> torch.Tensor:
        """``γ^(1/B) ŵ`` with unit-norm rows ``ŵ``. For ``a = γ^(1/B) ŵᵀx``,
        ``|a / ‖x‖|^(B-1) · a = γ |cos(x, ŵ)|^(B-1) ŵᵀx``: γ costs no pass over the outputs."""
        w = self.weight
        norm = torch.linalg.vector_norm(w, dim=tuple(range(1, w.dim())), keepdim=True)
        return w * (self.scale ** (1.0 / self.b) / norm.clamp_min(1e-12))

    def _inv_norm(self, x: torch.Tensor) -> torch.Tensor:
        """``1/‖x‖`` of every input vector (patch), broadcastable to the outputs."""
        raise NotImplementedError

    def _factor(self, x: torch.Tensor, selected: torch.Tensor):
        """Dynamic scale ``|a/‖x‖|^(B-1)`` of the MaxOut winners ``a``; a constant in
        explanation mode."""
        if self.b == 1:
            return 1.0
        with _dynamic_weight():
            factor = selected.abs().mul_(self._inv_norm(x))
            if self.b != 2:
                factor = factor.clamp_min(1e-12).pow(self.b - 1)
        return factor

    def _bcos(self, x: torch.Tensor, lin: torch.Tensor, dim: int) -> torch.Tensor:
        """MaxOut, then the B-cos scale of the winners: responses ``a`` of all units to ``x``
        (units along ``dim``) -> ``|a/‖x‖|^(B-1)·a``. The output increases with ``a``
        (``‖x‖`` is shared), so MaxOut compares the raw responses."""
        selected = _maxout(lin, self.max_out, dim)
        if self.b == 1:
            return selected
        factor = self._factor(x, selected)
        # in place unless autograd needs the winners for the factor's gradient (training)
        return selected * factor if factor.requires_grad else selected.mul_(factor)


class BcosLinear(_BcosBase):
    """B-cos linear layer: (..., in_features) -> (..., out_features); no bias.

    ``b`` is the exponent B (B=1 gives a plain linear layer on unit-norm weights), ``max_out``
    the number of units per output pooled by MaxOut, ``scale`` the factor f in γ = f/√in.
    """

    def __init__(self, in_features: int, out_features: int, b: float = 2.0, max_out: int = 2,
                 scale: float | None = None):
        super().__init__(in_features, out_features, b, max_out, scale)
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(self.max_out * out_features, in_features))
        self.reset_parameters()

    def _inv_norm(self, x: torch.Tensor) -> torch.Tensor:
        return torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(1e-12).reciprocal()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._bcos(x, F.linear(x, self._scaled_unit_weight()), dim=-1)

    def forward_parts(self, x: torch.Tensor, parts: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Map each additive part of ``x`` through the effective linear map ``W(x)``.

        The dynamic factors and MaxOut winners come from the full ``x``; when
        ``sum(parts) == x`` the outputs sum exactly to ``forward(x)``.
        parts: each (..., in) -> list of (..., out).
        """
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
                f"b={self.b}, max_out={self.max_out}")


class BcosConv2d(_BcosBase):
    """B-cos convolution: (B, C_in, H, W) -> (B, C_out, H', W'); no bias, zero padding.

    The cosine uses the norm of each input patch (all channels of the kernel window).
    """

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, b: float = 2.0, max_out: int = 2, scale: float | None = None):
        super().__init__(in_channels * kernel_size ** 2, out_channels, b, max_out, scale)
        self.in_channels = in_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.weight = nn.Parameter(
            torch.empty(self.max_out * out_channels, in_channels, kernel_size, kernel_size))
        self.reset_parameters()

    def _inv_norm(self, x: torch.Tensor) -> torch.Tensor:
        # ‖patch‖² at every output position: a window sum of the per-pixel squared norms
        pixel_sq_norm = torch.linalg.vector_norm(x, dim=1, keepdim=True).square()
        ones = x.new_ones(1, 1, self.kernel_size, self.kernel_size)
        sq_norm = F.conv2d(pixel_sq_norm, ones, stride=self.stride, padding=self.padding)
        return sq_norm.clamp_min(1e-24).rsqrt()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        lin = F.conv2d(x, self._scaled_unit_weight(), stride=self.stride, padding=self.padding)
        return self._bcos(x, lin, dim=1)

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_features}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, b={self.b}, "
                f"max_out={self.max_out}")


class BcosStem(nn.Module):
    """B-cos CNN tokeniser: 3×3 B-cos convolutions (the first with stride ``stride``), then a
    B-cos convolution with kernel = stride = patch_size / stride.
    (B, C, H, W) -> tokens (B, N, D), N = (H/p)(W/p)."""

    def __init__(self, in_channels: int, embed_dim: int, patch_size: int,
                 channels: Sequence[int] = (32,), b: float = 2.0, max_out: int = 2,
                 scale: float | None = None, stride: int = 1):
        super().__init__()
        if patch_size % stride or (stride > 1 and not channels):
            raise ValueError(f"stem stride {stride} needs a 3×3 stem convolution and must "
                             f"divide patch_size={patch_size}")
        layers, c = [], in_channels
        for i, c_out in enumerate(channels):
            layers.append(BcosConv2d(c, c_out, 3, stride=stride if i == 0 else 1, padding=1,
                                     b=b, max_out=max_out, scale=scale))
            c = c_out
        patch = patch_size // stride
        layers.append(BcosConv2d(c, embed_dim, patch, stride=patch, b=b, max_out=max_out,
                                 scale=scale))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(conv_layout(x)).flatten(2).transpose(1, 2)


class BcosAttention(nn.Module):
    """B-cos multi-head self-attention (Eqs. 13, 14, 18, 19).

    LayerNorm only on the query/key path; B-cos value and output projections; a learned prior
    ``B`` of shape (heads, N, N) combined as ``SM(R)·SM(B)`` (elementwise, "multiplicative"),
    ``SM(R+B)`` ("additive") or not at all ("none"). The attention matrix is a dynamic weight.
    """

    def __init__(self, dim: int, num_heads: int, num_tokens: int,
                 attention_prior: str = "multiplicative", b: float = 2.0, max_out: int = 2,
                 scale: float | None = None):
        super().__init__()
        if dim % num_heads:
            raise ValueError(f"embed_dim={dim} must be divisible by num_heads={num_heads}")
        if attention_prior not in ATTENTION_PRIORS:
            raise ValueError(f"attention_prior must be one of {ATTENTION_PRIORS}, "
                             f"got {attention_prior!r}")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.attention_prior = attention_prior
        self.norm = nn.LayerNorm(dim)
        self.qk = nn.Linear(dim, 2 * dim)
        self.value = BcosLinear(dim, dim, b=b, max_out=max_out, scale=scale)
        self.proj = BcosLinear(dim, dim, b=b, max_out=max_out, scale=scale)
        if attention_prior != "none":
            self.prior = nn.Parameter(torch.empty(num_heads, num_tokens, num_tokens))
        else:
            self.register_parameter("prior", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """The prior starts uniform (zeros); the sub-layers reset their own parameters."""
        if self.prior is not None:
            nn.init.zeros_(self.prior)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """Attention matrices A: (B, N, D) -> (B, heads, N, N); a dynamic weight."""
        bsz, n, _ = x.shape
        with _dynamic_weight():
            qk = self.qk(self.norm(x)).view(bsz, n, 2, self.num_heads, self.head_dim)
            q, k = qk.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, heads, N, head_dim)
            logits = (q / math.sqrt(self.head_dim)) @ k.transpose(-1, -2)
            if self.attention_prior == "additive":
                return (logits + self.prior).softmax(-1)
            if self.attention_prior == "multiplicative":
                return logits.softmax(-1) * self.prior.softmax(-1)
            return logits.softmax(-1)

    def _heads(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """Concatenated head outputs [A_h V_h x]_h: (B, N, D)."""
        bsz, n, dim = x.shape
        v = self.value(x).view(bsz, n, self.num_heads, self.head_dim).transpose(1, 2)
        return (attn @ v).transpose(1, 2).reshape(bsz, n, dim)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        attn = self.attention(x)
        out = self.proj(self._heads(x, attn))
        return (out, attn) if return_attention else out

    def head_terms(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Per-head outputs whose sum over heads is ``forward(x)`` exactly.

        x: (B, N, D) -> (terms (B, heads, N, D), attention (B, heads, N, N)). Each term is the
        head's output projected by its slice of the (dynamic) output projection.
        """
        attn = self.attention(x)
        concat = self._heads(x, attn)
        mask = torch.eye(self.num_heads, dtype=concat.dtype, device=concat.device)
        mask = mask.repeat_interleave(self.head_dim, dim=1)  # (heads, D)
        parts = [concat * mask[h] for h in range(self.num_heads)]
        terms = self.proj.forward_parts(concat, parts)
        return torch.stack(terms, dim=1), attn


class BcosMLP(nn.Module):
    """B-cos MLP: two B-cos layers with MaxOut, no GELU, no normalisation. (..., D) -> (..., D)."""

    def __init__(self, dim: int, hidden_dim: int, b: float = 2.0, max_out: int = 2,
                 scale: float | None = None):
        super().__init__()
        self.fc1 = BcosLinear(dim, hidden_dim, b=b, max_out=max_out, scale=scale)
        self.fc2 = BcosLinear(hidden_dim, dim, b=b, max_out=max_out, scale=scale)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(self.fc1(x))


class BcosBlock(nn.Module):
    """B-cos transformer block: P + Att(P), then + MLP(.). (B, N, D) -> (B, N, D)."""

    def __init__(self, dim: int, num_heads: int, num_tokens: int, mlp_ratio: float = 2.0,
                 attention_prior: str = "multiplicative", b: float = 2.0, max_out: int = 2,
                 scale: float | None = None):
        super().__init__()
        self.attn = BcosAttention(dim, num_heads, num_tokens, attention_prior, b, max_out, scale)
        self.mlp = BcosMLP(dim, int(dim * mlp_ratio), b, max_out, scale)

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        a, attn = self.attn(x, return_attention=True)
        x = x + a
        x = x + self.mlp(x)
        return (x, attn) if return_attention else x


class BcosViT(nn.Module):
    """B-cos Vision Transformer: B-cos CNN stem -> blocks -> mean pool -> B-cos classifier.

    Input: encoded images (B, in_channels, H, W) (use :func:`encode_image` on [0, 1] images).
    Output: logits (B, n_classes) = output_scale · W(x)x + logit_bias.

    ``scale_factor`` is the paper's f (γ = f/√fan_in in every B-cos layer). The paper's
    f = 15 (×10 with the multiplicative prior) was set for ViT-Ti on a frozen backbone whose
    features were scaled by 10³; the default here, 30, keeps the token norms O(1) through the
    blocks at initialisation for every prior at this small size. ``logit_bias`` defaults to
    log(p/(1-p)) with p = 1/n_classes (the paper: log(0.01/0.99) for 1000 classes).
    ``stem_stride`` is the stride of the first 3×3 stem convolution (the rest of the patch
    size goes to the patch convolution); 2 makes the stem about 4× cheaper.
    """

    def __init__(self, in_channels: int, image_size: tuple[int, int], n_classes: int,
                 patch_size: int = 4, embed_dim: int = 64, depth: int = 4, num_heads: int = 4,
                 mlp_ratio: float = 2.0, stem_channels: Sequence[int] = (32,),
                 attention_prior: str = "multiplicative", b: float = 2.0, max_out: int = 2,
                 scale_factor: float | None = None, output_scale: float = 1.0,
                 logit_bias: float | None = None, stem_stride: int = 1):
        super().__init__()
        h, w = image_size
        if h % patch_size or w % patch_size:
            raise ValueError(f"image size {image_size} must be divisible by "
                             f"patch_size={patch_size}")
        if scale_factor is None:
            scale_factor = 30.0
        self.grid_size = (h // patch_size, w // patch_size)
        num_tokens = self.grid_size[0] * self.grid_size[1]
        self.stem = BcosStem(in_channels, embed_dim, patch_size, stem_channels, b, max_out,
                             scale_factor, stride=stem_stride)
        self.blocks = nn.ModuleList(
            BcosBlock(embed_dim, num_heads, num_tokens, mlp_ratio, attention_prior, b, max_out,
                      scale_factor) for _ in range(depth))
        self.head = BcosLinear(embed_dim, n_classes, b=b, max_out=1, scale=scale_factor)
        self.output_scale = float(output_scale)
        if logit_bias is None:
            logit_bias = math.log(1.0 / (n_classes - 1)) if n_classes > 1 else 0.0
        self.logit_bias = float(logit_bias)

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x: (B, C, H, W) -> (final token map (B, D, h, w),
        [attention (B, heads, N, N)] per layer)."""
        tokens = self.stem(x)
        attentions = []
        for block in self.blocks:
            tokens, attn = block(tokens, return_attention=True)
            attentions.append(attn)
        return tokens.transpose(1, 2).unflatten(2, self.grid_size), attentions

    def forward_head(self, token_map: torch.Tensor) -> torch.Tensor:
        """Final token map (B, D, h, w) -> logits (B, n_classes): mean pool, classifier."""
        return self._logits(self.head(token_map.flatten(2).mean(-1)))

    def _logits(self, out: torch.Tensor) -> torch.Tensor:
        return out * self.output_scale + self.logit_bias

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x: (B, C, H, W) -> (logits (B, n_classes), [attention (B, heads, N, N)] per layer)."""
        token_map, attentions = self.forward_features(x)
        return self.forward_head(token_map), attentions

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_with_attention(x)[0]

    def term_names(self) -> list[str]:
        """Names of the residual-stream terms returned by :meth:`term_logits`."""
        names = ["tokens"]
        for l, block in enumerate(self.blocks):
            names += [f"layer{l}.head{h}" for h in range(block.attn.num_heads)]
            names.append(f"layer{l}.mlp")
        return names

    def term_logits(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact split of the logits over residual-stream terms.

        The token stream is ``P_L = P_0 + Σ_l (Σ_h head_lh + mlp_l)``; each term is sent
        through the classifier's effective linear map (dynamic factors from the full input).
        x: (B, C, H, W) -> (logits (B, K), terms (B, T, K)) with
        ``terms.sum(1) * output_scale + logit_bias == logits``; names: :meth:`term_names`.
        """
        tokens = self.stem(x)
        terms = [tokens]
        for block in self.blocks:
            heads, _ = block.attn.head_terms(tokens)
            terms.extend(heads.unbind(1))
            tokens = tokens + heads.sum(1)
            mlp = block.mlp(tokens)
            terms.append(mlp)
            tokens = tokens + mlp
        parts = self.head.forward_parts(tokens.mean(1), [t.mean(1) for t in terms])
        term_logits = torch.stack(parts, dim=1)
        return self._logits(term_logits.sum(1)), term_logits
