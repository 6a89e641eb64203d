"""Architectures and pretrained checkpoints of
:class:`~interpretable.estimators.vision.BcosResNetClassifier`: what
``architecture`` and ``pretrained`` resolve to, and starting a fit from a checkpoint (a new
classifier, imprinted; frozen layers).

A ``pretrained`` file is a released B-cos v2 ResNet or a checkpoint in the ``bcos`` layout
(read by :func:`~interpretable.nn.bcos.load_resnet_checkpoint`), or the state dict of
a torchvision ResNet or DenseNet, B-cosified (:mod:`interpretable.nn.bcos`) and
fine-tuned from the recipe's start: no biases, B = 2, average pooling in the stem. Every key and
shape is checked before memory is allocated; files are read with ``weights_only=True``.

The sizes of a network are a dict: a ResNet's ``block``, ``layers`` and ``width``, a DenseNet's
``growth_rate``, ``block_config``, ``num_init_features`` and ``bn_size``
(:func:`check_architecture`); :func:`build_network` builds either from them.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from numbers import Integral
from pathlib import Path

import numpy as np
import torch

from interpretable.estimators.vision._pretrained import head_order, read_weights
from interpretable.nn.bcos import (
    BLOCKS,
    PRETRAINED_RESNETS,
    RESNET_KEY,
    BcosDenseNet,
    BcosResNet,
    bcosify_densenet,
    bcosify_resnet,
    cnn_finetuning_start,
    densenet_architecture,
    is_densenet_state,
    load_resnet_checkpoint,
    released_resnet,
    resnet_architecture,
)

__all__: list[str] = []  # the checkpoint plumbing of BcosResNetClassifier

#: the keys of a ResNet's ``architecture`` dict (``width`` optional, 64)
ARCHITECTURE_KEYS = ("block", "layers", "width")
#: the keys of a DenseNet's (the last two optional: torchvision's 64 and 4)
DENSENET_KEYS = ("growth_rate", "block_config", "num_init_features", "bn_size")
_DENSENET_DEFAULTS = {"num_init_features": 64, "bn_size": 4}


def _positive_ints(values) -> bool:
    return all(isinstance(v, Integral) and not isinstance(v, bool) and v >= 1 for v in values)


def is_densenet(architecture: Mapping) -> bool:
    """Whether sizes (an ``architecture`` dict, or ``architecture_``) are a DenseNet's."""
    return "block_config" in architecture


def check_architecture(architecture) -> dict:
    """A checked copy of an ``architecture`` dict: a ResNet's ``block``, ``layers`` (4 numbers
    of blocks) and optionally ``width`` (64), or a DenseNet's ``growth_rate``,
    ``block_config`` (dense layers per block) and optionally ``num_init_features`` (64) and
    ``bn_size`` (4)."""
    if not isinstance(architecture, Mapping):
        raise TypeError(f"architecture must be None, a released name or a dict, got "
                        f"{type(architecture).__name__}.")
    if is_densenet(architecture):
        return _check_densenet(architecture)
    unknown = sorted(set(architecture) - set(ARCHITECTURE_KEYS), key=str)
    missing = [k for k in ARCHITECTURE_KEYS[:2] if k not in architecture]
    if unknown or missing:
        raise ValueError(f"architecture dicts take {list(ARCHITECTURE_KEYS)} (width optional) "
                         f"or, for a DenseNet, {list(DENSENET_KEYS)} (the last two optional); "
                         f"unknown {unknown}, missing {missing}.")
    layers, width = architecture["layers"], architecture.get("width", 64)
    counts = list(layers) if isinstance(layers, (list, tuple)) else []
    if architecture["block"] not in BLOCKS or len(counts) != 4 or not _positive_ints(
            [*counts, width]):
        raise ValueError(f"architecture needs block in {list(BLOCKS)}, layers 4 integers >= 1 "
                         f"and width an integer >= 1, got {dict(architecture)!r}.")
    return {"block": architecture["block"], "layers": [int(v) for v in counts],
            "width": int(width)}


def _check_densenet(architecture: Mapping) -> dict:
    unknown = sorted(set(architecture) - set(DENSENET_KEYS), key=str)
    if unknown or "growth_rate" not in architecture:
        raise ValueError(f"DenseNet architecture dicts take {list(DENSENET_KEYS)} (the last two "
                         f"optional); unknown {unknown}, growth_rate "
                         f"{'given' if 'growth_rate' in architecture else 'missing'}.")
    sizes = {**_DENSENET_DEFAULTS, **architecture}
    blocks = sizes["block_config"]
    counts = list(blocks) if isinstance(blocks, (list, tuple)) else []
    scalars = [sizes[k] for k in DENSENET_KEYS if k != "block_config"]
    if not counts or not _positive_ints([*counts, *scalars]):
        raise ValueError(f"a DenseNet architecture needs block_config one or more integers >= 1 "
                         f"and growth_rate, num_init_features and bn_size integers >= 1, got "
                         f"{dict(architecture)!r}.")
    return {k: [int(v) for v in counts] if k == "block_config" else int(sizes[k])
            for k in DENSENET_KEYS}


