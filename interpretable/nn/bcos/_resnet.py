"""B-cos ResNets: the B-cos v2 ResNets of Böhle et al. (``B-cos/B-cos-v2``, PyPI ``bcos``, their
released ImageNet models in :mod:`interpretable.nn.bcos`) and the B-cosified form of a
torchvision ResNet (Arya et al., "B-cosification", see
:mod:`interpretable.nn.bcos`), one network, :class:`BcosResNet`.

The v2 ResNet: B-cos convolutions (B = 2, no MaxOut, unit-norm weights), bias-free uncentered
BatchNorms (:class:`BcosBatchNorm2d`), no activation, an average-pooling stem, the classifier a
1×1 B-cos convolution *before* the global average pooling, a fixed logit bias.
``bcosified=True`` gives a converted torchvision ResNet instead: the weights as they are (no
unit norm), the ReLUs kept (the gate ``[x > 0]`` is a dynamic weight, exact as it is), the stem's
max pooling (``stem_pool="max"``, itself piecewise linear) or the recipe's average pooling;
``bias=True`` gives every BatchNorm and the classifier a bias and ``input_offset=True`` a
constant added to the encoded image inside its borders (the conversion's start, which keeps
the original's function; fine-tuning removes both).

Every part is dynamic linear: inside :func:`~interpretable.nn.bcos.explanation_mode` the
``|cos|`` scales and the batch variances are constants, so one backward pass gives ``W(x)`` and
``W(x) ⊙ x`` sums to the logit minus the logit bias (and the constants' share, which
:func:`contributions` reports). Module names follow the ``bcos`` checkpoints and torchvision
(``conv1``, ``bn1``, ``layer1.0.conv1``, ..., ``downsample.0``, ``fc``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.nn._losses import explained_logits
from interpretable.nn.bcos._layers import (
    BcosConv2d,
    add_constant,
    conv_layout,
    dynamic_weight,
    explanation_mode,
    parameter,
    recording_constants,
)

__all__ = ["BcosResNet", "BcosBatchNorm2d", "ResNetContributions", "resnet_contributions",
           "spread_to_pixels", "RESNET_LAYERS"]

#: the layers whose input :func:`contributions` can explain (``"fc"``: the last feature map)
RESNET_LAYERS = ("layer1", "layer2", "layer3", "layer4", "fc")
#: the blocks by name, with their expansion of the stage width
BLOCKS = {"basic": 1, "bottleneck": 4}
STEM_POOLS = ("avg", "max")


class BcosBatchNorm2d(nn.BatchNorm2d):
    """Uncentered BatchNorm (the ``bcos`` package's ``BatchNormUncentered2d``):
    ``weight · x / sqrt(var + eps) (+ bias)`` per channel, (B, C, H, W) -> (B, C, H, W).

    No mean is subtracted. In training the variance of the batch (over batch and space) is
    used, a dynamic weight (a constant in explanation mode), and the running variance tracks
    it (the biased batch variance, as ``bcos`` does); in eval mode the running variance. A
    BatchNorm whose weight is frozen (``requires_grad`` False) uses and keeps its running
    variance in training too. ``bias=False`` (the v2 models) registers none; a bias is added by
    :func:`~interpretable.nn.bcos._layers.add_constant`. ``running_mean`` is kept unused, for
    the checkpoints' key layout.
    """

    def __init__(self, num_features: int, eps: float = 1e-5, momentum: float | None = 0.1,
                 bias: bool = False):
        super().__init__(num_features, eps=eps, momentum=momentum)
        if not bias:
            self.bias = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training and self.weight.requires_grad:
            with dynamic_weight():  # the statistics in float32 at least (bfloat16 autocast)
                wide = x.to(torch.promote_types(x.dtype, torch.float32))
                var = wide.var(dim=(0, 2, 3), unbiased=False)
            with torch.no_grad():
                self.num_batches_tracked.add_(1)
                rate = self.momentum if self.momentum is not None \
                    else 1.0 / float(self.num_batches_tracked)
                self.running_var.mul_(1 - rate).add_(var.detach().to(self.running_var), alpha=rate)
        else:
            var = self.running_var
        std = (var + self.eps).sqrt().to(x.dtype)[:, None, None]
        out = x / std * parameter(self.weight).to(x.dtype)[:, None, None]
        return add_constant(out, None if self.bias is None else self.bias[:, None, None])


class BcosifiedConv2d(BcosConv2d):
    """:class:`~interpretable.nn.bcos.BcosConv2d` with the options of a B-cos ResNet:
    ``normalize=False`` uses the weights as they are (a converted network's) and ``bias=True``
    adds a bias to the responses (before the B-cos scale), through
    :func:`~interpretable.nn.bcos._layers.add_constant`. At B = 1 with γ = 1 (``scale`` =
    √fan-in) it is a plain ``nn.Conv2d``."""

    def __init__(self, in_channels: int, out_channels: int, kernel_size: int, stride: int = 1,
                 padding: int = 0, b: float = 2.0, normalize: bool = True, bias: bool = False):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, b=b,
                         max_out=1, scale=math.sqrt(in_channels * kernel_size ** 2),
                         patch_norm_eps=1e-6)
        self.normalize = bool(normalize)
        self.bias = nn.Parameter(torch.zeros(out_channels)) if bias else None

    def _responses(self, x: torch.Tensor, weight: torch.Tensor, fused: bool) -> torch.Tensor:
        lin = super()._responses(x, weight, fused)
        return add_constant(lin, None if self.bias is None else self.bias[:, None, None])

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, normalize={self.normalize}, bias={self.bias is not None}"


class _Parts(NamedTuple):
    """How the layers of a :class:`BcosResNet` are built."""

    b: float = 2.0
    bias: bool = False
    bcosified: bool = False

    def conv(self, cin: int, cout: int, kernel: int, stride: int = 1, padding: int = 0,
             bias: bool = False) -> BcosifiedConv2d:
        return BcosifiedConv2d(cin, cout, kernel, stride, padding, b=self.b,
                               normalize=not self.bcosified, bias=bias)

    def norm(self, channels: int) -> BcosBatchNorm2d:
        return BcosBatchNorm2d(channels, bias=self.bias)


class _Block(nn.Module):
    """A residual block: ``branch(x) + shortcut(x)``, with ReLUs when B-cosified."""

    def __init__(self, relu: bool, downsample: nn.Module | None):
        super().__init__()
        self.relu = relu
        self.downsample = downsample

    def _act(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x) if self.relu else x

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x if self.downsample is None else self.downsample(x)
        return self._act(self.branch(x) + identity)


class BasicBlock(_Block):
    """Two 3×3 convolutions (the first with the stride), each followed by a BatchNorm:
    (B, C_in, H, W) -> (B, planes, H/s, W/s)."""

    expansion = 1

    def __init__(self, inplanes: int, planes: int, stride: int, downsample, parts: _Parts):
        super().__init__(parts.bcosified, downsample)
        self.conv1 = parts.conv(inplanes, planes, 3, stride, 1)
        self.bn1 = parts.norm(planes)
        self.conv2 = parts.conv(planes, planes, 3, 1, 1)
        self.bn2 = parts.norm(planes)

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn2(self.conv2(self._act(self.bn1(self.conv1(x)))))


class Bottleneck(_Block):
    """1×1, 3×3 (with the stride, torchvision's v1.5) and 1×1 convolutions, each followed by a
    BatchNorm: (B, C_in, H, W) -> (B, 4·planes, H/s, W/s)."""

    expansion = 4

    def __init__(self, inplanes: int, planes: int, stride: int, downsample, parts: _Parts):
        super().__init__(parts.bcosified, downsample)
        self.conv1 = parts.conv(inplanes, planes, 1)
        self.bn1 = parts.norm(planes)
        self.conv2 = parts.conv(planes, planes, 3, stride, 1)
        self.bn2 = parts.norm(planes)
        self.conv3 = parts.conv(planes, planes * 4, 1)
        self.bn3 = parts.norm(planes * 4)

    def branch(self, x: torch.Tensor) -> torch.Tensor:
        x = self._act(self.bn1(self.conv1(x)))
        return self.bn3(self.conv3(self._act(self.bn2(self.conv2(x)))))


def _halved(side: int, times: int) -> int:
    """A side after ``times`` stride-2 layers of a ResNet (each gives ``ceil(side / 2)``)."""
    for _ in range(times):
        side = -(-side // 2)
    return side


class BcosResNet(nn.Module):
    """B-cos v2 ResNet, or the B-cosified form of a torchvision ResNet (``bcosified=True``).

    Input: encoded images (B, in_channels, H, W) (``[r, g, b, 1-r, 1-g, 1-b]``,
    :func:`~interpretable.nn.bcos.encode_image`), any size. Output: logits (B, num_classes).
    ``block`` ("basic" or "bottleneck") and ``layers`` (blocks per stage, 4 stages) give the
    depth (ResNet-18: "basic", (2, 2, 2, 2); ResNet-50: "bottleneck", (3, 4, 6, 3)), ``width``
    the channels of the stem and first stage (doubled at each stage). ``image_size`` (an int or
    (height, width)) sets ``grid_size``, the final feature grid. ``logit_bias`` defaults to
    log(1/(num_classes - 1)); ``b`` is the exponent B of every convolution; ``bcosified``,
    ``bias``, ``stem_pool`` and ``input_offset`` as in the module docstring.
    """

    def __init__(self, *, block: str = "basic", layers: Sequence[int] = (2, 2, 2, 2),
                 width: int = 64, num_classes: int = 1000, in_channels: int = 6,
                 image_size: int | Sequence[int] = 224, logit_bias: float | None = None,
                 bcosified: bool = False, b: float = 2.0, bias: bool = False,
                 stem_pool: str = "avg", input_offset: bool = False):
        super().__init__()
        if block not in BLOCKS or stem_pool not in STEM_POOLS or len(layers) != 4:
            raise ValueError(f"block must be one of {list(BLOCKS)}, stem_pool one of "
                             f"{list(STEM_POOLS)} and layers 4 numbers of blocks, got "
                             f"{block!r}, {stem_pool!r}, {list(layers)}")
        parts = _Parts(float(b), bool(bias), bool(bcosified))
        self.block, self.width, self.bcosified = block, int(width), bool(bcosified)
        self.input_offset = nn.Parameter(torch.zeros(in_channels)) if input_offset else None
        self.conv1 = parts.conv(in_channels, width, 7, 2, 3)
        self.bn1 = parts.norm(width)
        self.stem_pool = stem_pool
        self.pool = nn.AvgPool2d(3, 2, 1) if stem_pool == "avg" else nn.MaxPool2d(3, 2, 1)
        kind = BasicBlock if block == "basic" else Bottleneck
        inplanes = width
        for i, blocks in enumerate(layers):
            planes, stride = width * 2 ** i, 1 if i == 0 else 2
            downsample = None
            if stride != 1 or inplanes != planes * kind.expansion:
                downsample = nn.Sequential(parts.conv(inplanes, planes * kind.expansion, 1,
                                                      stride),
                                           parts.norm(planes * kind.expansion))
            stage = [kind(inplanes, planes, stride, downsample, parts)]
            inplanes = planes * kind.expansion
            stage += [kind(inplanes, planes, 1, None, parts) for _ in range(1, blocks)]
            self.add_module(f"layer{i + 1}", nn.Sequential(*stage))
        self.num_features = inplanes
        self.fc = parts.conv(inplanes, num_classes, 1, bias=parts.bias)
        if logit_bias is None:
            logit_bias = math.log(1.0 / (num_classes - 1)) if num_classes > 1 else 0.0
        self.logit_bias = float(logit_bias)
        size = (image_size,) * 2 if isinstance(image_size, int) else tuple(image_size)
        self.grid_size = (_halved(size[0], 5), _halved(size[1], 5))

    def _stem(self, x: torch.Tensor) -> torch.Tensor:
        if self.input_offset is not None:  # inside the image: the padding stays zero
            x = add_constant(x, self.input_offset[:, None, None])
        x = self.bn1(self.conv1(conv_layout(x)))
        return self.pool(F.relu(x) if self.bcosified else x)

    def _stages(self) -> list:
        """(name, function) in order: each named layer of :data:`RESNET_LAYERS` takes its input."""
        return [("stem", self._stem), *((f"layer{i}", getattr(self, f"layer{i}"))
                                        for i in range(1, 5)), ("fc", self.forward_head)]

    def run(self, x: torch.Tensor, start: str | None = None, stop: str | None = None
            ) -> torch.Tensor:
        """The stages from the input of layer ``start`` (None: the image) up to the input of
        layer ``stop`` (None: the logits); names of :data:`RESNET_LAYERS`."""
        names = [name for name, _ in self._stages()]
        for name in (start, stop):
            if name is not None and name not in RESNET_LAYERS:
                raise ValueError(f"layer must be None or one of {list(RESNET_LAYERS)}, "
                                 f"got {name!r}")
        first = 0 if start is None else names.index(start)
        last = len(names) if stop is None else names.index(stop)
        for _, stage in self._stages()[first:last]:
            x = stage(x)
        return x

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, list]:
        """x (B, C, H, W) -> (the last feature map (B, D, h, w), []) (no attention)."""
        return self.run(x, stop="fc"), []

    def forward_head(self, features: torch.Tensor) -> torch.Tensor:
        """The last feature map (B, D, h, w) -> logits (B, K): the 1×1 B-cos classifier at
        every position, their mean, the logit bias."""
        return self.fc(features).mean((2, 3)) + self.logit_bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(x)


def spread_to_pixels(maps: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """Each cell of a feature grid's map (B, h, w) spread evenly over the pixels nearest-
    neighbour upsampling gives it: (B, H, W), the same sum (exactly, up to rounding) as the
    map."""
    (h, w), (big_h, big_w) = maps.shape[-2:], tuple(size)
    rows = torch.arange(big_h, device=maps.device) * h // big_h
    cols = torch.arange(big_w, device=maps.device) * w // big_w
    counts = (torch.bincount(rows, minlength=h)[rows, None]
              * torch.bincount(cols, minlength=w)[None, cols])
    return maps[:, rows][:, :, cols] / counts.to(maps.dtype)


class ResNetContributions(NamedTuple):
    """Exact decomposition of the explained logits of a batch:
    ``maps.sum((1, 2)) + constants + logit_bias == explained logits``."""

    maps: torch.Tensor       # (B, h, w) contributions W(x) ⊙ x of the layer's input, summed
    weights: torch.Tensor    # (B, C, h, w) W(x) of the explained logits at the layer's input
    constants: torch.Tensor  # (B,) the biases and input offset after that input (or 0)
    logits: torch.Tensor     # (B, K) all logits
    target: torch.Tensor     # (B,) explained classes


def resnet_contributions(model: BcosResNet, x: torch.Tensor,
                  target: torch.Tensor | Sequence[int] | int | None = None,
                  contrast: torch.Tensor | None = None, layer: str | None = None
                  ) -> ResNetContributions:
    """One forward and one backward pass in explanation mode for the whole batch.

    x: encoded images (B, C, H, W); target: (B,), one class for all, or None (the predicted
    classes); contrast (B, K) or None: explain the target logit minus the contrast-weighted
    logits; layer: None (the input image) or a name of :data:`RESNET_LAYERS`, whose input is
    explained (the layers before it run without autograd). The biases and the input offset
    (:func:`~interpretable.nn.bcos._layers.recording_constants`) after that input give
    ``constants``; nothing in ``model`` changes.

    Examples
    --------
    >>> import torch
    >>> model = BcosResNet(layers=(1, 1, 1, 1), width=4, num_classes=3).double().eval()
    >>> x = torch.rand(2, 6, 32, 32, dtype=torch.float64)
    >>> c = resnet_contributions(model, x, target=[0, 2], layer="layer3")
    >>> c.maps.shape  # the contributions of layer3's input, a 4 x 4 feature map
    torch.Size([2, 4, 4])
    >>> explained = c.logits[[0, 1], [0, 2]]
    >>> bool(torch.allclose(c.maps.sum((1, 2)) + c.constants + model.logit_bias, explained))
    True
    """
    shape = tuple(x.shape)
    chosen = None if target is None else \
        torch.as_tensor(target, device=x.device).long().reshape(-1)
    if len(shape) != 4 or chosen is not None and chosen.numel() not in (1, shape[0]):
        raise ValueError(f"x must have shape (B, C, H, W) and target 1 or B entries, got "
                         f"{shape} and {None if chosen is None else chosen.numel()}")
    target = None if chosen is None else chosen.expand(shape[0])
    with torch.no_grad():
        h = model.run(x.detach(), stop=layer) if layer is not None else x.detach()
    h = h.detach().requires_grad_(True)
    with explanation_mode(constant_parameters=True), recording_constants() as constants, \
            torch.enable_grad():
        logits = model.run(h, start=layer)
        if target is None:
            target = logits.argmax(1)
        selected = explained_logits(logits, target, contrast).sum()
        weights, *constant_weights = torch.autograd.grad(selected, (h, *constants),
                                                         allow_unused=True)
    constant = sum(((g * c).reshape(len(x), -1).sum(1) for g, c in
                    zip(constant_weights, constants, strict=True) if g is not None),
                   torch.zeros(len(x), dtype=h.dtype, device=x.device))
    return ResNetContributions(maps=(weights * h).sum(1).detach(), weights=weights,
                               constants=constant.detach(), logits=logits.detach(),
                               target=target)
