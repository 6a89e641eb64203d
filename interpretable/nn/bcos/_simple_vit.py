"""The B-cos v2 vision transformers of Böhle et al. (``B-cos/B-cos-v2``, PyPI ``bcos``): the
``simple_vit`` (patch-16 linear tokenizer) and ``vitc`` (B-cos convolution stem, patch 1)
families, built from the project's B-cos layers.

A different design from :mod:`interpretable.nn.bcos`: a fixed 2-D sin-cos positional
embedding added to the patch tokens, bias-free mean-subtracting LayerNorms before attention,
MLP and head, plain bias-free q/k/v projections with a softmax, B-cos output, MLP and head
layers (B = 2, no MaxOut, no scale factor), mean pooling and a fixed logit bias.

Inside :func:`~interpretable.nn.bcos.explanation_mode` the LayerNorm variances and the queries
and keys (hence the attention probabilities) are constants, as in the ``bcos`` package, so the
network is linear in the pair (image, positional embedding)::

    logit = W(x)ᵀ x + W_pos(x)ᵀ pos + logit_bias

:func:`contributions` returns both terms from one forward and one backward pass; the ``bcos``
package's explanations (``W(x)ᵀ x``) leave the positional term out.

Module and parameter names follow the ``bcos`` checkpoints (see
:func:`interpretable.nn.bcos._zoo.bcos_key_map` for the one key mapping).

``bcosified=True`` builds the B-cosified form of a conventional ViT instead (Arya et al.,
"B-cosification", see :mod:`interpretable.nn.bcos`): a learned class token read
by the head, a learned positional embedding, GELU MLPs whose gate is a dynamic weight,
LayerNorm eps 1e-6 and B-cos layers with the weights as they are; ``bias=True`` gives every
layer a bias (the conversion's start) and ``b`` sets B. The logit is then also linear in the
class token and the biases; :func:`contributions` reports their share.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.nn._losses import explained_logits
from interpretable.nn._tensors import in_parameter_precision, product_dtype
from interpretable.nn.bcos._layers import (
    BcosConv2d,
    BcosLinear,
    add_constant,
    constant_attention,
    constant_scale_layer_norm,
    conv_layout,
    dynamic_weight,
    explaining,
    explanation_mode,
    normal_cdf,
    parameter,
    recording_constants,
)

__all__ = ["BcosSimpleViT", "ViTContributions", "vit_contributions"]


class _Layers(NamedTuple):
    """How the layers of a :class:`BcosSimpleViT` are built: exponent B, biases, and the
    B-cosified variants (weights as they are, LayerNorm eps 1e-6) or the v2 ones."""

    b: float = 2.0
    bias: bool = False
    bcosified: bool = False

    def linear(self, in_features: int, out_features: int) -> BcosLinear:
        """A B-cos linear layer: no MaxOut, γ = f/√in = 1 (no scale factor), unit-norm
        weights unless B-cosified."""
        return BcosLinear(in_features, out_features, b=self.b, max_out=1,
                          scale=math.sqrt(in_features), normalize=not self.bcosified,
                          bias=self.bias)

    def norm(self, dim: int) -> BcosLayerNorm:
        return BcosLayerNorm(dim, eps=1e-6 if self.bcosified else 1e-5, bias=self.bias)


#: the default layers (v2: B = 2, bias-free); a NamedTuple, so one shared instance is safe
_V2_LAYERS = _Layers()


def _bcos_conv3x3(in_channels: int, out_channels: int, stride: int) -> BcosConv2d:
    """The v2 stem convolution: 3×3, padding 1, B = 2, no MaxOut, γ = 1, and the reference's
    1e-6 added to the squared patch norms."""
    return BcosConv2d(in_channels, out_channels, 3, stride=stride, padding=1, b=2, max_out=1,
                      scale=math.sqrt(9 * in_channels), patch_norm_eps=1e-6)


def _std(centred: torch.Tensor, dims: tuple[int, ...], eps: float) -> torch.Tensor:
    """``sqrt(var + eps)`` of centred x over ``dims``, a dynamic weight (a constant in
    explanation mode). (The variance as the mean square of the centred x: several times faster
    than ``torch.var`` on CPU.)"""
    with dynamic_weight():
        return (centred.square().mean(dims, keepdim=True) + eps).sqrt()


def _centred_normalised(x: torch.Tensor, dims: tuple[int, ...], eps: float) -> torch.Tensor:
    """``(x - mean) / sqrt(var + eps)`` over ``dims``; the scale is a dynamic weight, the mean
    subtraction stays linear."""
    centred = x - x.mean(dims, keepdim=True)
    return centred / _std(centred, dims, eps)


class BcosLayerNorm(nn.Module):
    """LayerNorm over the last dimension whose variance is detached in explanation mode:
    (..., D) -> (..., D); bias-free unless ``bias`` (added by
    :func:`~interpretable.nn.bcos._layers.add_constant`)."""

    def __init__(self, dim: int, eps: float = 1e-5, bias: bool = False):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))
        self.bias = nn.Parameter(torch.zeros(dim)) if bias else None

    def __setstate__(self, state: dict) -> None:
        super().__setstate__(state)
        self._parameters.setdefault("bias", None)  # pickled before LayerNorms had biases

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (torch.is_grad_enabled() and explaining()):  # a differentiable scale: fused
            return F.layer_norm(x, self.weight.shape, self.weight, self.bias, self.eps)
        return add_constant(constant_scale_layer_norm(x, self.weight, self.eps), self.bias)

    def forward_parts(self, x: torch.Tensor, parts: Sequence[torch.Tensor]
                      ) -> list[torch.Tensor]:
        """Each additive part of ``x`` through the LayerNorm with the scale of the full ``x``
        (its linear map in explanation mode): when ``sum(parts) == x`` they sum to
        ``forward(x)`` (ValueError with a bias). parts: each (..., D) -> list of (..., D)."""
        if self.bias is not None:
            raise ValueError("the parts of a biased LayerNorm's input do not sum to its output; "
                             "remove the biases first")
        std = _std(x - x.mean(-1, keepdim=True), (-1,), self.eps)
        weight = parameter(self.weight)
        return [(p - p.mean(-1, keepdim=True)) / std * weight for p in parts]


class BcosGELU(nn.Module):
    """GELU as ``x · Φ(x)`` whose gate ``Φ(x)`` (the standard normal CDF) is a dynamic weight:
    (...) -> (...), the activation of a B-cosified MLP."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (torch.is_grad_enabled() and explaining()):
            return F.gelu(x)  # a differentiable gate: the same function and gradient, fused
        with dynamic_weight():
            gate = normal_cdf(x)
        return x * gate


