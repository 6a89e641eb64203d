"""B-cosification of torchvision ResNets (Arya, Rao, Böhle & Schiele, "B-cosification:
Transforming Deep Neural Networks to be Inherently Interpretable", NeurIPS 2024; their code's
``bcos/experiments/ImageNet/bcosification``): a ``torchvision.models.ResNet`` (ResNet-18 / 34 /
50 / 101 / 152 layouts) becomes a :class:`~interpretable.nn.bcos.resnet.BcosResNet` with
``bcosified=True``.

The recipe, in two steps:

1. :func:`bcosify_resnet`, the function-preserving start. Every convolution becomes a B-cos
   convolution with B = 1 and its weights as they are (a plain convolution), the classifier a
   1×1 one applied before the global average pooling (the same function: both are linear),
   every BatchNorm an uncentered one whose bias absorbs the running mean (``β − μ γ / σ``, the
   authors' ``BnUncV2``), the ReLUs and the stem's max pooling kept. The input is the B-cos
   encoding ``[x, 1 − x]`` of images in [0, 1] instead of ``(x − mean) / std``: the first
   convolution's weights ``W`` become ``[W / 2σ, −W / 2σ]`` and the constant image
   ``[1 − mean, mean]`` is added to the encoding inside the image borders (``input_offset``),
   so that the zero padding of the first convolution pads what the original padded (the
   normalised zero). The converted network computes the original's logits exactly, up to
   rounding, borders included.
2. :func:`finetuning_start`, the start of fine-tuning: every bias and the input offset (the
   normalisation's mean) removed, B raised to 2 at once (``fix_b``, no ``use_bias``, the
   paper's CNN models) and the stem's max pooling replaced by average pooling (the recipe's
   ``standard_changes``). The network is then dynamic linear without a constant term but the
   logit bias.

DenseNets (which the paper converts too) are not converted here. State dicts are checked key by
key, shape by shape, against the network built on the meta device before memory is allocated.
"""
from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from .resnet import BcosBatchNorm2d, BcosifiedConv2d, BcosResNet
from .zoo import check_state

__all__ = ["bcosify_resnet", "finetuning_start", "resnet_architecture"]

#: the input normalisation of torchvision's ImageNet weights
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
#: a key of every torchvision ResNet state dict, and the one of a bottleneck ResNet's
RESNET_KEY, BOTTLENECK_KEY = "layer1.0.conv1.weight", "layer1.0.conv3.weight"
#: torchvision's BatchNorm eps (a state dict does not record it)
BN_EPS = 1e-5
_BLOCK_INDEX = re.compile(r"layer([1-4])\.(\d+)\.")


def is_resnet_state(state: Mapping) -> bool:
    """Whether a state dict has the layout of a ResNet (torchvision's or ``bcos``')."""
    return any(key in state for key in (RESNET_KEY, "layer1.0.conv1.linear.weight"))


def resnet_architecture(state_dict: Mapping[str, torch.Tensor]) -> dict:
    """The :class:`~interpretable.nn.bcos.resnet.BcosResNet` sizes of a ResNet state dict
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
    >>> from interpretable.nn.bcos.resnet import BcosResNet
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


def _converted(ours: str, tensor: torch.Tensor, state: Mapping[str, torch.Tensor],
               shape: torch.Size, mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """torchvision's ``tensor`` (float64 arithmetic) as our ``ours`` of ``shape``: the first
    convolution on ``[x, 1 - x]``, BatchNorm biases absorbing the running means, the
    classifier a 1×1 convolution."""
    if ours == "conv1.weight":
        w = tensor.double() / std[:, None, None]
        return torch.cat([w / 2, -w / 2], 1)
    if ours.endswith(".bias") and not ours.startswith("fc."):
        owner = ours[:-len("bias")]
        var, gamma = state[owner + "running_var"].double(), state[owner + "weight"].double()
        shift = state[owner + "running_mean"].double() * gamma / (var + BN_EPS).sqrt()
        return tensor.double() - shift
    if ours.endswith(".running_mean"):
        return torch.zeros(shape, dtype=tensor.dtype)  # unused by an uncentered BatchNorm
    return tensor.reshape(shape)


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
    >>> from interpretable.nn.bcos.resnet import BcosResNet
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
    sizes = resnet_architecture(state)
    with torch.device("meta"):
        model = BcosResNet(**sizes, in_channels=6, image_size=image_size,
                           logit_bias=logit_bias, bcosified=True, b=1.0, bias=True,
                           stem_pool="max", input_offset=True)
    meta_state = model.state_dict()
    expected = {k: v.shape for k, v in meta_state.items()
                if k != "input_offset" and not k.endswith("num_batches_tracked")}
    expected["conv1.weight"] = torch.Size((sizes["width"], 3, 7, 7))
    expected["fc.weight"] = meta_state["fc.weight"].shape[:2]
    counters = [k for k in meta_state if k.endswith("num_batches_tracked")]
    check_state({k: v for k, v in state.items() if not k.endswith("num_batches_tracked")},
                expected, "the torchvision ResNet state dict",
                " (ResNet-18 / 34 / 50 / 101 / 152 layouts: one group, width 64 per group)")
    missing = [k for k in counters if k not in state]
    if missing:
        raise ValueError(f"the torchvision ResNet state dict has no {missing[0]}")
    mean, std = (torch.as_tensor(v, dtype=torch.float64) for v in (mean, std))
    converted = {k: _converted(k, state[k], state, meta_state[k].shape, mean, std)
                 for k in expected}
    converted.update({k: state[k] for k in counters})
    converted["input_offset"] = torch.cat([1 - mean, mean])
    dtype = state["conv1.weight"].dtype
    model.to_empty(device="cpu").to(dtype).load_state_dict(converted)
    return model.eval()


def finetuning_start(model: BcosResNet, b: float = 2.0, stem_pool: str = "avg") -> BcosResNet:
    """A copy of a B-cosified ``model`` at the start of the recipe's fine-tuning: every bias and
    the input offset removed, exponent ``b`` in every convolution, the stem pooling
    ``stem_pool`` ("avg": the recipe's, "max": the original's). ``model`` is unchanged.

    Parameters
    ----------
    model : BcosResNet
        A B-cosified network (:func:`bcosify_resnet`).
    b : float, default=2.0
        The exponent B.
    stem_pool : {"avg", "max"}, default="avg"
        The stem's pooling.

    Returns
    -------
    BcosResNet
        The copy.

    Examples
    --------
    >>> from interpretable.nn.bcos.resnet import BcosResNet
    >>> start = finetuning_start(BcosResNet(layers=(1, 1, 1, 1), width=4, num_classes=2,
    ...                                     bcosified=True, b=1.0, bias=True))
    >>> start.conv1.b, start.fc.bias, start.stem_pool
    (2.0, None, 'avg')
    """
    start = copy.deepcopy(model)
    start.input_offset = None
    for module in start.modules():
        if isinstance(module, (BcosifiedConv2d, BcosBatchNorm2d)):
            module.bias = None
        if isinstance(module, BcosifiedConv2d):
            module.b = float(b)
    start.stem_pool = stem_pool
    start.pool = nn.AvgPool2d(3, 2, 1) if stem_pool == "avg" else nn.MaxPool2d(3, 2, 1)
    return start
