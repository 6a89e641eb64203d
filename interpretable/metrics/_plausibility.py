"""Plausibility: how well explanations agree with human rationales (ERASER, DeYoung et al.
2020, as ferret's ``AUPRC_PlausibilityEvaluation``, ``Tokenf1_PlausibilityEvaluation`` and
``TokenIOU_PlausibilityEvaluation`` compute it), for words and for pixels alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.metrics import average_precision_score

from interpretable.explanation import ImageExplanation, TokenExplanation
from interpretable.metrics._common import AnalysisResult

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["plausibility"]

#: the columns of :func:`plausibility`'s frame
PLAUSIBILITY_METRICS = ("auprc", "token_f1", "token_iou")


def _score_rows(explanation) -> list[np.ndarray]:
    values = explanation.values if isinstance(explanation, (TokenExplanation, ImageExplanation)) \
        else explanation
    return [np.asarray(v, dtype=np.float64) for v in values]


def _check_rationales(rationales, scores) -> list[np.ndarray]:
    if len(rationales) != len(scores):
        raise ValueError(f"rationales has {len(rationales)} samples but the explanation has "
                         f"{len(scores)}.")
    checked = []
    for i, (rationale, score) in enumerate(zip(rationales, scores, strict=True)):
        rationale = np.asarray(rationale)
        if rationale.shape != score.shape:
            sizes = ["x".join(map(str, a.shape)) for a in (rationale, score)]
            raise ValueError(f"the rationale of sample {i} has {sizes[0]} entries but its "
                             f"explanation has {sizes[1]} units; give one 0/1 entry per unit "
                             "(token of the explanation, pixel).")
        if not np.isin(rationale, (0, 1)).all():
            raise ValueError(f"the rationale of sample {i} must hold only 0 / 1 or booleans.")
        checked.append(rationale.astype(bool).ravel())
    return checked


def plausibility(explanation: TokenExplanation | ImageExplanation | Sequence[np.ndarray],
                 rationales: Sequence[ArrayLike], top_k: int | None = None) -> AnalysisResult:
    """Agreement of explanations with human rationales (ERASER; ferret's plausibility).

    Per sample, with ``s`` the scores (positive: evidence for the explained class) and ``r``
    the 0/1 rationale over the same units (words, or pixels flattened):

    * ``auprc``: ``average_precision_score(r, s)`` (step-wise average precision; ferret
      integrates the precision-recall curve by trapezoids instead);
    * ``token_f1`` and ``token_iou``: with ``P`` the top-``k`` units by score (ties: the
      first) that score above 0 (ferret's default ``only_pos``) and ``R`` the rationale,
      ``F1 = 2|P∩R| / (|P| + |R|)`` and ``IOU = |P∩R| / |P∪R|``; ``k`` is the sample's
      rationale size ``|R|`` (None) or ``top_k`` (ferret's ``top_k_rationale``).

    A sample with an empty rationale scores NaN and is left out of the means.

    Parameters
    ----------
    explanation : TokenExplanation, ImageExplanation or sequence of ndarray
        The scores, per sample an array of shape (n_units,) or (H, W).
    rationales : sequence of array-like
        Per sample a 0/1 (or boolean) array of the same shape.
    top_k : int or None, default=None
        Units in the hard rationale ``P`` (None: each sample's rationale size).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample with ``auprc``, ``token_f1``, ``token_iou``;
        ``summary``: their means and ``n_samples`` (samples with a rationale).

    Raises
    ------
    ValueError
        If a rationale does not match its sample's units or is not 0/1.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.metrics import plausibility
    >>> result = plausibility([np.array([0.9, 0.1, 0.5, -0.2])], [[1, 0, 0, 1]])
    >>> result.frame[["auprc", "token_f1", "token_iou"]].round(3).values.tolist()
    [[0.75, 0.5, 0.333]]
    """
    if top_k is not None and not (isinstance(top_k, (int, np.integer)) and top_k >= 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}.")
    scores = _score_rows(explanation)
    rows = []
    for score, rationale in zip(scores, _check_rationales(rationales, scores), strict=True):
        score = score.ravel()
        if not rationale.any():
            rows.append((np.nan, np.nan, np.nan))
            continue
        top = np.argsort(-score, kind="stable")[: rationale.sum() if top_k is None else top_k]
        chosen = np.zeros(score.size, dtype=bool)
        chosen[top[score[top] > 0]] = True
        hits = (chosen & rationale).sum()
        rows.append((average_precision_score(rationale, score),
                     2 * hits / (chosen.sum() + rationale.sum()),
                     hits / (chosen | rationale).sum()))
    frame = pd.DataFrame(rows, columns=list(PLAUSIBILITY_METRICS), dtype=np.float64)
    frame.insert(0, "sample", np.arange(len(frame)))
    summary = {name: float(frame[name].mean()) for name in PLAUSIBILITY_METRICS}
    summary["n_samples"] = int(frame.auprc.notna().sum())
    return AnalysisResult(frame, summary)
