"""The divergences of the metrics, one implementation each (natural log)."""

from __future__ import annotations

import numpy as np

__all__ = ["jensen_shannon", "jensen_shannon_rows", "total_variation"]


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (natural log, in [0, ln 2]) of two distributions."""
    p = np.asarray(p, dtype=np.float64).reshape(1, -1)
    q = np.asarray(q, dtype=np.float64).reshape(1, -1)
    return float(jensen_shannon_rows(p, q, np.ones(p.shape, dtype=bool))[0])


def jensen_shannon_rows(P, Q, mask) -> np.ndarray:
    """Jensen-Shannon divergence (natural log) per row of ``(n, T)`` distributions, summed
    where ``mask`` is True."""
    M = 0.5 * (P + Q)
    with np.errstate(divide="ignore", invalid="ignore"):
        kp = np.where((P > 0) & mask, P * np.log(P / M), 0.0).sum(1)
        kq = np.where((Q > 0) & mask, Q * np.log(Q / M), 0.0).sum(1)
    return 0.5 * (kp + kq)


def total_variation(p, q) -> np.ndarray:
    """Total variation distance ``½‖p − q‖₁`` per row of ``(n, C)`` distributions."""
    return 0.5 * np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum(-1)
