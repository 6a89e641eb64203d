"""The explanation report: plausibility against hand-computed values, leave-one-out through
``predict_proba``, the report's schema and views, its scorers in a grid search, its errors."""

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure
from sklearn.model_selection import GridSearchCV

from interpretable import BcosViTClassifier, EmbeddingBagClassifier
from interpretable.datasets import make_planted_evidence_texts, make_textured_digits
from interpretable.metrics import (
    ExplanationReport,
    evaluate_explanations,
    loo_kendall_tau,
    make_explanation_scorer,
    make_plausibility_scorer,
    plausibility,
)
from interpretable.metrics._report import REPORT_COLUMNS, REPORT_METRICS, leave_one_out


@pytest.fixture(scope="module")
def planted():
    data = make_planted_evidence_texts(n_samples=200, random_state=0)
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=10, lr=3e-2, random_state=0)
    return data, clf.fit(data.data[:160], data.target[:160])


def test_planted_evidence_texts_mark_their_evidence_words():
    data = make_planted_evidence_texts(n_samples=30, n_classes=3, random_state=1)
    for text, label, rationale in zip(data.data, data.target, data.rationale, strict=True):
        words = np.array(text.split(" "))
        assert len(words) == len(rationale) and rationale.sum() >= 1
        assert set(words[rationale == 1]) <= set(data.evidence_words[label])
        assert not set(words[rationale == 0]) & {w for ws in data.evidence_words.values()
                                                   for w in ws}
    again = make_planted_evidence_texts(n_samples=30, n_classes=3, random_state=1)
    assert again.data == data.data
    with pytest.raises(ValueError, match="n_classes"):
        make_planted_evidence_texts(n_classes=9)


def test_plausibility_matches_hand_computed_values():
    scores = [np.array([0.9, 0.1, 0.5, -0.2]), np.array([-1.0, -2.0, 3.0]), np.array([1.0, 2.0])]
    rationales = [[1, 0, 0, 1], [True, True, False], [0, 0]]
    frame = plausibility(scores, rationales).frame
    # sample 0: ranks 1(+), 2(-), 3(-), 4(+): AP = .5·1 + .5·(2/4); top-2 {0, 2}: one hit
    # sample 1: ranks 1(-), 2(+), 3(+): AP = .5·(1/2) + .5·(2/3); top-2 keeps only the positive
    # score (unit 2, not in the rationale): no hit; sample 2: no rationale, NaN
    np.testing.assert_allclose(frame.auprc[:2], [0.75, 0.25 + 1 / 3])
    np.testing.assert_allclose(frame.token_f1[:2], [2 * 1 / (2 + 2), 0.0])
    np.testing.assert_allclose(frame.token_iou[:2], [1 / 3, 0.0])
    assert frame.iloc[2, 1:].isna().all()
    summary = plausibility(scores, rationales).summary
    assert summary["n_samples"] == 2 and summary["auprc"] == pytest.approx((0.75 + 7 / 12) / 2)
    top1 = plausibility(scores[:1], rationales[:1], top_k=1).frame  # P = {0}
    assert (top1.token_f1[0], top1.token_iou[0]) == pytest.approx((2 / 3, 1 / 2))
    image = plausibility(np.array([[[0.9, 0.1], [-0.2, 0.8]]]), [np.eye(2, dtype=bool)]).frame
    assert image.iloc[0, 1:].tolist() == [1.0, 1.0, 1.0]


def test_plausibility_rejects_bad_rationales():
    scores = [np.zeros(3), np.zeros(2)]
    with pytest.raises(ValueError, match="sample 1 has 3 entries but its explanation has 2"):
        plausibility(scores, [[1, 0, 0], [1, 0, 0]])
    with pytest.raises(ValueError, match="sample 0 must hold only 0 / 1"):
        plausibility(scores, [[2, 0, 0], [1, 0]])
    with pytest.raises(ValueError, match="rationales has 1 samples but the explanation has 2"):
        plausibility(scores, [[1, 0, 0]])
    with pytest.raises(ValueError, match="top_k"):
        plausibility(scores, [[1, 0, 0], [1, 0]], top_k=0)


