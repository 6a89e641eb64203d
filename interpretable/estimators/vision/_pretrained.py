"""B-cos v2 architectures and pretrained checkpoints for
:class:`~interpretable.estimators.vision.BcosSimpleViTClassifier`: what
``architecture`` and ``pretrained`` resolve to, starting a fit from a checkpoint (a new
classifier, frozen layers), the fine-tuning learning-rate schedule, and the ImageNet classifier
of ``from_pretrained``.

Checkpoints are read by :func:`interpretable.nn.bcos.load_checkpoint` (no code runs, every
key and shape is checked before memory is allocated, released files are hash-checked); those of
conventional torchvision or timm ViTs are B-cosified
(:mod:`interpretable.nn.bcos`, checked the same way) and fine-tuned from the
recipe's start: no biases, B = 2.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from numbers import Integral
from pathlib import Path

import numpy as np
import torch

from interpretable.datasets import imagenet_class_names
from interpretable.nn.bcos import (
    PRETRAINED,
    BcosSimpleViT,
    bcosify_vit,
    checkpoint_format,
    conventional_key_map,
    load_checkpoint,
    read_conventional,
    read_state_dict,
    token_stride,
    vit_finetuning_start,
)

__all__: list[str] = []  # the checkpoint plumbing of BcosSimpleViTClassifier

#: the :class:`~interpretable.nn.bcos.BcosSimpleViT` arguments an ``architecture`` dict
#: gives (the network's size); ``stem_channels`` is optional
BACKBONE_KEYS = ("dim", "depth", "heads", "mlp_dim", "patch_size", "stem_channels")
#: BcosSimpleViT arguments the estimator sets, and from what
SET_BY_ESTIMATOR = {"num_classes": "the labels y", "in_channels": "the images",
                    "image_size": "image_size=", "logit_bias": "logit_bias=",
                    "bcosified": "the format of pretrained="}
#: the crop size of the released models' evaluation transform
RELEASED_CROP = 224
_HEAD = "linear_head.linear."  # the classifier's parameters (replaced when fine-tuning)


def released_name(pretrained) -> str | None:
    """The released model behind ``pretrained`` (a name of ``PRETRAINED`` or a path whose file
    name is a released checkpoint's), or None."""
    if pretrained is None:
        return None
    if isinstance(pretrained, str) and pretrained in PRETRAINED:
        return pretrained
    name = Path(pretrained).name
    return next((n for n, spec in PRETRAINED.items() if spec.file_name == name), None)


def check_backbone(architecture, bcosified: bool = False) -> dict:
    """A checked copy of an ``architecture`` dict (:data:`BACKBONE_KEYS`); ``bcosified``: of a
    B-cosified conventional ViT (learned positions, so any ``dim`` that ``heads`` divides)."""
    if not isinstance(architecture, Mapping):
        raise TypeError(f"architecture must be None, a released name or a dict of "
                        f"BcosSimpleViT arguments, got {type(architecture).__name__}.")
    reserved = sorted(set(architecture) & set(SET_BY_ESTIMATOR))
    if reserved:
        raise ValueError(f"architecture sets {reserved}, which the estimator sets (from "
                         f"{', '.join(SET_BY_ESTIMATOR[k] for k in reserved)}); remove them.")
    unknown = sorted(set(architecture) - set(BACKBONE_KEYS), key=str)
    missing = [k for k in BACKBONE_KEYS[:-1] if k not in architecture]
    if unknown or missing:
        raise ValueError(f"architecture dicts take the BcosSimpleViT arguments "
                         f"{list(BACKBONE_KEYS)} (stem_channels optional); unknown {unknown}, "
                         f"missing {missing}.")
    backbone = {**architecture, "stem_channels": tuple(architecture.get("stem_channels", ()))}
    sizes = [backbone[k] for k in BACKBONE_KEYS[:-1]] + list(backbone["stem_channels"])
    if not all(isinstance(v, Integral) and not isinstance(v, bool) and v >= 1 for v in sizes):
        raise ValueError(f"architecture sizes must be integers >= 1, got {architecture!r}.")
    dim, heads = backbone["dim"], backbone["heads"]
    if bcosified:
        if dim % heads:
            raise ValueError(f"architecture heads={heads} must divide dim={dim} (the token "
                             "width).")
    elif dim % heads or dim % 4 or dim < 8:
        raise ValueError(f"architecture dim={dim} must be divisible by heads={heads} and by 4 "
                         "(the sin-cos positional embedding), and at least 8.")
    return {k: backbone[k] for k in BACKBONE_KEYS}


def conventional_backbone(architecture, what: str, read_sizes: Callable[[int], Mapping]
                          ) -> dict:
    """The checked backbone of a conventional ViT (``what`` it is, for errors):
    ``architecture`` gives its number of heads, ``{"heads": h}``, which a state dict does not
    record, and may repeat sizes; ``read_sizes(h)`` gives the others, read off its shapes
    (:func:`~interpretable.nn.bcos._vit_conversion.read_conventional`)."""
    if not isinstance(architecture, Mapping) or "heads" not in architecture:
        raise ValueError(f"{what}, which does not record its number of attention heads: pass "
                         "architecture={'heads': h} (its other sizes are read off its "
                         f"shapes), not architecture={architecture!r}.")
    if tuple(architecture.get("stem_channels", ())):
        raise ValueError(f"{what}: a patch embedding, no convolution stem; remove "
                         "stem_channels from architecture.")
    found = read_sizes(architecture["heads"])
    return check_backbone({**{k: found[k] for k in BACKBONE_KEYS[:-1]}, **architecture},
                          bcosified=True)


def resolve_architecture(architecture, pretrained) -> dict:
    """The checked backbone dict of a B-cos v2 architecture.

    ``architecture`` None is the released model that ``pretrained`` names; a released name
    must agree with a released ``pretrained``. The state dict of a
    conventional ViT as ``pretrained`` needs ``{"heads": h}`` only
    (:func:`conventional_backbone`)."""
    name = released_name(pretrained)
    partial = isinstance(architecture, Mapping) and not set(BACKBONE_KEYS[:-1]) <= set(
        architecture)  # sizes to read off the file
    if name is None and pretrained is not None and (partial or Path(pretrained).is_file()):
        fmt = pretrained_format(pretrained)  # FileNotFoundError when it is gone
        if fmt != "bcos":
            state = read_state_dict(Path(pretrained))
            return conventional_backbone(
                architecture, f"pretrained={pretrained!r} is the state dict of a conventional "
                f"{fmt} VisionTransformer (learned positions, a class token)",
                lambda heads: read_conventional(state, architecture={"heads": heads})[2])
    if architecture is None:
        if name is None:
            raise ValueError(f"cannot tell the architecture of pretrained={pretrained!r}: pass "
                             f"architecture= (a released name of {sorted(PRETRAINED)} or a dict "
                             f"of BcosSimpleViT arguments {list(BACKBONE_KEYS)}).")
        architecture = name
    if isinstance(architecture, str):
        if architecture not in PRETRAINED:
            raise ValueError(f"architecture={architecture!r} is not a released name of "
                             f"{sorted(PRETRAINED)} or a dict of BcosSimpleViT arguments.")
        if name is not None and name != architecture:
            raise ValueError(f"pretrained={pretrained!r} holds the weights of {name}, not of "
                             f"architecture={architecture!r}.")
        architecture = PRETRAINED[architecture].architecture
    return check_backbone(architecture)


def v2_token_stride(backbone: dict, channels: int) -> int:
    """Input pixels per token side of the v2 ``backbone`` for images of ``channels``."""
    return token_stride(2 * channels, backbone["patch_size"], backbone["stem_channels"])


def _check_pretrained(pretrained) -> None:
    if not isinstance(pretrained, (str, os.PathLike)):
        raise TypeError(f"pretrained must be a released name or a path, got "
                        f"{type(pretrained).__name__}.")


def pretrained_format(pretrained) -> str:
    """``"bcos"`` for a released name or a checkpoint in the ``bcos`` layout, else the
    conventional ViT layout of the file, ``"torchvision"`` or ``"timm"`` (see
    :func:`~interpretable.nn.bcos._vit_conversion.checkpoint_format`)."""
    _check_pretrained(pretrained)
    if released_name(pretrained) is not None:
        return "bcos"
    path = Path(pretrained)
    if not path.is_file():
        raise FileNotFoundError(f"no checkpoint file at {path}; pretrained names are "
                                f"{sorted(PRETRAINED)}")
    return checkpoint_format(read_state_dict(path))


def read_pretrained(pretrained, backbone: dict, image_shape: tuple, download: bool = False
                    ) -> BcosSimpleViT:
    """The checkpoint ``pretrained`` (name or ``.pth`` path) as a CPU model: a B-cos v2 one
    (float32), or a conventional ViT B-cosified at the start of fine-tuning (its dtype)."""
    if pretrained_format(pretrained) == "bcos":
        return load_checkpoint(pretrained, architecture={**backbone, "image_size": image_shape},
                               download=download)
    state = read_state_dict(Path(pretrained))
    fmt, _, found = read_conventional(state, architecture={"heads": backbone["heads"]})
    side, (h, w) = found["image_size"], image_shape
    if (side, side) != (h, w):
        positions = conventional_key_map(fmt, 0)["pos_embedding"]
        raise ValueError(f"pretrained={pretrained!r} has learned positions ({positions}) for "
                         f"images of {side} x {side} pixels, not {(h, w)}: pass "
                         f"image_size={side} (image_size defaults to 'auto', which crops to "
                         f"{RELEASED_CROP} with pretrained weights), or images of {side} x "
                         f"{side} pixels with image_size=None.")
    sizes = {k: backbone[k] for k in ("dim", "depth", "heads", "mlp_dim", "patch_size")}
    model = bcosify_vit(state, architecture={**sizes, "image_size": tuple(image_shape)})
    return vit_finetuning_start(model)


def start_from(module: BcosSimpleViT, source: BcosSimpleViT) -> BcosSimpleViT:
    """``module`` holding ``source``'s weights except the classifier's (kept: new classes)."""
    state = {k: v for k, v in source.state_dict().items() if not k.startswith(_HEAD)}
    missing, unexpected = module.load_state_dict(state, strict=False)
    if unexpected or any(not k.startswith(_HEAD) for k in missing):
        raise ValueError(f"the pretrained weights do not fit: missing {missing[:5]}, "
                         f"unexpected {unexpected[:5]}.")
    return module


def imprint_classifier(module: BcosSimpleViT, features: torch.Tensor, y: np.ndarray
                       ) -> BcosSimpleViT:
    """Point each row k of ``module``'s new B-cos classifier at the mean of the ``features``
    (n, D) of class k (y: (n,) indices) minus the mean of all, keeping its norm ("weight
    imprinting", Qi et al. 2018, centred): the classifier starts as a nearest-class-mean
    classifier on the pretrained features instead of at random, so the first steps of
    fine-tuning do not push a random classifier's gradients into the pretrained layers, and a
    classifier alone, whose logits its unit-norm rows bound, starts near its optimum."""
    weight = module.linear_head.linear.weight
    y = torch.as_tensor(y)
    centred = features.double() - features.double().mean(0)
    means = torch.zeros(weight.shape, dtype=torch.float64).index_add_(0, y, centred)
    means /= torch.bincount(y, minlength=len(weight)).clamp_min(1)[:, None]
    norms = means.norm(dim=1, keepdim=True)
    with torch.no_grad():
        imprinted = means / norms.clamp_min(1e-12) * weight.norm(dim=1, keepdim=True)
        weight.copy_(torch.where(norms > 0, imprinted.to(weight.dtype), weight))
    return module


def set_trainable(module: BcosSimpleViT, finetune) -> BcosSimpleViT:
    """Freeze what ``finetune`` does not train: ``"all"`` trains everything, ``"head"`` the
    classifier (head LayerNorm and B-cos linear), an int k the last k blocks and the head."""
    if finetune == "all":
        return module
    module.requires_grad_(False)
    blocks = list(module.transformer.values())
    for part in [*(blocks[-finetune:] if finetune != "head" else []), module.linear_head]:
        part.requires_grad_(True)
    return module


def imagenet_head(module: BcosSimpleViT, classes: Sequence | None) -> np.ndarray:
    """The sorted class labels of the checkpoint ``module``'s classifier (scikit-learn's
    ``classes_``), whose rows are permuted to that order in place (see :func:`head_order`)."""
    labels, order = head_order(module.linear_head.linear.out_features, classes)
    with torch.no_grad():
        weight = module.linear_head.linear.weight
        weight.copy_(weight[torch.as_tensor(order)])
    return labels


def head_order(rows: int, classes: Sequence | None) -> tuple[np.ndarray, np.ndarray]:
    """(sorted labels (rows,), the row order that sorts them) of a classifier of ``rows``
    outputs named ``classes`` (one label per row, in row order) or, for 1,000 rows, by the
    ImageNet class names."""
    if classes is None:
        if rows != len(imagenet_class_names()):
            raise ValueError(f"the checkpoint's classifier has {rows} classes, not ImageNet's "
                             f"1,000: pass classes= (its {rows} labels in row order).")
        classes = imagenet_class_names()
    labels = np.asarray(classes)
    if labels.ndim != 1 or len(labels) != rows or len(np.unique(labels)) != rows:
        raise ValueError(f"classes must hold {rows} distinct labels (one per row of the "
                         f"checkpoint's classifier), got shape {labels.shape}.")
    order = np.argsort(labels, kind="stable")
    return labels[order], order


def read_weights(path) -> Mapping[str, torch.Tensor]:
    """The tensors of a ``.safetensors`` file or of a ``torch.load(weights_only=True)``
    checkpoint (see :func:`~interpretable.nn.bcos._zoo.read_state_dict`)."""
    path = Path(path)
    if path.suffix != ".safetensors":
        return read_state_dict(path)
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    try:
        return load_file(path)
    except SafetensorError as exc:
        raise ValueError(f"{path} is not a readable safetensors file: {exc}") from None