class BcosLayerNorm2d(BcosLayerNorm):
    """Bias-free LayerNorm over channels and space of each image (a one-group GroupNorm) with a
    per-channel weight, variance detached in explanation mode: (B, C, H, W) -> (B, C, H, W)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if not (torch.is_grad_enabled() and explaining()):  # a differentiable scale: fused
            return F.group_norm(x, 1, self.weight, None, self.eps)
        return _centred_normalised(x, (1, 2, 3), self.eps) * parameter(self.weight)[:, None, None]


def sincos_positional_embedding(height: int, width: int, dim: int,
                                temperature: float = 10_000.0,
                                device: torch.device | str | None = None) -> torch.Tensor:
    """Fixed 2-D sin-cos positional embedding of a (height, width) token grid, row-major:
    (height·width, dim) float32, blocks ``[sin(x ω), cos(x ω), sin(y ω), cos(y ω)]`` with
    ``ω_i = temperature^(-i / (dim/4 - 1))``. Always computed in float32, as the reference
    does before casting, so float64 models reproduce it exactly."""
    if dim % 4 or dim < 8:
        raise ValueError(f"the sin-cos embedding needs dim divisible by 4 and >= 8, got {dim}")
    y, x = torch.meshgrid(torch.arange(height, device=device),
                          torch.arange(width, device=device), indexing="ij")
    quarter = dim // 4
    exponents = torch.arange(quarter, device=device, dtype=torch.float32) / (quarter - 1)
    omega = 1.0 / temperature ** exponents
    y = y.flatten()[:, None] * omega[None, :]
    x = x.flatten()[:, None] * omega[None, :]
    return torch.cat((x.sin(), x.cos(), y.sin(), y.cos()), dim=1)


def _stem_strides(in_channels: int, stem_channels: Sequence[int]) -> list[int]:
    """Stride of each stem convolution: 2 where it widens the channels, else 1."""
    channels = [in_channels, *stem_channels]
    return [2 if c_out > c else 1 for c, c_out in zip(channels, channels[1:], strict=False)]


def token_stride(in_channels: int, patch_size: int, stem_channels: Sequence[int] = ()) -> int:
    """Input pixels per token side of a :class:`BcosSimpleViT`: the patch size times the
    strides of the stem convolutions (image sides must be multiples of it)."""
    return patch_size * math.prod(_stem_strides(in_channels, stem_channels))


class PatchEmbedding(nn.Module):
    """Optional B-cos convolution stem, then a B-cos linear map of each p×p patch:
    (B, C, H, W) -> patch tokens (B, H/s, W/s, D), s = p · 2^(stride-2 stem convolutions).

    Stem convolution i (stride 2 where it widens the channels, else 1) is followed by a
    :class:`BcosLayerNorm2d`; they sit at indices 3i and 3i+1 of ``conv_stem``, as in the
    reference, whose identity activations took index 3i+2. The patch vector is ordered (row,
    column, channel), the reference's ``(p1 p2 c)``.
    """

    def __init__(self, in_channels: int, dim: int, patch_size: int,
                 stem_channels: Sequence[int] = (), layers: _Layers = _V2_LAYERS):
        super().__init__()
        self.patch_size = patch_size
        self.stride = token_stride(in_channels, patch_size, stem_channels)
        stem, c = OrderedDict(), in_channels
        strides = _stem_strides(in_channels, stem_channels)
        for i, (c_out, stride) in enumerate(zip(stem_channels, strides, strict=True)):
            stem[str(3 * i)] = _bcos_conv3x3(c, c_out, stride)
            stem[str(3 * i + 1)] = BcosLayerNorm2d(c_out)
            c = c_out
        self.conv_stem = nn.Sequential(stem)  # empty without a stem
        self.linear = layers.linear(c * patch_size ** 2, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        # no stem: rearrange the patches in the product's dtype (under autocast: half the bytes)
        x = self.conv_stem(conv_layout(x)) if len(self.conv_stem) else x.to(product_dtype(x))
        b, c, h, w = x.shape
        p = self.patch_size
        patches = x.reshape(b, c, h // p, p, w // p, p).permute(0, 2, 4, 3, 5, 1)
        return self.linear(patches.reshape(b, h // p, w // p, p * p * c))


class Attention(nn.Module):
    """LayerNorm, plain q/k/v projection (bias-free unless ``layers.bias``), softmax attention
    (scale head_dim^-½), B-cos output projection: (B, N, D) -> (B, N, D). Queries and keys are
    dynamic weights."""

    def __init__(self, dim: int, heads: int, layers: _Layers = _V2_LAYERS):
        super().__init__()
        if dim % heads:
            raise ValueError(f"dim={dim} must be divisible by heads={heads}")
        self.heads = heads
        self.head_dim = dim // heads
        self.norm = layers.norm(dim)
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=layers.bias)
        self.to_out = layers.linear(dim, dim)

    def _split_heads(self, x: torch.Tensor, weight: torch.Tensor,
                     bias: torch.Tensor | None) -> torch.Tensor:
        """(B, N, D) projected by ``weight`` (k·D, D) and ``bias`` (k·D,) or None ->
        (k, B, heads, N, head_dim)."""
        b, n, _ = x.shape
        projected = add_constant(F.linear(x, parameter(weight)), bias)
        return projected.view(b, n, -1, self.heads, self.head_dim).permute(2, 0, 3, 1, 4)

    def _attend(self, x: torch.Tensor, normed: torch.Tensor | None = None,
                need_attention: bool = True) -> tuple[torch.Tensor | None, torch.Tensor]:
        """x (B, N, D) -> (attention (B, heads, N, N), concatenated heads (B, N, D));
        ``normed`` replaces ``norm(x)``. Without ``need_attention`` and outside explanation
        mode (where the attention is a constant) the attention is None and the heads come from
        one q/k/v product and the fused ``scaled_dot_product_attention`` (the same function)."""
        x = self.norm(x) if normed is None else normed
        if not (need_attention or explaining()):
            q, k, v = self._split_heads(x, self.to_qkv.weight, self.to_qkv.bias)
            return None, F.scaled_dot_product_attention(q, k, v).transpose(1, 2).flatten(2)
        sizes = [2 * x.shape[-1], x.shape[-1]]
        qk_weight, v_weight = self.to_qkv.weight.split(sizes)
        qk_bias, v_bias = (None, None) if self.to_qkv.bias is None else \
            self.to_qkv.bias.split(sizes)
        with dynamic_weight():
            q, k = self._split_heads(x, qk_weight, qk_bias)
            if torch.is_grad_enabled():
                attention = (q @ k.transpose(-1, -2) * self.head_dim ** -0.5).softmax(-1)
            else:
                attention = constant_attention(q, k, self.head_dim ** -0.5)
        # squeeze, not [0]: a select's gradient would first fill a zero tensor of q/k/v's size
        heads = attention @ self._split_heads(x, v_weight, v_bias).squeeze(0)  # (B, heads, N, hd)
        return attention, heads.transpose(1, 2).flatten(2)

    def forward(self, x: torch.Tensor, return_attention: bool = False,
                normed: torch.Tensor | None = None):
        """x (B, N, D) -> output (B, N, D), and the attention (B, heads, N, N) or None;
        ``normed`` replaces ``norm(x)``."""
        attention, heads = self._attend(x, normed, return_attention)
        return self.to_out(heads), attention

    def head_terms(self, x: torch.Tensor) -> torch.Tensor:
        """Per-head outputs (B, heads, N, D) whose sum over heads is ``forward(x)``: each
        head's output through its slice of the (dynamic) output projection."""
        _, heads = self._attend(x)
        mask = torch.eye(self.heads, dtype=heads.dtype, device=heads.device)
        mask = mask.repeat_interleave(self.head_dim, dim=1)              # (heads, D)
        parts = [heads * mask[h] for h in range(self.heads)]
        return torch.stack(self.to_out.forward_parts(heads, parts), dim=1)