def test_leave_one_out_is_the_drop_of_predict_proba(planted):
    data, clf = planted
    X = ["superb the film", "dreadful", "a story about boring people"]
    drops = leave_one_out(clf, clf.encode(X).inputs)
    proba = clf.predict_proba(X)
    for i, text in enumerate(X):
        words = text.split()
        c = proba[i].argmax()
        expected = [proba[i, c] - clf.predict_proba([" ".join(words[:t] + words[t + 1:])])[0, c]
                    for t in range(len(words))] if len(words) > 1 else [0.0]
        np.testing.assert_allclose(drops[i, :len(words)], expected, atol=1e-6)
        assert not drops[i, len(words):].any()
    tau = loo_kendall_tau(clf, X).frame.kendall_tau
    assert np.isnan(tau[1]) and -1 <= tau[0] <= 1  # one word: no ranking
    assert not leave_one_out(clf, clf.encode(["superb", "dreadful"]).inputs).any()


def test_report_schema_and_skipped_metrics(planted):
    data, clf = planted
    X, R = data.data[160:176], data.rationale[160:176]
    report = evaluate_explanations(clf, X, rationales=R, fractions=(0.2, 0.5), random_state=0)
    frame = report.to_frame()
    assert list(frame.columns) == list(REPORT_COLUMNS)
    assert frame.dtypes.astype(str).tolist() == [
        "object", "object", "object", "float64", "float64", "float64", "int64", "bool"]
    assert not frame.duplicated(["method", "metric"]).any()
    assert list(dict.fromkeys(frame.method)) == list(clf.explain_methods)
    skipped = set(zip(report.skipped.method, report.skipped.metric, strict=True))
    evaluated = set(zip(frame.method, frame.metric, strict=True)) | skipped
    assert evaluated == {(m, k) for m in clf.explain_methods for k in REPORT_METRICS}
    assert ("inherent", "stability_jsd") in skipped
    assert ("gradient", "completeness_error") in skipped
    assert (frame.n_samples <= len(X)).all()
    row = frame.set_index(["method", "metric"]).loc[("inherent", "auprc")]
    direct = plausibility(clf.explain(X), R).frame.auprc
    assert row["mean"] == pytest.approx(direct.mean())
    assert row["sem"] == pytest.approx(direct.std(ddof=1) / np.sqrt(len(X)))
    assert frame.set_index("metric").higher_is_better.to_dict()["sufficiency"] == False  # noqa
    samples = report.samples.query("method == 'inherent' and metric == 'auprc'")
    np.testing.assert_allclose(samples.value, direct)


def test_inherent_explanations_find_the_planted_evidence(planted):
    data, clf = planted
    X, R = data.data[160:], data.rationale[160:]
    report = evaluate_explanations(clf, X, methods="inherent", rationales=R, fractions=(0.5,))
    scores = report.to_frame().set_index("metric")["mean"]
    rng = np.random.default_rng(0)
    chance = plausibility([rng.normal(size=len(r)) for r in R], R).summary
    assert scores["auprc"] > chance["auprc"] + 0.25
    assert scores["token_f1"] > chance["token_f1"] + 0.25
    assert scores["loo_kendall_tau"] > 0.5  # the exact contributions rank as erasure does


def test_report_errors(planted):
    data, clf = planted
    X = data.data[:4]
    with pytest.raises(ValueError, match=r"unknown methods \['guided_backprop'\].*'inherent', "
                                         r"'gradient'"):
        evaluate_explanations(clf, X, methods=["inherent", "guided_backprop"])
    with pytest.raises(ValueError, match="rationales has 3 samples but X has 4"):
        evaluate_explanations(clf, X, rationales=data.rationale[:3])
    bad = [*data.rationale[:2], np.append(data.rationale[2], 0), data.rationale[3]]
    with pytest.raises(ValueError, match=r"the rationale of sample 2 has 14 entries but 13 were "
                                         r"expected: one 0/1 entry per token\.$"):
        evaluate_explanations(clf, X, methods="inherent", rationales=bad)
    with pytest.raises(ValueError, match="no method could explain X: .*explain failed"):
        evaluate_explanations(clf, [3, 4], methods="inherent")


