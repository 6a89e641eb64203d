"""Which explanation method to trust: a ranking with a checkable rule, from the per-sample
values of :func:`~interpretable.metrics.evaluate_explanations`.

The rule, step by step:

1. **Faithfulness score.** For each method and sample, the faithfulness score is
   ``comprehensiveness − sufficiency``: the AOPC drop of the predicted class's probability
   when the top units are removed, minus the drop when only the top units are kept (both in
   probability units; higher is better). A method's score is its mean over the samples on
   which both metrics have a value.
2. **Ranking.** Methods are ranked by that mean, highest first; means equal to 9 decimals
   (what float rounding leaves between equivalent explanations) are ties, and the cheaper
   method ranks first (then the order the methods first appear in). The rule's other
   measures are compared to 6 significant digits. The methods are scored on the same samples
   (the same texts or images), so they are compared sample by sample: paired.
3. **Uncertainty.** A percentile bootstrap gives every mean an interval (by default 1000
   resamples of the samples with replacement, seeded, 95 % intervals): the interval runs
   from the 2.5th to the 97.5th percentile of the mean over the resamples. Every method is
   resampled with the same drawn samples, so the difference between the first and the
   second method's faithfulness gets an interval too. When that interval contains 0 the two
   are *not distinguishable*; otherwise the first is ahead.
4. **Undominated methods** (the Pareto set). The measures are the faithfulness score
   (higher is better), ``stability_jsd`` (lower is better; only the methods that explain
   perturbed embeddings have it), the plausibility ``auprc`` (higher is better; only when
   rationales were given) and the cost ``seconds_per_sample`` (lower is better). Method A
   dominates method B when A is at least as good as B on every measure both have and strictly
   better on at least one; a method is undominated when no other method dominates it. A
   method lacking a measure is compared with each other method on the measures the two
   share (two methods that share none do not dominate each other), using the means, not the
   intervals. Only ranked methods take part when some method is ranked (a method with no
   faithfulness score cannot be weighed against a faithful one on cost alone); otherwise all
   methods do.
5. **Shown, not used.** ``comprehensiveness``, ``sufficiency`` (apart from through the
   faithfulness score), ``token_f1``, ``token_iou``, ``loo_kendall_tau`` and
   ``completeness_error`` are reported with their intervals but play no part in the rule.
6. **Flagged measures.** A measure that favours a method by construction is reported for that
   method but flagged in its ``note`` and never used in the rule for it
   (:data:`FAVOURED_BY_CONSTRUCTION`: ``loo_kendall_tau`` for ``occlusion``, which *is*
   leave-one-out).
7. **Not ranked.** A method without a faithfulness score (no comprehensiveness or
   sufficiency, as for a model whose inputs cannot be erased) is listed after the ranked ones
   with the note "not ranked: no faithfulness score".

:func:`rank_methods` applies the rule, :func:`verdict` says its outcome in plain sentences
and :func:`plot_ranking` draws it.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_ranking", "rank_methods", "verdict"]

#: the per-method score the methods are ranked by
FAITHFULNESS = "faithfulness"
#: the measures reported besides the faithfulness score, in column order; only the faithfulness
#: score and :data:`PARETO_MEASURES` enter the rule
SHOWN_MEASURES = ("comprehensiveness", "sufficiency", "stability_jsd", "auprc", "token_f1",
                  "token_iou", "loo_kendall_tau", "completeness_error")
#: the measures of the Pareto comparison -> whether higher is better
PARETO_MEASURES = {FAITHFULNESS: True, "stability_jsd": False, "auprc": True,
                   "seconds_per_sample": False}
#: measure -> the methods it favours by construction: shown for them, flagged, never used in
#: the rule for them (flagging ``comprehensiveness`` or ``sufficiency`` unranks the method)
FAVOURED_BY_CONSTRUCTION = {"loo_kendall_tau": ("occlusion",)}
#: the cost, one timing per method (no interval)
COST = "seconds_per_sample"
NOT_RANKED = "not ranked: no faithfulness score"
#: faithfulness and AUPRC (probabilities) equal to this many decimals are ties
TIE_DECIMALS = 9
#: other measures of the rule equal to this many significant digits are ties
TIE_DIGITS = 6


def _check_samples(samples) -> pd.DataFrame:
    if not isinstance(samples, pd.DataFrame):
        raise TypeError(f"samples must be a DataFrame, got {type(samples).__name__}.")
    missing = [c for c in ("method", "metric", "sample", "value") if c not in samples]
    if missing:
        raise ValueError(f"samples lacks the columns {missing}; it needs method, metric, "
                         "sample and value (ExplanationReport.samples).")
    if (samples.metric == FAITHFULNESS).any():
        raise ValueError(f"samples has a metric {FAITHFULNESS!r}: it is computed here as "
                         "comprehensiveness − sufficiency.")
    duplicated = samples.duplicated(["method", "metric", "sample"])
    if duplicated.any():
        row = samples[duplicated].iloc[0]
        raise ValueError(f"samples has several values of method {row.method!r}, metric "
                         f"{row.metric!r}, sample {row['sample']!r}; give one per sample.")
    return samples


def _costs(costs, samples, methods) -> pd.Series:
    if costs is None:  # the cost rows of samples, if any
        rows = samples[samples.metric == COST]
        costs = rows.groupby("method", sort=False).value.mean()
    elif isinstance(costs, Mapping):
        costs = pd.Series(dict(costs), dtype=np.float64)
    elif not isinstance(costs, pd.Series):
        raise TypeError("costs must be a mapping or a Series method -> seconds per sample, "
                        f"got {type(costs).__name__}.")
    return costs.astype(np.float64).reindex(methods)


def _quantiles(values: np.ndarray, confidence: float, axis=0) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval of ``values`` along ``axis``, NaN where all are NaN."""
    alpha = (1 - confidence) / 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns: NaN
        low, high = np.nanquantile(values, [alpha, 1 - alpha], axis=axis)
    return low, high


