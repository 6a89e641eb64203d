"""Stability of explanations and predictions (SEAT, Hu et al. 2023; Yin et al. 2022).

For every sample: the Jensen-Shannon divergence (natural log, in [0, ln 2]) between the
explanation before and after a perturbation, and the total variation distance between the
predicted class distributions. Explanations become distributions as ``|a| / Σ|a|`` (attention
weights are already distributions). Perturbations: random or adversarial noise on the word
embeddings (:func:`embedding_stability`), synonym substitution (:func:`word_stability`) and
retraining with other random seeds (:func:`seed_stability`).

Estimators and explanation methods as in :mod:`interpretable.metrics`; results are
:class:`AnalysisResult` ``(frame, summary)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from interpretable.estimators.methods import get_explainer
from interpretable.metrics._common import (
    AnalysisResult,
    check_text_model,
    explanation_matrix,
    model_view,
    predict_probabilities,
)
from interpretable.metrics._divergences import jensen_shannon_rows, total_variation
from interpretable.metrics._embedding_noise import EMBEDDING_NOISE, embedding_offsets
from interpretable.nn import check_clamp

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.text import TextClassifierBase

__all__ = ["embedding_stability", "word_stability", "seed_stability"]


def explanation_distributions(scores: np.ndarray, lengths) -> np.ndarray:
    """``(n, T)`` attributions -> distributions ``|a| / Σ|a|`` over each row's real tokens
    (uniform when a row is all zero)."""
    scores = np.abs(np.asarray(scores, dtype=np.float64))
    real = np.arange(scores.shape[1])[None] < np.asarray(lengths)[:, None]
    scores = np.where(real, scores, 0.0)
    total = scores.sum(1, keepdims=True)
    uniform = real / real.sum(1, keepdims=True).clip(min=1)
    return np.where(total > 0, scores / np.where(total > 0, total, 1.0), uniform)


def _result(jsd, tvd, extra: dict | None = None, group: str | None = None) -> AnalysisResult:
    frame = pd.DataFrame({"jsd": jsd, "tvd": tvd, **(extra or {})})
    frame.insert(0, "sample", frame.pop("sample") if "sample" in frame else np.arange(len(frame)))
    summary = {"mean_jsd": float(frame.jsd.mean()), "median_jsd": float(frame.jsd.median()),
               "mean_tvd": float(frame.tvd.mean()), "median_tvd": float(frame.tvd.median()),
               "n_samples": int(frame["sample"].nunique())}
    if group is not None:
        summary["by_" + group] = frame.groupby(group)[["jsd", "tvd"]].mean()
    return AnalysisResult(frame, summary)


def _probabilities(clf, X, view: str) -> np.ndarray:
    """Class probabilities ``(n, C)`` of the model behind ``view``."""
    return predict_probabilities(clf, clf.encode(X).inputs, view=view).double().numpy()


def embedding_stability(clf: TextClassifierBase, X: Sequence[str] | ArrayLike,
                        radius: float = 1e-3, method: str | None = None, kind: str = "random",
                        steps: int = 10, random_state: int = 0, batch_size: int | None = None,
                        n_steps: int = 50, *, y: ArrayLike | None = None, norm: str = "linf",
                        step_size: float | None = None, clamp: tuple[float, float] | None = None,
                        tvd: str = "sum") -> AnalysisResult:
    """Stability of explanations and predictions under perturbation of the word embeddings.

    SEAT, Table 1. ``kind``: every token's embedding moves by ``‖δ_t‖₂ = radius`` in a random
    direction (``"random"``), or within that ball by ``steps`` of PGD maximising the change of
    the predicted distribution (``"adversarial"``), or by the authors' attack (``"pgd"``, Hu et
    al.'s code, :func:`~interpretable.nn._attacks.embedding_pgd`). Explanations are compared by
    JSD (natural log), predictions by TVD.

    Parameters
    ----------
    clf : fitted text classifier
        Any estimator of :mod:`interpretable.estimators` that classifies texts.
    X : sequence of str of shape (n_samples,)
        The texts.
    radius : float, default=0.001
        The size of the perturbation.
    method : str or None, default=None
        The attention or a gradient method (None: the estimator's default; gradient methods
        target the clean prediction).
    kind : {"random", "adversarial", "pgd"}, default="random"
        The perturbation.
    steps : int, default=10
        Attack steps (``"adversarial"``, ``"pgd"``).
    random_state : int, default=0
        Seeds the random directions and starts.
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).
    n_steps : int, default=50
        Integration steps of ``method="integrated_gradients"``.
    y : array-like of shape (n_samples,) or None, default=None
        Gold labels the ``"pgd"`` attack ascends ``½|y − p_y|`` of (None: the clean
        predictions).
    norm : {"linf", "l2"}, default="linf"
        The ``"pgd"`` ball: ``|δ|∞ ≤ r`` (the authors' choice) or ``‖δ_t‖₂ ≤ r`` per token.
    step_size : float or None, default=None
        The ``"pgd"`` step (None: ``2r/steps``).
    clamp : tuple of float or None, default=None
        ``(lo, hi)``: perturbed embeddings clamped into ``[lo, hi]`` (the authors': ``(0, 1)``,
        destructive).
    tvd : {"sum", "single"}, default="sum"
        ``"sum"``: ``½‖p − q‖₁`` over the classes; ``"single"``: ``½|p_c − q_c|`` of the clean
        predicted class only, the authors' convention.

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample with ``jsd`` (explanations) and ``tvd`` (predictions);
        ``summary``: their means and medians and ``n_samples``.

    See Also
    --------
    word_stability : Stability under word substitutions.
    seed_stability : Stability against training randomness.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import embedding_stability
    >>> result = embedding_stability(clf, X, radius=0.01)
    >>> result.frame.columns.tolist()
    ['sample', 'jsd', 'tvd']
    >>> result.summary["n_samples"]
    4
    """
    clf = check_text_model(clf, "embedding_stability")
    if not radius >= 0:
        raise ValueError(f"radius must be >= 0, got {radius!r}.")
    if kind not in EMBEDDING_NOISE:
        raise ValueError(f"kind must be one of {list(EMBEDDING_NOISE)}, got {kind!r}.")
    if tvd not in ("sum", "single"):
        raise ValueError(f"tvd must be 'sum' or 'single', got {tvd!r}.")
    if kind != "pgd" and (y is not None or clamp is not None):
        raise ValueError(f"y and clamp are options of kind='pgd', not of kind={kind!r}.")
    check_clamp(clamp)
    explainer = get_explainer(clf, method)
    if "embedding_offset" not in explainer.options(public=False):
        raise ValueError(f"embedding_stability perturbs embeddings, so it needs the attention or "
                         f"a gradient method; got method={explainer.name!r}.")
    view = explainer.view
    inputs = clf.encode(X).inputs
    lengths = inputs["lengths"].numpy()
    options = {"n_steps": n_steps} if "n_steps" in explainer.options() else {}
    clean = explainer.explain(clf, X, batch_size=batch_size, **options)
    p = predict_probabilities(clf, inputs, batch_size=batch_size, view=view)
    labels = p.argmax(1) if y is None else y
    delta = embedding_offsets(clf, inputs, kind, radius, labels=labels, steps=steps,
                              step_size=step_size, norm=norm, clamp=clamp,
                              random_state=random_state, batch_size=batch_size, view=view)
    pert = explainer.explain(clf, X, target=clean.target, batch_size=batch_size,
                             embedding_offset=delta, **options)
    q = predict_probabilities(clf, inputs, embedding_offset=delta, batch_size=batch_size,
                              view=view)
    real = np.arange(inputs["tokens"].shape[1])[None] < lengths[:, None]
    jsd = jensen_shannon_rows(
        explanation_distributions(explanation_matrix(clean, lengths), lengths),
        explanation_distributions(explanation_matrix(pert, lengths), lengths), real)
    p, q = p.numpy(), q.numpy()
    if tvd == "single":
        rows, predicted = np.arange(len(p)), p.argmax(1)
        p, q = p[rows, predicted][:, None], q[rows, predicted][:, None]
    return _result(jsd, total_variation(p, q))


# ---------------------------------------------------------------------------- words
def word_stability(clf: TextClassifierBase, X: Sequence[str] | ArrayLike,
                   perturber: Any,  # a scikit-learn transformer of texts (duck-typed)
                   method: str | None = None) -> AnalysisResult:
    """Stability of explanations and predictions under word perturbation (SEAT, Table 3).

    ``perturber`` rewrites ``X``; explanations of the clean and perturbed texts (both for the
    clean prediction) are compared token by token by JSD (word by word, summing word pieces,
    when a substitution changed the number of word pieces), predictions by TVD.

    Parameters
    ----------
    clf : fitted text classifier
        Any estimator of :mod:`interpretable.estimators` that classifies texts.
    X : sequence of str of shape (n_samples,)
        The texts.
    perturber : transformer of texts
        E.g. :class:`~interpretable.preprocessing.SynonymSubstitution` (fitted here if needed).
    method : str or None, default=None
        Explanation method (None: the estimator's default).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample with ``jsd``, ``tvd`` and, for a perturber with
        ``substitute`` (such as ``SynonymSubstitution``), ``n_changed`` (the replaced words);
        ``summary``: means and medians.

    Raises
    ------
    TypeError
        If ``perturber`` is not a transformer of texts.
    ValueError
        If the perturbation changed the number of words of a text.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from interpretable.metrics import word_stability
    >>> swap = FunctionTransformer(lambda texts: [t.replace("movie", "film") for t in texts])
    >>> result = word_stability(clf, X, swap)
    >>> result.frame.columns.tolist()
    ['sample', 'jsd', 'tvd']
    """
    clf = check_text_model(clf, "word_stability")
    if not hasattr(perturber, "transform"):
        raise TypeError("perturber must be a transformer of texts, got "
                        f"{type(perturber).__name__}.")
    try:
        check_is_fitted(perturber)
    except NotFittedError:
        perturber = clone(perturber).fit(X)
    if hasattr(perturber, "substitute"):
        X_pert, positions = perturber.substitute(X)
        n_changed = np.array([len(p) for p in positions])
    else:
        X_pert = perturber.transform(X)
        n_changed = None
    view = model_view(clf, method)
    clean = clf.explain(X, method=method)
    pert = clf.explain(X_pert, target=clean.target, method=method)
    p, q = _probabilities(clf, X, view), _probabilities(clf, X_pert, view)
    rows_a, rows_b, bad = [], [], []
    for i, (ta, tb) in enumerate(zip(clean.units, pert.units, strict=True)):
        a, b = np.abs(clean.values[i]), np.abs(pert.values[i])
        if len(ta) != len(tb):  # a word split into other word pieces: compare whole words
            a, b = _merge_word_pieces(ta, a), _merge_word_pieces(tb, b)
        if len(a) != len(b):
            bad.append(i)
        rows_a.append(a)
        rows_b.append(b)
    if bad:
        raise ValueError(
            f"the perturbation changed the number of words of samples {bad[:5]}; word "
            "stability compares explanations token by token."
        )
    lengths = np.array([len(a) for a in rows_a])
    A = explanation_distributions(_pad_rows(rows_a, lengths), lengths)
    B = explanation_distributions(_pad_rows(rows_b, lengths), lengths)
    jsd = jensen_shannon_rows(A, B, np.arange(A.shape[1])[None] < lengths[:, None])
    extra = {} if n_changed is None else {"n_changed": n_changed}
    return _result(jsd, total_variation(p, q), extra)


def _merge_word_pieces(tokens, values) -> np.ndarray:
    """Sum the values of word pieces (``##`` continuations) into one value per word."""
    starts = np.array([not t.startswith("##") for t in tokens])
    starts[0] = True
    return np.bincount(np.cumsum(starts) - 1, weights=values)


def _pad_rows(rows, lengths) -> np.ndarray:
    out = np.zeros((len(rows), int(lengths.max())))
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


# ---------------------------------------------------------------------------- seeds
def seed_stability(estimator: TextClassifierBase, X: Sequence[str] | ArrayLike, y: ArrayLike,
                   seeds: Sequence[int] = (0, 1, 2),
                   X_eval: Sequence[str] | ArrayLike | None = None,
                   method: str | None = None) -> AnalysisResult:
    """Stability of explanations and predictions against training randomness (SEAT, Fig. 2).

    ``estimator`` is cloned and fitted on ``(X, y)`` with ``random_state`` = each seed; the
    first seed is the base model. For every other seed and sample of ``X_eval``: JSD between
    its explanation and the base model's (both for the base prediction) and TVD between the
    predictions. ``max_attention`` is the base explanation's largest weight (the paper bins by
    it).

    Parameters
    ----------
    estimator : text classifier
        The estimator to clone and fit (fitted or not).
    X : sequence of str of shape (n_samples,)
        Training texts.
    y : array-like of shape (n_samples,)
        Training labels.
    seeds : tuple of int, default=(0, 1, 2)
        The seeds; the first gives the base model.
    X_eval : sequence of str or None, default=None
        The texts compared (None: ``X``).
    method : str or None, default=None
        Explanation method (None: the estimator's default).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per seed and sample with ``jsd``, ``tvd``, ``seed`` and
        ``max_attention``; ``summary``: means, medians, ``by_seed`` and ``base_seed``.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import seed_stability
    >>> result = seed_stability(clf, X, y, seeds=(0, 1))
    >>> result.frame.columns.tolist()
    ['sample', 'jsd', 'tvd', 'seed', 'max_attention']
    """
    seeds = list(seeds)
    if len(seeds) < 2:
        raise ValueError(f"seed_stability needs at least two seeds, got {seeds!r}.")
    X_eval = X if X_eval is None else X_eval
    models = [clone(estimator).set_params(random_state=s).fit(X, y) for s in seeds]
    base = check_text_model(models[0], "seed_stability")
    view = model_view(base, method)
    ref = base.explain(X_eval, method=method)
    p = _probabilities(base, X_eval, view)
    lengths = np.array([len(t) for t in ref.units])
    A = explanation_distributions(explanation_matrix(ref, lengths), lengths)
    real = np.arange(A.shape[1])[None] < lengths[:, None]
    parts = []
    for seed, model in zip(seeds[1:], models[1:], strict=True):
        other = model.explain(X_eval, target=ref.target, method=method)
        q = _probabilities(model, X_eval, view)
        B = explanation_distributions(explanation_matrix(other, lengths), lengths)
        parts.append(pd.DataFrame({"sample": np.arange(len(lengths)), "seed": seed,
                                   "jsd": jensen_shannon_rows(A, B, real),
                                   "tvd": total_variation(p, q),
                                   "max_attention": A.max(1)}))
    frame = pd.concat(parts, ignore_index=True)
    result = _result(frame.jsd.to_numpy(), frame.tvd.to_numpy(),
                     {"sample": frame["sample"].to_numpy(), "seed": frame.seed.to_numpy(),
                      "max_attention": frame.max_attention.to_numpy()}, group="seed")
    result.summary["base_seed"] = seeds[0]
    return result
