"""The authors' ImageNet-pretrained B-cos v2 ViTs (``B-cos/B-cos-v2`` release v0.0.1-weights,
PyPI ``bcos`` 0.1.3) and a safe checkpoint loader.

A checkpoint is read with ``torch.load(weights_only=True, mmap=True)`` (no code runs, nothing is
copied into memory yet), verified against the SHA-256 prefix in its file name when it is a named
checkpoint, and every key, shape and value is checked against the architecture built on the
meta device before the model's memory is allocated. Nothing is downloaded unless asked.

Key layout: the ``bcos`` checkpoints hold the state of ``BcosSequential(vit, LogitLayer)``, so
every key starts with ``0.``, and their B-cos layers keep the weight in an inner ``linear``
module. :func:`bcos_key_map` gives the one mapping: ``p.weight`` of our B-cos layer at ``p`` is
``0.p.linear.weight`` there; every other key ``k`` is ``0.k``.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import pickle
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import torch

from interpretable.nn._tensors import check_finite, listed_keys
from interpretable.nn.bcos._layers import BcosConv2d, BcosLinear
from interpretable.nn.bcos._simple_vit import BcosSimpleViT

__all__ = ["PRETRAINED", "PretrainedViT", "download_checkpoint", "load_checkpoint",
           "to_bcos_state_dict"]

RELEASE_URL = "https://github.com/B-cos/B-cos-v2/releases/download/v0.0.1-weights"
HEAD_KEY = "0.linear_head.linear.linear.weight"  # the classifier's weight in the bcos layout


@dataclass(frozen=True)
class PretrainedViT:
    """One released model: ``architecture`` (the :class:`BcosSimpleViT` keyword arguments),
    the SHA-256 prefix of its checkpoint, its ImageNet top-1 accuracy (%, the authors' model
    card) and its evaluation transform (resize the shorter side to ``resize_size``, bilinear,
    then centre-crop ``crop_size``)."""

    name: str
    architecture: Mapping[str, object]
    sha256_prefix: str
    top1: float
    resize_size: int = 256
    crop_size: int = 224

    @property
    def file_name(self) -> str:
        return f"bcos_{self.name}-{self.sha256_prefix}.pth"

    @property
    def url(self) -> str:
        return f"{RELEASE_URL}/{self.file_name}"


def _vit(dim: int, heads: int, depth: int, mlp_dim: int, stem=()) -> dict:
    return dict(dim=dim, heads=heads, depth=depth, mlp_dim=mlp_dim,
                patch_size=1 if stem else 16, stem_channels=tuple(stem))


_TI, _S = dict(dim=192, heads=3, mlp_dim=768), dict(dim=384, heads=6, mlp_dim=1536)
_B, _L = dict(dim=768, heads=12, mlp_dim=3072), dict(dim=1024, heads=16, mlp_dim=4096)
_WIDE_STEM = (64, 128, 128, 256, 256, 512)

# Hash prefixes: bcos/models/pretrained.py (URLS["vit_final"]); the ViT-C depths are the
# reference's 12 (14 for L) minus one for the stem.
#: The released B-cos ViTs by name (what :func:`load_checkpoint` and
#: ``BcosSimpleViTClassifier(pretrained=name)`` accept).
PRETRAINED: dict[str, PretrainedViT] = {spec.name: spec for spec in (
    PretrainedViT("simple_vit_ti_patch16_224", _vit(**_TI, depth=12), "4b0824b1c1", 59.960),
    PretrainedViT("simple_vit_s_patch16_224", _vit(**_S, depth=12), "75e99d1f73", 69.246),
    PretrainedViT("simple_vit_b_patch16_224", _vit(**_B, depth=12), "1fc4750806", 74.408),
    PretrainedViT("simple_vit_l_patch16_224", _vit(**_L, depth=14), "9613b2ad0a", 75.060),
    PretrainedViT("vitc_ti_patch1_14", _vit(**_TI, depth=11, stem=(24, 48, 96, 192)),
                  "ddd6193a77", 67.260),
    PretrainedViT("vitc_s_patch1_14", _vit(**_S, depth=11, stem=(48, 96, 192, 384)),
                  "cf55c88f0c", 74.504),
    PretrainedViT("vitc_b_patch1_14", _vit(**_B, depth=11, stem=_WIDE_STEM), "a13c46397b",
                  77.152),
    PretrainedViT("vitc_l_patch1_14", _vit(**_L, depth=13, stem=_WIDE_STEM), "8739e18b8d",
                  77.782),
)}


def _spec(name: str) -> PretrainedViT:
    if name not in PRETRAINED:
        raise ValueError(f"unknown pretrained B-cos ViT {name!r}; choose one of "
                         f"{sorted(PRETRAINED)}")
    return PRETRAINED[name]


def architecture_kwargs(architecture: str | Mapping[str, object]) -> dict:
    """The :class:`BcosSimpleViT` keyword arguments of a name of :data:`PRETRAINED` or a dict
    of them (a copy)."""
    kwargs = _spec(architecture).architecture if isinstance(architecture, str) else architecture
    if not isinstance(kwargs, Mapping):
        raise TypeError("architecture must be a pretrained name or a dict of BcosSimpleViT "
                        f"arguments, got {type(architecture).__name__}")
    return dict(kwargs)


def build_model(architecture: str | Mapping[str, object],
                device: torch.device | str | None = None) -> BcosSimpleViT:
    """A randomly initialised :class:`BcosSimpleViT` from a name of :data:`PRETRAINED` or a
    dict of its keyword arguments; ``device="meta"`` allocates nothing."""
    kwargs = architecture_kwargs(architecture)
    with contextlib.nullcontext() if device is None else torch.device(device):
        return BcosSimpleViT(**kwargs)


def bcos_key_map(model: BcosSimpleViT) -> dict[str, str]:
    """Our state-dict key -> the key of the same tensor in a ``bcos`` checkpoint."""
    bcos_layers = {name for name, module in model.named_modules()
                   if isinstance(module, (BcosLinear, BcosConv2d))}
    key_map = {}
    for key in model.state_dict(keep_vars=True):
        owner, _, leaf = key.rpartition(".")
        key_map[key] = f"0.{owner}.linear.{leaf}" if owner in bcos_layers else f"0.{key}"
    return key_map


def to_bcos_state_dict(model: BcosSimpleViT) -> dict[str, torch.Tensor]:
    """``model``'s state dict in the ``bcos`` checkpoint layout (e.g. to ``torch.save``)."""
    state = model.state_dict()
    return {theirs: state[ours] for ours, theirs in bcos_key_map(model).items()}