def _bootstrap_means(values: np.ndarray, n_bootstrap: int, random_state) -> np.ndarray:
    """Means of the rows of ``values`` (rows, n) over ``n_bootstrap`` resamples of its columns,
    the same resample for every row; NaN entries are left out of each mean. Returns
    (n_bootstrap, rows)."""
    n = values.shape[1]
    if isinstance(random_state, np.random.RandomState):
        index = random_state.randint(0, n, size=(n_bootstrap, n))
    else:
        index = np.random.default_rng(random_state).integers(0, n, size=(n_bootstrap, n))
    # times each sample is drawn in each resample: the resampled mean of a row is
    # Σ count·value / Σ count over its non-NaN samples (a fancy-indexed mean, by one product)
    offsets = (index + n * np.arange(n_bootstrap)[:, None]).ravel()
    counts = np.bincount(offsets, minlength=n_bootstrap * n).reshape(n_bootstrap, n)
    counts = counts.astype(np.float64)
    scored = ~np.isnan(values)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ np.where(scored, values, 0.0).T) / (counts @ scored.T)


def _comparable(measure: str, values: np.ndarray) -> np.ndarray:
    """``values`` rounded to what the rule tells apart: probabilities (faithfulness, AUPRC) to
    :data:`TIE_DECIMALS` decimals, other measures to :data:`TIE_DIGITS` significant digits,
    so that float rounding between equivalent explanations is a tie."""
    values = np.asarray(values, dtype=np.float64)
    if measure in (FAITHFULNESS, "auprc"):
        return np.round(values, TIE_DECIMALS)
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = 10.0 ** (np.floor(np.log10(np.abs(values))) - (TIE_DIGITS - 1))
        return np.where(np.isfinite(scale) & (scale > 0), np.round(values / scale) * scale,
                        values)


def _undominated(measures: np.ndarray, taking_part: np.ndarray) -> np.ndarray:
    """Whether each row of ``measures`` (methods, measures; higher is better, NaN missing) is
    undominated among the rows ``taking_part``, comparing two rows on the measures both have."""
    result = np.zeros(len(measures), bool)
    for i in np.flatnonzero(taking_part):
        dominated = False
        for j in np.flatnonzero(taking_part):
            shared = ~np.isnan(measures[i]) & ~np.isnan(measures[j])
            if j != i and shared.any():
                a, b = measures[j, shared], measures[i, shared]
                if (a >= b).all() and (a > b).any():
                    dominated = True
                    break
        result[i] = not dominated
    return result


