"""The authors' ImageNet-pretrained B-cos v2 ResNets (``B-cos/B-cos-v2`` release v0.0.1-weights,
PyPI ``bcos`` 0.1.3, ``bcos.models.pretrained.resnet18`` ...) as
:class:`~interpretable.nn.bcos.BcosResNet`, from local weight files.

A checkpoint is read as :mod:`interpretable.nn.bcos` reads the ViTs' (memory-mapped,
``weights_only=True``), verified against the SHA-256 prefix of its released file name, and every
key, shape and value is checked against the network built on the meta device before memory is
allocated. Nothing is downloaded unless asked.

Key layout: the ``bcos`` ResNets are saved as they are (no ``0.`` prefix), their B-cos
convolutions keep the weight in an inner ``linear`` module: our ``p.weight`` of a convolution at
``p`` is ``p.linear.weight`` there, every other key the same (:func:`resnet_key_map`).
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from interpretable.nn.bcos._cnn_conversion import resnet_architecture
from interpretable.nn.bcos._layers import BcosConv2d
from interpretable.nn.bcos._resnet import BcosResNet
from interpretable.nn.bcos._zoo import RELEASE_URL, check_state, read_state_dict, sha256_of

__all__ = ["PRETRAINED_RESNETS", "PretrainedResNet", "load_resnet_checkpoint",
           "to_bcos_resnet_state_dict"]


@dataclass(frozen=True)
class PretrainedResNet:
    """One released B-cos v2 ResNet: its depth (``block``, ``layers``), the SHA-256 prefix of
    its checkpoint, its ImageNet top-1 accuracy (%, the authors' model card) and the stem of its
    file name (``resnet_18``)."""

    name: str
    block: str
    layers: tuple[int, ...]
    sha256_prefix: str
    top1: float
    stem: str

    @property
    def file_name(self) -> str:
        return f"{self.stem}-{self.sha256_prefix}.pth"

    @property
    def url(self) -> str:
        return f"{RELEASE_URL}/{self.file_name}"

    @property
    def architecture(self) -> dict:
        """The :class:`BcosResNet` sizes (the released models' width is 64)."""
        return {"block": self.block, "layers": list(self.layers), "width": 64}


# Hash prefixes and accuracies: bcos/models/pretrained.py (URLS["bcos_final"], model cards)
#: The released B-cos v2 ResNets by name (what :func:`load_resnet_checkpoint` and
#: ``BcosResNetClassifier(pretrained=name)`` accept).
PRETRAINED_RESNETS: dict[str, PretrainedResNet] = {spec.name: spec for spec in (
    PretrainedResNet("resnet18", "basic", (2, 2, 2, 2), "68b4160fff", 68.736, "resnet_18"),
    PretrainedResNet("resnet34", "basic", (3, 4, 6, 3), "a63425a03e", 72.284, "resnet_34"),
    PretrainedResNet("resnet50", "bottleneck", (3, 4, 6, 3), "ead259efe4", 75.882,
                     "resnet_50"),
    PretrainedResNet("resnet101", "bottleneck", (3, 4, 23, 3), "84c3658278", 76.532,
                     "resnet_101"),
    PretrainedResNet("resnet152", "bottleneck", (3, 8, 36, 3), "42051a77c1", 76.484,
                     "resnet_152"),
)}


def released_resnet(name_or_path) -> PretrainedResNet | None:
    """The released ResNet a name of :data:`PRETRAINED_RESNETS` or a released file name is,
    or None."""
    if isinstance(name_or_path, str) and name_or_path in PRETRAINED_RESNETS:
        return PRETRAINED_RESNETS[name_or_path]
    name = Path(name_or_path).name
    return next((s for s in PRETRAINED_RESNETS.values() if s.file_name == name), None)


def resnet_key_map(model: BcosResNet) -> dict[str, str]:
    """Our state-dict key -> the key of the same tensor in a ``bcos`` ResNet checkpoint."""
    convolutions = {name for name, module in model.named_modules()
                    if isinstance(module, BcosConv2d)}
    key_map = {}
    for key in model.state_dict(keep_vars=True):
        owner, _, leaf = key.rpartition(".")
        key_map[key] = f"{owner}.linear.{leaf}" if owner in convolutions else key
    return key_map


def to_bcos_resnet_state_dict(model: BcosResNet) -> dict[str, torch.Tensor]:
    """``model``'s state dict in the ``bcos`` checkpoint layout (e.g. to ``torch.save``).

    Parameters
    ----------
    model : BcosResNet
        A B-cos v2 ResNet (no biases).

    Returns
    -------
    dict of str to torch.Tensor
        The tensors under the ``bcos`` keys.

    Examples
    --------
    >>> from interpretable.nn.bcos import BcosResNet
    >>> state = to_bcos_resnet_state_dict(BcosResNet(layers=(1, 1, 1, 1), width=4,
    ...                                              num_classes=2))
    >>> [k for k in state if k.startswith("layer1.0.conv1")]
    ['layer1.0.conv1.linear.weight']
    """
    state = model.state_dict()
    return {theirs: state[ours] for ours, theirs in resnet_key_map(model).items()}


def _released_file(spec: PretrainedResNet, download: bool, progress: bool) -> Path:
    """Where the torch hub cache holds ``spec``'s checkpoint, downloaded first with
    ``download`` (hash-checked by torch); FileNotFoundError or OSError naming the URL."""
    path = Path(torch.hub.get_dir()) / "checkpoints" / spec.file_name
    if download and not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            torch.hub.download_url_to_file(spec.url, str(path),
                                           hash_prefix=spec.sha256_prefix, progress=progress)
        except OSError as exc:  # no connection, refused, timed out
            raise OSError(f"could not download {spec.url} to {path}: "
                          f"{getattr(exc, 'reason', None) or exc}; put a copy there, or pass "
                          f"its path") from exc
    if not path.is_file():
        raise FileNotFoundError(f"{spec.name} is not in the torch hub cache ({path}): put "
                                f"{spec.url} there or pass download=True")
    return path


def load_resnet_checkpoint(name_or_path: str | Path, *, download: bool = False,
                           progress: bool = True,
                           image_size: int | Sequence[int] = 224) -> BcosResNet:
    """A B-cos v2 :class:`BcosResNet` (its checkpoint's dtype, CPU) from a ``bcos`` checkpoint.

    Parameters
    ----------
    name_or_path : str or path
        A name of :data:`PRETRAINED_RESNETS` (read from the torch hub cache, downloaded first
        only with ``download=True``) or a ``.pth`` file in the ``bcos`` ResNet layout (its
        sizes are read off its shapes). Released files (by name or file name) are checked
        against their SHA-256 prefix.
    download : bool, default=False
        Download a released model into the hub cache once.
    progress : bool, default=True
        Show the download's progress.
    image_size : int or (int, int), default=224
        The images it is used at (sets ``grid_size``; any size computes).

    Returns
    -------
    BcosResNet
        In eval mode; ``logit_bias`` log(1/(num_classes - 1)) as in the release.

    Raises
    ------
    FileNotFoundError
        For a missing file.
    ValueError
        For a corrupt, truncated, hostile, mismatched or non-finite checkpoint (named).

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn.bcos import BcosResNet
    >>> tiny = BcosResNet(block="bottleneck", layers=(1, 1, 1, 1), width=4, num_classes=3)
    >>> torch.save(to_bcos_resnet_state_dict(tiny), "tiny_resnet.pth")
    >>> model = load_resnet_checkpoint("tiny_resnet.pth", image_size=32)
    >>> x = torch.rand(2, 6, 32, 32)
    >>> bool(torch.equal(model(x), tiny.eval()(x)))
    True
    """
    spec = released_resnet(name_or_path)
    if isinstance(name_or_path, str) and name_or_path in PRETRAINED_RESNETS:
        path = _released_file(spec, download, progress)
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"no checkpoint file at {path}; released names are "
                                    f"{sorted(PRETRAINED_RESNETS)}")
    if spec is not None and not sha256_of(path).startswith(spec.sha256_prefix):
        raise ValueError(f"{path} does not match the SHA-256 prefix {spec.sha256_prefix} of "
                         f"{spec.name}: the file is corrupt or not the released checkpoint")
    state = read_state_dict(path)
    if "fc.linear.weight" not in state:
        raise ValueError(f"{path} is no B-cos ResNet checkpoint in the bcos layout (it has no "
                         "fc.linear.weight); a torchvision ResNet is B-cosified by "
                         "interpretable.nn.bcos.bcosify_resnet")
    return _loaded(state, resnet_architecture(state), path, image_size)


def _loaded(state: Mapping[str, torch.Tensor], sizes: dict, source, image_size
            ) -> BcosResNet:
    """The v2 network of ``sizes`` holding ``state`` (bcos layout), checked first."""
    with torch.device("meta"):
        model = BcosResNet(**sizes, image_size=image_size)
    key_map = resnet_key_map(model)
    meta_state = model.state_dict()
    counters = {key_map[k] for k in meta_state if k.endswith("num_batches_tracked")}
    check_state({k: v for k, v in state.items() if k not in counters},
                {key_map[k]: v.shape for k, v in meta_state.items() if key_map[k] not in counters},
                source)
    missing = sorted(counters - state.keys())
    if missing:
        raise ValueError(f"{source} does not fit the architecture: missing keys: {missing[0]}")
    dtype = state["fc.linear.weight"].dtype
    model.to_empty(device="cpu").to(dtype)
    model.load_state_dict({ours: state[theirs] for ours, theirs in key_map.items()})
    return model.eval()
