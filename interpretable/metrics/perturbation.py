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


BASELINES = ("encoding", "image")


def pixel_perturbation(clf, X, y, method: str | None = None, max_fraction: float = 0.25,
                       steps: int = 9, n_samples: int | None = 250, batch_size: int | None = None,
                       baseline: str = "encoding", return_curves: bool = False):
    """Area between the least-first and most-first confidence curves (higher is better).

    clf : fitted classifier from :mod:`interpretable.estimators.vision`; X, y : images and
    labels, of which the ``n_samples`` most confidently correct are used (None: all correct).
    ``baseline``: how a pixel is removed: "encoding" zeroes its model input (both ``x`` and
    ``1-x`` for B-cos models, an input no image has), "image" sets the raw pixel to 0 (black,
    encoded as ``(0, 1)`` for B-cos models). Confidence = softmax probability of the true
    class, its mean normalised to 1 at 0 %; curves sampled at ``steps`` equidistant fractions
    in [0, max_fraction]. Returns the area (trapezoidal rule over the fraction axis), or
    ``(area, curves)`` with ``return_curves``: dict with ``fractions``, ``most_first``,
    ``least_first`` and ``morf_auc`` (n,), each image's area under its own most-first
    (MoRF) probability curve divided by ``max_fraction`` (its mean probability over the
    removal range; lower is better). Usable as a ``scoring=`` callable ``(clf, X, y)``.
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}.")
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
    removed_value = torch.zeros_like(encoded[:1]) if baseline == "encoding" else \
        clf.encode(np.zeros_like(X[chosen[:1]])).inputs["x"]
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
            inputs = torch.where(removed.reshape(n, 1, h, w), removed_value, encoded)
            proba = clf.logits({"x": inputs}, batch_size=batch_size).softmax(1)
            curves[name].append(proba[torch.arange(n), t].double().numpy())
    result = {"fractions": fractions}
    for name, values in curves.items():
        means = np.asarray(values).mean(1)
        result[name] = means / means[0]
    result["morf_auc"] = np.trapezoid(np.asarray(curves["most_first"]), fractions,
                                      axis=0) / max_fraction
    area = float(np.trapezoid(result["least_first"] - result["most_first"], fractions))
    return (area, result) if return_curves else area