class FeedForward(nn.Module):
    """LayerNorm, then two B-cos linear layers, with a :class:`BcosGELU` between them when
    B-cosified (else none): (..., D) -> (..., D)."""

    def __init__(self, dim: int, hidden_dim: int, layers: _Layers = _V2_LAYERS):
        super().__init__()
        net = OrderedDict(norm=layers.norm(dim), linear1=layers.linear(dim, hidden_dim))
        if layers.bcosified:
            net["act"] = BcosGELU()
        net["linear2"] = layers.linear(hidden_dim, dim)
        self.net = nn.Sequential(net)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)


class EncoderBlock(nn.Module):
    """x + Attention(x), then + FeedForward(.): (B, N, D) -> (B, N, D)."""

    def __init__(self, dim: int, heads: int, mlp_dim: int, layers: _Layers = _V2_LAYERS):
        super().__init__()
        self.attn = Attention(dim, heads, layers)
        self.ff = FeedForward(dim, mlp_dim, layers)

    def forward(self, x: torch.Tensor, return_attention: bool = False,
                normed: torch.Tensor | None = None):
        """x (B, N, D) -> (B, N, D), and the attention (B, heads, N, N) or None; ``normed``
        replaces the attention's ``norm(x)``."""
        a, attention = self.attn(x, return_attention, normed)
        x = x + a
        return x + self.ff(x), attention


