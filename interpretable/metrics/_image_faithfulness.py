"""Faithfulness and stability of image explanations, through the estimators' public methods.

* :func:`pixel_flipping`: ERASER's comprehensiveness (deletion AOPC) and sufficiency
  (insertion, as ERASER defines it) of pixel or patch rankings: the drop of the predicted
  class's probability when the most important patches are removed, or when only they are kept.
* :func:`image_stability`: the Jensen-Shannon divergence between the explanation of an image
  and of the image plus a small random perturbation (the measure of
  :func:`~interpretable.metrics.embedding_stability` for texts).

Both work in the raw image space, the array ``(n, H, W)`` or ``(n, H, W, C)`` the caller
passes, and call only ``predict_proba`` and ``explain``, so they apply to every image classifier
of the package (:class:`~interpretable.BcosViTClassifier`,
:class:`~interpretable.BcosSimpleViTClassifier`, :class:`~interpretable.ViTClassifier`, also
from ``from_pretrained``) and to any object with these two methods that returns
:class:`~interpretable.explanation.ImageExplanation`. For an estimator with an ``image_size``
(it resizes and centre-crops every image), explanations live on the crop; the crop's
attribution is carried back to the source pixels through ``explanation.crop_boxes`` (each
source pixel takes the value of the crop pixel its centre falls in, divided by the source area
a crop pixel covers; pixels outside the crop get 0: the model never sees them).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from interpretable._validation import check_images
from interpretable.explanation import ImageExplanation
from interpretable.metrics._common import AnalysisResult
from interpretable.metrics._divergences import jensen_shannon_rows, total_variation
from interpretable.metrics._faithfulness import ERASER_FRACTIONS, _check_fractions
from interpretable.metrics._stability import _result, explanation_distributions

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["pixel_flipping", "image_stability"]

#: the named baselines of :func:`pixel_flipping`
BASELINES = ("mean", "zero")
#: the default relative noise norm of :func:`image_stability`
STABILITY_RADIUS = 0.01
#: bytes (as float32) the perturbed images of one ``predict_proba`` call of
#: :func:`pixel_flipping` may take by default (the estimator batches its forward passes
#: within the call)
PERTURBED_MEMORY = 2**26


# ---------------------------------------------------------------------------- helpers
def _check_image_classifier(clf, what: str):
    missing = [name for name in ("predict_proba", "explain")
               if not callable(getattr(clf, name, None))]
    if missing:
        raise TypeError(f"{what} needs an image classifier with predict_proba and explain "
                        f"(e.g. from interpretable.estimators.vision); {type(clf).__name__} "
                        f"lacks {missing}.")
    return clf


def _read_images(X) -> tuple[np.ndarray, bool]:
    """Images float32 ``(n, H, W, C)`` in [0, 1] and whether the caller's were grey
    ``(n, H, W)`` (their layout is kept for the estimator's calls)."""
    images = check_images(X)
    return images, (X.ndim if hasattr(X, "ndim") else np.ndim(X)) == 3


def _as_given(images: np.ndarray, grey: bool) -> np.ndarray:
    """``(n, H, W, C)`` images back in the caller's layout."""
    return images[..., 0] if grey else images


def _check_batch_size(batch_size):
    if batch_size is not None and (isinstance(batch_size, bool)
                                   or not isinstance(batch_size, Integral) or batch_size < 1):
        raise ValueError(f"batch_size must be None or a positive integer, got {batch_size!r}.")
    return batch_size


def _explain(clf, images, method, batch_size, target=None):
    options = {} if batch_size is None else {"batch_size": batch_size}
    if target is not None:
        options["target"] = target
    explanation = clf.explain(images, method=method, **options)
    return _check_explanation(explanation)


def _check_explanation(explanation) -> ImageExplanation:
    if not isinstance(explanation, ImageExplanation):
        raise TypeError("explanation must be an ImageExplanation (an image classifier's "
                        f"explain), got {type(explanation).__name__}.")
    return explanation


def _crop_to_source(values: np.ndarray, boxes, shape: tuple) -> np.ndarray:
    """Crop maps ``(n, h, w)`` -> source maps ``(n, H, W)``: each source pixel takes the value
    of the crop pixel its centre falls in, divided by the source area of a crop pixel; pixels
    outside the box are 0."""
    boxes = np.asarray(boxes, dtype=np.float64).reshape(len(values), 4)
    n, h, w = values.shape
    out = np.zeros((n, *shape))
    centres = [np.arange(side) + 0.5 for side in shape]
    for i, (top, left, bottom, right) in enumerate(boxes):
        u = np.floor((centres[0] - top) / (bottom - top) * h)
        v = np.floor((centres[1] - left) / (right - left) * w)
        rows, cols = (u >= 0) & (u < h), (v >= 0) & (v < w)
        area = (bottom - top) * (right - left) / (h * w)
        out[i][np.ix_(rows, cols)] = values[i][np.ix_(u[rows].astype(int),
                                                      v[cols].astype(int))] / area
    return out


def _source_attributions(explanation: ImageExplanation, images: np.ndarray) -> np.ndarray:
    """The explanation's maps in the caller's pixel grid, float64 ``(n, H, W)``."""
    values = np.asarray(explanation.values, dtype=np.float64)
    n, shape = len(images), tuple(images.shape[1:3])
    if values.ndim != 3 or len(values) != n:
        raise ValueError(f"explanation has values of shape {values.shape} but X has {n} "
                         f"images of size {shape}; pass an explanation of X.")
    if not np.isfinite(values).all():
        raise ValueError("explanation has NaN or infinite attributions.")
    boxes = getattr(explanation, "crop_boxes", None)
    if boxes is not None:
        return _crop_to_source(values, boxes, shape)
    if values.shape[1:] != shape:
        raise ValueError(f"explanation maps are {values.shape[1]}x{values.shape[2]} pixels but "
                         f"X has {shape[0]}x{shape[1]} images (and the explanation has no "
                         "crop_boxes to map them); pass an explanation of X by the same "
                         "estimator.")
    return values


def _check_patch_size(patch_size, shape: tuple) -> int:
    if patch_size is None:
        return 1
    if isinstance(patch_size, bool) or not isinstance(patch_size, Integral) \
            or not 1 <= patch_size <= max(shape):
        raise ValueError(f"patch_size must be None or an integer in [1, {max(shape)}] (the "
                         f"images are {shape[0]}x{shape[1]}), got {patch_size!r}.")
    return int(patch_size)


def _baseline_values(baseline, images: np.ndarray) -> np.ndarray:
    """Per image and channel, the value a removed pixel takes: ``(n, C)`` float32."""
    n, channels = len(images), images.shape[-1]
    if isinstance(baseline, str):
        if baseline == "mean":
            return images.mean((1, 2), dtype=np.float64).astype(np.float32)
        if baseline == "zero":
            return np.zeros((n, channels), dtype=np.float32)
    elif isinstance(baseline, Real) and not isinstance(baseline, bool) \
            and 0.0 <= float(baseline) <= 1.0:
        return np.full((n, channels), float(baseline), dtype=np.float32)
    raise ValueError(f"baseline must be one of {BASELINES} or a number in [0, 1] (pixel "
                     f"values are in [0, 1]), got {baseline!r}.")


def _patch_grid(shape: tuple, patch_size: int) -> np.ndarray:
    """The patch index ``(H, W)`` of every pixel: row-major ``patch_size`` squares, the last
    row and column of patches cut short when ``patch_size`` does not divide the side."""
    columns = -(-shape[1] // patch_size)
    return (np.arange(shape[0]) // patch_size)[:, None] * columns + \
        (np.arange(shape[1]) // patch_size)[None, :]


def _patch_ranks(attributions: np.ndarray, patches: np.ndarray) -> np.ndarray:
    """Rank ``(n, N)`` of every patch (0 = most important) by its summed attribution,
    descending, ties by position."""
    n, n_patches = len(attributions), int(patches.max()) + 1
    index = (np.arange(n)[:, None] * n_patches + patches.ravel()[None]).ravel()
    importance = np.bincount(index, weights=attributions.reshape(-1),
                             minlength=n * n_patches).reshape(n, n_patches)
    order = np.argsort(-importance, axis=1, kind="stable")
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(n_patches)[None].repeat(n, 0), axis=1)
    return ranks


def _removed_counts(fractions: np.ndarray, n_patches: int) -> np.ndarray:
    """``ceil(f N)`` per fraction, ``f N`` rounded to 1e-6 first so that ``f = k / N`` gives
    ``k`` whatever the float rounding."""
    return np.ceil(np.round(fractions * n_patches, 6)).astype(np.int64)


# ---------------------------------------------------------------------------- pixel flipping
def pixel_flipping(clf: Any,  # any object with predict_proba and explain (duck-typed)
                   X: ArrayLike, method: str | None = None,
                   explanation: ImageExplanation | None = None, *,
                   fractions: Sequence[float] | np.ndarray = ERASER_FRACTIONS,
                   patch_size: int | None = None, baseline: str | float = "mean",
                   batch_size: int | None = None) -> AnalysisResult:
    r"""Comprehensiveness and sufficiency of image explanations (pixel / region flipping).

    For every image ``x``, its predicted class ``ŷ`` and ``p0 = predict_proba(x)[ŷ]``: the
    image is cut into ``N`` patches of ``patch_size × patch_size`` pixels, ranked by the sum of
    their pixels' attributions (descending, ties by position, row-major), and for each
    fraction ``f`` the ``k = ⌈f N⌉`` top patches are

    * removed: ``comprehensiveness = mean_f [p0 − p(x \ top-k)[ŷ]]`` (the deletion AOPC,
      ERASER's comprehensiveness; higher is more faithful), or
    * kept, every other patch removed: ``sufficiency = mean_f [p0 − p(top-k)[ŷ]]`` (ERASER's
      sufficiency, an insertion test; lower is more faithful).

    A removed pixel takes the ``baseline`` value in every channel. ``f = 1`` removes every
    patch (comprehensiveness ``p0 − p(baseline image)``) or keeps them all (sufficiency 0).
    With ``fractions = (1/N, 2/N, ..., 1)`` the comprehensiveness columns are the
    region-perturbation curve of Samek et al. (2017) (Quantus' ``RegionPerturbation`` with
    ``order="morf"`` and the same constant baseline).

    The images are perturbed in the caller's pixel space, the array ``X``; the model sees them
    through ``predict_proba``, so an estimator with an ``image_size`` resizes and crops the
    perturbed images as any other (its explanations, on the crop, are carried back to the
    source pixels, see :mod:`interpretable.metrics`). All perturbed images
    of a chunk of images go through one ``predict_proba`` call.

    Parameters
    ----------
    clf : fitted image classifier
        Any estimator of :mod:`interpretable.estimators.vision`, or an object with
        ``predict_proba(X)`` and ``explain(X, method=...)`` returning an
        :class:`~interpretable.explanation.ImageExplanation`.
    X : ndarray of shape (n_samples, H, W) or (n_samples, H, W, C)
        The images, float in [0, 1] or uint8.
    method : str or None, default=None
        Explanation method passed to ``explain`` (None: the estimator's default); ignored when
        ``explanation`` is given.
    explanation : ImageExplanation or None, default=None
        A precomputed explanation of ``X`` to score instead: maps ``(n, H, W)`` of the images
        of ``X``, or of their crops with ``crop_boxes``. Only its ranking is used: the tracked
        class is ``ŷ`` whatever its ``target``.
    fractions : tuple of float, default=(0.01, 0.05, 0.1, 0.2, 0.5)
        The fractions of patches, in (0, 1] and distinct (ERASER's AOPC bins).
    patch_size : int or None, default=None
        The side of the square patches in pixels (None: 1, pixel flipping). A side it does not
        divide ends with a row / column of smaller patches (their importance sums fewer
        pixels).
    baseline : {"mean", "zero"} or float, default="mean"
        A removed pixel's value: the image's per-channel mean, 0, or this number in [0, 1]
        (pixel values in [0, 1], also for uint8 images).
    batch_size : int or None, default=None
        Mini-batch size of ``explain`` (None: the estimator's) and the number of perturbed
        images per ``predict_proba`` call, rounded down to whole images (each gives
        ``1 + 2 len(fractions)``; at least one image per call; None: as many as take 64 MiB
        as float32; ``predict_proba`` runs its forward passes in the estimator's batches).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per image with ``sample``, per fraction ``f`` the drops
        ``comprehensiveness_k=f`` and ``sufficiency_k=f``, and their means
        ``comprehensiveness`` and ``sufficiency``; ``summary``: ``comprehensiveness`` and
        ``sufficiency`` (means over the images), ``by_fraction`` (a DataFrame of the mean drop
        per fraction), ``fractions``, ``n_patches``, ``patch_size`` and ``n_samples``.

    Raises
    ------
    TypeError
        If ``clf`` lacks ``predict_proba`` or ``explain``, or ``explanation`` is not an
        ImageExplanation.
    ValueError
        If the images, ``fractions``, ``patch_size``, ``baseline`` or ``batch_size`` are
        invalid, or the explanation is not one of ``X``.

    See Also
    --------
    image_stability : How much the explanations change under small noise.
    interpretable.metrics.comprehensiveness : The same for texts.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosViTClassifier
    >>> from interpretable.metrics import pixel_flipping
    >>> X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1,
    ...                         random_state=0).fit(X, [0, 1, 0, 1])
    >>> result = pixel_flipping(clf, X, fractions=(0.25, 0.5), patch_size=2)
    >>> result.frame.columns.tolist()
    ['sample', 'comprehensiveness_k=0.25', 'comprehensiveness_k=0.5', 'sufficiency_k=0.25',
     'sufficiency_k=0.5', 'comprehensiveness', 'sufficiency']
    >>> result.summary["n_patches"]
    16
    """
    clf = _check_image_classifier(clf, "pixel_flipping")
    images, grey = _read_images(X)
    fractions = _check_fractions(fractions)
    if len(np.unique(fractions)) != len(fractions):
        raise ValueError(f"fractions must be distinct, got {fractions.tolist()!r}.")
    batch_size = _check_batch_size(batch_size)
    shape = tuple(images.shape[1:3])
    size = _check_patch_size(patch_size, shape)
    fill = _baseline_values(baseline, images)
    if explanation is None:
        explanation = _explain(clf, _as_given(images, grey), method, batch_size)
    attributions = _source_attributions(_check_explanation(explanation), images)
    patches = _patch_grid(shape, size)
    n_patches = int(patches.max()) + 1
    ranks = _patch_ranks(attributions, patches)
    counts = _removed_counts(fractions, n_patches)
    drops = _flip(clf, images, grey, ranks, patches, counts, fill, batch_size)
    n_fractions = len(fractions)
    names = [f"{curve}_k={f:g}" for curve in ("comprehensiveness", "sufficiency")
             for f in fractions]
    frame = pd.DataFrame(drops, columns=names)
    frame.insert(0, "sample", np.arange(len(images)))
    frame["comprehensiveness"] = drops[:, :n_fractions].mean(1)
    frame["sufficiency"] = drops[:, n_fractions:].mean(1)
    by_fraction = pd.DataFrame({"comprehensiveness": drops[:, :n_fractions].mean(0),
                                "sufficiency": drops[:, n_fractions:].mean(0)},
                               index=pd.Index(fractions, name="fraction"))
    summary = {"comprehensiveness": float(frame.comprehensiveness.mean()),
               "sufficiency": float(frame.sufficiency.mean()), "by_fraction": by_fraction,
               "fractions": fractions.tolist(), "n_patches": n_patches, "patch_size": size,
               "n_samples": len(frame)}
    return AnalysisResult(frame, summary)


def _flip(clf, images, grey, ranks, patches, counts, fill, batch_size) -> np.ndarray:
    """Drops ``p0 − p`` ``(n, 2F)`` of the predicted class: F deletions, then F insertions.

    Per chunk of images, one ``predict_proba`` call over each image's clean version, its F
    deletions and its F insertions."""
    n, n_fractions = len(images), len(counts)
    per_image = 1 + 2 * n_fractions
    budget = batch_size or PERTURBED_MEMORY // (4 * images[0].size)
    chunk = max(1, budget // per_image)
    drops = np.empty((n, 2 * n_fractions))
    k = counts[None, :, None, None]
    for start in range(0, n, chunk):
        rows = slice(start, min(start + chunk, n))
        x = images[rows]
        deleted = ranks[rows][:, patches][:, None] < k  # (m, F, H, W): the top k patches
        removed = np.concatenate([np.zeros_like(deleted[:, :1]), deleted, ~deleted], axis=1)
        perturbed = np.where(removed[..., None], fill[rows][:, None, None, None], x[:, None])
        proba = np.asarray(clf.predict_proba(
            _as_given(perturbed.reshape(-1, *x.shape[1:]), grey)), dtype=np.float64)
        proba = proba.reshape(len(x), per_image, -1)
        predicted = proba[:, 0].argmax(1)
        tracked = np.take_along_axis(proba, predicted[:, None, None], axis=2)[..., 0]
        drops[rows] = tracked[:, :1] - tracked[:, 1:]
    return drops


# ---------------------------------------------------------------------------- stability
def image_stability(clf: Any,  # any object with predict_proba and explain (duck-typed)
                    X: ArrayLike, method: str | None = None,
                    explanation: ImageExplanation | None = None, *,
                    radius: float = STABILITY_RADIUS,
                    random_state: int | np.random.RandomState | None = None,
                    batch_size: int | None = None) -> AnalysisResult:
    """Stability of image explanations and predictions under small random noise.

    Every image ``x`` moves by ``δ`` in a uniformly random direction with
    ``‖δ‖₂ = radius · ‖x‖₂`` (norms over all pixels and channels, pixel values in [0, 1]),
    then is clipped to [0, 1], the range the estimators take (so the realised norm,
    ``relative_noise``, can be smaller: pixels at 0 or 1 lose the half of the noise that
    points outside). The explanation of the noisy image, for the clean image's explained
    (predicted) class, is compared with the clean one by the Jensen-Shannon divergence (natural
    log, in [0, ln 2]) of the maps as distributions ``|a| / Σ|a|`` over the pixels (uniform
    when all zero), as :func:`~interpretable.metrics.embedding_stability` compares token
    explanations: the same measure for texts and images. Lower is more stable. The predictions
    are compared by total variation. The default radius, 1 % of the image's norm, changes the
    prediction of few images; ``prediction_changed`` tells which.

    Parameters
    ----------
    clf : fitted image classifier
        Any estimator of :mod:`interpretable.estimators.vision`, or an object with
        ``predict_proba(X)`` and ``explain(X, target=..., method=...)`` returning an
        :class:`~interpretable.explanation.ImageExplanation`.
    X : ndarray of shape (n_samples, H, W) or (n_samples, H, W, C)
        The images, float in [0, 1] or uint8.
    method : str or None, default=None
        Explanation method (None: the estimator's default).
    explanation : ImageExplanation or None, default=None
        A precomputed explanation of ``X`` by ``method`` (not computed again).
    radius : float, default=0.01
        The noise's L2 norm relative to the image's.
    random_state : int, RandomState instance or None, default=None
        Seeds the noise (None: NumPy's global random state).
    batch_size : int or None, default=None
        Mini-batch size of ``explain`` (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per image with ``sample``, ``jsd`` (explanations), ``tvd``
        (predictions), ``prediction_changed`` and ``relative_noise`` (``‖x̃ − x‖ / ‖x‖``
        after clipping); ``summary``: the means and medians of ``jsd`` and ``tvd``,
        ``prediction_changed`` (the share of images), ``radius`` and ``n_samples``.

    Raises
    ------
    TypeError
        If ``clf`` lacks ``predict_proba`` or ``explain``.
    ValueError
        If the images, ``radius`` or ``batch_size`` are invalid.

    See Also
    --------
    pixel_flipping : Faithfulness of image explanations.
    interpretable.metrics.embedding_stability : The same for texts.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosViTClassifier
    >>> from interpretable.metrics import image_stability
    >>> X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1,
    ...                         random_state=0).fit(X, [0, 1, 0, 1])
    >>> result = image_stability(clf, X, random_state=0)
    >>> result.frame.columns.tolist()
    ['sample', 'jsd', 'tvd', 'prediction_changed', 'relative_noise']
    >>> bool((result.frame.jsd >= 0).all())
    True
    """
    clf = _check_image_classifier(clf, "image_stability")
    images, grey = _read_images(X)
    if isinstance(radius, bool) or not isinstance(radius, Real) \
            or not (math.isfinite(radius) and radius >= 0):
        raise ValueError(f"radius must be a finite number >= 0, got {radius!r}.")
    batch_size = _check_batch_size(batch_size)
    rng = check_random_state(random_state)
    x = images.astype(np.float64)
    direction = rng.standard_normal(x.shape)
    direction /= np.sqrt((direction ** 2).sum((1, 2, 3), keepdims=True))
    norms = np.sqrt((x ** 2).sum((1, 2, 3), keepdims=True))
    noisy = np.clip(x + radius * norms * direction, 0.0, 1.0).astype(np.float32)
    realised = np.sqrt(((noisy - x) ** 2).sum((1, 2, 3), keepdims=True))
    relative = np.where(norms > 0, realised / np.where(norms > 0, norms, 1.0), 0.0).ravel()
    clean = _explain(clf, _as_given(images, grey), method, batch_size) \
        if explanation is None else _check_explanation(explanation)
    perturbed = _explain(clf, _as_given(noisy, grey), method, batch_size,
                         target=clean.target)
    A = np.asarray(clean.values, dtype=np.float64)
    B = np.asarray(perturbed.values, dtype=np.float64)
    if A.ndim != 3 or A.shape != B.shape or len(A) != len(images):
        raise ValueError(f"the explanations of X and of its noisy copy have shapes {A.shape} "
                         f"and {B.shape}; expected ({len(images)}, H, W) both.")
    proba = np.asarray(clf.predict_proba(_as_given(np.concatenate([images, noisy]), grey)),
                       dtype=np.float64)
    p, q = proba[: len(images)], proba[len(images):]
    n, pixels = len(A), A.shape[1] * A.shape[2]
    lengths = np.full(n, pixels)
    jsd = jensen_shannon_rows(explanation_distributions(A.reshape(n, -1), lengths),
                              explanation_distributions(B.reshape(n, -1), lengths),
                              np.ones((n, pixels), dtype=bool))
    changed = p.argmax(1) != q.argmax(1)
    result = _result(jsd, total_variation(p, q), {"prediction_changed": changed,
                                                  "relative_noise": relative})
    result.summary["prediction_changed"] = float(changed.mean())
    result.summary["radius"] = float(radius)
    return result
