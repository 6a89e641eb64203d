"""The ranking of explanation methods (interpretable.metrics._ranking) on synthetic per-sample
values: the winner, indistinguishable runners-up, the Pareto set, flagged measures, unranked
methods, the bootstrap's reproducibility and intervals, the plot, errors and speed."""

import time

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from interpretable.metrics import _ranking as ranking_module
from interpretable.metrics._ranking import NOT_RANKED, plot_ranking, rank_methods, verdict


def make_samples(spec, n=100, seed=0):
    """Long-form samples: ``spec`` maps method -> metric -> (mean, sd) or an array."""
    rng = np.random.default_rng(seed)
    frames = []
    for method, metrics in spec.items():
        for metric, value in metrics.items():
            values = rng.normal(*value, n) if isinstance(value, tuple) else np.asarray(value)
            frames.append(pd.DataFrame({"method": method, "metric": metric,
                                        "sample": np.arange(len(values)), "value": values}))
    return pd.concat(frames, ignore_index=True)


def faithful(comprehensiveness, sufficiency, sd=0.05, **more):
    return {"comprehensiveness": (comprehensiveness, sd), "sufficiency": (sufficiency, sd),
            **more}


def test_a_method_best_on_every_measure_wins_and_is_ahead():
    samples = make_samples({
        "worse": faithful(0.3, 0.2, stability_jsd=(0.2, 0.02), auprc=(0.5, 0.05)),
        "best": faithful(0.6, 0.1, stability_jsd=(0.05, 0.02), auprc=(0.8, 0.05)),
        "worst": faithful(0.2, 0.3, stability_jsd=(0.3, 0.02), auprc=(0.4, 0.05)),
    })
    ranking = rank_methods(samples, {"best": 0.001, "worse": 0.01, "worst": 0.1})
    assert ranking.method.tolist() == ["best", "worse", "worst"]
    assert ranking["rank"].tolist() == [1, 2, 3] and ranking["rank"].dtype == "Int64"
    assert ranking.undominated.tolist() == [True, False, False]
    assert ranking.faithfulness[0] == pytest.approx(0.5, abs=0.02)
    mean, low, high = ranking.attrs["top_two_difference"]
    assert mean == pytest.approx(ranking.faithfulness[0] - ranking.faithfulness[1])
    assert 0 < low < mean < high
    text = verdict(ranking)
    assert text.startswith("Trust best:") and "ahead of worse" in text
    assert "not distinguishable" not in text and "Undominated" in text
    assert 1 <= text.count(". ") + 1 <= 3
    expected = ["rank", "method"] + [f"{m}{s}" for m in ("faithfulness", "comprehensiveness",
                                                          "sufficiency", "stability_jsd",
                                                          "auprc")
                                     for s in ("", "_low", "_high")] + \
        ["seconds_per_sample", "undominated", "n_samples", "note"]
    assert ranking.columns.tolist() == expected
    assert (ranking.n_samples == 100).all() and (ranking.note == "").all()


def test_identical_distributions_are_not_distinguishable():
    spec = faithful(0.5, 0.2, sd=0.1)
    samples = make_samples({"a": spec, "b": spec}, n=200)
    ranking = rank_methods(samples)
    mean, low, high = ranking.attrs["top_two_difference"]
    assert low < 0 < high
    text = verdict(ranking)
    assert "not distinguishable from" in text and "contains 0" in text
    assert not text.startswith("Trust")
    assert ranking.note[1] == f"not distinguishable from {ranking.method[0]}"
    # the very same values: a tie, kept in order of appearance, difference exactly 0
    copy = samples[samples.method == "a"].assign(method="b")
    tied = rank_methods(pd.concat([samples[samples.method == "a"], copy]))
    assert tied.method.tolist() == ["a", "b"]
    assert tied.attrs["top_two_difference"] == (0.0, 0.0, 0.0)
    assert "not distinguishable" in verdict(tied)


