"""B-cosification of torchvision ResNets and DenseNets (Arya, Rao, Böhle & Schiele,
"B-cosification: Transforming Deep Neural Networks to be Inherently Interpretable", NeurIPS
2024; their code's ``bcos/experiments/ImageNet/bcosification``): a ``torchvision.models.ResNet``
(ResNet-18 / 34 / 50 / 101 / 152 layouts) becomes a
:class:`~interpretable.nn.bcos.BcosResNet`, a ``torchvision.models.DenseNet``
(DenseNet-121 / 161 / 169 / 201 layouts, or any other sizes) a
:class:`~interpretable.nn.bcos.BcosDenseNet`, with ``bcosified=True``.

The recipe, in two steps, the same for both families:

1. :func:`bcosify_resnet` / :func:`bcosify_densenet`, the function-preserving start. Every
   convolution becomes a B-cos convolution with B = 1 and its weights as they are (a plain
   convolution), the classifier a 1×1 one applied before the global average pooling (the same
   function: both are linear), every BatchNorm an uncentered one whose bias absorbs the running
   mean (``β − μ γ / σ``, the authors' ``BnUncV2``), the ReLUs (DenseNet's final one included)
   and the stem's max pooling kept, a DenseNet's transitions as they are (their average
   pooling is linear). The input is the B-cos encoding ``[x, 1 − x]`` of images in [0, 1]
   instead of ``(x − mean) / std``: the first convolution's weights ``W`` become
   ``[W / 2σ, −W / 2σ]`` and the constant image ``[1 − mean, mean]`` is added to the encoding
   inside the image borders (``input_offset``), so that the zero padding of the first
   convolution pads what the original padded (the normalised zero). The converted network
   computes the original's logits exactly, up to rounding, borders included.
2. :func:`cnn_finetuning_start`, the start of fine-tuning: every bias and the input offset (the
   normalisation's mean) removed, B raised to 2 at once (``fix_b``, no ``use_bias``, the
   paper's CNN models) and the stem's max pooling replaced by average pooling (the recipe's
   ``standard_changes``: ``maxpool`` of a ResNet, ``features[3]``, ``pool0``, of a DenseNet).
   The network is then dynamic linear without a constant term but the logit bias.

State dicts are checked key by key, shape by shape, against the network built on the meta
device before memory is allocated. A DenseNet's dropout (``drop_rate``, training only) is not
kept; the keys of torchvision's released DenseNet files (``denselayer1.norm.1.weight``, ...)
are read as torchvision's loader reads them. BatchNorm counters (``num_batches_tracked``)
absent from older files start at zero, as torchvision loads them.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import TypeVar

import torch
from torch import nn

from interpretable.nn.bcos._densenet import BcosDenseNet, stem_pooling
from interpretable.nn.bcos._resnet import BcosBatchNorm2d, BcosifiedConv2d, BcosResNet
from interpretable.nn.bcos._vit_conversion import IMAGENET_MEAN, IMAGENET_STD
from interpretable.nn.bcos._zoo import check_state

__all__ = ["bcosify_densenet", "bcosify_resnet", "densenet_architecture", "cnn_finetuning_start",
           "resnet_architecture"]

#: a key of every torchvision ResNet state dict, and the one of a bottleneck ResNet's
RESNET_KEY, BOTTLENECK_KEY = "layer1.0.conv1.weight", "layer1.0.conv3.weight"
#: torchvision's BatchNorm eps (a state dict does not record it)
BN_EPS = 1e-5
_Network = TypeVar("_Network", BcosResNet, BcosDenseNet)
_BLOCK_INDEX = re.compile(r"layer([1-4])\.(\d+)\.")
#: a key of every torchvision DenseNet state dict (and of a BcosDenseNet's)
DENSENET_KEY = "features.denseblock1.denselayer1.conv1.weight"
_DENSE_LAYER_INDEX = re.compile(r"features\.denseblock(\d+)\.denselayer(\d+)\.")
#: the dense layers' keys in torchvision's released files (``norm.1``: ``norm1`` today)
_RELEASED_DENSE_KEY = re.compile(
    r"^(.*denselayer\d+\.(?:norm|relu|conv))\.([12]\.(?:weight|bias|running_mean|running_var))$")


def is_resnet_state(state: Mapping) -> bool:
    """Whether a state dict has the layout of a ResNet (torchvision's or ``bcos``')."""
    return any(key in state for key in (RESNET_KEY, "layer1.0.conv1.linear.weight"))


def resnet_architecture(state_dict: Mapping[str, torch.Tensor]) -> dict:
    """The :class:`~interpretable.nn.bcos.BcosResNet` sizes of a ResNet state dict
    (torchvision's layout, or the ``bcos`` one whose convolutions hold ``.linear.weight``).

    Parameters
    ----------
    state_dict : mapping of str to torch.Tensor
        The state dict.

    Returns
    -------
    dict
        ``block`` ("basic" or "bottleneck"), ``layers`` (blocks per stage), ``width`` (the
        stem's channels) and ``num_classes``.

    Raises
    ------
    ValueError
        If it is no ResNet state dict (the message names what is missing).

    Examples
    --------
    >>> from interpretable.nn.bcos import BcosResNet
    >>> state = BcosResNet(block="bottleneck", layers=(1, 2, 1, 1), width=4,
    ...                    num_classes=3).state_dict()
    >>> resnet_architecture(state)
    {'block': 'bottleneck', 'layers': [1, 2, 1, 1], 'width': 4, 'num_classes': 3}
    """
    bcos = "conv1.linear.weight" in state_dict
    conv, head = ("conv1.linear.weight", "fc.linear.weight") if bcos \
        else ("conv1.weight", "fc.weight")
    for key in (conv, head):
        if key not in state_dict:
            raise ValueError(f"the state dict is no ResNet's: it has no {key}")
    counts = [0] * 4
    for key in state_dict:
        if match := _BLOCK_INDEX.match(key):
            stage = int(match.group(1)) - 1
            counts[stage] = max(counts[stage], int(match.group(2)) + 1)
    if not all(counts):
        raise ValueError(f"the state dict is no four-stage ResNet's: blocks per stage {counts}")
    bottleneck = any(key.startswith("layer1.0.conv3.") for key in state_dict)
    return {"block": "bottleneck" if bottleneck else "basic", "layers": counts,
            "width": int(state_dict[conv].shape[0]),
            "num_classes": int(state_dict[head].shape[0])}


def is_densenet_state(state: Mapping) -> bool:
    """Whether a state dict has the layout of a torchvision DenseNet (or of a
    :class:`~interpretable.nn.bcos.BcosDenseNet`), released-file keys included."""
    return DENSENET_KEY in state or "features.denseblock1.denselayer1.conv.1.weight" in state


def densenet_state(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A DenseNet state dict with the keys of torchvision's modules: those of its released
    files (``denselayer1.norm.1.weight``) renamed as its loader renames them
    (``denselayer1.norm1.weight``), the others as they are."""
    return {_RELEASED_DENSE_KEY.sub(r"\1\2", key): value for key, value in state.items()}


def densenet_architecture(state_dict: Mapping[str, torch.Tensor]) -> dict:
    """The :class:`~interpretable.nn.bcos.BcosDenseNet` sizes of a DenseNet state dict
    (torchvision's layout, its released files' keys included, or a ``BcosDenseNet``'s).

    Parameters
    ----------
    state_dict : mapping of str to torch.Tensor
        The state dict.

    Returns
    -------
    dict
        ``growth_rate``, ``block_config`` (dense layers per block), ``num_init_features`` (the
        stem's channels), ``bn_size`` and ``num_classes``.

    Raises
    ------
    ValueError
        If it is no DenseNet state dict (the message names what is missing).

    Examples
    --------
    >>> from interpretable.nn.bcos import BcosDenseNet
    >>> state = BcosDenseNet(growth_rate=4, block_config=(2, 3), num_init_features=8,
    ...                      bn_size=2, num_classes=3).state_dict()
    >>> sizes = densenet_architecture(state)
    >>> sizes["block_config"], sizes["growth_rate"], sizes["bn_size"], sizes["num_classes"]
    ([2, 3], 4, 2, 3)
    """
    state = densenet_state(state_dict)
    second = DENSENET_KEY.replace("conv1", "conv2")
    for key in ("features.conv0.weight", DENSENET_KEY, second, "classifier.weight"):
        if key not in state:
            raise ValueError(f"the state dict is no DenseNet's: it has no {key}")
    counts: dict[int, int] = {}
    for key in state:
        if match := _DENSE_LAYER_INDEX.match(key):
            block, layer = int(match.group(1)), int(match.group(2))
            counts[block] = max(counts.get(block, 0), layer)
    if sorted(counts) != list(range(1, len(counts) + 1)):
        raise ValueError(f"the state dict is no DenseNet's: dense blocks {sorted(counts)}")
    growth_rate = int(state[second].shape[0])
    return {"growth_rate": growth_rate, "block_config": [counts[i] for i in sorted(counts)],
            "num_init_features": int(state["features.conv0.weight"].shape[0]),
            "bn_size": max(1, int(state[DENSENET_KEY].shape[0]) // growth_rate),
            "num_classes": int(state["classifier.weight"].shape[0])}


def _converted(ours: str, tensor: torch.Tensor, state: Mapping[str, torch.Tensor],
               shape: torch.Size, mean: torch.Tensor, std: torch.Tensor, first: str,
               head: str) -> torch.Tensor:
    """torchvision's ``tensor`` (float64 arithmetic) as our ``ours`` of ``shape``: the first
    convolution (``first``) on ``[x, 1 - x]``, BatchNorm biases absorbing the running means,
    the classifier (``head``) a 1×1 convolution."""
    if ours == first:
        w = tensor.double() / std[:, None, None]
        return torch.cat([w / 2, -w / 2], 1)
    if ours.endswith(".bias") and ours != head + "bias":
        owner = ours[:-len("bias")]
        var, gamma = state[owner + "running_var"].double(), state[owner + "weight"].double()
        shift = state[owner + "running_mean"].double() * gamma / (var + BN_EPS).sqrt()
        return tensor.double() - shift
    if ours.endswith(".running_mean"):
        return torch.zeros(shape, dtype=tensor.dtype)  # unused by an uncentered BatchNorm
    return tensor.reshape(shape)


def _load_converted(model: _Network, state: Mapping[str, torch.Tensor], first: str, head: str,
                    mean: Sequence[float], std: Sequence[float], source: str, hint: str
                    ) -> _Network:
    """``model`` (built on the meta device with biases and the input offset) holding the
    torchvision ``state`` converted, after checking every key and shape against it; in eval
    mode, in the state's floating dtype on CPU."""
    meta_state: dict[str, torch.Tensor] = model.state_dict()
    counters = [k for k in meta_state if k.endswith("num_batches_tracked")]
    expected = {k: v.shape for k, v in meta_state.items()
                if k != "input_offset" and k not in counters}
    expected[first] = torch.Size((meta_state[first].shape[0], 3, *meta_state[first].shape[2:]))
    expected[head + "weight"] = meta_state[head + "weight"].shape[:2]
    check_state({k: v for k, v in state.items() if not k.endswith("num_batches_tracked")},
                expected, source, hint)
    mu, sigma = (torch.as_tensor(v, dtype=torch.float64) for v in (mean, std))
    converted = {k: _converted(k, state[k], state, meta_state[k].shape, mu, sigma, first, head)
                 for k in expected}
    converted.update({k: state.get(k, torch.zeros((), dtype=torch.long)) for k in counters})
    converted["input_offset"] = torch.cat([1 - mu, mu])
    model.to_empty(device="cpu").to(state[first].dtype).load_state_dict(converted)
    return model.eval()


def bcosify_resnet(model_or_state_dict: nn.Module | Mapping[str, torch.Tensor], *,
                   mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD,
                   logit_bias: float = 0.0, image_size: int | Sequence[int] = 224
                   ) -> BcosResNet:
    """Convert a torchvision ResNet into a B-cosified :class:`BcosResNet` with its function.

    Parameters
    ----------
    model_or_state_dict : nn.Module or mapping of str to torch.Tensor
        A ``torchvision.models.ResNet`` (``BasicBlock`` or ``Bottleneck``, one group, width 64
        per group: ResNet-18 / 34 / 50 / 101 / 152 and smaller ones), or its state dict.
    mean, std : sequence of 3 floats, default=ImageNet's
        The input normalisation the original model was trained with.
    logit_bias : float, default=0.0
        The converted model's fixed logit bias (0: the original's logits).
    image_size : int or (int, int), default=224
        The images it is used at (sets ``grid_size``; any size computes).

    Returns
    -------
    BcosResNet
        In eval mode, in the checkpoint's floating dtype on CPU, with B = 1, the biases and
        the input offset: ``model(encode_image(x)) == original((x - mean) / std)`` for images
        x in [0, 1] (B, 3, H, W).

    Raises
    ------
    ValueError
        For no ResNet, grouped or wide convolutions, non-RGB inputs, missing, unexpected or
        mis-shaped keys (named), non-floating or non-finite tensors.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn.bcos import encode_image
    >>> from interpretable.nn.bcos import BcosResNet
    >>> # a torchvision ResNet's state dict (yours: torchvision.models.resnet18(weights=...))
    >>> state = BcosResNet(layers=(1, 1, 1, 1), width=8, num_classes=3, bcosified=True,
    ...                    bias=True).state_dict()  # its keys, with a linear head and RGB input:
    >>> state["fc.weight"] = state["fc.weight"][:, :, 0, 0]
    >>> state["conv1.weight"] = state["conv1.weight"][:, :3]
    >>> model = bcosify_resnet(state, image_size=32)
    >>> model(encode_image(torch.rand(2, 3, 32, 32))).shape
    torch.Size([2, 3])
    """
    state = model_or_state_dict.state_dict() if isinstance(model_or_state_dict, nn.Module) \
        else model_or_state_dict
    if isinstance(model_or_state_dict, nn.Module) and (
            getattr(model_or_state_dict, "groups", 1) != 1
            or getattr(model_or_state_dict, "base_width", 64) != 64):
        raise ValueError("grouped or wide ResNets (ResNeXt, Wide ResNet) are not converted: "
                         "only groups=1 and width_per_group=64")
    with torch.device("meta"):
        model = BcosResNet(**resnet_architecture(state), in_channels=6, image_size=image_size,
                           logit_bias=logit_bias, bcosified=True, b=1.0, bias=True,
                           stem_pool="max", input_offset=True)
    return _load_converted(model, state, "conv1.weight", "fc.", mean, std,
                           "the torchvision ResNet state dict",
                           " (ResNet-18 / 34 / 50 / 101 / 152 layouts: one group, width 64 per "
                           "group)")


def bcosify_densenet(model_or_state_dict: nn.Module | Mapping[str, torch.Tensor], *,
                     mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD,
                     logit_bias: float = 0.0, image_size: int | Sequence[int] = 224
                     ) -> BcosDenseNet:
    """Convert a torchvision DenseNet into a B-cosified :class:`BcosDenseNet` with its function.

    Parameters
    ----------
    model_or_state_dict : nn.Module or mapping of str to torch.Tensor
        A ``torchvision.models.DenseNet`` (DenseNet-121 / 161 / 169 / 201 or other sizes), or
        its state dict (its released files' keys too).
    mean, std : sequence of 3 floats, default=ImageNet's
        The input normalisation the original model was trained with.
    logit_bias : float, default=0.0
        The converted model's fixed logit bias (0: the original's logits).
    image_size : int or (int, int), default=224
        The images it is used at (sets ``grid_size``; any size computes).

    Returns
    -------
    BcosDenseNet
        In eval mode, in the checkpoint's floating dtype on CPU, with B = 1, the biases and
        the input offset: ``model(encode_image(x)) == original((x - mean) / std)`` for images
        x in [0, 1] (B, 3, H, W).

    Raises
    ------
    ValueError
        For no DenseNet, non-RGB inputs, missing, unexpected or mis-shaped keys (named),
        non-floating or non-finite tensors.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn.bcos import encode_image
    >>> from interpretable.nn.bcos import BcosDenseNet
    >>> # a torchvision DenseNet's state dict (yours: torchvision.models.densenet121(weights=...))
    >>> state = BcosDenseNet(growth_rate=4, block_config=(2, 2), num_init_features=8,
    ...                      bn_size=2, num_classes=3, bcosified=True, bias=True).state_dict()
    >>> state["classifier.weight"] = state["classifier.weight"][:, :, 0, 0]  # a linear head
    >>> state["features.conv0.weight"] = state["features.conv0.weight"][:, :3]  # RGB input
    >>> model = bcosify_densenet(state, image_size=32)
    >>> model(encode_image(torch.rand(2, 3, 32, 32))).shape
    torch.Size([2, 3])
    """
    state = densenet_state(model_or_state_dict.state_dict()
                           if isinstance(model_or_state_dict, nn.Module) else model_or_state_dict)
    sizes = densenet_architecture(state)
    with torch.device("meta"):
        model = BcosDenseNet(**sizes, in_channels=6, image_size=image_size,
                             logit_bias=logit_bias, bcosified=True, b=1.0, bias=True,
                             stem_pool="max", input_offset=True)
    return _load_converted(model, state, "features.conv0.weight", "classifier.", mean, std,
                           "the torchvision DenseNet state dict",
                           f" (a DenseNet of {sizes}, torchvision's layout)")


def cnn_finetuning_start(model: BcosResNet | BcosDenseNet, b: float = 2.0, stem_pool: str = "avg"
                     ) -> BcosResNet | BcosDenseNet:
    """A copy of a B-cosified ``model`` at the start of the recipe's fine-tuning: every bias and
    the input offset removed, exponent ``b`` in every convolution, the stem pooling
    ``stem_pool`` ("avg": the recipe's, "max": the original's). ``model`` is unchanged.

    Parameters
    ----------
    model : BcosResNet or BcosDenseNet
        A B-cosified network (:func:`bcosify_resnet`, :func:`bcosify_densenet`).
    b : float, default=2.0
        The exponent B.
    stem_pool : {"avg", "max"}, default="avg"
        The stem's pooling.

    Returns
    -------
    BcosResNet or BcosDenseNet
        The copy.

    Examples
    --------
    >>> from interpretable.nn.bcos import BcosResNet
    >>> start = cnn_finetuning_start(BcosResNet(layers=(1, 1, 1, 1), width=4, num_classes=2,
    ...                                     bcosified=True, b=1.0, bias=True))
    >>> start.conv1.b, start.fc.bias, start.stem_pool
    (2.0, None, 'avg')
    """
    pool = stem_pooling(stem_pool)
    start = copy.deepcopy(model)
    start.input_offset = None
    for module in start.modules():
        if isinstance(module, (BcosifiedConv2d, BcosBatchNorm2d)):
            module.bias = None
        if isinstance(module, BcosifiedConv2d):
            module.b = float(b)
    start.stem_pool = stem_pool
    if isinstance(start, BcosDenseNet):
        start.features.pool0 = pool
    else:
        start.pool = pool
    return start
