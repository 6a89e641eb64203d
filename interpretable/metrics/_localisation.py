"""Grid pointing game (Böhle et al., 2021), with the protocol of the B-cos authors' code
(``B-cos/B-cos-v2``, ``interpretability/analyses/localisation.py``).

Images of distinct classes are tiled into ``grid × grid`` images, scaled down to the model's
input size, and every cell's class is explained; the score is the share of the positive
(smoothed) attribution inside that cell. Images are chosen as the authors do: per class, the
correctly classified images with confidence above ``min_confidence``, most confident first;
each grid draws ``grid²`` classes at random (fixed seed) among those with images left and takes
each class's next most confident unused image.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sklearn.utils import Bunch
from torch.nn import functional as F

from interpretable._validation import check_images, check_targets

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.vision import VisionTransformerClassifier

__all__ = ["confident_grids", "grid_pointing_game"]

CONFIDENCES = ("sigmoid", "softmax")


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
    counts: dict[Any, int]
    kept, counts = [], {}
    for i in order:
        if counts.get(y[i], 0) < n_per_class:
            counts[y[i]] = counts.get(y[i], 0) + 1
            kept.append(i)
    return np.asarray(kept, dtype=np.int64)


def smoothing_kernel(size: int) -> int:
    """The authors' smoothing kernel (15 px at 224 px) scaled to an image side of ``size``
    pixels: the nearest odd integer >= 1 (3 at 32 px, 1 at 28 px)."""
    return 2 * max(0, int(round((15 * size / 224 - 1) / 2))) + 1


def _confidence(clf, X, y, confidence: str) -> tuple[np.ndarray, np.ndarray]:
    """(confidence in the true class (n,), correctly classified (n,)) for labels y."""
    if confidence not in CONFIDENCES:
        raise ValueError(f"confidence must be one of {CONFIDENCES}, got {confidence!r}.")
    if confidence == "sigmoid":
        scores = np.asarray(clf.decision_function(X), dtype=np.float64)
        if scores.ndim == 1:  # scikit-learn's two-class margin: take the per-class logits
            if not hasattr(clf, "logits"):
                raise ValueError("confidence='sigmoid' needs per-class logits; this two-class "
                                 "classifier's decision_function gives a margin: use "
                                 "confidence='softmax'.")
            scores = clf.logits(clf.encode(X).inputs).numpy().astype(np.float64)
        scores = 1.0 / (1.0 + np.exp(-scores))
    else:
        scores = np.asarray(clf.predict_proba(X), dtype=np.float64)
    index = np.clip(np.searchsorted(clf.classes_, y), 0, len(clf.classes_) - 1)
    known = clf.classes_[index] == y
    correct = known & (scores.argmax(1) == index)
    return np.where(known, scores[np.arange(len(y)), index], 0.0), correct


def confident_grids(clf: Any,  # any fitted classifier, scikit-learn's included
                    X: ArrayLike, y: ArrayLike, grid: int = 2, n_grids: int | None = None,
                    min_confidence: float = 0.5, confidence: str = "sigmoid",
                    random_state: int = 42) -> Bunch:
    """Tile confidently and correctly classified images of distinct classes into grids.

    The grid images of the B-cos authors' grid pointing game (:func:`grid_pointing_game`).
    Candidates are the correctly classified images whose confidence in their class exceeds
    ``min_confidence``; ``confidence="sigmoid"`` is ``sigmoid(logit)`` (the authors' choice,
    and the probability a B-cos model trained with binary cross-entropy assigns to the class),
    ``"softmax"`` the ``predict_proba`` column (for softmax-trained models). Each grid draws
    ``grid²`` distinct classes (NumPy ``RandomState(random_state)``; the authors seed 42) among
    the classes with candidates left, as long as more than ``grid²`` classes have some, and
    takes each class's next most confident unused image.

    Parameters
    ----------
    clf : fitted classifier
        Any classifier with ``classes_`` and ``decision_function`` (``"sigmoid"``: per-class
        logits, or a two-class margin and ``logits``) or ``predict_proba`` (``"softmax"``).
    X : array-like of shape (n, H, W) or (n, H, W, C)
        The candidate images, float in [0, 1] or uint8; ``grid`` divides ``H`` and ``W``.
    y : array-like of shape (n,)
        Their labels.
    grid : int, default=2
        Cells per side, at least 2.
    n_grids : int or None, default=None
        The number of grids (ValueError if the candidates do not allow that many); None: as
        many as they allow.
    min_confidence : float, default=0.5
        Only images classified with a higher confidence are candidates.
    confidence : {"sigmoid", "softmax"}, default="sigmoid"
        The confidence: the sigmoid of the class logit, or the softmax probability.
    random_state : int, default=42
        Seeds the choice of the cells' classes.

    Returns
    -------
    sklearn.utils.Bunch
        ``data``: the grids ``(n_grids, H, W, C)``, each scaled down to the input size by area
        interpolation; ``cell_labels`` and ``cell_index``: the label and the position in ``X``
        of each cell's image ``(n_grids, grid²)``, cells row-major; ``grid``.

    Raises
    ------
    ValueError
        If ``grid``, ``n_grids`` or ``confidence`` is invalid, ``grid`` does not divide the
        image size, or the candidates allow fewer grids than ``n_grids``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> rng = np.random.default_rng(0)
    >>> y = np.arange(50) % 5  # five grey levels
    >>> X = rng.random((50, 4, 4, 1)) * 0.1 + 0.2 * y[:, None, None, None]
    >>> flat = FunctionTransformer(lambda images: images.reshape(len(images), -1))
    >>> clf = make_pipeline(flat, LogisticRegression()).fit(X, y)
    >>> from interpretable.metrics import confident_grids
    >>> grids = confident_grids(clf, X, y, n_grids=2, min_confidence=0.3)
    >>> grids.data.shape, grids.cell_labels.shape
    ((2, 4, 4, 1), (2, 4))
    """
    X = check_images(X)
    y = check_targets(y, len(X))
    if not isinstance(grid, (int, np.integer)) or grid < 2:
        raise ValueError(f"grid must be an integer >= 2, got {grid!r}.")
    if n_grids is not None and (not isinstance(n_grids, (int, np.integer)) or n_grids < 1):
        raise ValueError(f"n_grids must be None or a positive integer, got {n_grids!r}.")
    h, w = X.shape[1:3]
    if h % grid or w % grid:
        raise ValueError(f"image size {(h, w)} must be divisible by grid={grid}.")
    conf, correct = _confidence(clf, X, y, confidence)
    queues = {}
    for c in np.unique(y):
        members = np.flatnonzero((y == c) & correct & (conf > min_confidence))
        queues[c] = list(members[np.argsort(-conf[members], kind="stable")])
    cells = grid * grid
    rng = np.random.RandomState(random_state)
    blocks: list[list[int]] = []
    while n_grids is None or len(blocks) < n_grids:
        available = np.array([c for c, q in queues.items() if q])
        if len(available) <= cells:  # the authors stop when grid² classes are left
            break
        chosen = rng.choice(available, size=cells, replace=False)
        blocks.append([queues[c].pop(0) for c in chosen])
    if not blocks or (n_grids is not None and len(blocks) < n_grids):
        raise ValueError(f"the confidently and correctly classified images allow {len(blocks)} "
                         f"{grid}x{grid} grids of unused images, {n_grids or 1} requested.")
    index = np.asarray(blocks, dtype=np.int64)
    tiles = X[index].reshape(len(index), grid, grid, h, w, X.shape[-1])
    tiled = tiles.transpose(0, 1, 3, 2, 4, 5).reshape(len(index), grid * h, grid * w, -1)
    small = F.interpolate(torch.as_tensor(tiled).permute(0, 3, 1, 2), size=(h, w), mode="area")
    return Bunch(data=small.permute(0, 2, 3, 1).clamp(0, 1).numpy(), cell_labels=y[index],
                 cell_index=index, grid=grid)


def _token_size(clf, height: int) -> int | None:
    """Pixels per token side: from the fitted model's token grid (``module_.grid_size``) when
    it has one, else its ``patch_size``."""
    grid = getattr(getattr(clf, "module_", None), "grid_size", None)
    return height // grid[0] if grid else getattr(clf, "patch_size", None)


def grid_pointing_game(clf: VisionTransformerClassifier, X: ArrayLike, y: ArrayLike,
                       grid: int = 2, n_grids: int | None = 250, method: str = "inherent",
                       smooth: int | str = "auto", min_confidence: float = 0.5,
                       confidence: str = "sigmoid", random_state: int = 42,
                       return_scores: bool = False) -> float | tuple[float, np.ndarray]:
    """Grid pointing game: the mean share of positive attribution in the correct grid cell.

    Confidently and correctly classified images are tiled into ``grid × grid`` images of
    different classes (:func:`confident_grids`); each cell's class is explained and scored by the
    share of the positive attribution that falls in its cell. A cell explanation without any
    positive attribution scores 0. The signature ``(clf, X, y)`` makes it usable as a
    ``scoring=`` callable in ``GridSearchCV``.

    Parameters
    ----------
    clf : fitted image classifier
        With ``explain(X, target, method)`` and ``decision_function``
        (``confidence="sigmoid"``) or ``predict_proba`` (``"softmax"``).
    X : ndarray of shape (n, H, W[, C])
        Candidate images. Cells must be token-aligned: ``H / grid`` and ``W / grid`` must be
        multiples of the model's token size (ValueError otherwise; pad the images).
    y : ndarray of shape (n,)
        Their labels.
    grid : int, default=2
        Cells per side.
    n_grids : int or None, default=250
        Grid images to score (None: as many as the images allow).
    method : str, default="inherent"
        The explanation method.
    smooth : int or "auto", default="auto"
        The channel-summed attribution map is average-pooled with this odd kernel (stride 1,
        zero padding counted) *before* its positive part is taken, as the authors do; "auto" is
        :func:`smoothing_kernel` of the image height, 1 turns it off.
    min_confidence : float, default=0.5
        Only images classified with a higher confidence are tiled.
    confidence : {"sigmoid", "softmax"}, default="sigmoid"
        The confidence: the sigmoid of the class logit, or the softmax probability.
    random_state : int, default=42
        Seeds the choice of the cells' classes.
    return_scores : bool, default=False
        Also return every cell's score.

    Returns
    -------
    float or tuple of (float, ndarray of shape (n_grids, grid**2))
        The mean score, with ``return_scores`` also the scores.

    Raises
    ------
    ValueError
        If the images allow fewer grids than ``n_grids``, or the cells are not token-aligned.

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
    >>> from interpretable.metrics import grid_pointing_game
    >>> mean, scores = grid_pointing_game(clf, X, y, n_grids=2, min_confidence=0.0,
    ...                                   return_scores=True)
    >>> scores.shape, bool(0 <= mean <= 1)
    ((2, 4), True)
    """
    X = check_images(X)
    h, w = X.shape[1:3]
    patch = _token_size(clf, h)
    if isinstance(grid, (int, np.integer)) and grid >= 2 and patch and (
            (h // grid) % patch or (w // grid) % patch):
        raise ValueError(f"grid cells of {(h // grid, w // grid)} px are not token-aligned "
                         f"with tokens of {patch} px: use images whose side / grid is a "
                         "multiple of the token size (e.g. pad 28-px images to 32 px for "
                         "patch 4).")
    kernel = smoothing_kernel(h) if smooth == "auto" else smooth
    if not isinstance(kernel, (int, np.integer)) or kernel < 1 or kernel % 2 == 0:
        raise ValueError(f"smooth must be 'auto' or an odd integer >= 1, got {smooth!r}.")
    bunch = confident_grids(clf, X, y, grid, n_grids, min_confidence, confidence, random_state)
    n, cells = bunch.cell_labels.shape
    repeated = np.repeat(bunch.data, cells, axis=0)
    attributions = torch.as_tensor(clf.explain(
        repeated, target=bunch.cell_labels.reshape(-1), method=method).values)
    smoothed = F.avg_pool2d(attributions[:, None].double(), kernel, stride=1,
                            padding=(kernel - 1) // 2)[:, 0]
    positive = smoothed.clamp_min(0).numpy().reshape(n * cells, grid, h // grid, grid, w // grid)
    per_cell = positive.sum(axis=(2, 4)).reshape(n * cells, cells)
    total = per_cell.sum(1)
    correct = per_cell[np.arange(n * cells), np.tile(np.arange(cells), n)]
    scores = np.where(total > 0, correct / np.where(total > 0, total, 1), 0.0).reshape(n, cells)
    mean = float(scores.mean())
    return (mean, scores) if return_scores else mean
