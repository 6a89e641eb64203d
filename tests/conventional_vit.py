"""Tiny conventional Vision Transformers in the state-dict layouts of torchvision's and timm's
``VisionTransformer``, for tests that need one without either package (torchvision's PyPI
wheels need a CUDA build of torch).

Both compute the same network from their documented structure: patch convolution, class token
first, learned positions, pre-norm blocks (LayerNorm eps 1e-6, multi-head softmax attention,
GELU MLP), a final LayerNorm and a linear head on the class token. Input: normalised images
(B, 3, H, W); output: logits (B, num_classes). Every parameter is random (biases and
LayerNorm affines too), so a conversion that drops one is caught.

>>> model = conventional_vit("timm")
>>> model(torch.zeros(2, 3, 16, 16)).shape
torch.Size([2, 5])
"""
from __future__ import annotations

from collections import OrderedDict

import torch
from torch import nn
from torch.nn import functional as F

LAYOUTS = ("torchvision", "timm")
TINY = dict(image_size=16, patch_size=4, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32,
            num_classes=5)


class _SelfAttention(nn.Module):
    """timm's ``Attention``: packed ``qkv`` and ``proj`` linear layers."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.num_heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, n, d = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.num_heads, d // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        return self.proj(F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, n, d))


class _Block(nn.Module):
    """A pre-norm encoder block under the ``layout``'s module names."""

    def __init__(self, layout: str, dim: int, heads: int, mlp_dim: int):
        super().__init__()
        self.layout = layout
        norm1, norm2 = nn.LayerNorm(dim, eps=1e-6), nn.LayerNorm(dim, eps=1e-6)
        if layout == "torchvision":
            self.ln_1, self.ln_2 = norm1, norm2
            self.self_attention = nn.MultiheadAttention(dim, heads, batch_first=True)
            self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.GELU(), nn.Dropout(0.0),
                                     nn.Linear(mlp_dim, dim), nn.Dropout(0.0))
        else:
            self.norm1, self.norm2 = norm1, norm2
            self.attn = _SelfAttention(dim, heads)
            self.mlp = nn.Sequential(OrderedDict(fc1=nn.Linear(dim, mlp_dim), act=nn.GELU(),
                                                 fc2=nn.Linear(mlp_dim, dim)))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.layout == "torchvision":
            y = self.ln_1(x)
            x = x + self.self_attention(y, y, y, need_weights=False)[0]
            return x + self.mlp(self.ln_2(x))
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ConventionalViT(nn.Module):
    """A conventional ViT whose state-dict keys and shapes are those of torchvision's
    ``VisionTransformer`` (``layout="torchvision"``) or timm's (``"timm"``)."""

    def __init__(self, layout: str, image_size: int, patch_size: int, num_layers: int,
                 num_heads: int, hidden_dim: int, mlp_dim: int, num_classes: int):
        super().__init__()
        self.layout = layout
        tokens = 1 + (image_size // patch_size) ** 2
        proj = nn.Conv2d(3, hidden_dim, patch_size, stride=patch_size)
        blocks = [_Block(layout, hidden_dim, num_heads, mlp_dim) for _ in range(num_layers)]
        norm, head = nn.LayerNorm(hidden_dim, eps=1e-6), nn.Linear(hidden_dim, num_classes)
        if layout == "torchvision":
            self.conv_proj = proj
            self.class_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
            self.encoder = nn.Module()
            self.encoder.pos_embedding = nn.Parameter(torch.zeros(1, tokens, hidden_dim))
            self.encoder.layers = nn.Sequential(OrderedDict(
                (f"encoder_layer_{i}", block) for i, block in enumerate(blocks)))
            self.encoder.ln = norm
            self.heads = nn.Sequential(OrderedDict(head=head))
        else:
            self.patch_embed = nn.Module()
            self.patch_embed.proj = proj
            self.cls_token = nn.Parameter(torch.zeros(1, 1, hidden_dim))
            self.pos_embed = nn.Parameter(torch.zeros(1, tokens, hidden_dim))
            self.blocks = nn.Sequential(*blocks)
            self.norm, self.head = norm, head

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        tv = self.layout == "torchvision"
        proj, cls = (self.conv_proj, self.class_token) if tv else \
            (self.patch_embed.proj, self.cls_token)
        tokens = proj(x).flatten(2).transpose(1, 2)
        tokens = torch.cat([cls.expand(len(x), -1, -1), tokens], 1)
        if tv:
            tokens = self.encoder.ln(self.encoder.layers(tokens + self.encoder.pos_embedding))
            return self.heads(tokens[:, 0])
        return self.head(self.norm(self.blocks(tokens + self.pos_embed))[:, 0])


def randomise(model: nn.Module, seed: int = 0) -> nn.Module:
    """Every parameter of ``model`` drawn at random (LayerNorm weights around 1), in place."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            noise = torch.randn(p.shape, generator=generator, dtype=p.dtype)
            is_norm_weight = p.dim() == 1 and name.endswith("weight")
            p.copy_(1 + 0.2 * noise if is_norm_weight else 0.3 * noise)
    return model


def conventional_vit(layout: str = "torchvision", seed: int = 0, **sizes) -> ConventionalViT:
    """A random tiny :class:`ConventionalViT` in eval mode (``sizes`` override :data:`TINY`)."""
    return randomise(ConventionalViT(layout, **{**TINY, **sizes}), seed).eval()
