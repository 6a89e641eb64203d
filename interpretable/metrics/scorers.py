"""sklearn scorers for explanation quality and stability, usable next to accuracy / F1::

    GridSearchCV(SEATClassifier(), grid, refit="f1",
                 scoring={"f1": "f1", "sufficiency": make_explanation_scorer("sufficiency"),
                          "stability": make_stability_scorer("embedding", radius=1e-3)})

Scorers follow sklearn's sign convention (greater is better): metrics where lower is better
(sufficiency, sensitivity, JSD, TVD) are negated. A ``Pipeline`` is scored through its last
step (earlier steps transform ``X`` first).
"""

from __future__ import annotations

from .faithfulness import comprehensiveness, sensitivity, sufficiency
from .stability import embedding_stability, word_stability

__all__ = ["make_explanation_scorer", "make_stability_scorer"]

# name -> (function, summary key, sign)
_EXPLANATION_METRICS = {
    "comprehensiveness": (comprehensiveness, "aopc", 1.0),
    "sufficiency": (sufficiency, "aopc", -1.0),
    "sensitivity": (sensitivity, "mean", -1.0),
}
_STABILITY_METRICS = {"embedding": embedding_stability, "word": word_stability}


class _MetricScorer:
    """Callable ``scorer(estimator, X, y=None) -> float`` (picklable, for parallel search)."""

    def __init__(self, factory, metric, func, key, sign, kwargs, shown=None, uses_y=False):
        self.factory, self.metric, self.func = factory, metric, func
        self.key, self.sign, self.kwargs = key, sign, kwargs
        self.shown = {**(shown or {}), **kwargs}
        self.uses_y = uses_y

    def __call__(self, estimator, X, y=None, **ignored):
        if hasattr(estimator, "steps"):  # Pipeline: transform through all but the last step
            for _, step in estimator.steps[:-1]:
                if step is not None and step != "passthrough":
                    X = step.transform(X)
            estimator = estimator.steps[-1][1]
        kwargs = {**self.kwargs, "y": y} if self.uses_y and y is not None else self.kwargs
        return self.sign * float(self.func(estimator, X, **kwargs).summary[self.key])

    def __repr__(self):
        args = ", ".join([repr(self.metric)] + [f"{k}={v!r}" for k, v in self.shown.items()])
        return f"{self.factory}({args})"


def make_explanation_scorer(metric="sufficiency", method=None, **kwargs):
    """Make a scikit-learn scorer of a faithfulness metric of the explanations.

    Parameters
    ----------
    metric : {"comprehensiveness", "sufficiency", "sensitivity"}, default="sufficiency"
        The metric; the scorer is signed so that larger is better.
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


def make_stability_scorer(kind="embedding", quantity="jsd", method=None, **kwargs):
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
