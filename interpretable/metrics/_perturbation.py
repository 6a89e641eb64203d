"""Pixel perturbation (Chefer et al., 2021, as in the B-cos ViT paper): remove up to
``max_fraction`` of the pixels in order of attributed importance (most / least important
first), track the mean confidence in the true class, and report the area between the curves.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import torch

from interpretable._validation import check_images, check_targets
from interpretable.metrics._localisation import most_confident_correct

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.vision import VisionTransformerClassifier

__all__ = ["pixel_perturbation"]


BASELINES = ("encoding", "image")


def pixel_perturbation(clf: VisionTransformerClassifier, X: ArrayLike, y: ArrayLike,
                       method: str | None = None, max_fraction: float = 0.25,
                       steps: int = 9, n_samples: int | None = 250, batch_size: int | None = None,
                       baseline: str = "encoding", return_curves: bool = False
                       ) -> float | tuple[float, dict[str, np.ndarray]]:
    """Pixel perturbation: the area between the least-first and most-first confidence curves.

    Higher is better. Pixels are removed by decreasing (most-first) or increasing (least-first)
    attribution; the confidence is the softmax probability of the true class, its mean
    normalised to 1 at 0 %, sampled at ``steps`` equidistant fractions in ``[0, max_fraction]``;
    the area uses the trapezoidal rule over the fraction axis. Usable as a ``scoring=``
    callable ``(clf, X, y)``.

    Parameters
    ----------
    clf : fitted image classifier
        From :mod:`interpretable.estimators.vision`.
    X : ndarray of shape (n, H, W[, C])
        Images.
    y : ndarray of shape (n,)
        Their labels.
    method : str or None, default=None
        The explanation method (None: the estimator's default).
    max_fraction : float, default=0.25
        The largest fraction of pixels removed.
    steps : int, default=9
        Points of each curve.
    n_samples : int or None, default=250
        The most confidently correct images used (None: all correct ones).
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).
    baseline : {"encoding", "image"}, default="encoding"
        How a pixel is removed: "encoding" zeroes its model input (both ``x`` and ``1-x`` for
        B-cos models, an input no image has), "image" sets the raw pixel to 0 (black).
    return_curves : bool, default=False
        Also return the curves.

    Returns
    -------
    float or tuple of (float, dict)
        The area; with ``return_curves`` also a dict with ``fractions``, ``most_first``,
        ``least_first`` and ``morf_auc`` (n,), each image's area under its own most-first
        (MoRF) probability curve divided by ``max_fraction`` (lower is better).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosViTClassifier
    >>> rng = np.random.default_rng(0)
    >>> y = np.arange(60) % 6  # six colors
    >>> X = rng.random((60, 8, 8, 3), dtype=np.float32) * 0.1
    >>> for c in range(6):
    ...     X[y == c, :, :, c % 3] += 0.9 if c < 3 else 0.4
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2,
    ...                         stem_channels=(8,), max_epochs=10, lr=1e-2,
    ...                         random_state=0).fit(X, y)
    >>> from interpretable.metrics import pixel_perturbation
    >>> area, curves = pixel_perturbation(clf, X, y, steps=3, n_samples=None,
    ...                                   return_curves=True)
    >>> curves["fractions"].tolist()
    [0.0, 0.125, 0.25]
    """
    if baseline not in BASELINES:
        raise ValueError(f"baseline must be one of {BASELINES}, got {baseline!r}.")
    if not 0 < max_fraction <= 1:
        raise ValueError(f"max_fraction must be in (0, 1], got {max_fraction!r}.")
    if not isinstance(steps, (int, np.integer)) or steps < 2:
        raise ValueError(f"steps must be an integer >= 2, got {steps!r}.")
    if not hasattr(clf, "encode") or getattr(clf, "n_channels_", None) is None:
        raise TypeError("pixel_perturbation needs a fitted image classifier from "
                        "interpretable.estimators.vision (BcosViTClassifier, "
                        "BcosSimpleViTClassifier, ViTClassifier).")
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
    curves: dict[str, list[np.ndarray]] = {"most_first": [], "least_first": []}
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
