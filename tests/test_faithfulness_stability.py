"""Faithfulness and stability pipelines (interpretable.metrics) and their sklearn scorers."""

import copy

import numpy as np
import pytest
import torch
from gensim.models import KeyedVectors
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

from interpretable import AttentionTextClassifier, DiversityLSTMClassifier, SEATClassifier
from interpretable.estimators.seat import SEAT, Vanilla
from interpretable.explanation import TokenExplanation
from interpretable.metrics import (
    comprehensiveness,
    embedding_stability,
    make_explanation_scorer,
    make_stability_scorer,
    seed_stability,
    sensitivity,
    sufficiency,
    top_k_overlap,
    word_stability,
)
from interpretable.metrics._erasure import compact
from interpretable.preprocessing import SynonymSubstitution

SMALL = dict(embed_dim=12, hidden_size=12, max_epochs=6, batch_size=16, lr=2e-2, device="cpu",
             random_state=0)
POLAR = {"great", "wonderful", "superb", "moving", "brilliant",
         "awful", "boring", "dull", "terrible", "lifeless"}


@pytest.fixture(scope="module")
def model(sentiment_data):
    X, y = sentiment_data
    return AttentionTextClassifier(encoder="rnn", **SMALL).fit(X, y)


@pytest.fixture(scope="module")
def texts(sentiment_data):
    return sentiment_data[0][:40]


def _oracle(clf, X, reverse=False):
    """Explanation putting all weight on the sentiment word (or everywhere else)."""
    tokens = clf.encode(X).units
    att = [np.array([float((t in POLAR) != reverse) for t in toks]) for toks in tokens]
    n = len(tokens)
    return TokenExplanation(units=tokens, values=att, target=np.zeros(n),
                            prediction=np.zeros(n), method="oracle")


# ---------------------------------------------------------------------- faithfulness
def test_compact_removes_tokens_and_repads():
    inputs = {"tokens": torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]]), "lengths": torch.tensor([3, 2])}
    keep = torch.tensor([[True, False, True, False], [False, True, False, False]])
    out = compact(inputs, keep)
    assert out["tokens"].tolist() == [[5, 7, 0, 0], [9, 0, 0, 0]]
    assert out["lengths"].tolist() == [2, 1]


def test_erasure_metrics_rank_explanations(model, texts):
    good, bad = _oracle(model, texts), _oracle(model, texts, reverse=True)
    fr = (0.1, 0.3)
    comp_good = comprehensiveness(model, texts, explanation=good, fractions=fr)
    comp_bad = comprehensiveness(model, texts, explanation=bad, fractions=fr)
    suff_good = sufficiency(model, texts, explanation=good, fractions=fr)
    suff_bad = sufficiency(model, texts, explanation=bad, fractions=fr)
    # removing the sentiment word hurts; keeping only it suffices
    assert comp_good.summary["aopc"] > comp_bad.summary["aopc"] + 0.2
    assert suff_good.summary["aopc"] < suff_bad.summary["aopc"] - 0.2
    assert list(comp_good.frame.columns) == ["sample", "k=0.1", "k=0.3", "aopc"]
    assert len(comp_good.frame) == len(texts)
    np.testing.assert_allclose(comp_good.frame.aopc,
                               comp_good.frame[["k=0.1", "k=0.3"]].mean(axis=1))
    # the model's own attention is a method like any other
    for method in ("attention", "gradient"):
        res = sufficiency(model, texts, method=method, fractions=fr)
        assert np.isfinite(res.summary["aopc"])


def test_erasure_never_empties_a_text(model):
    res = comprehensiveness(model, ["great"], fractions=(1.0,))
    assert res.frame["aopc"].tolist() == [0.0]  # the only token cannot be removed
    suff = sufficiency(model, ["great", "the awful movie"], fractions=(1.0,))
    np.testing.assert_allclose(suff.frame["aopc"], 0.0, atol=1e-6)  # keeping 100%: no change