def rank_methods(samples: pd.DataFrame, costs: Mapping[str, float] | pd.Series | None = None, *,
                 confidence: float = 0.95, n_bootstrap: int = 1000,
                 random_state: int | np.random.Generator | np.random.RandomState | None = 0
                 ) -> pd.DataFrame:
    """Rank explanation methods by their faithfulness score, with bootstrap intervals.

    Applies the rule of :mod:`interpretable.metrics`: the faithfulness score of a
    sample is ``comprehensiveness − sufficiency``; methods are ranked by its mean; a paired
    percentile bootstrap gives every mean an interval and the difference between the first two
    methods one; a method is undominated when no other is at least as good on faithfulness,
    ``stability_jsd``, ``auprc`` and cost (the measures both have) and better on one.

    Parameters
    ----------
    samples : DataFrame
        The per-sample values in long form, as ``ExplanationReport.samples``: columns
        ``method``, ``metric``, ``sample`` and ``value`` (NaN: no value), at most one row per
        (method, metric, sample). The same ``sample`` is the same text or image for every
        method.
    costs : mapping, Series or None, default=None
        Method -> seconds per sample. None: the mean of the ``seconds_per_sample`` rows of
        ``samples`` if it has any, else no cost. A method in ``costs`` without samples is
        listed (not ranked).
    confidence : float, default=0.95
        The coverage of the percentile intervals, in (0, 1).
    n_bootstrap : int, default=1000
        The number of bootstrap resamples of the samples.
    random_state : int, numpy Generator, RandomState or None, default=0
        Seeds the resamples (the same value gives the same intervals).

    Returns
    -------
    DataFrame
        One row per method, the ranked ones first in rank order, then the unranked ones in the
        order they appear. Columns: ``rank`` (Int64, ``<NA>`` when not ranked), ``method``,
        ``faithfulness``, ``faithfulness_low`` and ``faithfulness_high`` (the mean and its
        interval), the same three columns for each measure of ``samples`` among
        ``comprehensiveness``, ``sufficiency``, ``stability_jsd``, ``auprc``, ``token_f1``,
        ``token_iou``, ``loo_kendall_tau`` and ``completeness_error`` (then any other
        metric, shown only), ``seconds_per_sample``, ``undominated`` (bool), ``n_samples``
        (the samples with a faithfulness score) and ``note`` (str, "" when nothing to say).
        ``attrs`` holds ``confidence``, ``n_bootstrap``, ``pareto_measures`` (those present),
        ``flagged`` (a list of (measure, method)) and ``top_two_difference``: the first
        method's faithfulness minus the second's, ``(mean, low, high)``, or None when fewer
        than two methods are ranked.

    Raises
    ------
    ValueError
        If ``samples`` lacks a column, has duplicated rows or holds no method, or if
        ``confidence`` or ``n_bootstrap`` is out of range.
    TypeError
        If ``samples`` is not a DataFrame or ``costs`` not a mapping or Series.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from interpretable.metrics import rank_methods
    >>> rng = np.random.default_rng(0)
    >>> means = {("gradient", "comprehensiveness"): 0.5, ("gradient", "sufficiency"): 0.1,
    ...          ("attention", "comprehensiveness"): 0.3, ("attention", "sufficiency"): 0.2}
    >>> samples = pd.concat([pd.DataFrame({"method": method, "metric": metric,
    ...                                    "sample": np.arange(40),
    ...                                    "value": rng.normal(mean, 0.1, 40)})
    ...                      for (method, metric), mean in means.items()])
    >>> ranking = rank_methods(samples, costs={"gradient": 2e-3, "attention": 1e-3})
    >>> ranking[["rank", "method", "undominated"]].values.tolist()
    [[1, 'gradient', True], [2, 'attention', True]]
    >>> bool(ranking.attrs["top_two_difference"][1] > 0)  # the interval excludes 0
    True
    """
    samples = _check_samples(samples)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}.")
    if isinstance(n_bootstrap, bool) or not isinstance(n_bootstrap, (int, np.integer)) \
            or n_bootstrap < 1:
        raise ValueError(f"n_bootstrap must be a positive integer, got {n_bootstrap!r}.")
    cost_keys = [] if costs is None or not hasattr(costs, "keys") else list(costs.keys())
    methods = list(dict.fromkeys([*pd.unique(samples.method), *cost_keys]))
    if not methods:
        raise ValueError("samples holds no method and costs names none: nothing to rank.")
    cost = _costs(costs, samples, methods).to_numpy()
    samples = samples[samples.metric != COST]
    metrics = list(pd.unique(samples.metric))
    shown = [m for m in SHOWN_MEASURES if m in metrics] + \
        [m for m in metrics if m not in SHOWN_MEASURES]
    measures = [FAITHFULNESS, *shown]
    sample_ids = pd.unique(samples["sample"])

    # values (methods, measures, samples), NaN where missing
    values = np.full((len(methods), len(measures), len(sample_ids)), np.nan)
    values[pd.Index(methods).get_indexer(samples.method),
           pd.Index(measures).get_indexer(samples.metric),
           pd.Index(sample_ids).get_indexer(samples["sample"])] = \
        samples.value.to_numpy(np.float64)
    flagged = [(measure, method) for measure, favoured in FAVOURED_BY_CONSTRUCTION.items()
               for method in favoured if method in methods and measure in measures and
               not np.isnan(values[methods.index(method), measures.index(measure)]).all()]
    if {"comprehensiveness", "sufficiency"} <= set(measures):
        values[:, 0] = values[:, measures.index("comprehensiveness")] - \
            values[:, measures.index("sufficiency")]
    for measure, method in flagged:  # never in the rule for the method it favours
        if measure in ("comprehensiveness", "sufficiency"):
            values[methods.index(method), 0] = np.nan

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a measure a method lacks: NaN
        mean = np.nanmean(values, axis=2) if len(sample_ids) else \
            np.full(values.shape[:2], np.nan)
    if len(sample_ids):
        boot = _bootstrap_means(values.reshape(-1, len(sample_ids)), n_bootstrap,
                                random_state).reshape(n_bootstrap, *values.shape[:2])
        low, high = _quantiles(boot, confidence)
    else:
        boot, low, high = None, mean.copy(), mean.copy()

    faithfulness = mean[:, 0]
    ranked = np.flatnonzero(~np.isnan(faithfulness))
    ties_by_cost = np.where(np.isnan(cost), np.inf, cost)[ranked]
    ranked = ranked[np.lexsort((ties_by_cost, -_comparable(FAITHFULNESS,
                                                            faithfulness[ranked])))]
    order = [*ranked, *(i for i in range(len(methods)) if i not in set(ranked))]

    top_two = None
    if len(ranked) >= 2:
        first, second = ranked[:2]
        d_low, d_high = _quantiles(boot[:, first, 0] - boot[:, second, 0], confidence)
        top_two = (float(faithfulness[first] - faithfulness[second]), float(d_low),
                   float(d_high))

    # Pareto: the rule's measures, higher is better, NaN where missing or flagged
    pareto = {FAITHFULNESS: faithfulness, COST: cost,
              **{m: mean[:, measures.index(m)] for m in PARETO_MEASURES if m in measures}}
    pareto_names = [m for m in PARETO_MEASURES if m in pareto and
                    not np.isnan(pareto[m]).all()]
    table = np.column_stack([_comparable(m, pareto[m] if PARETO_MEASURES[m] else -pareto[m])
                             for m in pareto_names]) if pareto_names else \
        np.full((len(methods), 0), np.nan)
    for measure, method in flagged:
        if measure in pareto_names:
            table[methods.index(method), pareto_names.index(measure)] = np.nan
    taking_part = ~np.isnan(faithfulness) if len(ranked) else np.ones(len(methods), bool)
    undominated = _undominated(table, taking_part)

    notes: list[list[str]] = [[] for _ in methods]
    for measure, method in flagged:
        notes[methods.index(method)].append(
            f"{measure} favours {method} by construction (shown, not used)")
    if top_two is not None and top_two[1] <= 0 <= top_two[2]:
        notes[ranked[1]].append(f"not distinguishable from {methods[ranked[0]]}")
    for i in range(len(methods)):
        if np.isnan(faithfulness[i]):
            notes[i].insert(0, NOT_RANKED)

    columns = {"rank": pd.array([np.flatnonzero(ranked == i)[0] + 1 if i in ranked else None
                                 for i in order], dtype="Int64"),
               "method": [methods[i] for i in order]}
    for k, measure in enumerate(measures):
        columns[measure] = mean[order, k]
        columns[f"{measure}_low"] = low[order, k]
        columns[f"{measure}_high"] = high[order, k]
    columns[COST] = cost[order]
    columns["undominated"] = undominated[order]
    columns["n_samples"] = (~np.isnan(values[order, 0])).sum(axis=1).astype(np.int64)
    columns["note"] = ["; ".join(notes[i]) for i in order]
    ranking = pd.DataFrame(columns)
    ranking.attrs.update(confidence=float(confidence), n_bootstrap=int(n_bootstrap),
                         pareto_measures=pareto_names, flagged=flagged,
                         top_two_difference=top_two)
    return ranking


