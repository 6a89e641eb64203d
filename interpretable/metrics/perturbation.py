"""Pixel perturbation (Chefer et al., 2021, as in the B-cos ViT paper): remove up to
``max_fraction`` of the pixels in order of attributed importance (most / least important
first), track the mean confidence in the true class, and report the area between the curves.
"""
from __future__ import annotations

import numpy as np
import torch

from ..validation import check_images, check_targets
from .localisation import most_confident_correct

__all__ = ["pixel_perturbation"]


def pixel_perturbation(clf, X, y, method: str | None = None, max_fraction: float = 0.25,
                       steps: int = 9, n_samples: int | None = 250, batch_size: int | None = None,
                       return_curves: bool = False):
    """Area between the least-first and most-first confidence curves (higher is better).

    clf : fitted classifier from :mod:`interpretable.estimators.vision` (pixels are removed by
    zeroing their *encoding*, e.g. both ``x`` and ``1-x`` for B-cos models); X, y : images and
    labels, of which the ``n_samples`` most confidently correct are used (None: all correct).
    Confidence = softmax probability of the true class, its mean normalised to 1 at 0 %;
    curves sampled at ``steps`` equidistant fractions in [0, max_fraction]. Returns the area
    (trapezoidal rule over the fraction axis), or ``(area, curves)`` with ``return_curves``
    (dict with ``fractions``, ``most_first``, ``least_first``). Usable as a ``scoring=``
    callable ``(clf, X, y)``.
    """
    if not 0 < max_fraction <= 1:
        raise ValueError(f"max_fraction must be in (0, 1], got {max_fraction!r}.")
    if not isinstance(steps, (int, np.integer)) or steps < 2:
        raise ValueError(f"steps must be an integer >= 2, got {steps!r}.")
    if not hasattr(clf, "encode") or getattr(clf, "n_channels_", None) is None:
        raise TypeError("pixel_perturbation needs a fitted image classifier from "
                        "interpretable.estimators.vision (BcosViTClassifier, ViTClassifier).")
    X = check_images(X)
    y = check_targets(y, len(X))
    chosen = most_confident_correct(clf, X, y)
    if n_samples is not None:
        chosen = chosen[:n_samples]
    if len(chosen) == 0:
        raise ValueError("no sample is classified correctly; nothing to perturb.")
    encoded = clf.encode(X[chosen]).inputs["x"]
    target = np.searchsorted(clf.classes_, y[chosen])
    attributions = torch.as_tensor(clf.explain(X[chosen], target=y[chosen], method=method,
                                               batch_size=batch_size).values)
    n, h, w = attributions.shape
    order = torch.argsort(attributions.reshape(n, -1), dim=1, descending=True, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(h * w).expand(n, -1).contiguous())  # 0 = most important
    fractions = np.linspace(0.0, max_fraction, steps)
    t = torch.as_tensor(target)
    curves = {"most_first": [], "least_first": []}
    for fraction in fractions:
        k = int(round(fraction * h * w))
        for name, removed in (("most_first", rank < k), ("least_first", rank >= h * w - k)):
            keep = (~removed).reshape(n, 1, h, w).to(encoded.dtype)
            proba = clf.logits({"x": encoded * keep}, batch_size=batch_size).softmax(1)
            curves[name].append(float(proba[torch.arange(n), t].mean()))
    result = {"fractions": fractions}
    for name, values in curves.items():
        result[name] = np.asarray(values) / values[0]
    area = float(np.trapezoid(result["least_first"] - result["most_first"], fractions))
    return (area, result) if return_curves else area
