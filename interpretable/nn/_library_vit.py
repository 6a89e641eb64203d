"""A conventional Vision Transformer in the state-dict layouts of torchvision's and timm's
``VisionTransformer``, without either package (torchvision's PyPI wheels need a CUDA build of
torch): what :mod:`interpretable.nn.bcos` B-cosifies.

Both layouts compute the same network from their documented structure: patch convolution,
class token first, learned positions, pre-norm blocks (LayerNorm eps 1e-6, multi-head softmax
attention, GELU MLP), a final LayerNorm and a linear head on the class token. Input:
normalised images (B, 3, H, W); output: logits (B, num_classes). It offers the interface of
:func:`~interpretable.attribution.attribute_pixels` (``grid_size``, ``forward_features``,
``forward_head``, ``forward_with_attention``, and for GradCAM ``last_norm_forward``), so the
post-hoc methods explain it.

>>> model = ConventionalViT("timm", image_size=16, patch_size=4, num_layers=1, num_heads=2,
...                         hidden_dim=8, mlp_dim=16, num_classes=5)
>>> model(torch.zeros(2, 3, 16, 16)).shape
torch.Size([2, 5])
>>> sorted(model.state_dict())[:3]
['blocks.0.attn.proj.bias', 'blocks.0.attn.proj.weight', 'blocks.0.attn.qkv.bias']
"""
from __future__ import annotations

import math
from collections import OrderedDict

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.nn._heads import mha_forward
from interpretable.nn._tensors import in_parameter_precision

__all__ = ["ConventionalViT"]

CHECKPOINT_LAYOUTS = ("torchvision", "timm")


