"""B-cos DenseNets: the B-cosified form of a torchvision DenseNet (Arya et al.,
"B-cosification", see :mod:`interpretable.nn.bcos`; DenseNet-121 / 161 / 169 /
201 and any other ``growth_rate``, ``block_config``, ``num_init_features`` and ``bn_size``), one
network, :class:`BcosDenseNet`, built from the parts of
:class:`~interpretable.nn.bcos.BcosResNet`.

Its layout is torchvision's (Huang et al., "Densely Connected Convolutional Networks"): a stem
(7×7 convolution with stride 2, BatchNorm, ReLU, 3×3 pooling with stride 2), dense blocks whose
layers each see the concatenation of all earlier feature maps of their block (BatchNorm, ReLU,
1×1 convolution to ``bn_size · growth_rate`` channels, BatchNorm, ReLU, 3×3 convolution to
``growth_rate`` channels), between two blocks a transition (BatchNorm, ReLU, 1×1 convolution
halving the channels, 2×2 average pooling), a final BatchNorm and ReLU; then, as in the
authors' B-cos DenseNet, the classifier a 1×1 B-cos convolution *before* the global average
pooling and a fixed logit bias. ``bcosified=True`` is a converted torchvision DenseNet (the
weights as they are, the ReLUs kept: their gates are dynamic weights, exact as they are);
``bias=True`` gives every BatchNorm (uncentered, :class:`~.resnet.BcosBatchNorm2d`) and the
classifier a bias and ``input_offset=True`` a constant added to the encoded image inside its
borders (the conversion's start, which keeps the original's function; fine-tuning removes
both). ``bcosified=False``: unit-norm B-cos convolutions without ReLUs (the B-cos networks'
own layout), B = 2 by default.

Every part is dynamic linear (concatenation and average pooling are linear, max pooling
selects), so :func:`resnet_contributions` (:func:`interpretable.nn.bcos.resnet_contributions`, which
explains either network) gives ``W(x)`` of the image or of a layer's input, exactly. Module
names follow torchvision's (``features.conv0``, ``features.denseblock1.denselayer1.norm1``,
..., ``features.transition1.conv``, ``features.norm5``, ``classifier``).
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Sequence

import torch
from torch import nn

from interpretable.nn.bcos._layers import add_constant, conv_layout
from interpretable.nn.bcos._resnet import STEM_POOLS, _halved, _Parts

__all__ = ["BcosDenseNet"]

_STEM = 4  # the stem's modules in ``features``: conv0, norm0, relu0, pool0


def stem_pooling(kind: str) -> nn.AvgPool2d | nn.MaxPool2d:
    """The stem's 3×3 pooling with stride 2 of a B-cos CNN: ``"avg"`` (the recipe's) or
    ``"max"`` (torchvision's), (B, C, H, W) -> (B, C, ceil(H/2), ceil(W/2)).

    Parameters
    ----------
    kind : {"avg", "max"}
        The pooling.

    Returns
    -------
    nn.Module
        ``nn.AvgPool2d(3, 2, 1)`` or ``nn.MaxPool2d(3, 2, 1)``.

    Examples
    --------
    >>> stem_pooling("avg")
    AvgPool2d(kernel_size=3, stride=2, padding=1)
    """
    if kind not in STEM_POOLS:
        raise ValueError(f"stem_pool must be one of {list(STEM_POOLS)}, got {kind!r}")
    return nn.AvgPool2d(3, 2, 1) if kind == "avg" else nn.MaxPool2d(3, 2, 1)


def _activation(parts: _Parts) -> nn.Module:
    """The ReLU of a B-cosified network; none (identity) in a B-cos one."""
    return nn.ReLU() if parts.bcosified else nn.Identity()


class _DenseLayer(nn.Module):
    """BatchNorm, ReLU, 1×1 convolution, BatchNorm, ReLU, 3×3 convolution:
    (B, C_in, H, W) -> (B, growth_rate, H, W), the new feature map of a dense block."""

    def __init__(self, in_channels: int, growth_rate: int, bn_size: int, parts: _Parts):
        super().__init__()
        width = bn_size * growth_rate
        self.norm1, self.relu1 = parts.norm(in_channels), _activation(parts)
        self.conv1 = parts.conv(in_channels, width, 1)
        self.norm2, self.relu2 = parts.norm(width), _activation(parts)
        self.conv2 = parts.conv(width, growth_rate, 3, 1, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.conv1(self.relu1(self.norm1(x)))
        return self.conv2(self.relu2(self.norm2(x)))


class _DenseBlock(nn.ModuleDict):
    """Dense layers, each on the concatenation of the block's input and the earlier layers'
    outputs: (B, C, H, W) -> (B, C + layers · growth_rate, H, W)."""

    def __init__(self, layers: int, in_channels: int, growth_rate: int, bn_size: int,
                 parts: _Parts):
        super().__init__({f"denselayer{i + 1}": _DenseLayer(in_channels + i * growth_rate,
                                                            growth_rate, bn_size, parts)
                          for i in range(layers)})

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        features = [x]
        for layer in self.values():
            features.append(layer(torch.cat(features, 1)))
        return torch.cat(features, 1)


class _Transition(nn.Sequential):
    """BatchNorm, ReLU, 1×1 convolution, 2×2 average pooling:
    (B, C_in, H, W) -> (B, C_out, floor(H/2), floor(W/2))."""

    def __init__(self, in_channels: int, out_channels: int, parts: _Parts):
        super().__init__(OrderedDict(norm=parts.norm(in_channels), relu=_activation(parts),
                                     conv=parts.conv(in_channels, out_channels, 1),
                                     pool=nn.AvgPool2d(2, 2)))


class BcosDenseNet(nn.Module):
    """B-cosified torchvision DenseNet (``bcosified=True``), or a B-cos DenseNet.

    Input: encoded images (B, in_channels, H, W) (``[r, g, b, 1-r, 1-g, 1-b]``,
    :func:`~interpretable.nn.bcos.encode_image`), any size the poolings leave a feature grid
    of. Output: logits (B, num_classes). ``growth_rate``, ``block_config`` (dense layers per
    block), ``num_init_features`` (the stem's channels) and ``bn_size`` as torchvision's
    ``DenseNet`` (DenseNet-121: 32, (6, 12, 24, 16), 64, 4; DenseNet-161: 48, (6, 12, 36, 24),
    96, 4). ``image_size`` (an int or (height, width)) sets ``grid_size``, the final feature
    grid. ``logit_bias`` defaults to log(1/(num_classes - 1)); ``b`` is the exponent B of
    every convolution; ``bcosified``, ``bias``, ``stem_pool`` and ``input_offset`` as in the
    module docstring. ``layers``: the names :meth:`run` and :func:`resnet_contributions` take, the
    dense blocks' and ``"classifier"`` (whose input is the last feature map).

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn.bcos import BcosDenseNet, resnet_contributions
    >>> model = BcosDenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8,
    ...                      bn_size=2, num_classes=3, image_size=32).double().eval()
    >>> x = torch.rand(2, 6, 32, 32, dtype=torch.float64)
    >>> model.layers, model.grid_size, model(x).shape
    (('denseblock1', 'denseblock2', 'classifier'), (4, 4), torch.Size([2, 3]))
    >>> c = resnet_contributions(model, x, target=1, layer="denseblock2")
    >>> bool(torch.allclose(c.maps.sum((1, 2)) + model.logit_bias, c.logits[:, 1]))
    True
    """

    def __init__(self, *, growth_rate: int = 32, block_config: Sequence[int] = (6, 12, 24, 16),
                 num_init_features: int = 64, bn_size: int = 4, num_classes: int = 1000,
                 in_channels: int = 6, image_size: int | Sequence[int] = 224,
                 logit_bias: float | None = None, bcosified: bool = False, b: float = 2.0,
                 bias: bool = False, stem_pool: str = "avg", input_offset: bool = False):
        super().__init__()
        if not block_config:
            raise ValueError("block_config must give at least one dense block")
        parts = _Parts(float(b), bool(bias), bool(bcosified))
        self.bcosified, self.stem_pool = bool(bcosified), stem_pool
        self.input_offset = nn.Parameter(torch.zeros(in_channels)) if input_offset else None
        self.features = nn.Sequential(OrderedDict(
            conv0=parts.conv(in_channels, num_init_features, 7, 2, 3),
            norm0=parts.norm(num_init_features), relu0=_activation(parts),
            pool0=stem_pooling(stem_pool)))
        channels = num_init_features
        for i, layers in enumerate(block_config, 1):
            self.features.add_module(f"denseblock{i}", _DenseBlock(
                layers, channels, growth_rate, bn_size, parts))
            channels += layers * growth_rate
            if i < len(block_config):
                self.features.add_module(f"transition{i}",
                                         _Transition(channels, channels // 2, parts))
                channels //= 2
        self.features.add_module("norm5", parts.norm(channels))
        self.act = _activation(parts)
        self.num_features = channels
        self.classifier = parts.conv(channels, num_classes, 1, bias=parts.bias)
        self.layers = (*(f"denseblock{i}" for i in range(1, len(block_config) + 1)),
                       "classifier")
        if logit_bias is None:
            logit_bias = math.log(1.0 / (num_classes - 1)) if num_classes > 1 else 0.0
        self.logit_bias = float(logit_bias)
        size = (image_size,) * 2 if isinstance(image_size, int) else tuple(image_size)
        self.grid_size = tuple(_halved(side, 2) // 2 ** (len(block_config) - 1)
                               for side in size)

    def _stem(self, x: torch.Tensor) -> torch.Tensor:
        if self.input_offset is not None:  # inside the image: the padding stays zero
            x = add_constant(x, self.input_offset[:, None, None])
        x = conv_layout(x)
        for module in list(self.features)[:_STEM]:
            x = module(x)
        return x

    def _stages(self) -> list:
        """(name, modules) in order: each name of :attr:`layers` takes its input (a dense
        block its transition's output, the classifier the last feature map)."""
        stages = [("stem", [self._stem])]
        for name, module in list(self.features.named_children())[_STEM:]:
            if name.startswith("denseblock"):
                stages.append((name, []))
            stages[-1][1].append(module)
        stages[-1][1].append(self.act)
        return [*stages, ("classifier", [self.forward_head])]

    def run(self, x: torch.Tensor, start: str | None = None, stop: str | None = None
            ) -> torch.Tensor:
        """The stages from the input of layer ``start`` (None: the image) up to the input of
        layer ``stop`` (None: the logits); names of :attr:`layers`."""
        for name in (start, stop):
            if name is not None and name not in self.layers:
                raise ValueError(f"layer must be None or one of {list(self.layers)}, got "
                                 f"{name!r}")
        stages = self._stages()
        names = [name for name, _ in stages]
        first = 0 if start is None else names.index(start)
        last = len(names) if stop is None else names.index(stop)
        for _, modules in stages[first:last]:
            for module in modules:
                x = module(x)
        return x

    def forward_features(self, x: torch.Tensor) -> tuple[torch.Tensor, list]:
        """x (B, C, H, W) -> (the last feature map (B, D, h, w), []) (no attention)."""
        return self.run(x, stop="classifier"), []

    def forward_head(self, features: torch.Tensor) -> torch.Tensor:
        """The last feature map (B, D, h, w) -> logits (B, K): the 1×1 B-cos classifier at
        every position, their mean, the logit bias."""
        return self.classifier(features).mean((2, 3)) + self.logit_bias

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.run(x)