def network_sizes(architecture: Mapping) -> dict:
    """The sizes in a resolved or fitted architecture: a ResNet's or a DenseNet's keys."""
    return {k: architecture[k]
            for k in (DENSENET_KEYS if is_densenet(architecture) else ARCHITECTURE_KEYS)}


def build_network(architecture: Mapping) -> BcosResNet | BcosDenseNet:
    """The network of a fitted ``architecture_`` (its sizes and arguments)."""
    arguments = {**architecture, "image_size": tuple(architecture["image_size"])}
    return BcosDenseNet(**arguments) if is_densenet(architecture) else BcosResNet(**arguments)


def head_name(network: BcosResNet | BcosDenseNet | Mapping) -> str:
    """The module name of the classifier of a network, or of a network of these sizes."""
    densenet = isinstance(network, BcosDenseNet) or (isinstance(network, Mapping)
                                                     and is_densenet(network))
    return "classifier" if densenet else "fc"


def _state(pretrained) -> Mapping[str, torch.Tensor]:
    if not isinstance(pretrained, (str, os.PathLike)):
        raise TypeError(f"pretrained must be a released name or a path, got "
                        f"{type(pretrained).__name__}.")
    path = Path(pretrained)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint file at {path}; released names are "
                                f"{sorted(PRETRAINED_RESNETS)}")
    return read_weights(path)


def pretrained_format(pretrained) -> str:
    """``"bcos"`` for a released name or a checkpoint in the ``bcos`` ResNet layout,
    ``"torchvision"`` for a torchvision ResNet's state dict, ``"torchvision_densenet"`` for a
    torchvision DenseNet's; ValueError otherwise."""
    if isinstance(pretrained, str) and pretrained in PRETRAINED_RESNETS:
        return "bcos"
    state = _state(pretrained)
    if "fc.linear.weight" in state:
        return "bcos"
    if RESNET_KEY in state and "fc.weight" in state:
        return "torchvision"
    if is_densenet_state(state):
        return "torchvision_densenet"
    raise ValueError(f"pretrained={str(pretrained)!r} holds neither a B-cos ResNet in the bcos "
                     "layout (fc.linear.weight) nor the state dict of a torchvision ResNet "
                     f"({RESNET_KEY}, fc.weight) or DenseNet (features.denseblock1...).")


def resolve_architecture(architecture, pretrained) -> dict:
    """The checked sizes of the network: a released name's, a dict's, or those of the
    ``pretrained`` file (read off its shapes; a name or dict must agree with them)."""
    if isinstance(architecture, str):
        if architecture not in PRETRAINED_RESNETS:
            raise ValueError(f"architecture={architecture!r} is not a released name of "
                             f"{sorted(PRETRAINED_RESNETS)} or a dict of sizes.")
        architecture = PRETRAINED_RESNETS[architecture].architecture
    given = None if architecture is None else check_architecture(architecture)
    if pretrained is None:
        if given is None:
            raise ValueError("BcosResNetClassifier needs architecture= (a released name of "
                             f"{sorted(PRETRAINED_RESNETS)} or a dict {list(ARCHITECTURE_KEYS)}) "
                             "or pretrained= (weights to start from).")
        return given
    spec = released_resnet(pretrained)
    if spec is not None:
        found = spec.architecture
    else:
        densenet = pretrained_format(pretrained) == "torchvision_densenet"
        read, keys = (densenet_architecture, DENSENET_KEYS) if densenet else \
            (resnet_architecture, ARCHITECTURE_KEYS)
        found = check_architecture({k: read(_state(pretrained))[k] for k in keys})
    if given is not None and given != found:
        raise ValueError(f"pretrained={str(pretrained)!r} holds a network of {found}, not of "
                         f"architecture {given}.")
    return found


def read_pretrained(pretrained, image_shape: tuple, download: bool = False
                    ) -> BcosResNet | BcosDenseNet:
    """The checkpoint ``pretrained`` as a CPU network at the start of fine-tuning: a B-cos v2
    one as it is, or a torchvision ResNet or DenseNet B-cosified
    (:func:`~.cnn_conversion.bcosify_resnet`, :func:`~.cnn_conversion.bcosify_densenet`, then
    :func:`~.cnn_conversion.finetuning_start`)."""
    found = pretrained_format(pretrained)
    if found == "bcos":
        return load_resnet_checkpoint(pretrained, download=download, image_size=image_shape)
    convert = bcosify_densenet if found == "torchvision_densenet" else bcosify_resnet
    return cnn_finetuning_start(convert(_state(pretrained), image_size=image_shape))