def test_pairing_separates_methods_whose_own_intervals_overlap():
    """Per-sample difficulty varies widely but b is 0.02 below a on every sample: the
    methods' intervals overlap, the paired difference's interval does not contain 0."""
    rng = np.random.default_rng(1)
    difficulty = rng.uniform(0, 0.8, 150)
    noise = rng.normal(0, 0.005, 150)
    samples = make_samples({
        "a": {"comprehensiveness": difficulty, "sufficiency": np.zeros(150)},
        "b": {"comprehensiveness": difficulty - 0.02 + noise, "sufficiency": np.zeros(150)}})
    ranking = rank_methods(samples)
    assert ranking.faithfulness_low[0] < ranking.faithfulness_high[1]  # overlap
    _, low, high = ranking.attrs["top_two_difference"]
    assert 0.015 < low < high < 0.025
    assert verdict(ranking).startswith("Trust a:")


def test_pareto_keeps_a_cheap_less_faithful_method():
    samples = make_samples({"faithful": faithful(0.7, 0.1), "cheap": faithful(0.4, 0.2),
                            "poor": faithful(0.3, 0.25)})
    costs = pd.Series({"faithful": 0.5, "cheap": 0.001, "poor": 0.6})
    ranking = rank_methods(samples, costs).set_index("method")
    assert ranking.undominated.to_dict() == {"faithful": True, "cheap": True, "poor": False}
    assert ranking.seconds_per_sample.to_dict() == costs.to_dict()
    assert "faithful and cheap" in verdict(ranking.reset_index())


def test_pareto_compares_methods_on_the_measures_they_share():
    """``inherent`` has no stability_jsd: against the others only faithfulness and cost
    count, so it dominates even the most stable method when it is better on both."""
    samples = make_samples({
        "inherent": faithful(0.6, 0.1),
        "gradient": faithful(0.5, 0.1, stability_jsd=(0.01, 0.001)),
        "attention": faithful(0.4, 0.1, stability_jsd=(0.001, 0.0001))})
    costs = {"inherent": 0.001, "gradient": 0.002, "attention": 0.003}
    ranking = rank_methods(samples, costs).set_index("method")
    assert ranking.undominated.to_dict() == {"inherent": True, "gradient": False,
                                             "attention": False}
    assert ranking.attrs["pareto_measures"] == ["faithfulness", "stability_jsd",
                                                "seconds_per_sample"]
    # gradient vs attention is decided on stability too: the most stable, once cheapest, is
    # undominated; gradient stays dominated by inherent
    ranking = rank_methods(samples, {**costs, "attention": 0.0005}).set_index("method")
    assert ranking.undominated.to_dict() == {"inherent": True, "gradient": False,
                                             "attention": True}


def test_loo_tau_of_occlusion_is_flagged_and_changes_nothing():
    spec = {"occlusion": faithful(0.5, 0.2, loo_kendall_tau=(0.95, 0.01)),
            "gradient": faithful(0.5, 0.15, loo_kendall_tau=(0.2, 0.1)),
            "attention": faithful(0.3, 0.2, loo_kendall_tau=(0.1, 0.1))}
    samples = make_samples(spec)
    costs = {"occlusion": 0.1, "gradient": 0.01, "attention": 0.001}
    ranking = rank_methods(samples, costs)
    occlusion = ranking.set_index("method").loc["occlusion"]
    assert "loo_kendall_tau favours occlusion by construction" in occlusion.note
    assert occlusion.loo_kendall_tau == pytest.approx(0.95, abs=0.01)  # shown
    assert ranking.attrs["flagged"] == [("loo_kendall_tau", "occlusion")]
    without = rank_methods(samples[samples.metric != "loo_kendall_tau"], costs)
    decision = ["rank", "method", "faithfulness", "faithfulness_low", "faithfulness_high",
                "undominated"]
    pd.testing.assert_frame_equal(ranking[decision], without[decision])
    assert ranking.attrs["top_two_difference"] == without.attrs["top_two_difference"]
    assert "loo_kendall_tau" not in ranking.attrs["pareto_measures"]


