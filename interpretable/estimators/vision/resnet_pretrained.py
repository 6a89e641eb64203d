"""Architectures and pretrained checkpoints of
:class:`~interpretable.estimators.vision.bcos_resnet.BcosResNetClassifier`: what
``architecture`` and ``pretrained`` resolve to, and starting a fit from a checkpoint (a new
classifier, imprinted; frozen layers).

A ``pretrained`` file is a released B-cos v2 ResNet or a checkpoint in the ``bcos`` layout
(read by :func:`~interpretable.nn.bcos.resnet_zoo.load_resnet_checkpoint`), or the state dict of
a torchvision ResNet, B-cosified (:mod:`interpretable.nn.bcos.cnn_conversion`) and fine-tuned
from the recipe's start: no biases, B = 2, average pooling in the stem. Every key and shape is
checked before memory is allocated; files are read with ``weights_only=True``.
"""
from __future__ import annotations

import math
import os
from collections.abc import Mapping
from numbers import Integral
from pathlib import Path

import numpy as np
import torch

from ...nn.bcos.cnn_conversion import (
    RESNET_KEY,
    bcosify_resnet,
    finetuning_start,
    resnet_architecture,
)
from ...nn.bcos.resnet import BLOCKS, BcosResNet
from ...nn.bcos.resnet_zoo import PRETRAINED_RESNETS, load_resnet_checkpoint, released_resnet
from .pretrained import head_order, read_weights

__all__: list[str] = []  # the checkpoint plumbing of BcosResNetClassifier

#: the keys of an ``architecture`` dict (``width`` optional, 64)
ARCHITECTURE_KEYS = ("block", "layers", "width")
_HEAD = "fc."  # the classifier's parameters (replaced when fine-tuning)


def check_architecture(architecture) -> dict:
    """A checked copy of an ``architecture`` dict: ``block``, ``layers`` (4 numbers of blocks)
    and optionally ``width`` (64)."""
    if not isinstance(architecture, Mapping):
        raise TypeError(f"architecture must be None, a released name or a dict, got "
                        f"{type(architecture).__name__}.")
    unknown = sorted(set(architecture) - set(ARCHITECTURE_KEYS), key=str)
    missing = [k for k in ARCHITECTURE_KEYS[:2] if k not in architecture]
    if unknown or missing:
        raise ValueError(f"architecture dicts take {list(ARCHITECTURE_KEYS)} (width optional); "
                         f"unknown {unknown}, missing {missing}.")
    layers, width = architecture["layers"], architecture.get("width", 64)
    counts = list(layers) if isinstance(layers, (list, tuple)) else []
    if architecture["block"] not in BLOCKS or len(counts) != 4 or not all(
            isinstance(v, Integral) and not isinstance(v, bool) and v >= 1
            for v in [*counts, width]):
        raise ValueError(f"architecture needs block in {list(BLOCKS)}, layers 4 integers >= 1 "
                         f"and width an integer >= 1, got {dict(architecture)!r}.")
    return {"block": architecture["block"], "layers": [int(v) for v in counts],
            "width": int(width)}


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
    ``"torchvision"`` for a torchvision ResNet's state dict; ValueError otherwise."""
    if isinstance(pretrained, str) and pretrained in PRETRAINED_RESNETS:
        return "bcos"
    state = _state(pretrained)
    if "fc.linear.weight" in state:
        return "bcos"
    if RESNET_KEY in state and "fc.weight" in state:
        return "torchvision"
    raise ValueError(f"pretrained={str(pretrained)!r} holds neither a B-cos ResNet in the bcos "
                     "layout (fc.linear.weight) nor a torchvision ResNet's state dict "
                     f"({RESNET_KEY}, fc.weight).")


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
    found = spec.architecture if spec is not None else \
        check_architecture({k: resnet_architecture(_state(pretrained))[k]
                            for k in ARCHITECTURE_KEYS})
    if given is not None and given != found:
        raise ValueError(f"pretrained={str(pretrained)!r} holds a ResNet of {found}, not of "
                         f"architecture {given}.")
    return found


def read_pretrained(pretrained, image_shape: tuple, download: bool = False) -> BcosResNet:
    """The checkpoint ``pretrained`` as a CPU network at the start of fine-tuning: a B-cos v2
    one as it is, or a torchvision ResNet B-cosified (:func:`~.cnn_conversion.bcosify_resnet`,
    then :func:`~.cnn_conversion.finetuning_start`)."""
    if pretrained_format(pretrained) == "bcos":
        return load_resnet_checkpoint(pretrained, download=download, image_size=image_shape)
    return finetuning_start(bcosify_resnet(_state(pretrained), image_size=image_shape))


def imagenet_classifier(pretrained, side: int, classes, download: bool
                        ) -> tuple[BcosResNet, np.ndarray]:
    """A ``bcos`` checkpoint as it is, for ``side`` × ``side`` images: the network, its
    classifier's rows sorted by label, and the sorted labels (``classes`` in row order, None:
    ImageNet's)."""
    if pretrained_format(pretrained) != "bcos":
        raise ValueError(f"{pretrained} holds a torchvision ResNet, which must be fine-tuned to "
                         "become B-cos: BcosResNetClassifier(pretrained=...).fit(X, y).")
    module = read_pretrained(pretrained, (side, side), download)
    labels, order = head_order(module.fc.out_features, classes)
    with torch.no_grad():
        module.fc.weight.copy_(module.fc.weight[torch.as_tensor(order)])
    return module, labels


def start_from(module: BcosResNet, source: BcosResNet) -> BcosResNet:
    """``module`` holding ``source``'s weights except the classifier's (kept: new classes);
    RuntimeError naming the keys where the two networks differ."""
    own = module.state_dict()
    module.load_state_dict({k: own[k] if k.startswith(_HEAD) else v
                            for k, v in source.state_dict().items()})
    return module


def imprint_classifier(module: BcosResNet, features: torch.Tensor, y: np.ndarray
                       ) -> BcosResNet:
    """Point each row k of ``module``'s new classifier at the mean of the pooled ``features``
    (n, D) of class k (y: (n,) indices) minus the mean of all, keeping its norm (centred weight
    imprinting, as the B-cos ViT classifier's): the classifier starts near a nearest-class-mean
    classifier of the pretrained features."""
    weight = module.fc.weight  # (K, D, 1, 1)
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


def set_trainable(module: BcosResNet, finetune: str) -> BcosResNet:
    """Freeze what ``finetune`` does not train: ``"all"`` trains everything, ``"head"`` the
    classifier only (the frozen BatchNorms keep their running statistics)."""
    if finetune == "head":
        module.requires_grad_(False)
        module.fc.requires_grad_(True)
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


def pooled_features(module: BcosResNet, X: np.ndarray, encode, batch_size: int
                    ) -> torch.Tensor:
    """The classifier's pooled inputs (n, D) (the last feature map's spatial mean) of images X
    (n, H, W, C) encoded by ``encode``, in batches without autograd."""
    dtype = next(module.parameters()).dtype
    with torch.no_grad():
        return torch.cat([module.run(encode(X[i:i + batch_size]).to(dtype), stop="fc")
                          .mean((2, 3)) for i in range(0, len(X), batch_size)])