def imagenet_classifier(pretrained, side: int, classes, download: bool
                        ) -> tuple[BcosResNet, np.ndarray]:
    """A ``bcos`` checkpoint as it is, for ``side`` × ``side`` images: the network, its
    classifier's rows sorted by label, and the sorted labels (``classes`` in row order, None:
    ImageNet's)."""
    if pretrained_format(pretrained) != "bcos":
        raise ValueError(f"{pretrained} holds a torchvision network, which must be fine-tuned "
                         "to become B-cos: BcosResNetClassifier(pretrained=...).fit(X, y).")
    module = read_pretrained(pretrained, (side, side), download)
    labels, order = head_order(module.fc.out_features, classes)
    with torch.no_grad():
        module.fc.weight.copy_(module.fc.weight[torch.as_tensor(order)])
    return module, labels


def start_from(module: BcosResNet | BcosDenseNet, source: BcosResNet | BcosDenseNet
               ) -> BcosResNet | BcosDenseNet:
    """``module`` holding ``source``'s weights except the classifier's (kept: new classes);
    RuntimeError naming the keys where the two networks differ."""
    own, head = module.state_dict(), head_name(module) + "."
    module.load_state_dict({k: own[k] if k.startswith(head) else v
                            for k, v in source.state_dict().items()})
    return module


def imprint_classifier(module: BcosResNet | BcosDenseNet, features: torch.Tensor,
                       y: np.ndarray) -> BcosResNet | BcosDenseNet:
    """Point each row k of ``module``'s new classifier at the mean of the pooled ``features``
    (n, D) of class k (y: (n,) indices) minus the mean of all, keeping its norm (centred weight
    imprinting, as the B-cos ViT classifier's): the classifier starts near a nearest-class-mean
    classifier of the pretrained features."""
    weight = getattr(module, head_name(module)).weight  # (K, D, 1, 1)
    centred = features.double() - features.double().mean(0)
    y = torch.as_tensor(y)
    means = torch.zeros(weight.shape[:2], dtype=torch.float64).index_add_(0, y, centred)
    means /= torch.bincount(y, minlength=len(weight)).clamp_min(1)[:, None]
    norms = means.norm(dim=1, keepdim=True)
    with torch.no_grad():
        rows = weight[:, :, 0, 0]
        pointed = means / norms.clamp_min(1e-12) * rows.norm(dim=1, keepdim=True).double()
        rows.copy_(torch.where(norms > 0, pointed, rows.double()).to(rows.dtype))
    return module


def set_trainable(module: BcosResNet | BcosDenseNet, finetune: str
                  ) -> BcosResNet | BcosDenseNet:
    """Freeze what ``finetune`` does not train: ``"all"`` trains everything, ``"head"`` the
    classifier only (the frozen BatchNorms keep their running statistics)."""
    if finetune == "head":
        module.requires_grad_(False)
        getattr(module, head_name(module)).requires_grad_(True)
    return module


def check_fitted_architecture(architecture, fitted: dict) -> dict:
    """A saved ``architecture_`` checked against the ``fitted`` classes, channels and image
    size (the parameters only say what the next fit trains)."""
    if not isinstance(architecture, dict):
        raise ValueError(f"architecture_ must be a dict, got {architecture!r}.")
    bias, bcosified = architecture.get("logit_bias"), architecture.get("bcosified")
    if any(architecture.get(k) != v for k, v in fitted.items()) or not (
            isinstance(bias, (int, float)) and not isinstance(bias, bool)
            and math.isfinite(bias)) or not isinstance(bcosified, bool):
        raise ValueError(f"architecture_ {architecture!r} does not match the fitted "
                         f"classes, channels and image size {fitted}.")
    sizes = {k: v for k, v in architecture.items()
             if k not in (*fitted, "logit_bias", "bcosified")}
    return {**check_architecture(sizes), **fitted, "logit_bias": float(bias),
            "bcosified": bcosified}


def pooled_features(module: BcosResNet | BcosDenseNet, X: np.ndarray, encode,
                    batch_size: int) -> torch.Tensor:
    """The classifier's pooled inputs (n, D) (the last feature map's spatial mean) of images X
    (n, H, W, C) encoded by ``encode``, in batches without autograd."""
    dtype = next(module.parameters()).dtype
    with torch.no_grad():
        return torch.cat([module.forward_features(encode(X[i:i + batch_size]).to(dtype))[0]
                          .mean((2, 3)) for i in range(0, len(X), batch_size)])