def test_sensitivity_prefers_the_important_tokens(model, texts):
    good = sensitivity(model, texts, explanation=_oracle(model, texts), fractions=(0.1,),
                       max_radius=20.0, n_search=6)
    bad = sensitivity(model, texts, explanation=_oracle(model, texts, reverse=True),
                      fractions=(0.1,), max_radius=20.0, n_search=6)
    assert good.summary["mean"] < bad.summary["mean"]
    assert ((good.frame.sensitivity > 0) & (good.frame.sensitivity <= 20.0)).all()
    res = sensitivity(model, texts[:8], method="integrated_gradients", n_search=3, pgd_steps=2)
    assert set(res.summary["by_fraction"]) == {"k=0.1", "k=0.2", "k=0.3", "k=0.4", "k=0.5"}


def test_top_k_overlap_metric():
    w = [np.array([0.5, 0.3, 0.1, 0.1]), np.array([0.6, 0.4])]
    wt = [np.array([0.1, 0.3, 0.4, 0.2]), np.array([0.4, 0.6])]
    np.testing.assert_allclose(top_k_overlap(w, wt, k=2), [0.5, 1.0])
    np.testing.assert_allclose(top_k_overlap(w, wt, k=1), [0.0, 0.0])
    with pytest.raises(ValueError, match="same number of tokens"):
        top_k_overlap(w, [wt[0], np.ones(3)], k=2)


# ---------------------------------------------------------------------- stability
def test_embedding_stability(model, texts):
    zero = embedding_stability(model, texts, radius=0.0)
    np.testing.assert_allclose(zero.frame[["jsd", "tvd"]], 0.0, atol=1e-9)
    small = embedding_stability(model, texts, radius=0.01)
    large = embedding_stability(model, texts, radius=0.5)
    adv = embedding_stability(model, texts, radius=0.5, kind="adversarial")
    assert 0 < small.summary["mean_jsd"] < large.summary["mean_jsd"]
    assert 0 < small.summary["mean_tvd"] < large.summary["mean_tvd"] < adv.summary["mean_tvd"]
    again = embedding_stability(model, texts, radius=0.5)
    assert again.summary == large.summary  # seeded noise
    grad = embedding_stability(model, texts, radius=0.5, method="input_x_gradient")
    assert grad.summary["mean_jsd"] > 0
    assert list(large.frame.columns) == ["sample", "jsd", "tvd"]


def test_embedding_stability_authors_attack(model, texts, sentiment_data):
    y = np.asarray(sentiment_data[1][:40])
    zero = embedding_stability(model, texts, radius=0.0, kind="pgd", y=y)
    np.testing.assert_allclose(zero.frame[["jsd", "tvd"]], 0.0, atol=1e-9)
    pgd = embedding_stability(model, texts, radius=0.05, kind="pgd", y=y)
    single = embedding_stability(model, texts, radius=0.05, kind="pgd", y=y, tvd="single")
    # the authors' TVD of one output is half the two-class sum, the attack (seeded) the same
    np.testing.assert_allclose(single.frame.tvd, pgd.frame.tvd / 2, atol=1e-7)  # float32
    np.testing.assert_array_equal(single.frame.jsd, pgd.frame.jsd)
    # gradient ascent beats random directions of the l-inf ball's corner norm (r * sqrt(E))
    rand = embedding_stability(model, texts, radius=0.05 * np.sqrt(12), kind="random")
    assert pgd.summary["mean_tvd"] > 2 * rand.summary["mean_tvd"]
    large = embedding_stability(model, texts, radius=0.5, kind="pgd", y=y)
    assert pgd.summary["mean_jsd"] < large.summary["mean_jsd"]
    clamped = embedding_stability(model, texts, radius=0.05, kind="pgd", y=y, clamp=(0, 1))
    assert clamped.summary["mean_tvd"] > pgd.summary["mean_tvd"]  # the clamp is destructive
    # without labels the attack targets the predictions
    predicted = model.predict(texts)
    np.testing.assert_array_equal(
        embedding_stability(model, texts, radius=0.05, kind="pgd").frame,
        embedding_stability(model, texts, radius=0.05, kind="pgd", y=predicted).frame)
    # the scorer hands its y to the attack
    scorer = make_stability_scorer("embedding", quantity="tvd", noise="pgd", radius=0.05)
    assert scorer(model, texts, y) == pytest.approx(-pgd.summary["mean_tvd"])


@pytest.fixture(scope="module")
def tiny_vectors():
    words = ["great", "superb", "awful", "dreadful", "movie", "film", "plot", "story"]
    vecs = np.eye(8, dtype=np.float32)
    for a, b in [(0, 1), (2, 3), (4, 5), (6, 7)]:  # nearest-neighbour pairs
        vecs[b] = vecs[a] + 0.1 * vecs[b]
    kv = KeyedVectors(vector_size=8)
    kv.add_vectors(words, vecs)
    return kv


