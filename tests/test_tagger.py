"""ISANSequenceTagger: per-position targets (parentheses counting, squared loss, target groups),
exact explanations per output unit, persistence, the readout-basis analysis, bad input."""

import numpy as np
import pytest
import torch

from interpretable import ISANLanguageModel, ISANSequenceTagger
from interpretable.datasets import make_parentheses
from interpretable.metrics import bias_similarity, parentheses_state_analysis


@pytest.fixture(scope="module")
def parentheses():
    X, Y = make_parentheses(400, 30, n_types=2, max_count=3, random_state=0)
    Xt, Yt = make_parentheses(100, 80, n_types=2, max_count=3, random_state=1)
    model = ISANSequenceTagger(hidden_size=20, loss="squared", max_epochs=30, lr=2e-2,
                               batch_size=32, min_count=1, random_state=0).fit(X, Y)
    return model, X, Y, Xt, Yt


def test_parentheses_counting_learnable(parentheses):
    m, X, Y, Xt, Yt = parentheses
    assert m.group_sizes_ == [4, 4] and m.n_outputs_ == 8
    assert isinstance(m.classes_, list) and len(m.target_classes_) == 2
    np.testing.assert_array_equal(m.target_classes_[1], [0, 1, 2, 3])
    assert m.score(Xt, Yt) >= 0.97  # held out, longer than in training
    pred = m.predict(Xt[:2])
    assert pred[0].shape == (80, 2)
    proba = m.predict_proba(Xt[:1])[0]
    assert proba.shape == (80, 8)
    # squared loss: predict_proba is the raw regression output, predict its group-wise argmax
    np.testing.assert_array_equal(pred[0][:, 1], proba[:, 4:].argmax(1))


def test_explain_is_exact_per_output_unit(parentheses):
    m, _, _, Xt, _ = parentheses
    default = m.explain(Xt[:2])
    assert default.method == "inherent" and np.all(default.completeness_error <= 1e-4)
    exp = m.explain(Xt[:2], target=3, dtype="float64")
    assert np.all(exp.completeness_error <= 1e-10)
    assert exp.values[0].shape == (80, 80) and set(exp.target[0]) == {3}
    ids = torch.as_tensor(m.encode_symbols(Xt[0]))[None]
    with torch.no_grad():
        outputs = m.module_(ids)[0, :, 3].double().numpy()
    np.testing.assert_allclose(exp.logit[0], outputs, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(exp.values[0][:, 0], m.explain(Xt[:2], target=3).values[0][:, 0],
                               atol=1e-5)
    for bad in (8, -1, "actual", True):
        with pytest.raises(ValueError, match=r"output index in \[0, 8\)"):
            m.explain(Xt[:1], target=bad)
    with pytest.raises(ValueError, match="level"):
        m.explain(Xt[:1], level="word")


def test_readout_basis_analysis(parentheses):
    m, _, _, Xt, Yt = parentheses
    analysis = parentheses_state_analysis(m, Xt, Yt)
    assert analysis["rank_readout"] == 8
    # the output part holds the delayed counts
    assert analysis["delayed_counts_from_readout"] >= 0.95
    assert analysis["current_counts_from_full"] >= 0.95  # the state also knows the current ones
    symbols = [s for s in m.symbols_ if s != "<unk>"]
    np.testing.assert_allclose(np.diag(bias_similarity(m, "full", symbols=symbols)), 1.0)
    moved = m.to_basis(m.readout_basis().Q)
    np.testing.assert_allclose(moved.predict_proba(Xt[:2])[1], m.predict_proba(Xt[:2])[1],
                               atol=1e-5)
    lm = ISANLanguageModel(hidden_size=4, max_epochs=1, seq_len=10, random_state=0)
    with pytest.raises(TypeError, match="ISANSequenceTagger"):
        parentheses_state_analysis(lm.fit("(()[])" * 20), Xt, Yt)


def test_single_group_cross_entropy_and_symbol_lists(tmp_path):
    rng = np.random.RandomState(0)
    X = ["".join(rng.choice(list("ab"), size=20)) for _ in range(60)]
    Y = [np.array([1 if c == "a" else 7 for c in x]) for x in X]  # label of the current symbol
    m = ISANSequenceTagger(hidden_size=6, max_epochs=15, lr=2e-2, batch_size=16, random_state=0,
                           min_count=1).fit(X, Y)
    np.testing.assert_array_equal(m.classes_, [1, 7])
    assert m.score(X[:10], Y[:10]) == 1.0
    assert m.predict(["ab"])[0].tolist() == [1, 7]
    np.testing.assert_allclose(m.predict_proba(["ab"])[0].sum(1), 1.0)
    # lists of symbols are sequences too, unseen symbols map to the unknown symbol
    assert m.predict([["a", "b", "zz"]])[0].shape == (3,)
    m.save(tmp_path / "tagger")
    back = ISANSequenceTagger.load(tmp_path / "tagger", device="cpu")
    np.testing.assert_array_equal(back.predict_proba(X[:3])[2], m.predict_proba(X[:3])[2])
    np.testing.assert_array_equal(back.classes_, m.classes_)


def test_bad_input():
    X, Y = make_parentheses(20, 10, random_state=0)
    tagger = ISANSequenceTagger(hidden_size=4, max_epochs=1)
    with pytest.raises(ValueError, match=r"per-position targets: fit\(X, Y\)"):
        tagger.fit(X)
    with pytest.raises(ValueError, match="shape"):
        tagger.fit(X, [y[:-1] for y in Y])
    with pytest.raises(TypeError, match="integer"):
        tagger.fit(X[:2], [np.full(10, "a"), np.full(10, "b")])
    with pytest.raises(ValueError, match="loss"):
        ISANSequenceTagger(loss="hinge").fit(X, Y)
    with pytest.raises(TypeError, match="single str"):
        tagger.fit("(()", Y[:1])
    tagger.fit(X, Y)
    with pytest.raises(ValueError, match="y is required"):
        tagger.score(X)
    with pytest.raises(ValueError, match="empty"):
        tagger.predict([])
