"""Which explanation to trust: faithfulness, stability, plausibility and cost of every
explanation method of an estimator, in one tidy table and one decision (after ferret's
``evaluate_explanations``).

:func:`evaluate_explanations` explains the samples with every method, chunk by chunk, and
scores each explanation on the same samples; :class:`ExplanationReport` holds the per-sample
values, one row per (method, metric), and :meth:`ExplanationReport.summary`: the methods
ranked by the rule of :mod:`interpretable.metrics`.

Texts: every erasure of every method and bin, and the leave-one-out variants of every text
(computed once and shared by the methods), are scored in one batched pass per chunk
(:mod:`interpretable.metrics`). Images: deletion and insertion
(:mod:`interpretable.metrics`). ``convention`` chooses ERASER's
definitions (the default) or ferret's (:mod:`interpretable.metrics`).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from sklearn.utils import check_random_state

from interpretable.estimators.methods import get_explainer
from interpretable.metrics._common import (
    TEXT_MODEL_INTERFACE,
    AnalysisResult,
    check_text_model,
    explain_or_take,
)
from interpretable.metrics._conventions import ERASER, get_convention
from interpretable.metrics._divergences import jensen_shannon_rows
from interpretable.metrics._embedding_noise import embedding_offsets
from interpretable.metrics._erasure import TextUnits, check_level, erase, text_units, unit_scores
from interpretable.metrics._faithfulness import _check_fractions
from interpretable.metrics._image_faithfulness import image_stability, pixel_flipping
from interpretable.metrics._plausibility import PLAUSIBILITY_METRICS
from interpretable.metrics._ranking import plot_ranking, rank_methods, verdict
from interpretable.metrics._stability import explanation_distributions

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from numpy.typing import ArrayLike

    from interpretable.estimators.core import NeuralClassifier
    from interpretable.estimators.text import TextClassifierBase
    from interpretable.explanation import ImageExplanation, TokenExplanation

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
#: samples explained and scored together (one batched erasure pass each; the progress bar
#: and the budget move chunk by chunk)
CHUNK_SIZE = 32


def leave_one_out(clf, inputs, batch_size=None, view="model") -> np.ndarray:
    """Drops ``p(ŷ|x) − p(ŷ|x without token t)`` of the predicted class ``(n, T)``, each token
    removed as :func:`comprehensiveness` removes tokens; 0 on padding and in one-token texts.
    All variants are scored in one batched pass."""
    lengths = inputs["lengths"].numpy()
    tokens = [np.arange(n) for n in lengths]
    units = TextUnits(inputs, tokens, tokens, [np.zeros(n, bool) for n in lengths])
    erasures = erase(clf, units, {}, ERASER, batch_size=batch_size, view=view)
    drops = np.zeros((len(lengths), int(lengths.max(initial=0))))
    for i, row in enumerate(erasures.leave_one_out):
        drops[i, : len(row)] = row
    return drops


def loo_kendall_tau(clf: TextClassifierBase, X: Sequence[str] | ArrayLike,
                    method: str | None = None, explanation: TokenExplanation | None = None,
                    batch_size: int | None = None) -> AnalysisResult:
    """Rank-correlate explanation scores with leave-one-out importance (Kendall's tau-b).

    The importance of a unit is the drop of the predicted class's probability when that unit
    alone is removed (all texts' variants scored in one batched pass). Higher is more
    faithful; texts of one unit, or with constant scores or drops, score NaN. Occlusion *is*
    leave-one-out, so it agrees with it by construction: :func:`evaluate_explanations` reports
    this measure but does not rank on it.

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
    explanation = explain_or_take(clf, X, method, explanation)
    inputs = clf.encode(X).inputs
    lengths = inputs["lengths"].numpy()
    if len(explanation) != len(lengths):
        raise ValueError(f"explanation has {len(explanation)} samples but X has "
                         f"{len(lengths)}.")
    drops = leave_one_out(clf, inputs, batch_size, get_explainer(clf, explanation.method
                                                                  if method is None
                                                                  else method).view)
    tau = []
    for i, (values, n) in enumerate(zip(explanation.values, lengths, strict=True)):
        if len(values) != n:
            raise ValueError(f"explanation of sample {i} has {len(values)} tokens but the "
                             f"model sees {n}; pass an explanation of the same X by the same "
                             "estimator.")
        tau.append(ERASER.loo_tau(np.asarray(values, np.float64), drops[i, :n]))
    frame = pd.DataFrame({"sample": np.arange(len(tau)), "kendall_tau": np.array(tau, float)})
    return AnalysisResult(frame, {"mean": float(frame.kendall_tau.mean()),
                                  "n_samples": int(frame.kendall_tau.notna().sum())})


def _level_options(estimator, method, level) -> dict:
    """``level`` as an explain option where the method takes it (word-piece models)."""
    return {"level": level} if "level" in get_explainer(estimator, method).options() else {}


def _check_rationale(rationale, n_units: int, i: int, what: str) -> np.ndarray:
    """One sample's rationale as a flat bool array of ``n_units`` entries."""
    rationale = np.asarray(rationale)
    if rationale.size != n_units or (rationale.ndim > 1 and what.startswith("word")):
        raise ValueError(f"the rationale of sample {i} has {rationale.size} entries but "
                         f"{n_units} were expected: one 0/1 entry per {what}.")
    if not np.isin(rationale, (0, 1)).all():
        raise ValueError(f"the rationale of sample {i} must hold only 0 / 1 or booleans.")
    return rationale.astype(bool).ravel()


def _jsd(clean: list, noisy: list) -> np.ndarray:
    """Per sample the Jensen-Shannon divergence of two explanations' ``|a| / Σ|a|``."""
    n_units = np.array([len(v) for v in clean])
    width = int(n_units.max(initial=1))
    a, b = np.zeros((len(clean), width)), np.zeros((len(clean), width))
    for i, (u, v) in enumerate(zip(clean, noisy, strict=True)):
        a[i, : len(u)], b[i, : len(v)] = u, v
    real = np.arange(width)[None] < n_units[:, None]
    return jensen_shannon_rows(explanation_distributions(a, n_units),
                               explanation_distributions(b, n_units), real)


class _Evaluation:
    """What one call of :func:`evaluate_explanations` collects, chunk by chunk."""

    def __init__(self, estimator, X, methods, rationales, options):
        self.estimator, self.X, self.rationales, self.options = estimator, X, rationales, options
        self.methods = list(methods)
        self.given = options["explanations"]
        self.samples, self.skipped = [], []
        self.explain_seconds = dict.fromkeys(methods, 0.0)
        self.metric_seconds = 0.0
        self.n_done = 0
        self.bar = None

    def skip(self, method, metric, reason):
        if (method, metric, reason) not in self.skipped:
            self.skipped.append((method, metric, reason))

    def record(self, method, metric, start, values):
        values = np.asarray(values, dtype=np.float64)
        self.samples.append(pd.DataFrame({"method": method, "metric": metric, "sample":
                                          np.arange(start, start + len(values)),
                                          "value": values}))

    def explain_all(self, X, start, **options) -> dict:
        """Each remaining method's explanation of the chunk ``X`` (timed); a method that
        cannot explain is skipped from then on."""
        explanations = {name: given[start: start + len(X)] for name, given in
                        self.given.items()}
        for method in list(self.methods):
            self.bar.set_postfix_str(f"explaining: {method}", refresh=True)
            began = time.perf_counter()
            try:
                explanation = self.estimator.explain(
                    X, method=method, batch_size=self.options["batch_size"],
                    **options.get(method, {}))
            except (ValueError, TypeError, NotImplementedError) as error:
                self.skip(method, "all", f"explain failed: {error}")
                self.methods.remove(method)
                continue
            self.explain_seconds[method] += time.perf_counter() - began
            explanations[method] = explanation
            error = explanation.completeness_error
            if error is None:
                self.skip(method, "completeness_error",
                          "the explanation does not decompose the logit")
            else:
                self.record(method, "completeness_error", start, error)
        return explanations

    def score_plausibility(self, method, start, scores: list, rationales: list):
        convention, top_k = self.options["convention"], self.options["top_k"]
        rows = []
        for score, rationale in zip(scores, rationales, strict=True):
            rows.append((convention.auprc(rationale, score),
                         *convention.token_f1_iou(rationale, score, top_k)))
        columns = np.array(rows, float).reshape(-1, 3).T
        for name, values in zip(PLAUSIBILITY_METRICS, columns, strict=True):
            self.record(method, name, start, values)


class _TextEvaluation(_Evaluation):
    """Texts: erasure (comprehensiveness, sufficiency, leave-one-out) of every method in one
    batched pass per chunk and model view, stability under embedding noise, plausibility."""

    def run(self, X, start: int):
        options = self.options
        level, specials = options["level"], options["include_special_tokens"]
        explanations = self.explain_all(
            X, start, **{m: _level_options(self.estimator, m, level) for m in self.methods})
        if not explanations:
            return
        self.bar.set_postfix_str("scoring", refresh=True)
        began = time.perf_counter()
        units = text_units(self.estimator, X, level, specials)
        scores = {m: unit_scores(e, units) for m, e in explanations.items()}
        views: dict[str, list[str]] = {}
        for method in explanations:
            view = "model" if method in self.given else get_explainer(self.estimator,
                                                                      method).view
            views.setdefault(view, []).append(method)
        for view, methods in views.items():
            self._erasure(view, methods, units, scores, start)
        for method, explanation in explanations.items():
            if start < self.options["stability_samples"]:
                self._stability(method, explanation, units, scores[method], X, start)
            elif start == 0:
                self.skip(method, "stability_jsd", "stability_samples=0")
            if self.rationales is not None:
                self.score_plausibility(method, start, scores[method],
                                        self.check_rationales(units, start))
        self.metric_seconds += time.perf_counter() - began

    def check_rationales(self, units, start: int = 0) -> list:
        """The rationales of the chunk at ``start`` as bool arrays, one entry per unit."""
        word_pieces = any(s.any() for s in units.specials) or hasattr(self.estimator,
                                                                     "word_pieces")
        what = ("word of the text (words: whitespace-separated runs and single punctuation "
                "characters)" if self.options["level"] == "word" and word_pieces else "token")
        if word_pieces and self.options["level"] == "piece":
            what += (" (special tokens such as [CLS] / [SEP] included)"
                     if self.options["include_special_tokens"] else
                     " (special tokens such as [CLS] / [SEP] not counted: pass "
                     "include_special_tokens=True to count them)")
        return [_check_rationale(r, units.n_units(i), start + i, what)
                for i, r in enumerate(self.rationales[start: start + len(units.groups)])]

    def _erasure(self, view, methods, units, scores, start):
        convention = self.options["convention"]
        erasures = erase(self.estimator, units, {m: scores[m] for m in methods}, convention,
                         batch_size=self.options["batch_size"], view=view)
        for method in methods:
            for keep_top, name in ((False, "comprehensiveness"), (True, "sufficiency")):
                self.record(method, name, start, [
                    convention.aopc(np.array([d for d in sample if d is not None]), keep_top)
                    for sample in erasures.bins[method, keep_top]])
            self.record(method, "loo_kendall_tau", start, [
                convention.loo_tau(score, drops)
                for score, drops in zip(scores[method], erasures.leave_one_out, strict=True)])

    def _stability(self, method, explanation, units, scores, X, start):
        if method in self.given:
            self.skip(method, "stability_jsd", "a precomputed explanation is not recomputed "
                      "for perturbed inputs")
            return
        explainer = get_explainer(self.estimator, method)
        if "embedding_offset" not in explainer.options(public=False):
            self.skip(method, "stability_jsd", "the method cannot explain perturbed embeddings")
            return
        options = self.options
        offsets = embedding_offsets(
            self.estimator, units.inputs, "random", options["stability_radius"],
            labels=None, random_state=options["seed"] + start,
            batch_size=options["batch_size"], view=explainer.view)
        noisy = explainer.explain(self.estimator, X, target=explanation.target,
                                  batch_size=options["batch_size"], embedding_offset=offsets,
                                  **_level_options(self.estimator, method, options["level"]))
        self.record(method, "stability_jsd", start,
                    _jsd(scores, unit_scores(noisy, units)))


class _ImageEvaluation(_Evaluation):
    """Images: deletion and insertion (comprehensiveness, sufficiency), stability under
    input noise, plausibility against masks."""

    def run(self, X, start: int):
        options = self.options
        explanations = self.explain_all(X, start)
        if not explanations:
            return
        self.bar.set_postfix_str("scoring", refresh=True)
        began = time.perf_counter()
        for method, explanation in explanations.items():
            flipping = pixel_flipping(
                self.estimator, X, explanation=explanation,
                fractions=options["convention"].fractions, patch_size=options["patch_size"],
                batch_size=options["batch_size"]).frame
            self.record(method, "comprehensiveness", start, flipping.comprehensiveness)
            self.record(method, "sufficiency", start, flipping.sufficiency)
            if method in self.given:
                self.skip(method, "stability_jsd", "a precomputed explanation is not "
                          "recomputed for perturbed inputs")
            elif start >= options["stability_samples"]:
                if start == 0:
                    self.skip(method, "stability_jsd", "stability_samples=0")
            else:
                stability = image_stability(self.estimator, X, method, explanation=explanation,
                                            random_state=options["seed"] + start,
                                            batch_size=options["batch_size"])
                self.record(method, "stability_jsd", start, stability.frame.jsd)
            if self.rationales is not None:
                scores = [np.asarray(v, np.float64).ravel() for v in explanation.values]
                rationales = [
                    _check_rationale(r, s.size, start + i, "pixel (an H x W mask)")
                    for i, (r, s) in enumerate(zip(self.rationales[start: start + len(X)],
                                                   scores, strict=True))]
                self.score_plausibility(method, start, scores, rationales)
            else:
                for name in PLAUSIBILITY_METRICS:
                    self.skip(method, name, "no masks given (rationales=None)")
            self.skip(method, "loo_kendall_tau", "leave-one-out is defined for texts")
        self.metric_seconds += time.perf_counter() - began


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


def _ordered_skips(skipped: list, methods: list) -> pd.DataFrame:
    """What was not evaluated, ordered as ``methods`` and ``REPORT_METRICS``."""
    metrics = ["all", *REPORT_METRICS]
    rows = sorted(skipped, key=lambda row: (methods.index(row[0]), metrics.index(row[1])))
    return pd.DataFrame(rows, columns=["method", "metric", "reason"])


def _check_budget(max_samples, max_seconds):
    if max_samples is not None and not (isinstance(max_samples, (int, np.integer))
                                        and max_samples >= 1):
        raise ValueError(f"max_samples must be a positive integer or None, got "
                         f"{max_samples!r}.")
    if max_seconds is not None and not (isinstance(max_seconds, (int, float, np.number))
                                        and max_seconds > 0):
        raise ValueError(f"max_seconds must be a positive number or None, got "
                         f"{max_seconds!r}.")


def evaluate_explanations(
    estimator: NeuralClassifier,
    X: Sequence[str] | np.ndarray,
    y: ArrayLike | None = None,
    methods: str | Sequence[str] | None = None,
    rationales: Sequence[ArrayLike] | None = None,
    *,
    explanations: Mapping[str, TokenExplanation | ImageExplanation] | None = None,
    level: str = "piece",
    include_special_tokens: bool = False,
    convention: str = "eraser",
    batch_size: int | None = None,
    random_state: int | np.random.RandomState | None = None,
    fractions: Sequence[float] | np.ndarray | None = None,
    stability_radius: float = 1e-3,
    stability_samples: int | None = 64,
    top_k: int | None = None,
    patch_size: int | None = None,
    max_samples: int | None = None,
    max_seconds: float | None = None,
    verbose: int = 0,
) -> ExplanationReport:
    """Score every explanation method of an estimator: which explanation to trust.

    Every method explains the samples (their predicted classes), ``CHUNK_SIZE`` samples at a
    time (timed: ``seconds_per_sample``); each chunk is then scored:

    * texts: ``comprehensiveness`` and ``sufficiency`` (AOPC: the drop of the predicted
      class's probability when the top units are removed / when only they are kept, averaged
      over ``fractions``), ``loo_kendall_tau`` (rank agreement with leave-one-out importance;
      occlusion *is* leave-one-out, so it is reported but not ranked on) and, for methods that
      explain perturbed embeddings (attention, gradients, the perturbation methods),
      ``stability_jsd``: the JSD of the explanation under random noise of norm
      ``stability_radius`` on every token embedding (on the first ``stability_samples``).
      All erasures of all methods, and the leave-one-out variants (once per text, shared by
      the methods), are scored in one batched pass;
    * images: ``comprehensiveness`` (deletion) and ``sufficiency`` (insertion: only the top
      pixels or patches kept) by
      :func:`~interpretable.metrics.pixel_flipping`, and ``stability_jsd``
      under input noise (:func:`~interpretable.metrics.image_stability`,
      on the first ``stability_samples``);
    * ``completeness_error`` where the explanation has one (exact methods, integrated
      gradients): ``|Σ values + bias − logit|`` relative to the logit's scale;
    * with ``rationales``: ``auprc``, ``token_f1`` and ``token_iou``.

    A metric or method that cannot apply is left out and its reason recorded in ``skipped``.
    :meth:`ExplanationReport.summary` ranks the methods (:mod:`interpretable.metrics`).

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
        Methods from ``estimator.explain_methods`` (None: all; ``[]``: none, only
        ``explanations``).
    rationales : sequence of array-like or None, default=None
        Per sample a 0/1 array with one entry per unit: texts, per word of the text
        (``level="word"``) or per token (``level="piece"``; special tokens counted only with
        ``include_special_tokens=True``); images, a (H, W) pixel mask.
    explanations : dict of str to Explanation or None, default=None
        Explanations of ``X`` computed elsewhere (e.g. by another library, wrapped in a
        :class:`~interpretable.explanation.TokenExplanation` of the same units), scored under
        their names like the methods, without cost or stability (they cannot be recomputed).
    level : {"piece", "word"}, default="piece"
        Text units: the model's tokens, or the words of the text (the word-piece models: the
        pieces of a word are scored and erased together; other text models' tokens are
        words already).
    include_special_tokens : bool, default=False
        Make the special tokens of the word-piece models (``[CLS]``, ``[SEP]``) units that are
        scored, erased and given rationale entries (``level="piece"`` only); by default they
        stay in every input, unscored.
    convention : {"eraser", "ferret"}, default="eraser"
        Whose definitions (:mod:`interpretable.metrics`): ERASER's, or ferret
        0.4.2's Benchmark (its bins and bin skipping, only positive scores removed, trapezoid
        AUPRC, top-5 token F1 / IOU; texts only).
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).
    random_state : int, RandomState or None, default=None
        Seeds the stability noise.
    fractions : sequence of float or None, default=None
        The AOPC bins (None: the convention's; ERASER's are (0.01, 0.05, 0.1, 0.2, 0.5)).
    stability_radius : float, default=0.001
        The embedding noise of ``stability_jsd`` (texts).
    stability_samples : int or None, default=64
        Measure ``stability_jsd`` on the chunks of the first ``stability_samples`` samples
        only (None: all): it explains them once more, which for LIME or Kernel SHAP costs as
        much as their explanation; its row's ``n_samples`` says how many.
    top_k : int or None, default=None
        Units in the hard rationale of ``token_f1`` / ``token_iou`` (None: the convention's,
        ERASER: the rationale's size per sample; ferret: 5).
    patch_size : int or None, default=None
        Images: the side of the square patches deleted and inserted together (None: pixels).
    max_samples : int or None, default=None
        Evaluate at most the first ``max_samples`` samples.
    max_seconds : float or None, default=None
        A time budget: no new chunk of samples (``CHUNK_SIZE``, 32) is started once it is spent;
        the report holds the samples evaluated so far (with a warning).
    verbose : int, default=0
        > 0: a progress bar over the samples with the time remaining.

    Returns
    -------
    ExplanationReport
        One row per (method, metric), the per-sample values and the ranking.

    Raises
    ------
    ValueError
        If a method is unknown, no method explains ``X``, an option is invalid, or the
        rationales do not match the samples or their units.

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
    _check_budget(max_samples, max_seconds)
    if stability_samples is not None and not (isinstance(stability_samples, (int, np.integer))
                                              and stability_samples >= 0):
        raise ValueError(f"stability_samples must be an integer >= 0 or None, got "
                         f"{stability_samples!r}.")
    explanations = dict(explanations or {})
    for name, given in explanations.items():
        if name in methods or not hasattr(given, "values") or len(given) != len(X):
            raise ValueError(f"explanations[{name!r}] must be an explanation of the {len(X)} "
                             "samples of X under a name that is not one of the methods.")
    is_text = all(hasattr(estimator, name) for name in TEXT_MODEL_INTERFACE)
    conv = get_convention(convention)
    if not is_text and conv is not ERASER:
        raise ValueError(f"convention={convention!r} is defined for texts; images are scored "
                         "by deletion and insertion with convention='eraser'.")
    if fractions is not None:
        conv = replace(conv, fractions=tuple(_check_fractions(fractions).tolist()))
    if top_k is not None and not (isinstance(top_k, (int, np.integer)) and top_k >= 1):
        raise ValueError(f"top_k must be a positive integer or None, got {top_k!r}.")
    if is_text:
        check_level(level, include_special_tokens)
    samples = list(X) if is_text else X
    if rationales is not None and len(rationales) != len(samples):
        raise ValueError(f"rationales has {len(rationales)} samples but X has "
                         f"{len(samples)}.")
    options = {"batch_size": batch_size, "convention": conv, "explanations": explanations,
               "top_k": top_k, "level": level, "include_special_tokens": include_special_tokens,
               "patch_size": patch_size,
               "stability_radius": stability_radius,
               "stability_samples": np.inf if stability_samples is None else stability_samples,
               "seed": int(check_random_state(random_state).randint(2**31 - 1 - 2**24))}
    evaluation = (_TextEvaluation if is_text else _ImageEvaluation)(
        estimator, samples, methods, rationales, options)
    n = len(samples) if max_samples is None else min(len(samples), int(max_samples))
    if is_text and rationales is not None:  # fail before any explanation is computed
        evaluation.check_rationales(text_units(estimator, samples[:n], level,
                                               include_special_tokens))
    began = time.perf_counter()
    with _progress(n, verbose) as bar:
        evaluation.bar = bar
        for start in range(0, n, CHUNK_SIZE):
            if start and max_seconds is not None and time.perf_counter() - began > max_seconds:
                warnings.warn(f"evaluate_explanations: the budget of {max_seconds:g} s was "
                              f"spent after {start} of {n} samples; the report holds those.",
                              UserWarning, stacklevel=2)
                break
            chunk = samples[start: min(start + CHUNK_SIZE, n)]
            evaluation.run(chunk, start)
            evaluation.n_done = start + len(chunk)
            bar.set_postfix_str("", refresh=False)
            bar.update(len(chunk))
            if not evaluation.methods and not explanations:
                break
    if not evaluation.samples:
        raise ValueError("no method could explain X: "
                         f"{[reason for *_, reason in evaluation.skipped]}")
    done = [m for m in methods if m in evaluation.methods]
    for name in explanations:
        evaluation.skip(name, "seconds_per_sample", "precomputed: its cost is not known")
    timing = pd.DataFrame({"method": done, "mean": [evaluation.explain_seconds[m] /
                                                     evaluation.n_done for m in done],
                           "n_samples": evaluation.n_done})
    per_sample = pd.concat(evaluation.samples, ignore_index=True)
    return ExplanationReport(
        _summarise(per_sample, timing, [*methods, *explanations]), per_sample,
        _ordered_skips(evaluation.skipped, [*methods, *explanations]),
        seconds={"explanations": {m: evaluation.explain_seconds[m] for m in done},
                 "metrics": evaluation.metric_seconds})


def _progress(total: int, verbose: int):
    """A tqdm bar over the samples (silent with ``verbose=0``)."""
    from tqdm.auto import tqdm

    return tqdm(total=total, disable=not verbose, unit="sample", desc="evaluate_explanations")


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
    seconds : dict or None, default=None
        What the evaluation took: ``"explanations"`` (per method, the seconds of its explain
        calls) and ``"metrics"`` (the seconds spent scoring them).

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

    def __init__(self, frame: pd.DataFrame, samples: pd.DataFrame, skipped: pd.DataFrame,
                 seconds: dict[str, float | dict[str, float]] | None = None):
        self.frame, self.samples, self.skipped = frame, samples, skipped
        self.seconds = seconds

    def summary(self, *, confidence: float = 0.95, n_bootstrap: int = 1000,
                random_state: int = 0) -> pd.DataFrame:
        """Rank the methods: which explanation to trust, and how sure that is.

        The rule (:mod:`interpretable.metrics`): methods are ranked by their mean
        faithfulness, comprehensiveness − sufficiency per sample; each mean has a paired
        percentile-bootstrap interval over the samples, and the top two are not
        distinguishable when the interval of their difference contains 0; a method is
        ``undominated`` when no other is at least as good on faithfulness, stability,
        plausibility and cost and better on one. Measures that favour a method by
        construction (leave-one-out tau for occlusion) are flagged and never ranked on.

        Parameters
        ----------
        confidence : float, default=0.95
            The intervals' level.
        n_bootstrap : int, default=1000
            Bootstrap resamples of the samples.
        random_state : int, default=0
            Seeds the bootstrap.

        Returns
        -------
        DataFrame
            One row per method in rank order (see
            :func:`~interpretable.metrics.rank_methods`); ``attrs["verdict"]`` holds
            the decision in words.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.metrics import evaluate_explanations
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> report = evaluate_explanations(clf, X, methods=["inherent", "gradient"],
        ...                                fractions=(0.5,))
        >>> report.summary()["method"].size
        2
        """
        costs = self.frame[self.frame.metric == "seconds_per_sample"].set_index("method")["mean"]
        ranking = rank_methods(self.samples, costs, confidence=confidence,
                               n_bootstrap=n_bootstrap, random_state=random_state)
        ranking.attrs["verdict"] = verdict(ranking)
        return ranking

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
        ranking = self.summary()
        columns = [c for c in ("rank", "method", "faithfulness", "faithfulness_low",
                               "faithfulness_high", "stability_jsd", "auprc",
                               "seconds_per_sample", "undominated", "note")
                   if c in ranking]
        text = ranking.attrs["verdict"] + "\n\n" + ranking[columns].to_string(
            index=False, float_format="{:.4g}".format)
        text += "\n\nper metric:\n" + self.frame.to_string(index=False,
                                                          float_format="{:.4g}".format)
        if len(self.skipped):
            text += "\n\nnot evaluated:\n" + self.skipped.to_string(index=False)
        return text

    def _repr_html_(self) -> str:
        ranking = self.summary()
        html = (f"<p><b>{ranking.attrs['verdict']}</b></p>"
                + ranking.to_html(index=False, float_format="{:.4g}".format, na_rep="")
                + "<details><summary>Per metric</summary>"
                + self.frame.to_html(index=False, float_format="{:.4g}".format)
                + "</details>")
        if len(self.skipped):
            html += "<p>Not evaluated:</p>" + self.skipped.to_html(index=False)
        return html

    def plot(self, metrics: Sequence[str] | None = None, *,
             ax: Axes | Sequence[Axes] | np.ndarray | None = None) -> Figure:
        """Draw the ranking, or one panel per metric: each method's mean with its 95 % interval.

        Parameters
        ----------
        metrics : list of str or None, default=None
            The metrics shown (None: the ranking of :meth:`summary`, each method's
            faithfulness with its interval, the undominated methods marked).
        ax : Axes, sequence of Axes or None, default=None
            One Axes per metric (the ranking: one Axes) to draw into (None: a new figure).

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

        if metrics is None:
            return plot_ranking(self.summary(), ax=ax)
        metrics = list(metrics)
        if ax is None:
            ncols = min(len(metrics), 4)
            nrows = -(-len(metrics) // ncols)
            ax = Figure(figsize=(3.2 * ncols, 0.5 + 0.35 * nrows * self.frame.method.nunique()
                                 + nrows)).subplots(nrows, ncols, squeeze=False)
        axes = np.ravel(ax)
        if len(axes) < len(metrics):
            raise ValueError(f"ax has {len(axes)} Axes for {len(metrics)} metrics.")
        for axis, metric in zip(axes, metrics, strict=True):
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