def _number(value: float) -> str:
    return f"{value:.3g}"


def _interval(low: float, high: float, confidence: float) -> str:
    return f"{confidence:.0%} interval {_number(low)} to {_number(high)}"


def _listing(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def verdict(ranking: pd.DataFrame) -> str:
    """Say in plain sentences which explanation method to trust and why.

    Names the first method with its faithfulness score and interval, says whether the
    runner-up is distinguishable from it (their difference and its interval), lists the
    undominated methods and states the rule in one clause. The confidence level is the one
    ``ranking`` was computed at.

    Parameters
    ----------
    ranking : DataFrame
        The result of :func:`rank_methods` (its ``attrs`` included).

    Returns
    -------
    str
        One to three sentences.

    Raises
    ------
    ValueError
        If ``ranking`` does not come from :func:`rank_methods` (no ``attrs``) or is empty.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from interpretable.metrics import rank_methods, verdict
    >>> rng = np.random.default_rng(0)
    >>> samples = pd.concat([pd.DataFrame({"method": method, "metric": metric,
    ...                                    "sample": np.arange(40),
    ...                                    "value": rng.normal(mean, 0.1, 40)})
    ...                      for method, metric, mean in [
    ...                          ("gradient", "comprehensiveness", 0.5),
    ...                          ("gradient", "sufficiency", 0.1),
    ...                          ("attention", "comprehensiveness", 0.3),
    ...                          ("attention", "sufficiency", 0.2)]])
    >>> print(verdict(rank_methods(samples)))  # doctest: +ELLIPSIS
    Trust gradient: it has the highest faithfulness score (comprehensiveness − sufficiency), ...
    """
    if "top_two_difference" not in ranking.attrs or "confidence" not in ranking.attrs:
        raise ValueError("ranking must be the DataFrame rank_methods returns, with its attrs.")
    if not len(ranking):
        raise ValueError("ranking has no method.")
    confidence = ranking.attrs["confidence"]
    ranked = ranking[ranking["rank"].notna()]
    sentences = []
    if len(ranked):
        first = ranked.iloc[0]
        score = (f"{_number(first.faithfulness)} "
                 f"({_interval(first.faithfulness_low, first.faithfulness_high, confidence)})")
        if len(ranked) == 1:
            sentences.append(f"Trust {first.method}, the only method with a faithfulness score "
                             f"(comprehensiveness − sufficiency): {score}.")
        else:
            second = ranked.iloc[1]
            difference, low, high = ranking.attrs["top_two_difference"]
            gap = f"{_number(difference)} ({_interval(low, high, confidence)}"
            if low <= 0 <= high:
                sentences.append(
                    f"{first.method} has the highest faithfulness score (comprehensiveness − "
                    f"sufficiency), {score}, but is not distinguishable from {second.method}: "
                    f"their difference is {gap}, which contains 0), so weigh the two on the "
                    "other measures.")
            else:
                sentences.append(
                    f"Trust {first.method}: it has the highest faithfulness score "
                    f"(comprehensiveness − sufficiency), {score}, ahead of {second.method} by "
                    f"{gap}, which excludes 0).")
    else:
        sentences.append("No method has a faithfulness score (comprehensiveness and "
                         "sufficiency), so none is ranked.")
    undominated = ranking.method[ranking.undominated].tolist()
    measures = [m.replace(FAITHFULNESS, "faithfulness score").replace(COST, "cost")
                for m in ranking.attrs["pareto_measures"]]
    if undominated and measures:
        sentences.append(f"Undominated (no other method is at least as good on "
                         f"{_listing(measures)} and better on one): {_listing(undominated)}.")
    if len(ranked):
        sentences.append(f"Rule: methods are ranked by their mean faithfulness score over "
                         f"{int(ranked.n_samples.max())} paired samples, with {confidence:.0%} "
                         "percentile-bootstrap intervals.")
    return " ".join(sentences)


def plot_ranking(ranking: pd.DataFrame, *, ax: Axes | None = None) -> Figure:
    """Draw each method's faithfulness score with its interval, undominated methods filled.

    One horizontal bar per method in rank order (methods without a faithfulness score are
    labelled "not ranked" and have no bar), with the bootstrap interval as error bars; an
    undominated method's bar is filled, a dominated one's is hatched. The title names the
    first method, or says that the first two are not distinguishable.

    Parameters
    ----------
    ranking : DataFrame
        The result of :func:`rank_methods`.
    ax : Axes or None, default=None
        The Axes to draw into (None: a new figure).

    Returns
    -------
    Figure
        The figure drawn into; it is not shown.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from interpretable.metrics import plot_ranking, rank_methods
    >>> rng = np.random.default_rng(0)
    >>> samples = pd.concat([pd.DataFrame({"method": method, "metric": metric,
    ...                                    "sample": np.arange(40),
    ...                                    "value": rng.normal(mean, 0.1, 40)})
    ...                      for method, metric, mean in [
    ...                          ("gradient", "comprehensiveness", 0.5),
    ...                          ("gradient", "sufficiency", 0.1),
    ...                          ("attention", "comprehensiveness", 0.3),
    ...                          ("attention", "sufficiency", 0.2)]])
    >>> figure = plot_ranking(rank_methods(samples))
    >>> len(figure.axes[0].patches), figure.axes[0].get_title()
    (2, 'Most faithful: gradient')
    """
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    if ax is None:
        ax = Figure(figsize=(6.4, 1.2 + 0.4 * len(ranking))).subplots()
    positions = np.arange(len(ranking))
    scored = ranking["rank"].notna().to_numpy()
    rows = ranking[scored]
    mean = rows.faithfulness.to_numpy(np.float64)
    error = np.clip([mean - rows.faithfulness_low.to_numpy(np.float64),
                     rows.faithfulness_high.to_numpy(np.float64) - mean], 0, None)
    filled = rows.undominated.to_numpy(bool)
    bars = ax.barh(positions[scored], mean, xerr=error, color="C0", edgecolor="C0",
                   error_kw={"ecolor": "0.2", "capsize": 3})
    for bar, undominated in zip(bars, filled, strict=True):
        if not undominated:
            bar.set_facecolor("none")
            bar.set_hatch("///")
    for position in positions[~scored]:
        ax.text(0.01, position, "not ranked", va="center", fontsize=8, color="0.4",
                transform=ax.get_yaxis_transform())
    ax.set_yticks(positions, ranking.method.tolist())
    ax.invert_yaxis()
    ax.axvline(0, color="0.6", linewidth=0.8)
    confidence = ranking.attrs.get("confidence", 0.95)
    ax.set_xlabel(f"faithfulness score (comprehensiveness − sufficiency) ↑, "
                  f"{confidence:.0%} interval", fontsize=9)
    ax.legend(handles=[Patch(facecolor="C0", edgecolor="C0", label="undominated"),
                       Patch(facecolor="none", edgecolor="C0", hatch="///",
                             label="dominated")], fontsize=8, loc="best")
    top_two = ranking.attrs.get("top_two_difference")
    if not len(rows):
        title = "No method has a faithfulness score"
    elif top_two is not None and top_two[1] <= 0 <= top_two[2]:
        title = f"{rows.method.iloc[0]} first, not distinguishable from {rows.method.iloc[1]}"
    else:
        title = f"Most faithful: {rows.method.iloc[0]}"
    ax.set_title(title, fontsize=9)
    figure = ax.figure
    figure.tight_layout()
    return figure
