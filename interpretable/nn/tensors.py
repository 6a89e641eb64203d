"""Tensor plumbing shared by the models: devices, seeded generators and padding."""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["resolve_device", "make_generator", "pad_sequences"]


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
