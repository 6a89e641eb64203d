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
import math
from typing import Iterator, Sequence

import torch
from torch import nn
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
    "ATTENTION_PRIORS",
]

ATTENTION_PRIORS = ("multiplicative", "additive", "none")


@contextlib.contextmanager
def explanation_mode(module: nn.Module) -> Iterator[nn.Module]:
    """Treat the dynamic weights of every B-cos component in ``module`` as constants.

    Within the context the forward pass is numerically unchanged, but gradients flow only
    through the effective linear maps, so ``d out / d x == W(x)``.
    """
    touched = [m for m in module.modules() if hasattr(m, "explanation_mode")]
    previous = [m.explanation_mode for m in touched]
    for m in touched:
        m.explanation_mode = True
    try:
        yield module
    finally:
        for m, p in zip(touched, previous):
            m.explanation_mode = p


def encode_image(x: torch.Tensor) -> torch.Tensor:
    """``[x, 1 - x]`` channel encoding: (B, C, H, W) in [0, 1] -> (B, 2C, H, W).

    The colour of each pixel is then fixed by the angle of its encoding vector, which makes
    ``W(x)`` visualisable in colour.
    """
    return torch.cat([x, 1.0 - x], dim=1)


class _BcosBase(nn.Module):
    """Shared B-cos computation: ``out = γ · |cos(x, ŵ)|^(B-1) · ŵᵀx``, MaxOut over units."""

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
        self.explanation_mode = False

    def _unit_weight(self) -> torch.Tensor:
        w = self.weight
        return w / w.flatten(1).norm(dim=1).clamp_min(1e-12).view(-1, *([1] * (w.dim() - 1)))

    def _dynamic(self, lin: torch.Tensor, norm: torch.Tensor, channel_dim: int):
        """MaxOut, then the B-cos scaling of the winning units.

        ``lin``: linear responses ``ŵᵀx`` of all units; ``norm``: ``‖x‖`` broadcastable to
        them. The output ``γ·|ŵᵀx/‖x‖|^(B-1)·ŵᵀx`` increases with ``ŵᵀx`` (``‖x‖`` is shared),
        so MaxOut picks on the raw responses and only the winners are scaled. Returns
        ``(index, selected, factor)``: the MaxOut index (None without MaxOut), the winners'
        responses and their effective scale (a constant in explanation mode); the output is
        ``selected * factor``.
        """
        index = None
        if self.max_out > 1:
            index = self._grouped(lin, channel_dim).max(dim=channel_dim + 1,
                                                        keepdim=True).indices
        selected = self._select(lin, index, channel_dim)
        if self.b == 1:
            factor = torch.full_like(selected, self.scale)
        else:
            cos = (selected / norm.clamp_min(1e-12)).abs()
            factor = (cos if self.b == 2 else cos.clamp_min(1e-12).pow(self.b - 1)) * self.scale
        if self.explanation_mode:
            factor = factor.detach()
        return index, selected, factor

    def _grouped(self, out: torch.Tensor, channel_dim: int) -> torch.Tensor:
        shape = list(out.shape)
        shape[channel_dim:channel_dim + 1] = [self.out_features, self.max_out]
        return out.reshape(shape)

    def _select(self, out: torch.Tensor, index, channel_dim: int) -> torch.Tensor:
        if index is None:
            return out
        return self._grouped(out, channel_dim).gather(channel_dim + 1, index).squeeze(
            channel_dim + 1)


class BcosLinear(_BcosBase):
    """B-cos linear layer: (..., in_features) -> (..., out_features); no bias.

    ``b`` is the exponent B (B=1 gives a plain linear layer on unit-norm weights), ``max_out``
    the number of units per output pooled by MaxOut, ``scale`` the factor f in γ = f/√in.
    """

    def __init__(self, in_features: int, out_features: int, b: float = 2.0, max_out: int = 2,
                 scale: float | None = None):
        super().__init__(in_features, out_features, b, max_out, scale)
        self.in_features = in_features
        self.weight = nn.Parameter(torch.empty(out_features * self.max_out, in_features))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def _factors(self, x: torch.Tensor):
        w = self._unit_weight()
        lin = F.linear(x, w)
        index, selected, factor = self._dynamic(lin, x.norm(dim=-1, keepdim=True), lin.dim() - 1)
        return w, index, selected, factor

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _, _, selected, factor = self._factors(x)
        return selected * factor

    def forward_parts(self, x: torch.Tensor, parts: Sequence[torch.Tensor]) -> list[torch.Tensor]:
        """Map each additive part of ``x`` through the effective linear map ``W(x)``.

        The dynamic factors are computed from the full ``x``; when ``sum(parts) == x`` the
        outputs sum exactly to ``forward(x)``. parts: each (..., in) -> list of (..., out).
        """
        w, index, _, factor = self._factors(x)
        dim = x.dim() - 1
        return [self._select(F.linear(p, w), index, dim) * factor for p in parts]

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
            torch.empty(out_channels * self.max_out, in_channels, kernel_size, kernel_size))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        w = self._unit_weight()
        lin = F.conv2d(x, w, stride=self.stride, padding=self.padding)
        ones = x.new_ones(1, 1, self.kernel_size, self.kernel_size)
        norm = F.conv2d(x.pow(2).sum(1, keepdim=True), ones, stride=self.stride,
                        padding=self.padding).clamp_min(0).sqrt()
        _, selected, factor = self._dynamic(lin, norm, channel_dim=1)
        return selected * factor

    def extra_repr(self) -> str:
        return (f"{self.in_channels}, {self.out_features}, kernel_size={self.kernel_size}, "
                f"stride={self.stride}, padding={self.padding}, b={self.b}, "
                f"max_out={self.max_out}")


