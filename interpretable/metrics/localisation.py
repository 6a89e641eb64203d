"""Grid pointing game (Böhle et al., 2021), as used for the B-cos ViTs.

Images of distinct classes, chosen among the most confidently and correctly classified ones,
are tiled into ``grid × grid`` images, scaled down to the model's input size, and every cell's
class is explained; the score is the share of positive attribution inside that cell.
"""
from __future__ import annotations

import numpy as np
import torch
from torch.nn import functional as F

from ..validation import check_images, check_targets

__all__ = ["grid_pointing_game", "most_confident_correct"]


def most_confident_correct(clf, X, y, n_per_class: int | None = None) -> np.ndarray:
    """Indices of correctly classified samples sorted by decreasing confidence in the true
    class (at most ``n_per_class`` per class when given)."""
    proba = clf.predict_proba(X)
    index = np.searchsorted(clf.classes_, y)
    index = np.clip(index, 0, len(clf.classes_) - 1)
    known = clf.classes_[index] == y
    conf = np.where(known, proba[np.arange(len(y)), index], -np.inf)
    correct = known & (proba.argmax(1) == index)
    order = [i for i in np.argsort(-conf, kind="stable") if correct[i]]
    if n_per_class is None:
        return np.asarray(order, dtype=np.int64)
    kept, counts = [], {}
    for i in order:
        if counts.get(y[i], 0) < n_per_class:
            counts[y[i]] = counts.get(y[i], 0) + 1
            kept.append(i)
    return np.asarray(kept, dtype=np.int64)


def _downscale(images: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """(n, H', W', C) -> (n, H, W, C) by area interpolation (the paper halves 448 -> 224)."""
    t = torch.as_tensor(images).permute(0, 3, 1, 2)
    t = F.interpolate(t, size=size, mode="area")
    return t.permute(0, 2, 3, 1).clamp(0, 1).numpy()


def grid_pointing_game(clf, X, y, grid: int = 2, n_grids: int = 250, method: str = "inherent",
                       n_per_class: int | None = None, random_state=0,
                       return_scores: bool = False):
    """Mean share of positive attribution that falls in the correct grid cell.

    clf : fitted image classifier with ``explain(X, target, method)`` and ``predict_proba``;
    X, y : candidate images (n, H, W[, C]) and labels; grids are built from the most confidently
    correct images (``n_per_class`` per class, default ``n_grids`` so that each grid can use
    fresh images), resized to the model's input size. Returns the mean score, or
    ``(mean, scores (n_grids, grid²))`` with ``return_scores``. A cell explanation without
    any positive attribution scores 0. The signature ``(clf, X, y)`` makes it usable as a
    ``scoring=`` callable in ``GridSearchCV`` (e.g. via ``functools.partial`` for options).
    """
    from ..datasets import make_image_grid

    X = check_images(X)
    y = check_targets(y, len(X))
    if not isinstance(grid, (int, np.integer)) or grid < 2:
        raise ValueError(f"grid must be an integer >= 2, got {grid!r}.")
    if not isinstance(n_grids, (int, np.integer)) or n_grids < 1:
        raise ValueError(f"n_grids must be a positive integer, got {n_grids!r}.")
    h, w = X.shape[1:3]
    if h % grid or w % grid:
        raise ValueError(f"image size {(h, w)} must be divisible by grid={grid}.")
    pool = most_confident_correct(clf, X, y, n_per_class or n_grids)
    if len(np.unique(y[pool])) < grid * grid:
        raise ValueError(f"only {len(np.unique(y[pool]))} classes are classified correctly; "
                         f"a {grid}x{grid} grid needs {grid * grid}.")
    bunch = make_image_grid(X[pool], y[pool], grid=grid, n_grids=n_grids,
                            random_state=random_state)
    images = _downscale(bunch.data, (h, w))
    cells = grid * grid
    repeated = np.repeat(images, cells, axis=0)
    targets = bunch.cell_labels.reshape(-1)
    attributions = clf.explain(repeated, target=targets, method=method).values
    positive = np.clip(attributions, 0, None).reshape(n_grids * cells, grid, h // grid,
                                                      grid, w // grid)
    per_cell = positive.sum(axis=(2, 4)).reshape(n_grids * cells, cells)
    total = per_cell.sum(1)
    correct = per_cell[np.arange(n_grids * cells), np.tile(np.arange(cells), n_grids)]
    scores = np.where(total > 0, correct / np.where(total > 0, total, 1), 0.0)
    scores = scores.reshape(n_grids, cells)
    mean = float(scores.mean())
    return (mean, scores) if return_scores else mean