def checkpoint_path(name: str) -> Path:
    """Where ``torch.hub`` caches the named checkpoint (``torch.hub.get_dir()/checkpoints``,
    shared with the ``bcos`` package's own downloads)."""
    return Path(torch.hub.get_dir()) / "checkpoints" / _spec(name).file_name


def download_checkpoint(name: str, progress: bool = True) -> Path:
    """Download the named checkpoint into the hub cache (unless already there); its path.

    Without a connection (or when the server refuses) an OSError names the URL, the cache path
    and the alternatives: put the file there, or pass the path of a copy to ``from_pretrained``
    / :func:`load_checkpoint`."""
    path = checkpoint_path(name)
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        spec = _spec(name)
        try:
            torch.hub.download_url_to_file(spec.url, str(path), hash_prefix=spec.sha256_prefix,
                                           progress=progress)
        except OSError as exc:  # URLError, HTTPError, timeouts, refused connections
            reason = getattr(exc, "reason", None) or exc
            raise OSError(
                f"could not download {spec.name} from {spec.url} to the torch hub cache "
                f"({path}): {reason}. Offline, download the file on another machine and put "
                f"it at {path}, or pass the path of your copy instead of the name "
                f"(BcosSimpleViTClassifier.from_pretrained('/path/to/{spec.file_name}'))") from exc
    return path