class BcosStem(nn.Module):
    """B-cos CNN tokeniser: 3×3 B-cos convolutions, then a patch_size×patch_size B-cos
    convolution with stride patch_size. (B, C, H, W) -> tokens (B, N, D), N = (H/p)(W/p)."""

    def __init__(self, in_channels: int, embed_dim: int, patch_size: int,
                 channels: Sequence[int] = (32,), b: float = 2.0, max_out: int = 2,
                 scale: float | None = None):
        super().__init__()
        layers, c = [], in_channels
        for c_out in channels:
            layers.append(BcosConv2d(c, c_out, 3, padding=1, b=b, max_out=max_out, scale=scale))
            c = c_out
        layers.append(BcosConv2d(c, embed_dim, patch_size, stride=patch_size, b=b,
                                 max_out=max_out, scale=scale))
        self.layers = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        feats = self.layers(x)
        return feats.flatten(2).transpose(1, 2)


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
            self.prior = nn.Parameter(torch.zeros(num_heads, num_tokens, num_tokens))
        else:
            self.register_parameter("prior", None)
        self.explanation_mode = False

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """Attention matrices A: (B, N, D) -> (B, heads, N, N)."""
        bsz, n, _ = x.shape
        q, k = self.qk(self.norm(x)).view(bsz, n, 2, self.num_heads, self.head_dim).unbind(2)
        logits = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.head_dim)
        if self.attention_prior == "additive":
            attn = (logits + self.prior).softmax(-1)
        elif self.attention_prior == "multiplicative":
            attn = logits.softmax(-1) * self.prior.softmax(-1)
        else:
            attn = logits.softmax(-1)
        if self.explanation_mode:
            attn = attn.detach()
        return attn

    def _heads(self, x: torch.Tensor, attn: torch.Tensor) -> torch.Tensor:
        """Concatenated head outputs [A_h V_h x]_h: (B, N, D)."""
        bsz, n, dim = x.shape
        v = self.value(x).view(bsz, n, self.num_heads, self.head_dim)
        return torch.einsum("bhqk,bkhd->bqhd", attn, v).reshape(bsz, n, dim)

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
        bsz, n, dim = concat.shape
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
    """

    def __init__(self, in_channels: int, image_size: tuple[int, int], n_classes: int,
                 patch_size: int = 4, embed_dim: int = 64, depth: int = 4, num_heads: int = 4,
                 mlp_ratio: float = 2.0, stem_channels: Sequence[int] = (32,),
                 attention_prior: str = "multiplicative", b: float = 2.0, max_out: int = 2,
                 scale_factor: float | None = None, output_scale: float = 1.0,
                 logit_bias: float | None = None):
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
                             scale_factor)
        self.blocks = nn.ModuleList(
            BcosBlock(embed_dim, num_heads, num_tokens, mlp_ratio, attention_prior, b, max_out,
                      scale_factor) for _ in range(depth))
        self.final_map = nn.Identity()  # (B, D, h, w) feature map hook for GradCAM
        self.head = BcosLinear(embed_dim, n_classes, b=b, max_out=1, scale=scale_factor)
        self.output_scale = float(output_scale)
        if logit_bias is None:
            logit_bias = math.log(1.0 / (n_classes - 1)) if n_classes > 1 else 0.0
        self.logit_bias = float(logit_bias)

    def _pool(self, tokens: torch.Tensor) -> torch.Tensor:
        bsz, n, d = tokens.shape
        fmap = self.final_map(tokens.transpose(1, 2).reshape(bsz, d, *self.grid_size))
        return fmap.flatten(2).mean(-1)

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x: (B, C, H, W) -> (logits (B, n_classes), [attention (B, heads, N, N)] per layer)."""
        tokens = self.stem(x)
        attentions = []
        for block in self.blocks:
            tokens, attn = block(tokens, return_attention=True)
            attentions.append(attn)
        logits = self.head(self._pool(tokens)) * self.output_scale + self.logit_bias
        return logits, attentions

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
        pooled = self._pool(tokens)
        parts = self.head.forward_parts(pooled, [t.mean(1) for t in terms])
        term_logits = torch.stack(parts, dim=1)
        logits = term_logits.sum(1) * self.output_scale + self.logit_bias
        return logits, term_logits
