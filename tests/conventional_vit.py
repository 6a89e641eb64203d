"""Tiny conventional Vision Transformers for the B-cosification tests: the sizes of
:data:`TINY` (``torchvision.models.VisionTransformer``'s and
:class:`interpretable.nn._library_vit.ConventionalViT`'s arguments) and :func:`randomise`,
which draws every parameter (biases and LayerNorm affines too) at random, so a conversion that
drops one is caught.

>>> from interpretable.nn._library_vit import ConventionalViT
>>> model = randomise(ConventionalViT("timm", **TINY)).eval()
>>> model(torch.zeros(2, 3, 16, 16)).shape
torch.Size([2, 5])
"""
from __future__ import annotations

import torch
from torch import nn

__all__ = ["TINY", "randomise"]

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