def test_flagging_is_extensible(monkeypatch):
    """A flagged Pareto measure is ignored for the method it favours; a flagged
    comprehensiveness unranks it."""
    samples = make_samples({"a": faithful(0.5, 0.1, auprc=(0.9, 0.01)),
                            "b": faithful(0.4, 0.1, auprc=(0.5, 0.01))})
    costs = {"a": 0.01, "b": 0.001}
    assert rank_methods(samples, costs).undominated.tolist() == [True, True]
    monkeypatch.setattr(ranking_module, "FAVOURED_BY_CONSTRUCTION", {"auprc": ("b",)})
    ranking = rank_methods(samples, costs)
    assert ranking.undominated.tolist() == [True, True]  # b: still cheaper
    assert "auprc favours b by construction" in ranking.note[1]
    monkeypatch.setattr(ranking_module, "FAVOURED_BY_CONSTRUCTION",
                        {"comprehensiveness": ("a",)})
    ranking = rank_methods(samples, costs)
    assert ranking.method.tolist() == ["b", "a"] and ranking["rank"].isna().tolist() == \
        [False, True]


def test_methods_without_faithfulness_are_listed_unranked():
    samples = make_samples({"blind": {"auprc": (0.9, 0.01)}, "gradient": faithful(0.5, 0.1),
                            "attention": faithful(0.4, 0.1)})
    ranking = rank_methods(samples, {"blind": 1e-6, "gradient": 0.1, "attention": 0.01,
                                     "timed_only": 1e-6})
    assert ranking.method.tolist() == ["gradient", "attention", "blind", "timed_only"]
    assert ranking["rank"].tolist()[:2] == [1, 2] and ranking["rank"].isna().tolist() == \
        [False, False, True, True]
    assert (ranking.note[2:] == NOT_RANKED).all() and ranking.n_samples.tolist() == \
        [100, 100, 0, 0]
    # a cheap method with no faithfulness score dominates none of the ranked ones
    assert ranking.undominated.tolist() == [True, True, False, False]
    assert "Trust gradient" in verdict(ranking)


def test_without_any_faithfulness_score_none_is_ranked():
    samples = make_samples({"a": {"auprc": (0.9, 0.01)}, "b": {"auprc": (0.5, 0.01)}})
    ranking = rank_methods(samples, {"a": 0.01, "b": 0.001})
    assert ranking["rank"].isna().all() and ranking.attrs["top_two_difference"] is None
    assert ranking.undominated.tolist() == [True, True]
    text = verdict(ranking)
    assert text.startswith("No method has a faithfulness score") and "a and b" in text
    assert plot_ranking(ranking).axes[0].get_title() == "No method has a faithfulness score"


def test_single_ranked_method():
    ranking = rank_methods(make_samples({"only": faithful(0.5, 0.1)}))
    assert ranking.attrs["top_two_difference"] is None
    assert verdict(ranking).startswith("Trust only, the only method")


def test_random_state_makes_it_reproducible():
    samples = make_samples({"a": faithful(0.5, 0.2, sd=0.2), "b": faithful(0.45, 0.2, sd=0.2)})
    first, again = rank_methods(samples, random_state=3), rank_methods(samples, random_state=3)
    pd.testing.assert_frame_equal(first, again)
    assert first.attrs == again.attrs
    other = rank_methods(samples, random_state=4)
    pd.testing.assert_series_equal(first.faithfulness, other.faithfulness)
    assert not np.allclose(first.faithfulness_low, other.faithfulness_low)
    legacy = rank_methods(samples, random_state=np.random.RandomState(0))
    assert legacy.method.tolist() == first.method.tolist()


def test_intervals_contain_the_mean_and_shrink_with_more_samples():
    spec = {"a": faithful(0.5, 0.2, sd=0.2, auprc=(0.6, 0.2)), "b": faithful(0.4, 0.2, sd=0.2)}
    small, large = (rank_methods(make_samples(spec, n=n)) for n in (30, 1000))
    for ranking in (small, large):
        for measure in ("faithfulness", "comprehensiveness", "sufficiency"):
            assert (ranking[f"{measure}_low"] < ranking[measure]).all()
            assert (ranking[measure] < ranking[f"{measure}_high"]).all()
    for measure in ("faithfulness", "auprc"):
        width = [(r[f"{measure}_high"] - r[f"{measure}_low"])[0] for r in (small, large)]
        assert width[1] < width[0] / 3  # about sqrt(1000 / 30) ≈ 5.8 times narrower
    assert small.attrs["confidence"] == 0.95
    narrow = rank_methods(make_samples(spec, n=30), confidence=0.5)
    assert (narrow.faithfulness_high - narrow.faithfulness_low <
            small.faithfulness_high - small.faithfulness_low).all()
    assert "50% interval" in verdict(narrow)


