"""Tensor plumbing shared by the models: devices, autocast precision, seeded generators,
padding and the checks of loaded weights."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import torch
from torch import nn

LISTED_KEYS = 5  # keys named per kind of problem in error messages


def resolve_device(device) -> torch.device:
    """``"auto"`` → CUDA when available, else CPU; validates explicit devices."""
    if device is None or device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device={device!r} is not a valid torch device: {exc}") from None
    available = {"cpu": True, "cuda": torch.cuda.is_available(),
                 "mps": torch.backends.mps.is_available()}
    if not available.get(device.type, False):
        raise ValueError(f"device={str(device)!r} was requested but it is not available here; "
                         "use device='auto' or 'cpu'.")
    if device.type == "cuda" and device.index is not None \
            and device.index >= torch.cuda.device_count():
        raise ValueError(f"device={str(device)!r}: only {torch.cuda.device_count()} CUDA "
                         "device(s) here.")
    return device


def autocast_dtype(device_type: str) -> torch.dtype | None:
    """The dtype ``torch.autocast`` computes products in on ``device_type``, None outside it
    (or on a device type without autocast, such as ``"meta"``)."""
    try:
        enabled = torch.is_autocast_enabled(device_type)
    except RuntimeError:
        return None
    return torch.get_autocast_dtype(device_type) if enabled else None


def product_dtype(x: torch.Tensor) -> torch.dtype:
    """The dtype x enters matrix products in: autocast's for float32 x under autocast (which
    casts only float32), x's own otherwise."""
    cast = autocast_dtype(x.device.type) if x.dtype == torch.float32 else None
    return cast or x.dtype


def in_parameter_precision(module: nn.Module, *inputs: torch.Tensor) -> torch.Tensor:
    """``module(*inputs)`` in the precision of its parameters, also under autocast: there
    (bfloat16 prediction) with autocast off and the inputs cast to the parameters' dtype. For
    classifier heads: a product of a few thousand multiply-adds, whose logits then keep the
    parameters' resolution, so that close classes rank as they do without autocast."""
    if autocast_dtype(inputs[0].device.type) is None:
        return module(*inputs)
    dtype = next(module.parameters()).dtype
    with torch.autocast(inputs[0].device.type, enabled=False):
        return module(*(x.to(dtype) for x in inputs))


def make_generator(seed: int) -> torch.Generator:
    """A CPU generator for reproducible shuffling independent of the global RNG."""
    return torch.Generator().manual_seed(int(seed))


def pad_sequences(arrays: list[np.ndarray], value: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Right-pad 1-d or 2-d int arrays: → (N, L[, G]) long tensor and lengths (N,)."""
    lengths = torch.tensor([len(a) for a in arrays])
    shape = (len(arrays), int(lengths.max())) + tuple(arrays[0].shape[1:])
    out = torch.full(shape, value, dtype=torch.long)
    for i, a in enumerate(arrays):
        out[i, : len(a)] = torch.as_tensor(a)
    return out, lengths


def listed_keys(keys: Iterable[str]) -> str:
    """The first :data:`LISTED_KEYS` of ``keys`` in order, and how many more."""
    keys = sorted(keys)
    more = f" and {len(keys) - LISTED_KEYS} more" if len(keys) > LISTED_KEYS else ""
    return ", ".join(keys[:LISTED_KEYS]) + more


def check_finite(tensors: Mapping[str, torch.Tensor], source: object) -> None:
    """ValueError naming ``source`` (e.g. the file) and the floating tensors that hold NaN or
    infinite values."""
    not_finite = [k for k, t in tensors.items()
                  if t.is_floating_point() and not torch.isfinite(t).all()]
    if not_finite:
        raise ValueError(f"{source} has NaN or infinite values in: {listed_keys(not_finite)}")
