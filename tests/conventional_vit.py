"""Tiny random conventional Vision Transformers in the state-dict layouts of torchvision's and
timm's ``VisionTransformer`` (:class:`interpretable.nn.conventional_vit.ConventionalViT`), for
tests that need one without either package.

Every parameter is random (biases and LayerNorm affines too), so a conversion that drops one
is caught.

>>> model = conventional_vit("timm")
>>> model(torch.zeros(2, 3, 16, 16)).shape
torch.Size([2, 5])
"""
from __future__ import annotations

import torch
from torch import nn

from interpretable.nn.conventional_vit import LAYOUTS, ConventionalViT

__all__ = ["LAYOUTS", "TINY", "conventional_vit", "randomise"]

TINY = dict(image_size=16, patch_size=4, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32,
            num_classes=5)


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