def sha256_of(path: str | Path, chunk_size: int = 1 << 20) -> str:
    """Hex SHA-256 digest of a file, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        while chunk := file.read(chunk_size):
            digest.update(chunk)
    return digest.hexdigest()


def _verify_hash(path: Path, spec: PretrainedViT) -> None:
    if not sha256_of(path).startswith(spec.sha256_prefix):
        raise ValueError(f"{path} does not match the SHA-256 prefix {spec.sha256_prefix} of "
                         f"{spec.name}: the file is corrupt or not the released checkpoint; "
                         "delete it and download it again")


def read_state_dict(path: Path) -> Mapping[str, torch.Tensor]:
    """A plain {name: tensor} checkpoint, memory-mapped; ValueError for anything else."""
    if not stat.S_ISREG(os.stat(path).st_mode):  # torch.load would block on a named pipe
        raise ValueError(f"{path} is not a regular file (a folder, a named pipe, a device).")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
    except pickle.UnpicklingError as exc:
        found = re.search(r"WeightsUnpickler error: ([^.]*)", str(exc))
        reason = found.group(1) if found else str(exc).strip().splitlines()[0]
        raise ValueError(f"{path} was refused: it holds more than tensors (loading it would "
                         f"run code or build arbitrary objects): {reason}") from None
    except (RuntimeError, EOFError, OSError, ValueError) as exc:
        raise ValueError(f"{path} is not a readable PyTorch checkpoint (corrupt, truncated or "
                         f"another format): {exc}") from None
    if not isinstance(state, Mapping):
        raise ValueError(f"{path} holds a {type(state).__name__}, not a state dict")
    for key, value in state.items():
        if not isinstance(key, str) or not isinstance(value, torch.Tensor):
            raise ValueError(f"{path} is not a state dict of tensors: entry {key!r} holds a "
                             f"{type(value).__name__}")
    return state


def check_state(state: Mapping[str, torch.Tensor], expected: Mapping[str, torch.Size],
                source: object, hint: str = "") -> None:
    """Every expected key present with its shape, no other key, floating and finite values;
    a ValueError names ``source`` (e.g. the file), and ``hint`` when keys or shapes differ."""
    problems = []
    missing = expected.keys() - state.keys()
    unexpected = state.keys() - expected.keys()
    if missing:
        problems.append(f"missing keys: {listed_keys(missing)}")
    if unexpected:
        problems.append(f"unexpected keys: {listed_keys(unexpected)}")
    shapes = [f"{k} {tuple(state[k].shape)} (expected {tuple(expected[k])})"
              for k in sorted(expected.keys() & state.keys()) if state[k].shape != expected[k]]
    if shapes:
        problems.append(f"mis-shaped: {listed_keys(shapes)}")
    if problems:
        raise ValueError(f"{source} does not fit the architecture{hint}: " +
                         "; ".join(problems))
    not_float = [k for k in expected if not state[k].is_floating_point()]
    if not_float:
        raise ValueError(f"{source} has non-floating-point tensors: {listed_keys(not_float)}")
    check_finite({k: state[k] for k in expected}, source)


def load_checkpoint(name_or_path: str | Path, *, architecture: str | Mapping | None = None,
                    download: bool = False, progress: bool = True) -> BcosSimpleViT:
    """A :class:`BcosSimpleViT` (float32, CPU) with the weights of a ``bcos`` checkpoint.

    ``name_or_path``: a name of :data:`PRETRAINED` (read from the torch hub cache, downloaded
    first only with ``download=True``), or a ``.pth`` file in the ``bcos`` key layout. The
    architecture of a file comes from ``architecture`` (a pretrained name or a dict of
    :class:`BcosSimpleViT` arguments) or, when omitted, from its released file name; the
    number of classes is the checkpoint's head size unless the dict gives ``num_classes``.
    Named and released files are checked against their SHA-256 prefix. Raises
    FileNotFoundError for a missing file and ValueError for a corrupt, truncated, hostile,
    mismatched or non-finite one.
    """
    spec = None
    if isinstance(name_or_path, str) and name_or_path in PRETRAINED:
        spec = PRETRAINED[name_or_path]
        path = download_checkpoint(spec.name, progress) if download else \
            checkpoint_path(spec.name)
        if not path.is_file():
            raise FileNotFoundError(
                f"{spec.name} is not in the torch hub cache ({path}); download it once with "
                f"download=True (load_checkpoint, BcosSimpleViTClassifier.from_pretrained) or "
                f"download_checkpoint({spec.name!r}), or put {spec.url} there")
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise FileNotFoundError(f"no checkpoint file at {path}; pretrained names are "
                                    f"{sorted(PRETRAINED)}")
        spec = next((s for s in PRETRAINED.values() if s.file_name == path.name), None)
    if architecture is None:
        if spec is None:
            raise ValueError(f"cannot tell the architecture of {path}: pass architecture= (a "
                             "pretrained name or a dict of BcosSimpleViT arguments)")
        architecture = spec.name
    if spec is not None:
        _verify_hash(path, spec)
    state = read_state_dict(path)
    kwargs = architecture_kwargs(architecture)
    head = state.get(HEAD_KEY)
    if "num_classes" not in kwargs and head is not None and head.dim() == 2:
        kwargs["num_classes"] = head.shape[0]
    model = build_model(kwargs, device="meta")
    key_map = bcos_key_map(model)
    meta_state = model.state_dict()
    hint = ("" if any(k.startswith("0.") for k in state) else
            " (keys are read in the bcos layout; save with to_bcos_state_dict)")
    check_state(state, {key_map[k]: t.shape for k, t in meta_state.items()}, path, hint)
    model.to_empty(device="cpu")
    model.load_state_dict({ours: state[theirs] for ours, theirs in key_map.items()})
    return model.eval()