def test_report_views(planted):
    data, clf = planted
    report = evaluate_explanations(clf, data.data[:6], methods=["inherent", "gradient"],
                                   rationales=data.rationale[:6], fractions=(0.5,))
    assert isinstance(report, ExplanationReport)
    html = report._repr_html_()
    assert "<table" in html and "token_iou" in html and "not evaluated" in html.lower()
    assert "seconds_per_sample" in str(report) and "gradient" in str(report)
    figure = report.plot()  # the ranking: one bar per method
    assert isinstance(figure, Figure)
    assert len(figure.axes) == 1 and len(figure.axes[0].patches) >= 2
    axes = Figure().subplots(1, 2)
    assert report.plot(["auprc", "sufficiency"], ax=axes) is axes[0].figure
    assert [t.get_text() for t in axes[0].get_yticklabels()] == ["inherent", "gradient"]
    with pytest.raises(ValueError, match="ax has 2 Axes for 3 metrics"):
        report.plot(["auprc", "sufficiency", "token_f1"], ax=axes)


def test_scorers_in_grid_search(planted):
    data, _ = planted
    X, y, R = data.data[:80], data.target[:80], data.rationale[:80]
    scoring = {"accuracy": "accuracy",
               "auprc": make_plausibility_scorer("auprc", X, R),
               "token_iou": make_plausibility_scorer("token_iou", X, R, method="gradient"),
               "kendall_tau": make_explanation_scorer("kendall_tau")}
    search = GridSearchCV(EmbeddingBagClassifier(embed_dim=8, lr=3e-2, random_state=0),
                          {"max_epochs": [1, 6]}, scoring=scoring, refit="auprc", cv=2)
    results = pd.DataFrame(search.fit(X, y).cv_results_)
    for name, (lo, hi) in {"auprc": (0, 1), "token_iou": (0, 1), "kendall_tau": (-1, 1)}.items():
        assert results[f"mean_test_{name}"].between(lo, hi).all(), name
    fold = search.best_estimator_
    assert scoring["auprc"](fold, X[:10], y[:10]) == pytest.approx(
        plausibility(fold.explain(X[:10]), R[:10]).summary["auprc"])
    with pytest.raises(ValueError, match="samples \\[0\\] of X are not among"):
        scoring["auprc"](fold, ["an unseen text"], [0])
    with pytest.raises(ValueError, match="sample 1 of X occurs earlier with another rationale"):
        make_plausibility_scorer("auprc", [X[0], X[0]], [R[0], 1 - R[0]])
    with pytest.raises(ValueError, match="metric must be one of"):
        make_plausibility_scorer("f1", X, R)


def test_image_report_uses_the_digit_masks():
    digits = make_textured_digits(n_samples=24, size=16, random_state=0)
    clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                            max_epochs=1, random_state=0).fit(digits.data, digits.target)
    report = evaluate_explanations(clf, digits.data[:6], methods=clf.explain_methods[:1],
                                   rationales=digits.mask[:6], random_state=0)
    frame = report.to_frame().set_index("metric")
    assert {"comprehensiveness", "sufficiency", "stability_jsd", "auprc", "token_f1",
            "token_iou", "completeness_error"} <= set(frame.index)
    assert frame.loc["completeness_error", "mean"] < 1e-3  # B-cos: exact contributions
    assert report.skipped.set_index("metric").reason["loo_kendall_tau"].startswith(
        "leave-one-out is defined for texts")
    with pytest.raises(ValueError, match="the rationale of sample 0 has 64 entries but 256 were "
                                         "expected: one 0/1 entry per pixel"):
        evaluate_explanations(clf, digits.data[:2], methods=clf.explain_methods[:1],
                              rationales=np.ones((2, 8, 8), bool))


def test_image_report_without_masks_ranks_and_lists_what_it_skipped():
    digits = make_textured_digits(n_samples=24, size=16, random_state=0)
    clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                            max_epochs=1, random_state=0).fit(digits.data, digits.target)
    methods = ["inherent", "input_x_gradient"]
    report = evaluate_explanations(clf, digits.data[:5], methods=methods, random_state=0,
                                   patch_size=4)
    assert set(report.to_frame().metric) == {"comprehensiveness", "sufficiency",
                                             "stability_jsd", "completeness_error",
                                             "seconds_per_sample"}
    skipped = report.skipped.groupby("metric").method.apply(set)
    assert skipped["auprc"] == skipped["token_f1"] == set(methods)
    ranking = report.summary()
    assert ranking["rank"].tolist() == [1, 2] and set(ranking.method) == set(methods)
    assert ranking.attrs["verdict"] in str(report)
    with pytest.raises(ValueError, match="convention='ferret' is defined for texts"):
        evaluate_explanations(clf, digits.data[:2], convention="ferret")
