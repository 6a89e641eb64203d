"""Pixel contributions of image classifiers and their tables (figures and the HTML view are in
:mod:`._image_views`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from interpretable.explanation._base import ClassifierExplanation, check_kind
from interpretable.explanation._frame import (
    FRAME_COLUMNS,
    SAMPLE_COLUMNS,
    build_frame,
    labels,
    texts,
)
from interpretable.explanation._image_views import ImageViews, weights_to_rgba

__all__ = ["ImageExplanation", "weights_to_rgba"]


@dataclass
class ImageExplanation(ImageViews, ClassifierExplanation):
    """Per-pixel contributions of image classifiers, as returned by ``explain``.

    Indexing (``explanation[i]``, slices, index arrays) gives a sub-explanation; ``len`` is
    the number of samples.

    Parameters
    ----------
    values : ndarray of shape (n, H, W)
        Contributions, summed over input channels.
    target : ndarray of shape (n,)
        The explained class labels.
    prediction : ndarray of shape (n,)
        The predicted class labels.
    method : str
        The explanation method.
    images : ndarray of shape (n, H, W, C) or None, default=None
        The inputs, in [0, 1].
    weights : ndarray of shape (n, H, W, K) or None, default=None
        Dynamic linear weights ``W(x)`` over the K encoded input channels (B-cos:
        ``[x, 1-x]``).
    logit : ndarray of shape (n,) or None, default=None
        The explained logits.
    bias : ndarray of shape (n,) or None, default=None
        The part of the logit no pixel carries.
    components : ndarray of shape (n, M, H, W) or None, default=None
        Contribution maps of M model components (e.g. attention heads) that sum to
        ``values``.
    component_names : list of str, default=[]
        The M components' names.
    inputs : list or None, default=None
        The caller's original samples (e.g. file paths).
    proba : ndarray of shape (n, C) or None, default=None
        Predicted class probabilities over ``classes``.
    classes : ndarray of shape (C,) or None, default=None
        The estimator's classes.
    sample_ids : ndarray of shape (n,) or None, default=None
        The caller's ids; None: 0..n-1.
    class_independent : bool, default=False
        Whether the maps are the same for every target (attention rollout).
    crop_boxes : ndarray of shape (n, 4) or None, default=None
        (top, left, bottom, right) of each image in its source image (source pixels) when
        ``images`` are the crops the model saw.
    contrast : ndarray of shape (n,) or None, default=None
        With ``explain(contrast=...)``: per sample ``"mean"`` (the maps explain the target's
        logit minus the mean logit) or the class whose logit is subtracted; ``logit`` then
        holds that difference. None: the target's logit.

    See Also
    --------
    TokenExplanation : Token attributions.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import ImageExplanation
    >>> rng = np.random.default_rng(0)
    >>> explanation = ImageExplanation(
    ...     values=np.ones((2, 4, 4)), target=np.array([1, 0]), prediction=np.array([1, 1]),
    ...     method="inherent", images=rng.random((2, 4, 4, 3)), logit=np.array([17.0, 16.5]),
    ...     bias=np.array([1.0, 0.5]))
    >>> explanation.completeness_error
    array([0., 0.])
    >>> explanation.to_frame().shape  # one row per sample and pixel
    (32, 10)
    """

    values: np.ndarray
    target: np.ndarray
    prediction: np.ndarray
    method: str
    images: np.ndarray | None = None
    weights: np.ndarray | None = None
    logit: np.ndarray | None = None
    bias: np.ndarray | None = None
    components: np.ndarray | None = None
    component_names: list = field(default_factory=list)
    inputs: list | None = None
    proba: np.ndarray | None = None
    classes: np.ndarray | None = None
    sample_ids: np.ndarray | None = None
    class_independent: bool = False
    crop_boxes: np.ndarray | None = None
    contrast: np.ndarray | None = None
    _per_sample = ("values", "target", "prediction", "images", "weights", "logit",
                   "bias", "components", "inputs", "proba", "sample_ids", "crop_boxes",
                   "contrast")

    def __post_init__(self):
        if np.ndim(self.values) != 3:
            raise ValueError(f"values must have shape (n, H, W), got {np.shape(self.values)}.")

    def _totals(self):
        """Per-sample ``(sum of values + bias, sum of their absolute values)``."""
        flat = self.values.reshape(len(self), -1).astype(np.float64)
        bias = np.zeros(len(self)) if self.bias is None else np.asarray(self.bias, dtype=np.float64)
        return flat.sum(axis=1) + bias, np.abs(flat).sum(axis=1) + np.abs(bias)

    def to_frame(self, kind: str = "units", by_component: bool = False) -> pd.DataFrame:
        """Return the explanation as a tidy table.

        Parameters
        ----------
        kind : {"units", "samples"}, default="units"
            ``"units"``: one row per sample × pixel (× component when ``by_component``);
            ``"samples"``: one row per sample with logit, bias, probabilities and
            completeness error where known.
        by_component : bool, default=False
            One row per component map (``explain(by="head")``) instead of their total.

        Returns
        -------
        pandas.DataFrame
            The table.

        Raises
        ------
        ValueError
            If ``kind`` is neither, or ``by_component`` without components.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import ImageExplanation
        >>> rng = np.random.default_rng(0)
        >>> explanation = ImageExplanation(
        ...     values=np.ones((2, 4, 4)), target=np.array([1, 0]), prediction=np.array([1, 1]),
        ...     method="inherent", images=rng.random((2, 4, 4, 3)), logit=np.array([17.0, 16.5]),
        ...     bias=np.array([1.0, 0.5]))
        >>> explanation.to_frame()[["sample", "row", "col", "attribution"]].head(2)
           sample  row  col  attribution
        0       0    0    0          1.0
        1       0    0    1          1.0
        >>> explanation.to_frame(kind="samples")["completeness_error"].tolist()
        [0.0, 0.0]
        """
        check_kind(kind)
        if kind == "samples":
            return build_frame(self._samples_columns(), SAMPLE_COLUMNS)
        n, h, w = self.values.shape
        maps, names = self.values[:, None], ["total"]
        if by_component:
            if self.components is None:
                raise ValueError("this explanation has no components; use explain(by='head').")
            maps, names = self.components, list(self.component_names)
        per_sample = len(names) * h * w
        rows = np.repeat(np.arange(n), per_sample)
        pixel = np.tile(np.arange(h * w), n * len(names))
        return build_frame({
            "sample": self.ids()[rows],
            "unit": pixel,
            "row": pixel // w,
            "col": pixel % w,
            "component": np.tile(np.repeat(texts(names), h * w), n),
            "target": labels(self.target)[rows],
            "contrast": None if self.contrast is None else texts(self.contrast)[rows],
            "attribution": maps.reshape(-1).astype(np.float64),
            "prediction": labels(self.prediction)[rows],
            **self._method_columns(rows),
        }, FRAME_COLUMNS)
