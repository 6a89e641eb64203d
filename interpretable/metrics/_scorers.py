"""sklearn scorers for explanation quality and stability, usable next to accuracy / F1::

    GridSearchCV(SEATClassifier(), grid, refit="f1",
                 scoring={"f1": "f1", "sufficiency": make_explanation_scorer("sufficiency"),
                          "stability": make_stability_scorer("embedding", radius=1e-3)})

Scorers follow sklearn's sign convention (greater is better): metrics where lower is better
(sufficiency, sensitivity, JSD, TVD) are negated. A ``Pipeline`` is scored through its last
step (earlier steps transform ``X`` first).

Plausibility needs each sample's rationale, which a scorer's ``(estimator, X, y)`` call does
not carry: :func:`make_plausibility_scorer` holds the rationales of all samples, keyed by the
samples themselves, and finds those of each cross-validation fold's ``X`` by value.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from interpretable.metrics._faithfulness import comprehensiveness, sensitivity, sufficiency
from interpretable.metrics._plausibility import PLAUSIBILITY_METRICS, plausibility
from interpretable.metrics._report import loo_kendall_tau
from interpretable.metrics._stability import embedding_stability, word_stability

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["make_explanation_scorer", "make_plausibility_scorer", "make_stability_scorer"]

# name -> (function, summary key, sign)
_EXPLANATION_METRICS = {
    "comprehensiveness": (comprehensiveness, "aopc", 1.0),
    "sufficiency": (sufficiency, "aopc", -1.0),
    "sensitivity": (sensitivity, "mean", -1.0),
    "kendall_tau": (loo_kendall_tau, "mean", 1.0),
}
_STABILITY_METRICS = {"embedding": embedding_stability, "word": word_stability}


def _last_step(estimator, X):
    """A ``Pipeline``'s last step and ``X`` transformed by the steps before it."""
    if hasattr(estimator, "steps"):
        for _, step in estimator.steps[:-1]:
            if step is not None and step != "passthrough":
                X = step.transform(X)
        estimator = estimator.steps[-1][1]
    return estimator, X


def _sample_key(sample):
    """A hashable key of one sample: the text, or an array's shape, dtype and bytes."""
    if isinstance(sample, str):
        return sample
    sample = np.ascontiguousarray(sample)
    return sample.shape, sample.dtype.str, sample.tobytes()


def _explained_plausibility(estimator, X, rationales, method=None, top_k=None):
    return plausibility(estimator.explain(X, method=method), rationales, top_k)


class _MetricScorer:
    """Callable ``scorer(estimator, X, y=None) -> float`` (picklable, for parallel search)."""

    def __init__(self, factory, metric, func, key, sign, kwargs, shown=None, uses_y=False):
        self.factory, self.metric, self.func = factory, metric, func
        self.key, self.sign, self.kwargs = key, sign, kwargs
        self.shown = {**(shown or {}), **kwargs}
        self.uses_y = uses_y

    def __call__(self, estimator, X, y=None, **ignored):
        estimator, X = _last_step(estimator, X)
        kwargs = {**self.kwargs, "y": y} if self.uses_y and y is not None else self.kwargs
        return self.sign * float(self.func(estimator, X, **kwargs).summary[self.key])

    def __repr__(self):
        args = ", ".join([repr(self.metric)] + [f"{k}={v!r}" for k, v in self.shown.items()])
        return f"{self.factory}({args})"


class _PlausibilityScorer(_MetricScorer):
    """Looks up the rationales of the scored samples (before any pipeline step) by value."""

    def __init__(self, metric, lookup, kwargs):
        super().__init__("make_plausibility_scorer", metric, _explained_plausibility, metric,
                         1.0, kwargs, shown={"n_rationales": len(lookup)})
        self.lookup = lookup

    def __call__(self, estimator, X, y=None, **ignored):
        missing = [i for i, x in enumerate(X) if _sample_key(x) not in self.lookup]
        if missing:
            raise ValueError(f"samples {missing[:5]} of X are not among the samples this "
                             "plausibility scorer has rationales of.")
        rationales = [self.lookup[_sample_key(x)] for x in X]
        estimator, X = _last_step(estimator, X)
        return float(self.func(estimator, X, rationales, **self.kwargs).summary[self.key])


def make_explanation_scorer(metric: str = "sufficiency", method: str | None = None,
                            **kwargs: Any) -> Callable[..., float]:
    """Make a scikit-learn scorer of a faithfulness metric of the explanations.

    Parameters
    ----------
    metric : {"comprehensiveness", "sufficiency", "sensitivity", "kendall_tau"}, \
default="sufficiency"
        The metric (``"kendall_tau"``: :func:`~interpretable.metrics.loo_kendall_tau`); the
        scorer is signed so that larger is better.
    method : str or None, default=None
        Explanation method (None: the estimator's default).
    **kwargs
        Passed to the metric (e.g. ``fractions``).

    Returns
    -------
    callable
        A scorer ``(estimator, X, y) -> float`` for ``scoring=`` in ``GridSearchCV``.

    Raises
    ------
    ValueError
        If ``metric`` is unknown.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import make_explanation_scorer
    >>> scorer = make_explanation_scorer("comprehensiveness", fractions=(0.5,))
    >>> isinstance(scorer(clf, X, y), float)
    True
    """
    if metric not in _EXPLANATION_METRICS:
        raise ValueError(f"metric must be one of {sorted(_EXPLANATION_METRICS)}, got {metric!r}.")
    func, key, sign = _EXPLANATION_METRICS[metric]
    return _MetricScorer("make_explanation_scorer", metric, func, key, sign,
                         {"method": method, **kwargs})


