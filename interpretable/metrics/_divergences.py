"""The divergences of the metrics, one implementation each (natural log): Jensen-Shannon from
scipy, total variation (half the L1 distance; scipy has no row-wise version of it)."""

from __future__ import annotations

import numpy as np
from scipy.spatial.distance import jensenshannon


def jensen_shannon(p: np.ndarray, q: np.ndarray) -> float:
    """Jensen-Shannon divergence (natural log, in [0, ln 2]) of two distributions."""
    p = np.asarray(p, dtype=np.float64).reshape(1, -1)
    q = np.asarray(q, dtype=np.float64).reshape(1, -1)
    return float(jensen_shannon_rows(p, q, np.ones(p.shape, dtype=bool))[0])


def jensen_shannon_rows(P, Q, mask) -> np.ndarray:
    """Jensen-Shannon divergence (natural log) per row of ``(n, T)`` distributions over the
    entries where ``mask`` is True (the square of scipy's Jensen-Shannon distance)."""
    P = np.where(mask, np.asarray(P, dtype=np.float64), 0.0)
    Q = np.where(mask, np.asarray(Q, dtype=np.float64), 0.0)
    return jensenshannon(P, Q, axis=1) ** 2


def total_variation(p, q) -> np.ndarray:
    """Total variation distance ``½‖p − q‖₁`` per row of ``(n, C)`` distributions."""
    return 0.5 * np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum(-1)
