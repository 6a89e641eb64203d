"""Which explanation to trust: faithfulness, plausibility, stability and cost of every
explanation method of an estimator in one tidy table (after ferret's
``evaluate_explanations``).

:func:`evaluate_explanations` scores each method sample by sample and returns an
:class:`ExplanationReport`, one row per (method, metric). Besides the package's
comprehensiveness, sufficiency, embedding stability and
:func:`~interpretable.metrics.plausibility` it uses :func:`loo_kendall_tau` (rank agreement
with leave-one-out importance).
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import torch
from scipy.stats import kendalltau
from sklearn.utils import check_random_state

from ..estimators.explainers import get_explainer
from .common import (
    TEXT_MODEL_INTERFACE,
    AnalysisResult,
    check_text_model,
    explain_or_take,
    explanation_matrix,
    model_view,
    predict_probabilities,
)
from .faithfulness import ERASER_FRACTIONS, _compact, comprehensiveness, sufficiency
from .plausibility import PLAUSIBILITY_METRICS, plausibility
from .stability import embedding_stability

__all__ = ["ExplanationReport", "evaluate_explanations", "loo_kendall_tau"]

#: metric -> (property, whether higher is better), in the report's row order
REPORT_METRICS = {
    "comprehensiveness": ("faithfulness", True),
    "sufficiency": ("faithfulness", False),
    "loo_kendall_tau": ("faithfulness", True),
    "completeness_error": ("faithfulness", False),
    "auprc": ("plausibility", True),
    "token_f1": ("plausibility", True),
    "token_iou": ("plausibility", True),
    "stability_jsd": ("stability", False),
    "seconds_per_sample": ("cost", False),
}
#: the columns of :meth:`ExplanationReport.to_frame` and their dtypes
REPORT_COLUMNS = {"method": object, "metric": object, "property": object, "mean": np.float64,
                  "std": np.float64, "sem": np.float64, "n_samples": np.int64,
                  "higher_is_better": bool}


def leave_one_out(clf, inputs, batch_size=None, view="model") -> np.ndarray:
    """Drops ``p(ŷ|x) − p(ŷ|x without unit t)`` of the predicted class ``(n, T)``, each unit
    removed as :func:`comprehensiveness` removes tokens; 0 on padding and in one-unit texts."""
    lengths = inputs["lengths"]
    probs = predict_probabilities(clf, inputs, batch_size=batch_size, view=view)
    pred = probs.argmax(1)
    p0 = probs.gather(1, pred[:, None])[:, 0]
    real = torch.arange(inputs["tokens"].shape[1])[None] < lengths[:, None]
    drops = np.zeros(real.shape)
    for t in range(real.shape[1] if (lengths > 1).any() else 0):
        rows = torch.nonzero((lengths > t) & (lengths > 1))[:, 0]
        keep = real[rows].clone()
        keep[:, t] = False
        sub = _compact({k: v[rows] for k, v in inputs.items()}, keep)
        p = predict_probabilities(clf, sub, batch_size=batch_size, view=view)
        drops[rows.numpy(), t] = (p0[rows] - p.gather(1, pred[rows][:, None])[:, 0]).numpy()
    return drops


def loo_kendall_tau(clf, X, method=None, explanation=None, batch_size=None) -> AnalysisResult:
    """Rank-correlate explanation scores with leave-one-out importance (Kendall's tau-b).

    The importance of a unit is the drop of the predicted class's probability when that unit
    alone is removed (one batched pass of the estimator per unit position). Higher is more
    faithful; texts of one unit, or with constant scores or drops, score NaN.

    Parameters
    ----------
    clf : fitted text classifier
        Any estimator of :mod:`interpretable.estimators` that classifies texts.
    X : sequence of str of shape (n_samples,)
        The texts.
    method : str or None, default=None
        Explanation method passed to ``explain`` (None: the estimator's default).
    explanation : TokenExplanation or None, default=None
        A precomputed explanation of ``X`` to score instead.
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample with ``kendall_tau``; ``summary``: ``mean`` (NaN
        left out) and ``n_samples`` (samples with a tau).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.metrics import loo_kendall_tau
    >>> result = loo_kendall_tau(clf, ["a good film", "bad"])
    >>> result.frame.columns.tolist(), result.summary["n_samples"]
    (['sample', 'kendall_tau'], 1)
    """
    clf = check_text_model(clf, "loo_kendall_tau")
    inputs = clf.encode(X).inputs
    lengths = inputs["lengths"].numpy()
    scores = explanation_matrix(explain_or_take(clf, X, method, explanation), lengths)
    drops = leave_one_out(clf, inputs, batch_size, model_view(clf, method))
    tau = [kendalltau(s[:n], d[:n]).statistic
           if n > 1 and np.ptp(s[:n]) > 0 and np.ptp(d[:n]) > 0 else np.nan
           for s, d, n in zip(scores, drops, lengths)]
    frame = pd.DataFrame({"sample": np.arange(len(tau)), "kendall_tau": np.array(tau, float)})
    return AnalysisResult(frame, {"mean": float(frame.kendall_tau.mean()),
                                  "n_samples": int(frame.kendall_tau.notna().sum())})


def _method_metrics(estimator, X, method, explanation, rationales, options) -> dict:
    """Per metric: the per-sample values of ``method``, or why the metric does not apply."""
    out = {}
    if rationales is not None:
        try:
            result = plausibility(explanation, rationales, options["top_k"])
        except ValueError as error:
            raise ValueError(f"method {method!r}: {error}") from error
        out.update({name: result.frame[name] for name in PLAUSIBILITY_METRICS})
    if not all(hasattr(estimator, name) for name in TEXT_MODEL_INTERFACE):
        out.update(dict.fromkeys(("comprehensiveness", "sufficiency", "loo_kendall_tau",
                                  "stability_jsd"), "needs a text classifier (token erasure)"))
    else:
        batch_size, fractions = options["batch_size"], options["fractions"]
        for name, metric in (("comprehensiveness", comprehensiveness),
                             ("sufficiency", sufficiency)):
            out[name] = metric(estimator, X, method, explanation, fractions, batch_size).frame.aopc
        out["loo_kendall_tau"] = loo_kendall_tau(estimator, X, method, explanation,
                                                 batch_size).frame.kendall_tau
        out["stability_jsd"] = embedding_stability(
            estimator, X, options["stability_radius"], method, random_state=options["seed"],
            batch_size=batch_size).frame.jsd \
            if "embedding_offset" in get_explainer(estimator, method).options(public=False) \
            else "the method cannot explain perturbed embeddings"
    error = explanation.completeness_error
    out["completeness_error"] = "the explanation does not decompose the logit" \
        if error is None else error
    return out


def _summarise(samples: pd.DataFrame, timing: pd.DataFrame, methods) -> pd.DataFrame:
    """One row per (method, metric), ordered as ``methods`` and ``REPORT_METRICS``."""
    frame = samples.groupby(["method", "metric"]).value.agg(
        mean="mean", std="std", n_samples="count").reset_index()
    frame["sem"] = frame["std"] / np.sqrt(frame.n_samples)
    frame = pd.concat([frame, timing.assign(metric="seconds_per_sample")], ignore_index=True)
    frame["property"] = [REPORT_METRICS[m][0] for m in frame.metric]
    frame["higher_is_better"] = [REPORT_METRICS[m][1] for m in frame.metric]
    order = [pd.Categorical(frame.method, list(methods)),
             pd.Categorical(frame.metric, list(REPORT_METRICS))]
    frame = frame.iloc[np.lexsort([o.codes for o in order[::-1]])]
    return frame[list(REPORT_COLUMNS)].astype(REPORT_COLUMNS).reset_index(drop=True)


def evaluate_explanations(estimator, X, y=None, methods=None, rationales=None, *,
                          batch_size=None, random_state=None, fractions=ERASER_FRACTIONS,
                          stability_radius=1e-3, top_k=None) -> ExplanationReport:
    """Score every explanation method of an estimator: which explanation to trust.

    Each method explains ``X`` (its predicted classes) once, timed; then per sample:

    * text classifiers: ``comprehensiveness`` and ``sufficiency`` (ERASER AOPC over
      ``fractions``, :func:`~interpretable.metrics.comprehensiveness`), ``loo_kendall_tau``
      (:func:`loo_kendall_tau`) and, for methods that explain perturbed embeddings (attention,
      gradients), ``stability_jsd``: the JSD of the explanation under random noise of norm
      ``stability_radius`` on every token embedding
      (:func:`~interpretable.metrics.embedding_stability`);
    * ``completeness_error`` where the explanation has one (exact and integrated-gradients
      methods): ``|Σ values + bias − logit|`` relative to the logit's scale;
    * with ``rationales``: ``auprc``, ``token_f1`` and ``token_iou`` (:func:`plausibility`);
    * ``seconds_per_sample``: the explain call's wall time over ``n`` (one call, no spread).

    A metric or method that cannot apply is left out and its reason recorded in
    ``skipped``.

    Parameters
    ----------
    estimator : fitted estimator
        Any classifier of the package with ``explain`` (text or images).
    X : sequence of str of shape (n_samples,) or ndarray of shape (n_samples, H, W[, C])
        The samples.
    y : None
        Ignored: the explanations are of the predicted classes, as the erasure metrics
        measure (present for the scorer signature ``(estimator, X, y)``).
    methods : str, list of str or None, default=None
        Methods from ``estimator.explain_methods`` (None: all).
    rationales : sequence of array-like or None, default=None
        Per sample a 0/1 array with one entry per unit of the explanation (text: tokens as
        ``explain(X).units`` shows them; images: a boolean (H, W) pixel mask).
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).
    random_state : int, RandomState or None, default=None
        Seeds the stability noise.
    fractions : tuple of float, default=(0.01, 0.05, 0.1, 0.2, 0.5)
        The AOPC bins of comprehensiveness and sufficiency.
    stability_radius : float, default=0.001
        The embedding noise of ``stability_jsd``.
    top_k : int or None, default=None
        Units of the hard rationale of ``token_f1`` / ``token_iou`` (None: the rationale's
        size, per sample).

    Returns
    -------
    ExplanationReport
        One row per (method, metric).

    Raises
    ------
    ValueError
        If a method is unknown, no method explains ``X``, or the rationales do not match the
        samples or their units.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.datasets import make_planted_evidence_texts
    >>> from interpretable.metrics import evaluate_explanations
    >>> data = make_planted_evidence_texts(n_samples=60, random_state=0)
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(data.data, data.target)
    >>> report = evaluate_explanations(clf, data.data[:8], methods=["inherent", "gradient"],
    ...                                rationales=data.rationale[:8], fractions=(0.5,))
    >>> report.to_frame().shape
    (16, 8)
    >>> report.skipped[["method", "metric"]].values.tolist()
    [['inherent', 'stability_jsd'], ['gradient', 'completeness_error']]
    """
    available = list(estimator.explain_methods)
    methods = available if methods is None else [methods] if isinstance(methods, str) \
        else list(methods)
    unknown = [m for m in methods if m not in available]
    if unknown:
        raise ValueError(f"unknown methods {unknown}; {type(estimator).__name__} offers "
                         f"{available}.")
    if rationales is not None and len(rationales) != len(X):
        raise ValueError(f"rationales has {len(rationales)} samples but X has {len(X)}.")
    options = {"batch_size": batch_size, "fractions": fractions, "top_k": top_k,
               "stability_radius": stability_radius,
               "seed": int(check_random_state(random_state).randint(2**31 - 1))}
    samples, timing, skipped = [], [], []
    for method in methods:
        start = time.perf_counter()
        try:
            explanation = estimator.explain(X, method=method, batch_size=batch_size)
        except (ValueError, TypeError, NotImplementedError) as error:
            skipped.append((method, "all", f"explain failed: {error}"))
            continue
        n = len(explanation)
        timing.append((method, (time.perf_counter() - start) / n, n))
        for metric, values in _method_metrics(estimator, X, method, explanation, rationales,
                                              options).items():
            if isinstance(values, str):
                skipped.append((method, metric, values))
            else:
                samples.append(pd.DataFrame({"method": method, "metric": metric, "sample":
                                             np.arange(n), "value": np.asarray(values, float)}))
    if not timing:
        raise ValueError(f"no method could explain X: {[reason for *_, reason in skipped]}")
    samples = pd.concat(samples, ignore_index=True)
    return ExplanationReport(
        _summarise(samples, pd.DataFrame(timing, columns=["method", "mean", "n_samples"]),
                   methods),
        samples, pd.DataFrame(skipped, columns=["method", "metric", "reason"]))


class ExplanationReport:
    """The evaluation of explanation methods, as returned by :func:`evaluate_explanations`.

    Shows as a table (``str``, ``_repr_html_`` in notebooks); :meth:`plot` draws it.

    Parameters
    ----------
    frame : DataFrame
        One row per (method, metric), the columns of ``REPORT_COLUMNS``: ``mean``, ``std``
        and ``sem`` (standard error: ``mean ± 1.96 sem`` is a 95 % interval) over the
        ``n_samples`` samples with a value.
    samples : DataFrame
        The per-sample values: ``method``, ``metric``, ``sample``, ``value``.
    skipped : DataFrame
        What was not evaluated: ``method``, ``metric`` (``"all"``: the whole method) and
        ``reason``.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.metrics import evaluate_explanations
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> report = evaluate_explanations(clf, X, methods="inherent", fractions=(0.5,))
    >>> report.skipped.metric.tolist()
    ['stability_jsd']
    """

    def __init__(self, frame, samples, skipped):
        self.frame, self.samples, self.skipped = frame, samples, skipped

    def to_frame(self) -> pd.DataFrame:
        """Return the tidy table, one row per (method, metric).

        Returns
        -------
        DataFrame
            A copy of ``frame``.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.metrics import evaluate_explanations
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> report = evaluate_explanations(clf, X, methods="inherent", fractions=(0.5,))
        >>> report.to_frame().columns.tolist()[:4]
        ['method', 'metric', 'property', 'mean']
        """
        return self.frame.copy()

    def __str__(self) -> str:
        text = self.frame.to_string(index=False, float_format="{:.4g}".format)
        if len(self.skipped):
            text += "\n\nnot evaluated:\n" + self.skipped.to_string(index=False)
        return text

    def _repr_html_(self) -> str:
        html = self.frame.to_html(index=False, float_format="{:.4g}".format)
        if len(self.skipped):
            html += "<p>Not evaluated:</p>" + self.skipped.to_html(index=False)
        return html

    def plot(self, metrics=None, *, ax=None):
        """Draw one panel per metric: each method's mean with its 95 % interval.

        Parameters
        ----------
        metrics : list of str or None, default=None
            The metrics shown (None: all in the report).
        ax : Axes, sequence of Axes or None, default=None
            One Axes per metric to draw into (None: a new figure).

        Returns
        -------
        Figure
            The figure drawn into; it is not shown.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.metrics import evaluate_explanations
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> report = evaluate_explanations(clf, X, methods="inherent", fractions=(0.5,))
        >>> report.plot(["comprehensiveness"]).axes[0].get_title()
        'comprehensiveness ↑'
        """
        from matplotlib.figure import Figure

        metrics = list(dict.fromkeys(self.frame.metric)) if metrics is None else list(metrics)
        if ax is None:
            ncols = min(len(metrics), 4)
            nrows = -(-len(metrics) // ncols)
            ax = Figure(figsize=(3.2 * ncols, 0.5 + 0.35 * nrows * self.frame.method.nunique()
                                 + nrows)).subplots(nrows, ncols, squeeze=False)
        axes = np.ravel(ax)
        if len(axes) < len(metrics):
            raise ValueError(f"ax has {len(axes)} Axes for {len(metrics)} metrics.")
        for axis, metric in zip(axes, metrics):
            rows = self.frame[self.frame.metric == metric]
            if rows.empty:
                raise ValueError(f"metric {metric!r} is not in the report; it has "
                                 f"{sorted(set(self.frame.metric))}.")
            axis.barh(rows.method, rows["mean"], xerr=1.96 * rows["sem"].fillna(0), color="C0")
            axis.invert_yaxis()
            arrow = "↑" if rows.higher_is_better.iloc[0] else "↓"
            axis.set_title(f"{metric} {arrow}", fontsize=9)
        for axis in axes[len(metrics):]:
            axis.set_visible(False)
        figure = axes[0].figure
        figure.tight_layout()
        return figure