class BcosSimpleViT(nn.Module):
    """B-cos v2 simple ViT (``stem_channels=()``) or ViT-C (a B-cos convolution stem), or the
    B-cosified form of a conventional ViT (``bcosified=True``).

    Input: encoded images (B, in_channels, H, W) (``[r, g, b, 1-r, 1-g, 1-b]``, see
    :func:`~interpretable.nn.bcos.encode_image`; no mean/std normalisation), H and W multiples
    of ``token_stride``. Output: logits (B, num_classes). ``image_size`` (an int for square
    images or (height, width)) is the size the model is used at; it sets ``grid_size``, the
    token grid of token-level attribution maps (the sin-cos positional embedding follows each
    input's size; a learned one, of a B-cosified model, fixes it). ``logit_bias`` defaults to
    log(1/(num_classes - 1)). ``b`` is the exponent B of every B-cos layer, ``bias`` gives
    every layer a bias (see the module docstring for ``bcosified``).
    """

    bcosified = False  # the class default keeps models pickled before it loadable

    def __init__(self, *, dim: int, depth: int, heads: int, mlp_dim: int, patch_size: int,
                 stem_channels: Sequence[int] = (), num_classes: int = 1000,
                 in_channels: int = 6, image_size: int | Sequence[int] = 224,
                 logit_bias: float | None = None, bcosified: bool = False, b: float = 2.0,
                 bias: bool = False):
        super().__init__()
        layers = _Layers(float(b), bool(bias), bool(bcosified))
        self.to_patch_embedding = PatchEmbedding(in_channels, dim, patch_size, stem_channels,
                                                 layers)
        self.dim = dim
        self.transformer = nn.ModuleDict(
            (f"encoder_{i}", EncoderBlock(dim, heads, mlp_dim, layers)) for i in range(depth))
        self.linear_head = nn.Sequential(OrderedDict(norm=layers.norm(dim),
                                                     linear=layers.linear(dim, num_classes)))
        if logit_bias is None:
            logit_bias = math.log(1.0 / (num_classes - 1)) if num_classes > 1 else 0.0
        self.logit_bias = float(logit_bias)
        self.output_scale = 1.0  # no output scaling (the holistic ViT's term_logits contract)
        self.token_stride = self.to_patch_embedding.stride
        size = (image_size,) * 2 if isinstance(image_size, int) else tuple(image_size)
        if len(size) != 2 or any(side % self.token_stride for side in size):
            raise ValueError(f"image_size={image_size} must be a multiple of the token stride "
                             f"{self.token_stride} (an int or (height, width))")
        self.grid_size = (size[0] // self.token_stride, size[1] // self.token_stride)
        self.bcosified = bool(bcosified)
        if self.bcosified:
            self.class_token = nn.Parameter(torch.zeros(dim))
            self.pos_embedding = nn.Parameter(
                torch.randn(1 + math.prod(self.grid_size), dim) * 0.02)

    def positional_embedding(self, x: torch.Tensor) -> torch.Tensor:
        """Positional embedding of the tokens of images x (B, C, H, W): (N, D) (N + 1 rows,
        the class token's first, when B-cosified) in x's dtype and device."""
        h, w = x.shape[-2:]
        s = self.token_stride
        if h % s or w % s:
            raise ValueError(f"image height and width must be multiples of {s}, got {(h, w)}")
        if not self.bcosified:
            return sincos_positional_embedding(h // s, w // s, self.dim,
                                               device=x.device).to(x.dtype)
        if (h // s, w // s) != self.grid_size:
            raise ValueError(f"the learned positional embedding is of a {self.grid_size} token "
                             f"grid, images of {(h, w)} give {(h // s, w // s)}")
        return parameter(self.pos_embedding).to(x.dtype)

    def forward_features(self, x: torch.Tensor, positional: torch.Tensor | None = None,
                         return_attention: bool = False
                         ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x (B, C, H, W) -> (final token map (B, D, h, w), or when B-cosified the final
        tokens (B, D, 1 + h·w), the class token first; [attention (B, heads, N, N)] per block
        if ``return_attention`` else []). ``positional`` ((N, D) or (B, N, D)) replaces
        :meth:`positional_embedding` (to differentiate with respect to it)."""
        tokens = self._tokens(x, positional)
        attentions = []
        for block in self.transformer.values():
            tokens, attention = block(tokens, return_attention)
            if return_attention:
                attentions.append(attention)
        tokens = tokens.transpose(1, 2)
        return (tokens if self.bcosified else tokens.unflatten(2, self._grid(x))), attentions

    def _grid(self, x: torch.Tensor) -> tuple[int, int]:
        """The token grid (h, w) of images x (B, C, H, W)."""
        return x.shape[-2] // self.token_stride, x.shape[-1] // self.token_stride

    def _tokens(self, x: torch.Tensor, positional: torch.Tensor | None = None
                ) -> torch.Tensor:
        """x (B, C, H, W) -> the first block's input (B, N, D) (the class token first when
        B-cosified); ``positional`` as in :meth:`forward_features`."""
        if positional is None:
            positional = self.positional_embedding(x)
        tokens = self.to_patch_embedding(x).flatten(1, 2)
        if self.bcosified:
            cls = add_constant(tokens.new_zeros(len(tokens), 1, self.dim), self.class_token)
            tokens = torch.cat([cls, tokens], 1)
        return tokens + positional

    def last_norm_forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x (B, C, H, W) -> (the last block's attention LayerNorm output (B, N, D), a leaf
        requiring grad: the layer whose patch tokens still feed the class token; the logits
        (B, K) computed from it). The layers before it run without autograd."""
        *blocks, last = self.transformer.values()
        with torch.no_grad():
            tokens = self._tokens(x)
            for block in blocks:
                tokens, _ = block(tokens)
            normed = last.attn.norm(tokens)
        normed.requires_grad_(True)
        with torch.enable_grad():
            tokens = last(tokens, normed=normed)[0]
            return normed, self.forward_head(tokens.transpose(1, 2))

    def _pooled(self, tokens: torch.Tensor) -> torch.Tensor:
        """Tokens (B, N, D) -> the head's input (B, D): the class token, or the mean."""
        return tokens[:, 0] if self.bcosified else tokens.mean(1)

    def pooled(self, token_map: torch.Tensor) -> torch.Tensor:
        """Output of :meth:`forward_features` -> the pooled features (B, D) the head reads."""
        return self._pooled(token_map.flatten(2).transpose(1, 2))

    def forward_head(self, token_map: torch.Tensor) -> torch.Tensor:
        """Output of :meth:`forward_features` -> logits (B, num_classes): pooling (the mean
        or the class token), LayerNorm, B-cos classifier (in the parameters' precision, also
        under autocast), logit bias."""
        return in_parameter_precision(self.linear_head, self.pooled(token_map)) + self.logit_bias

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x (B, C, H, W) -> (logits (B, K), [attention (B, heads, N, N)] per block)."""
        token_map, attentions = self.forward_features(x, return_attention=True)
        return self.forward_head(token_map), attentions

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x)[0])

    def term_names(self) -> list[str]:
        """Names of the residual-stream terms of :meth:`term_logits`."""
        names = ["tokens"]
        for layer, block in enumerate(self.transformer.values()):
            names += [f"layer{layer}.head{h}" for h in range(block.attn.heads)]
            names.append(f"layer{layer}.mlp")
        return names

    def term_logits(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Exact split of the logits over the residual stream: the tokens (patch embedding
        plus positional embedding, and the class token), each (layer, head) and each MLP,
        sent through the head's effective linear map (dynamic factors of the full input).
        x (B, C, H, W) -> (logits (B, K), terms (B, T, K)), ``terms.sum(1) * output_scale +
        logit_bias == logits``; names: :meth:`term_names`. ValueError for a model with
        biases (no term carries them)."""
        tokens = self.to_patch_embedding(x).flatten(1, 2)
        if self.bcosified:
            tokens = torch.cat([parameter(self.class_token).expand(len(tokens), 1, -1), tokens],
                               1)
        tokens = tokens + self.positional_embedding(x)
        terms = [tokens]
        for block in self.transformer.values():
            heads = block.attn.head_terms(tokens)
            terms.extend(heads.unbind(1))
            tokens = tokens + heads.sum(1)
            mlp = block.ff(tokens)
            terms.append(mlp)
            tokens = tokens + mlp
        pooled, norm = self._pooled(tokens), self.linear_head.norm
        parts = norm.forward_parts(pooled, [self._pooled(t) for t in terms])
        term_logits = torch.stack(self.linear_head.linear.forward_parts(norm(pooled), parts), 1)
        return term_logits.sum(1) + self.logit_bias, term_logits


class ViTContributions(NamedTuple):
    """Exact decomposition of the target logits of a batch:
    ``maps.sum((1, 2)) + positional + constants + logit_bias == logits[range(B), target]``."""

    maps: torch.Tensor        # (B, H, W) pixel contributions W(x) ⊙ x summed over channels
    weights: torch.Tensor     # (B, C, H, W) the dynamic linear map W(x) of the target logits
    positional: torch.Tensor  # (B,) contribution of the positional embedding
    constants: torch.Tensor   # (B,) contribution of the class token and the biases (or 0)
    logits: torch.Tensor      # (B, K) all logits
    target: torch.Tensor      # (B,) explained classes


def vit_contributions(model: BcosSimpleViT, x: torch.Tensor,
                  target: torch.Tensor | Sequence[int] | int | None = None,
                  contrast: torch.Tensor | None = None) -> ViTContributions:
    """One forward and one backward pass in explanation mode for the whole batch.

    x: encoded images (B, C, H, W); target: (B,), one class for all, or None (the predicted
    classes); contrast (B, K) or None: explain the target logit minus the contrast-weighted
    logits (:func:`~interpretable.nn._losses.explained_logits`). The gradients with respect to
    the input, to a per-image copy of the positional embedding and to per-image copies of the
    class token and the biases (:func:`~interpretable.nn.bcos._layers.recording_constants`)
    give every linear term of the logit; nothing in ``model`` changes.
    """
    if x.dim() != 4:
        raise ValueError(f"x must have shape (B, C, H, W), got {tuple(x.shape)}")
    if target is not None:
        target = torch.as_tensor(target, device=x.device).long().reshape(-1)
        if len(target) not in (1, len(x)):
            raise ValueError(f"target has {len(target)} entries for {len(x)} images")
        target = target.expand(len(x))
    x = x.detach().requires_grad_(True)
    positional = model.positional_embedding(x).detach().repeat(len(x), 1, 1)
    positional.requires_grad_(True)
    with explanation_mode(constant_parameters=True), recording_constants() as constants, \
            torch.enable_grad():
        logits = model.forward_head(model.forward_features(x, positional)[0])
        if target is None:
            target = logits.argmax(1)
        selected = explained_logits(logits, target, contrast).sum()
        weights, positional_weights, *constant_weights = torch.autograd.grad(
            selected, (x, positional, *constants), allow_unused=True)
    constant = sum((((g * c).reshape(len(x), -1).sum(1)) for g, c in
                    zip(constant_weights, constants, strict=True) if g is not None),
                   torch.zeros(len(x), dtype=x.dtype, device=x.device))
    return ViTContributions(maps=(weights * x).sum(1).detach(), weights=weights,
                         positional=(positional_weights * positional).sum((1, 2)).detach(),
                         constants=constant.detach(), logits=logits.detach(), target=target)
