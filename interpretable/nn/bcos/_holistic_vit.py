"""The holistically explainable B-cos Vision Transformer (Böhle, Fritz & Schiele): a B-cos CNN
tokenizer, B-cos attention with a learned prior, B-cos MLPs with MaxOut and a B-cos classifier.

Every component is dynamic linear (see :mod:`interpretable.nn.bcos`), so inside
:func:`~interpretable.nn.bcos.explanation_mode` one backward pass gives ``W(x)`` and
``W(x) ⊙ x`` sums exactly to the logit minus the fixed logit bias.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from interpretable.nn._tensors import in_parameter_precision
from interpretable.nn.bcos._kernels import linear, resolve_implementation
from interpretable.nn.bcos._layers import (
    BcosConv2d,
    BcosLinear,
    constant_attention,
    conv_layout,
    dynamic_weight,
    explaining,
)

__all__ = ["BcosViT"]

ATTENTION_PRIORS = ("multiplicative", "additive", "none")


class BcosStem(nn.Module):
    """B-cos CNN tokenizer: 3×3 B-cos convolutions (the first with stride ``stride``), then a
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
        bsz, n, dim = x.shape
        with dynamic_weight():
            normed = self.norm(x)
            if resolve_implementation(self.value.implementation, x, explaining()) == "reference":
                qk = self.qk(normed)
            else:  # the faster GEMM of the device (the value layer's implementation decides)
                qk = linear(normed.reshape(-1, dim), self.qk.weight, self.qk.bias)
            qk = qk.view(bsz, n, 2, self.num_heads, self.head_dim)
            q, k = qk.permute(2, 0, 3, 1, 4).unbind(0)  # each (B, heads, N, head_dim)
            if not torch.is_grad_enabled():
                additive = self.prior if self.attention_prior == "additive" else None
                attention = constant_attention(q, k, self.head_dim ** -0.5, additive)
                if self.attention_prior == "multiplicative":
                    attention.mul_(self.prior.softmax(-1))
                return attention
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
        """Final token map (B, D, h, w) -> logits (B, n_classes): mean pool, classifier (in
        the parameters' precision, also under autocast)."""
        return self._logits(in_parameter_precision(self.head, token_map.flatten(2).mean(-1)))

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
        for layer, block in enumerate(self.blocks):
            names += [f"layer{layer}.head{h}" for h in range(block.attn.num_heads)]
            names.append(f"layer{layer}.mlp")
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