def test_missing_values_are_left_out_per_method():
    samples = make_samples({"a": faithful(0.5, 0.1), "b": faithful(0.4, 0.1)}, n=20)
    samples.loc[(samples.method == "b") & (samples.metric == "sufficiency") &
                (samples["sample"] < 5), "value"] = np.nan
    ranking = rank_methods(samples).set_index("method")
    assert ranking.n_samples.to_dict() == {"a": 20, "b": 15}
    rows = samples[samples.method == "b"].pivot(index="sample", columns="metric",
                                                values="value")
    assert ranking.faithfulness["b"] == pytest.approx(
        (rows.comprehensiveness - rows.sufficiency).mean())


def test_costs_default_to_the_cost_rows_of_samples():
    samples = make_samples({"a": {**faithful(0.5, 0.1), "seconds_per_sample": [0.02]},
                            "b": {**faithful(0.4, 0.1), "seconds_per_sample": [0.01]}})
    ranking = rank_methods(samples)
    assert ranking.seconds_per_sample.tolist() == [0.02, 0.01]
    assert "seconds_per_sample_low" not in ranking
    assert np.isnan(rank_methods(make_samples({"a": faithful(0.5, 0.1)}))
                    .seconds_per_sample[0])


def test_plot_draws_one_bar_per_method():
    samples = make_samples({"best": faithful(0.6, 0.1), "slow": faithful(0.3, 0.2),
                            "blind": {"auprc": (0.5, 0.1)}})
    ranking = rank_methods(samples, {"best": 0.01, "slow": 0.1, "blind": 0.1})
    figure = plot_ranking(ranking)
    assert isinstance(figure, Figure)
    axis = figure.axes[0]
    assert len(axis.patches) == 2  # one bar per ranked method
    assert [t.get_text() for t in axis.get_yticklabels()] == ["best", "slow", "blind"]
    assert axis.get_title() == "Most faithful: best"
    assert [p.get_hatch() for p in axis.patches] == [None, "///"]  # dominated: hatched
    assert [t.get_text() for t in axis.get_legend().get_texts()] == ["undominated",
                                                                     "dominated"]
    tied = rank_methods(make_samples({"a": faithful(0.5, 0.2), "b": faithful(0.5, 0.2)}))
    into = Figure().subplots()
    assert plot_ranking(tied, ax=into) is into.figure
    assert "not distinguishable" in into.get_title()


def test_errors():
    samples = make_samples({"a": faithful(0.5, 0.1)})
    with pytest.raises(ValueError, match="lacks the columns"):
        rank_methods(samples.drop(columns="sample"))
    with pytest.raises(ValueError, match="several values"):
        rank_methods(pd.concat([samples, samples.iloc[:1]]))
    with pytest.raises(ValueError, match="confidence"):
        rank_methods(samples, confidence=1.0)
    with pytest.raises(ValueError, match="n_bootstrap"):
        rank_methods(samples, n_bootstrap=0)
    with pytest.raises(ValueError, match="nothing to rank"):
        rank_methods(samples.iloc[:0])
    with pytest.raises(TypeError, match="DataFrame"):
        rank_methods(samples.to_dict())
    with pytest.raises(TypeError, match="costs"):
        rank_methods(samples, costs=[0.1])
    with pytest.raises(ValueError, match="rank_methods"):
        verdict(pd.DataFrame({"method": ["a"]}))


def test_ten_methods_three_hundred_samples_rank_in_well_under_a_second():
    rng = np.random.default_rng(0)
    metrics = ("comprehensiveness", "sufficiency", "stability_jsd", "auprc", "token_f1",
               "token_iou", "loo_kendall_tau", "completeness_error")
    samples = make_samples({f"m{i}": {m: rng.random(300) for m in metrics} for i in range(10)})
    costs = {f"m{i}": rng.random() for i in range(10)}
    start = time.perf_counter()
    ranking = rank_methods(samples, costs)
    assert time.perf_counter() - start < 1.0
    assert len(ranking) == 10 and ranking.shape[1] == 2 + 9 * 3 + 4