def test_word_stability(model, tiny_vectors):
    X = ["the great movie", "an awful plot really", "the movie was great"]
    res = word_stability(model, X, SynonymSubstitution(1, tiny_vectors, random_state=0))
    assert res.frame.n_changed.tolist() == [1, 1, 1]
    assert (res.frame.jsd > 0).all() and (res.frame.tvd >= 0).all()
    none = word_stability(model, ["the the the", "a and a"],
                          SynonymSubstitution(1, tiny_vectors, random_state=0))
    np.testing.assert_allclose(none.frame[["jsd", "tvd"]], 0.0, atol=1e-12)


def test_seed_stability(sentiment_data):
    X, y = sentiment_data
    est = AttentionTextClassifier(encoder="rnn", **{**SMALL, "max_epochs": 3})
    same = seed_stability(est, X[:80], y[:80], seeds=(0, 0), X_eval=X[:10])
    np.testing.assert_allclose(same.frame[["jsd", "tvd"]], 0.0, atol=1e-9)  # reproducible fits
    diff = seed_stability(est, X[:80], y[:80], seeds=(0, 1, 2), X_eval=X[:10])
    assert diff.summary["mean_jsd"] > 0 and diff.summary["mean_tvd"] > 0
    assert len(diff.frame) == 20 and set(diff.frame.seed) == {1, 2}
    assert diff.summary["by_seed"].shape == (2, 2)
    with pytest.raises(ValueError, match="two seeds"):
        seed_stability(est, X, y, seeds=(0,))


def test_metrics_take_diversity_lstm_and_seat_vanilla_view(sentiment_data, texts):
    X, y = sentiment_data
    div = DiversityLSTMClassifier(**{**SMALL, "max_epochs": 3}).fit(X, y)
    assert np.isfinite(sufficiency(div, texts, fractions=(0.2,)).summary["aopc"])
    assert np.isfinite(embedding_stability(div, texts, radius=0.1).summary["mean_jsd"])
    seat = SEATClassifier(encoder="rnn", variant=SEAT(pgd_steps=2),
                          **{**SMALL, "max_epochs": 3}).fit(X, y)
    a = comprehensiveness(seat, texts, method="attention", fractions=(0.2,))
    v = comprehensiveness(seat, texts, method="vanilla", fractions=(0.2,))
    # the vanilla view equals a plain model holding the vanilla attention layer
    plain = copy.deepcopy(seat)
    plain.module_.attention = plain.module_.vanilla_attention
    v_direct = comprehensiveness(plain, texts, method="attention", fractions=(0.2,))
    assert v.summary == v_direct.summary
    assert a.frame.shape == v.frame.shape


# ---------------------------------------------------------------------- scorers
def test_grid_search_with_explanation_and_stability_scorers(sentiment_data):
    X, y = sentiment_data
    scoring = {"accuracy": "accuracy",
               "sufficiency": make_explanation_scorer("sufficiency", fractions=(0.2,)),
               "comprehensiveness": make_explanation_scorer("comprehensiveness", fractions=(0.2,)),
               "stability": make_stability_scorer("embedding", radius=1e-2)}
    grid = GridSearchCV(SEATClassifier(encoder="rnn", **{**SMALL, "max_epochs": 3}),
                        {"variant": [Vanilla(), SEAT(pgd_steps=2)]}, scoring=scoring,
                        refit="accuracy", cv=2)
    grid.fit(X, y)
    res = grid.cv_results_
    for name in scoring:
        assert np.isfinite(res[f"mean_test_{name}"]).all()
    assert (res["mean_test_sufficiency"] <= 0.05).all()  # negated: greater is better
    assert (res["mean_test_stability"] <= 0).all()
    assert grid.best_estimator_.predict(X[:3]).shape == (3,)


def test_scorer_values_match_metrics(model, texts):
    scorer = make_explanation_scorer("sufficiency", fractions=(0.2,))
    assert scorer(model, texts) == pytest.approx(
        -sufficiency(model, texts, fractions=(0.2,)).summary["aopc"])
    tvd = make_stability_scorer("embedding", quantity="tvd", radius=0.1)
    assert tvd(model, texts) == pytest.approx(
        -embedding_stability(model, texts, radius=0.1).summary["mean_tvd"])
    assert repr(scorer) == ("make_explanation_scorer('sufficiency', method=None, "
                            "fractions=(0.2,))")


