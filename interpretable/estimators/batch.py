"""Encoded samples: what every estimator's ``encode(X)`` returns and everything downstream
(inference, explainers, metrics) starts from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Batch"]


@dataclass(frozen=True)
class Batch:
    """Encoded samples, the public way from user inputs to model inputs.

    inputs : dict of CPU tensors with the sample axis first, the module's keyword arguments
        (text: ``tokens (n, T)``, ``lengths (n,)`` [, ``query``, ``query_lengths``]; images:
        ``x (n, C', H, W)``; symbol sequences: ``x (n, T)``, ``lengths (n,)``);
    units : per-sample lists of the units the model sees (tokens, symbols), or None;
    queries : per-sample query tokens of (text, query) pairs, or None;
    images : validated ``(n, H, W, C)`` float images in [0, 1], or None;
    texts : the validated original texts (or ``(text, query)`` pairs), or None.
    """

    inputs: dict
    units: list | None = None
    queries: list | None = None
    images: np.ndarray | None = None
    texts: list | None = None

    def __len__(self) -> int:
        return len(next(iter(self.inputs.values())))
