"""A conventional Vision Transformer with a CNN stem, of the same size as
:class:`~interpretable.nn.bcos.BcosViT` (the B-cos ViT's baseline, ``layout="stem"``
of :class:`~interpretable.ViTClassifier`): CNN stem, learned positional embedding,
pre-LayerNorm blocks with GELU MLPs, mean pooling. The ViTs of torchvision's and timm's layouts
are :mod:`interpretable.nn`."""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from interpretable.nn._heads import mha_forward
from interpretable.nn._tensors import in_parameter_precision
from interpretable.nn.bcos._layers import conv_layout

__all__ = ["ViT"]


class ViTBlock(nn.Module):
    """x + MSA(LN(x)), then + MLP(LN(.)). (B, N, D) -> (B, N, D)."""

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 2.0, dropout: float = 0.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, num_heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(), nn.Linear(hidden, dim))

    def forward(self, x: torch.Tensor, return_attention: bool = False):
        a, attn = mha_forward(self.attn, self.norm1(x))
        x = x + a
        x = x + self.mlp(self.norm2(x))
        return (x, attn) if return_attention else x


class ViT(nn.Module):
    """Conventional ViT. x: (B, in_channels, H, W) -> logits (B, n_classes)."""

    def __init__(self, in_channels: int, image_size: tuple[int, int], n_classes: int,
                 patch_size: int = 4, embed_dim: int = 64, depth: int = 4, num_heads: int = 4,
                 mlp_ratio: float = 2.0, stem_channels: Sequence[int] = (32,),
                 dropout: float = 0.0):
        super().__init__()
        h, w = image_size
        if h % patch_size or w % patch_size:
            raise ValueError(f"image size {image_size} must be divisible by "
                             f"patch_size={patch_size}")
        if embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} must be divisible by num_heads={num_heads}")
        self.grid_size = (h // patch_size, w // patch_size)
        layers, c = [], in_channels
        for c_out in stem_channels:
            layers += [nn.Conv2d(c, c_out, 3, padding=1), nn.GELU()]
            c = c_out
        layers.append(nn.Conv2d(c, embed_dim, patch_size, stride=patch_size))
        self.stem = nn.Sequential(*layers)
        self.pos_embed = nn.Parameter(
            torch.zeros(1, self.grid_size[0] * self.grid_size[1], embed_dim))
        nn.init.trunc_normal_(self.pos_embed, std=0.02)
        self.blocks = nn.ModuleList(
            ViTBlock(embed_dim, num_heads, mlp_ratio, dropout) for _ in range(depth))
        self.norm = nn.LayerNorm(embed_dim)
        self.head = nn.Linear(embed_dim, n_classes)

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x: (B, C, H, W) -> (final token map (B, D, h, w) after the last LayerNorm,
        [attention (B, heads, N, N)] per layer)."""
        feats = self.stem(conv_layout(x))
        tokens = feats.flatten(2).transpose(1, 2) + self.pos_embed
        attentions = []
        for block in self.blocks:
            tokens, attn = block(tokens, return_attention=True)
            attentions.append(attn)
        return self.norm(tokens).transpose(1, 2).unflatten(2, self.grid_size), attentions

    def forward_head(self, token_map: torch.Tensor) -> torch.Tensor:
        """Final token map (B, D, h, w) -> logits (B, K): mean pool, linear classifier (in the
        parameters' precision, also under autocast)."""
        return in_parameter_precision(self.head, token_map.flatten(2).mean(-1))

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x: (B, C, H, W) -> (logits (B, K), [attention (B, heads, N, N)] per layer)."""
        token_map, attentions = self.forward_features(x)
        return self.forward_head(token_map), attentions

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_with_attention(x)[0]