class _SelfAttention(nn.Module):
    """timm's ``Attention``: packed ``qkv`` and ``proj`` linear layers; returns the output and
    the attention (B, heads, N, N), kept in the autograd graph (without ``need_attention``:
    None, the output by the fused ``scaled_dot_product_attention``, as timm computes it)."""

    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.num_heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor, need_attention: bool = True
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
        b, n, d = x.shape
        qkv = self.qkv(x).view(b, n, 3, self.num_heads, d // self.num_heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)
        if not need_attention:
            mixed, attn = F.scaled_dot_product_attention(q, k, v), None
        else:
            attn = (q @ k.transpose(-1, -2) / math.sqrt(d // self.num_heads)).softmax(-1)
            mixed = attn @ v
        return self.proj(mixed.transpose(1, 2).reshape(b, n, d)), attn


class _Block(nn.Module):
    """A pre-norm encoder block under the ``layout``'s module names; returns the tokens and the
    attention."""

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

    def first_norm(self, x: torch.Tensor) -> torch.Tensor:
        """The attention's input: x (B, N, D) after the first LayerNorm."""
        return (self.ln_1 if self.layout == "torchvision" else self.norm1)(x)

    def forward(self, x: torch.Tensor, normed: torch.Tensor | None = None,
                need_attention: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
        """x (B, N, D) -> (tokens, attention); ``normed`` replaces ``first_norm(x)``; without
        ``need_attention`` the attention may be None (timm's layout: fused attention)."""
        normed = self.first_norm(x) if normed is None else normed
        if self.layout == "torchvision":
            a, attn = mha_forward(self.self_attention, normed)
            x = x + a
            return x + self.mlp(self.ln_2(x)), attn
        a, attn = self.attn(normed, need_attention)
        x = x + a
        return x + self.mlp(self.norm2(x)), attn


class ConventionalViT(nn.Module):
    """A conventional ViT whose state-dict keys and shapes are those of torchvision's
    ``VisionTransformer`` (``layout="torchvision"``) or timm's (``"timm"``).

    Parameters
    ----------
    layout : {"torchvision", "timm"}
        The module names (the network is the same).
    image_size, patch_size : int
        Square images and patches.
    num_layers, num_heads, hidden_dim, mlp_dim : int
        Blocks, attention heads, token width and MLP width.
    num_classes : int
        Logits.
    """

    def __init__(self, layout: str, image_size: int, patch_size: int, num_layers: int,
                 num_heads: int, hidden_dim: int, mlp_dim: int, num_classes: int):
        super().__init__()
        if layout not in CHECKPOINT_LAYOUTS:
            raise ValueError(f"layout must be one of {CHECKPOINT_LAYOUTS}, got {layout!r}.")
        self.layout = layout
        self.grid_size = (image_size // patch_size,) * 2
        tokens = 1 + math.prod(self.grid_size)
        proj = nn.Conv2d(3, hidden_dim, patch_size, stride=patch_size)
        cls = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        positions = nn.Parameter(torch.randn(1, tokens, hidden_dim) * 0.02)
        blocks = [_Block(layout, hidden_dim, num_heads, mlp_dim) for _ in range(num_layers)]
        norm, head = nn.LayerNorm(hidden_dim, eps=1e-6), nn.Linear(hidden_dim, num_classes)
        if layout == "torchvision":
            self.conv_proj, self.class_token = proj, cls
            self.encoder = nn.Module()
            self.encoder.pos_embedding = positions
            self.encoder.layers = nn.Sequential(OrderedDict(
                (f"encoder_layer_{i}", block) for i, block in enumerate(blocks)))
            self.encoder.ln = norm
            self.heads = nn.Sequential(OrderedDict(head=head))
        else:
            self.patch_embed = nn.Module()
            self.patch_embed.proj = proj
            self.cls_token, self.pos_embed = cls, positions
            self.blocks = nn.Sequential(*blocks)
            self.norm, self.head = norm, head

    def _parts(self):
        """(patch convolution, class token, positions, blocks, final norm, head)."""
        if self.layout == "torchvision":
            e = self.encoder
            return (self.conv_proj, self.class_token, e.pos_embedding, e.layers, e.ln,
                    self.heads.head)
        return (self.patch_embed.proj, self.cls_token, self.pos_embed, self.blocks, self.norm,
                self.head)

    def _tokens(self, x: torch.Tensor) -> torch.Tensor:
        """x: (B, 3, H, W) -> the first block's input (B, 1 + h·w, D), class token first."""
        proj, cls, positions = self._parts()[:3]
        tokens = proj(x).flatten(2).transpose(1, 2)
        return torch.cat([cls.expand(len(x), -1, -1), tokens], 1) + positions

    def forward_features(self, x: torch.Tensor, need_attention: bool = True
                         ) -> tuple[torch.Tensor, list[torch.Tensor | None]]:
        """x: (B, 3, H, W) -> (final tokens (B, D, 1 + h·w) after the last LayerNorm, class
        token first; [attention (B, heads, N, N)] per block, None where not ``need_attention``
        and not computed)."""
        _, _, _, blocks, norm, _ = self._parts()
        tokens = self._tokens(x)
        attentions = []
        for block in blocks:
            tokens, attn = block(tokens, need_attention=need_attention)
            attentions.append(attn)
        return norm(tokens).transpose(1, 2), attentions

    def forward_head(self, tokens: torch.Tensor) -> torch.Tensor:
        """Final tokens (B, D, N) -> logits (B, K) of the class token (the head in the
        parameters' precision, also under autocast)."""
        return in_parameter_precision(self._parts()[-1], tokens[..., 0])

    def forward_with_attention(self, x: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """x: (B, 3, H, W) -> (logits (B, K), [attention (B, heads, N, N)] per block)."""
        tokens, attentions = self.forward_features(x)
        return self.forward_head(tokens), attentions

    def last_norm_forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """x: (B, 3, H, W) -> (the last block's first LayerNorm output (B, 1 + h·w, D), a
        leaf requiring grad: the layer whose patch tokens still feed the class token; the
        logits (B, K) computed from it). The layers before it run without autograd."""
        _, _, _, blocks, norm, head = self._parts()
        with torch.no_grad():
            tokens = self._tokens(x)
            for block in blocks[:-1]:
                tokens, _ = block(tokens)
            normed = blocks[-1].first_norm(tokens)
        normed.requires_grad_(True)
        with torch.enable_grad():
            return normed, head(norm(blocks[-1](tokens, normed)[0])[:, 0])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x, need_attention=False)[0])