def make_stability_scorer(kind: str = "embedding", quantity: str = "jsd",
                          method: str | None = None, **kwargs: Any) -> Callable[..., float]:
    """Make a scikit-learn scorer of the stability of explanations or predictions.

    The score is the negated mean JSD (``quantity="jsd"``, explanation stability) or TVD
    (``"tvd"``, prediction stability) under embedding perturbation (``radius=``, ``kind=`` as
    ``noise=``; ``noise="pgd"`` is the SEAT authors' attack, on the gold labels passed to the
    scorer, with ``norm=``, ``steps=``, ``clamp=``, ``tvd=`` as in
    :func:`~interpretable.metrics.embedding_stability`) or word perturbation (``perturber=``
    required).

    Parameters
    ----------
    kind : {"embedding", "word"}, default="embedding"
        The perturbation.
    quantity : {"jsd", "tvd"}, default="jsd"
        Explanation (JSD) or prediction (TVD) stability.
    method : str or None, default=None
        Explanation method (None: the estimator's default).
    **kwargs
        Passed to :func:`~interpretable.metrics.embedding_stability` or
        :func:`~interpretable.metrics.word_stability`.

    Returns
    -------
    callable
        A scorer ``(estimator, X, y) -> float`` (larger is more stable).

    Raises
    ------
    ValueError
        If ``kind`` or ``quantity`` is unknown, or a word scorer lacks ``perturber``.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import make_stability_scorer
    >>> scorer = make_stability_scorer("embedding", quantity="tvd", radius=0.01)
    >>> scorer(clf, X, y) <= 0
    True
    """
    if kind not in _STABILITY_METRICS:
        raise ValueError(f"kind must be one of {sorted(_STABILITY_METRICS)}, got {kind!r}.")
    if quantity not in ("jsd", "tvd"):
        raise ValueError(f"quantity must be 'jsd' or 'tvd', got {quantity!r}.")
    if kind == "word" and "perturber" not in kwargs:
        raise ValueError("a word stability scorer needs perturber=, e.g. SynonymSubstitution().")
    if "noise" in kwargs:
        kwargs["kind"] = kwargs.pop("noise")
    return _MetricScorer("make_stability_scorer", kind, _STABILITY_METRICS[kind],
                         f"mean_{quantity}", -1.0, {"method": method, **kwargs},
                         shown={"quantity": quantity}, uses_y=kwargs.get("kind") == "pgd")


def make_plausibility_scorer(metric: str, X: Sequence[str] | np.ndarray,
                             rationales: Sequence[ArrayLike], method: str | None = None,
                             top_k: int | None = None) -> Callable[..., float]:
    """Make a scikit-learn scorer of the plausibility of explanations against rationales.

    The scorer holds the rationale of every sample of ``X`` (the whole data a search splits)
    and looks up those of the scored samples by value (a text, or an image's bytes), so it
    works in ``GridSearchCV(scoring=...)`` without metadata routing; identical samples must
    have identical rationales. A ``Pipeline`` is explained through its last step, the
    rationales matching the units of that step's explanation.

    Parameters
    ----------
    metric : {"auprc", "token_f1", "token_iou"}
        The metric of :func:`~interpretable.metrics._plausibility` (larger is better).
    X : sequence of str or ndarray of shape (n_samples, H, W[, C])
        The samples the rationales belong to.
    rationales : sequence of array-like
        Per sample of ``X`` a 0/1 array, one entry per explained unit (word, pixel).
    method : str or None, default=None
        Explanation method (None: the estimator's default).
    top_k : int or None, default=None
        Units of the hard rationale (None: each rationale's size).

    Returns
    -------
    callable
        A scorer ``(estimator, X, y) -> float``.

    Raises
    ------
    ValueError
        If ``metric`` is unknown, the lengths differ or identical samples have different
        rationales; when called, if a sample has no rationale.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.datasets import make_planted_evidence_texts
    >>> from interpretable.metrics import make_plausibility_scorer
    >>> data = make_planted_evidence_texts(n_samples=40, random_state=0)
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(data.data, data.target)
    >>> scorer = make_plausibility_scorer("auprc", data.data, data.rationale)
    >>> 0 <= scorer(clf, data.data[:10], data.target[:10]) <= 1
    True
    """
    if metric not in PLAUSIBILITY_METRICS:
        raise ValueError(f"metric must be one of {list(PLAUSIBILITY_METRICS)}, got {metric!r}.")
    if len(X) != len(rationales):
        raise ValueError(f"X has {len(X)} samples but rationales has {len(rationales)}.")
    lookup: dict[Hashable, np.ndarray] = {}
    for i, (sample, rationale) in enumerate(zip(X, rationales, strict=True)):
        rationale = np.asarray(rationale)
        known = lookup.setdefault(_sample_key(sample), rationale)
        if not np.array_equal(known, rationale):
            raise ValueError(f"sample {i} of X occurs earlier with another rationale.")
    return _PlausibilityScorer(metric, lookup, {"method": method, "top_k": top_k})