# ---------------------------------------------------------------------- bad input
def test_bad_input(model, texts, sentiment_data):
    X, y = sentiment_data
    with pytest.raises(TypeError, match="needs a text classifier"):
        sufficiency(LogisticRegression(), texts)
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        sufficiency(AttentionTextClassifier(), texts)
    with pytest.raises(ValueError, match="fractions"):
        comprehensiveness(model, texts, fractions=(0.0, 0.5))
    with pytest.raises(ValueError, match="explanation of sample 0 has 5 units but the text has 8"):
        sufficiency(model, texts[:2], explanation=_oracle(model, texts[2:4]))
    with pytest.raises(ValueError, match="samples"):
        sufficiency(model, texts[:3], explanation=_oracle(model, texts[:2]))
    with pytest.raises(TypeError, match="TokenExplanation"):
        sufficiency(model, texts[:2], explanation=[np.ones(3)])
    with pytest.raises(ValueError, match="kind"):
        embedding_stability(model, texts, kind="gaussian")
    with pytest.raises(ValueError, match="radius"):
        embedding_stability(model, texts, radius=-1.0)
    with pytest.raises(ValueError, match="method"):
        embedding_stability(model, texts, method="deeplift")
    with pytest.raises(ValueError, match="options of kind='pgd'"):
        embedding_stability(model, texts, y=y[:40])
    with pytest.raises(ValueError, match="clamp"):
        embedding_stability(model, texts, kind="pgd", clamp=(1, 0))
    with pytest.raises(ValueError, match="tvd"):
        embedding_stability(model, texts, tvd="double")
    with pytest.raises(ValueError, match="one label per sample"):
        embedding_stability(model, texts, kind="pgd", y=y[:3])
    with pytest.raises(ValueError, match="unknown to the model"):
        embedding_stability(model, texts, kind="pgd", y=["x"] * len(texts))
    with pytest.raises(ValueError, match="norm"):
        embedding_stability(model, texts, kind="pgd", norm="l1")
    with pytest.raises(TypeError, match="perturber"):
        word_stability(model, texts, perturber=3)
    with pytest.raises(ValueError, match="metric"):
        make_explanation_scorer("fidelity")
    with pytest.raises(ValueError, match="perturber"):
        make_stability_scorer("word")
    with pytest.raises(ValueError, match="quantity"):
        make_stability_scorer(quantity="kl")
    with pytest.raises(ValueError, match="empty"):
        sufficiency(model, [])


def test_evaluation_runs_without_dropout(sentiment_data, texts):
    """The public SEAT code leaves dropout on while evaluating; here every metric and the SEAT
    phase run the module in eval mode, so repeated evaluations agree exactly."""
    X, y = sentiment_data
    clf = SEATClassifier(encoder="rnn", dropout=0.5, variant=SEAT(pgd_steps=2),
                         **{**SMALL, "max_epochs": 3})
    clf.fit(X, y)
    assert not clf.module_.training  # fit leaves the module in eval mode; nothing flips it
    zero = embedding_stability(clf, texts, radius=0.0)
    np.testing.assert_allclose(zero.frame[["jsd", "tvd"]], 0.0, atol=1e-12)
    a = sufficiency(clf, texts, fractions=(0.2,)).frame
    b = sufficiency(clf, texts, fractions=(0.2,)).frame
    assert a.equals(b)
    # the SEAT phase computes w, y(x, w) and the PGD attack without dropout
    from interpretable.nn._seat import SEATTrainer

    trainer = SEATTrainer(clf.module_, clf.module_.vanilla_attention, 0.1, 2, None, "l2",
                           "bce", 0).train()
    assert not any(m.training for m in trainer.modules())


def test_word_pieces_merge_into_words():
    from interpretable.metrics._stability import _merge_word_pieces

    merged = _merge_word_pieces(["[CLS]", "un", "##watch", "##able", "film", "[SEP]"],
                                np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.1]))
    np.testing.assert_allclose(merged, [0.1, 0.6, 0.2, 0.1])
