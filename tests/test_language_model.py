"""ISANLanguageModel / LSTMLanguageModel: estimator contracts, explanation, composition,
basis change, generation, unknown symbols, parentheses task, bad input."""

import copy
import math
import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from interpretable import ISANLanguageModel, LSTMLanguageModel, SequenceExplanation
from interpretable.datasets import make_parentheses
from interpretable.estimators.language_model import UNKNOWN, split_words


WORDS = ["the", "king", "is", "dead", "long", "live", "queen", "my", "lord", "good"]


def make_text(n_words=600, seed=0):
    rng = np.random.RandomState(seed)
    return " ".join(rng.choice(WORDS, size=n_words)) + " ~"  # "~" occurs once: rare


TEXT = make_text()
SMALL = dict(hidden_size=12, seq_len=40, max_epochs=10, batch_size=16, lr=2e-2, random_state=0)


@pytest.fixture(scope="module")
def isan():
    return ISANLanguageModel(**SMALL).fit(TEXT)


@pytest.fixture(scope="module")
def isan64():
    return ISANLanguageModel(dtype="float64", **SMALL).fit(TEXT)


# ---------------------------------------------------------------------- language model basics
def test_alphabet_unknown_symbol_and_probabilities(isan):
    assert isan.classes_[0] == UNKNOWN
    assert "~" not in isan.vocabulary_  # seen once < min_count=2 → shares the unknown symbol
    assert set(isan.classes_[1:]) == set("".join(WORDS)) | {" "}
    P = isan.predict_proba(["the ki", "long li", "xyz§ unseen ☃"])  # unseen chars never crash
    assert P.shape == (3, len(isan.classes_))
    np.testing.assert_allclose(P.sum(1), 1.0, rtol=1e-9)
    assert isan.predict(["the ki"]).shape == (1,)
    assert isan.score([TEXT[:300]]) == pytest.approx(-isan.bits_per_char(TEXT[:300]))


def test_training_learns_and_is_reproducible(isan):
    uniform = math.log2(len(isan.classes_))
    assert isan.bits_per_char(make_text(200, seed=1)) < uniform - 2.0
    again = ISANLanguageModel(**SMALL).fit(TEXT)
    np.testing.assert_array_equal(again.predict_proba(["the ki"]), isan.predict_proba(["the ki"]))
    other = ISANLanguageModel(**{**SMALL, "random_state": 1}).fit(TEXT)
    assert not np.allclose(other.predict_proba(["the ki"]), isan.predict_proba(["the ki"]))


def test_bits_per_char_matches_direct_computation(isan):
    text = make_text(8, seed=3)  # shorter than seq_len: one window
    ids = torch.as_tensor(isan._encode(text))[None]
    with torch.no_grad():
        logp = torch.log_softmax(isan.module_(ids)[0, :-1].double(), -1)
    direct = -logp.gather(1, ids[0, 1:, None]).mean() / math.log(2)
    assert isan.bits_per_char(text) == pytest.approx(float(direct), rel=1e-6)
    # long texts: overlapping windows score every character exactly once
    x, t = isan._lm_windows([isan._encode(TEXT)], train=False)
    assert int((t != -100).sum()) == len(TEXT) - 1


def test_generate_reproducible(isan):
    a = isan.generate("the ", n_chars=50, temperature=0.8, random_state=3)
    b = isan.generate("the ", n_chars=50, temperature=0.8, random_state=3)
    c = isan.generate("the ", n_chars=50, temperature=0.8, random_state=4)
    assert a == b and a != c and len(a) == 50
    assert UNKNOWN not in a and set(a) <= set(isan.classes_[1:])
    greedy = isan.generate(["the ", "long live"], n_chars=20, temperature=0)
    assert greedy == isan.generate(["the ", "long live"], n_chars=20, temperature=0, random_state=9)
    assert isan.generate("the", n_chars=0) == ""
    # greedy generation follows predict()
    assert greedy[0][0] == isan.predict(["the "])[0]


# ---------------------------------------------------------------------- explanation
def test_explain_exact_float32_and_float64(isan, isan64):
    for model, tol in ((isan, 1e-4), (isan64, 1e-10)):
        exp = model.explain(["the king is dead", "long live the queen"])
        assert isinstance(exp, SequenceExplanation)
        assert np.all(exp.completeness_error <= tol)
        assert exp.values[0].shape == (16, 16)
        assert np.allclose(np.triu(exp.values[0], 1), 0)  # no effect of future symbols


def test_explain_targets_and_word_level(isan64):
    text = "the king is dead"
    chars = isan64.explain(text, target="actual")
    assert list(chars.target[0][:-1]) == list(text[1:])
    assert chars.target[0][-1] == chars.prediction[0][-1]
    words = isan64.explain(text, target="actual", level="word")
    assert words.units[0] == ["the", " king", " is", " dead"]
    assert words.values[0].shape == (16, 4)
    np.testing.assert_allclose(words.values[0].sum(1), chars.values[0].sum(1))
    np.testing.assert_allclose(words.values[0][:, 1], chars.values[0][:, 3:8].sum(1))
    assert np.all(words.completeness_error <= 1e-10)
    fixed = isan64.explain(text, target="k")
    assert set(fixed.target[0]) == {"k"}
    # the explained logit is the model's logit for that symbol
    ids = torch.as_tensor(isan64._encode(text))[None]
    with torch.no_grad():
        logits = isan64.module_(ids)[0, :, isan64.vocabulary_["k"]].numpy()
    np.testing.assert_allclose(fixed.logit[0], logits, rtol=1e-12)
    frame = words.to_frame()
    assert len(frame) == 16 * 4 and set(frame["token"]) == set(words.units[0])
    assert "<span" in words.to_html()


def test_explain_bad_input(isan):
    with pytest.raises(ValueError, match="level"):
        isan.explain("the", level="sentence")
    with pytest.raises(ValueError, match="alphabet"):
        isan.explain("the", target="Z")
    with pytest.raises(ValueError, match="method"):
        isan.explain("the", method="integrated_gradients")


# ---------------------------------------------------------------------- composition / basis
def test_compose_and_cached_transition(isan64):
    A, b = isan64.compose(" king")
    h = isan64.transition("the")
    np.testing.assert_allclose(A @ h + b, isan64.transition(" king", state=h), rtol=1e-10)
    np.testing.assert_allclose(isan64.transition("the king"), isan64.transition(" king", state=h))
    cache = isan64.word_cache([TEXT], n_words=5)
    assert len(cache) == 5 and all(w.startswith(" ") for w in cache)
    text = "the king is dead long live the queen ~"
    np.testing.assert_allclose(isan64.transition(text, cache=cache), isan64.transition(text), rtol=1e-10)
    # the state from transition reproduces the model's logits
    logits = isan64.module_.readout(torch.as_tensor(isan64.transition(text)))
    ids = torch.as_tensor(isan64._encode(text))[None]
    np.testing.assert_allclose(logits.detach().numpy(), isan64.module_(ids)[0, -1].detach().numpy(), rtol=1e-10)
    with pytest.raises(ValueError, match="substring"):
        isan64.compose("")
    assert split_words(" a  b\n") == [" a", "  b", "\n"]


def test_basis_change_preserves_outputs(isan64):
    basis = isan64.readout_basis()
    assert basis.Q.shape == (12, 12) and basis.rank == min(12, len(isan64.classes_))
    moved = isan64.to_basis(basis.Q)
    text = ["the king is dead", "my good lord"]
    np.testing.assert_allclose(moved.predict_proba(text), isan64.predict_proba(text), rtol=1e-10)
    Q = np.random.RandomState(0).randn(12, 12) + 4 * np.eye(12)
    moved = isan64.to_basis(Q)
    np.testing.assert_allclose(moved.predict_proba(text), isan64.predict_proba(text), rtol=1e-9)
    np.testing.assert_allclose(moved.explain(text).values[1], isan64.explain(text).values[1], atol=1e-9)
    assert moved.module_ is not isan64.module_
    with pytest.raises(ValueError, match="singular"):
        isan64.to_basis(np.zeros((12, 12)))
    with pytest.raises(ValueError, match="matrix"):
        isan64.to_basis(np.eye(3))


# ---------------------------------------------------------------------- sklearn contracts
def test_not_fitted_and_bad_input():
    lm = ISANLanguageModel(**SMALL)
    with pytest.raises(NotFittedError):
        lm.predict_proba(["the"])
    with pytest.raises(NotFittedError):
        lm.explain("the")
    with pytest.raises(ValueError, match="empty"):
        lm.fit("")
    with pytest.raises(ValueError, match="empty"):
        lm.fit([])
    with pytest.raises(TypeError, match="str"):
        lm.fit(["the king", 3])
    with pytest.raises(TypeError, match="str or an iterable"):
        lm.fit(12)
    with pytest.raises(ValueError, match="alphabet is empty"):
        ISANLanguageModel(min_count=10**6, **SMALL).fit(TEXT)
    with pytest.raises(ValueError, match="successor"):
        lm.fit(["a", "b", "a", "b"])
    with pytest.raises(ValueError, match="hidden_size"):
        ISANLanguageModel(hidden_size=0).fit(TEXT)
    with pytest.raises(ValueError, match="loss"):
        ISANLanguageModel(loss="hinge").fit(TEXT)
    with pytest.raises(ValueError, match="seq_len"):
        ISANLanguageModel(seq_len=1).fit(TEXT)


def test_fitted_bad_input(isan):
    with pytest.raises(ValueError, match="empty"):
        isan.predict_proba([""])
    with pytest.raises(TypeError, match="str"):
        isan.predict_proba([None])
    with pytest.raises(ValueError, match="n_chars"):
        isan.generate("the", n_chars=-1)
    with pytest.raises(ValueError, match="temperature"):
        isan.generate("the", temperature=float("nan"))
    with pytest.raises(TypeError, match="bytes"):
        isan.predict_proba(b"the")
    with pytest.raises(ValueError, match="target has"):
        isan.explain(["the", "king"], target=["actual"])


def test_clone_params_pickle_gridsearch_pipeline(isan):
    assert clone(isan).get_params() == isan.get_params()
    assert not hasattr(clone(isan), "module_")
    restored = pickle.loads(pickle.dumps(isan))
    np.testing.assert_array_equal(restored.predict_proba(["the k"]), isan.predict_proba(["the k"]))
    docs = [make_text(80, seed=s) for s in range(6)]
    grid = GridSearchCV(ISANLanguageModel(**{**SMALL, "max_epochs": 1}), {"hidden_size": [4, 8]}, cv=2)
    grid.fit(docs)
    assert grid.best_params_["hidden_size"] in (4, 8) and np.isfinite(grid.best_score_)
    pipe = make_pipeline(FunctionTransformer(lambda X: [x.lower() for x in X]),
                         ISANLanguageModel(**{**SMALL, "max_epochs": 1}))
    pipe.fit([d.upper() for d in docs])
    assert pipe.predict(["THE KI"])[0] in pipe[-1].classes_


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_save_load_roundtrip(tmp_path, dtype):
    lm = ISANLanguageModel(dtype=dtype, **{**SMALL, "max_epochs": 1}).fit(TEXT)
    lm.save(tmp_path / "m")
    back = ISANLanguageModel.load(tmp_path / "m", device="cpu")
    assert next(back.module_.parameters()).dtype == getattr(torch, dtype)
    np.testing.assert_array_equal(back.predict_proba(["the k"]), lm.predict_proba(["the k"]))
    assert back.generate("the", 10, random_state=0) == lm.generate("the", 10, random_state=0)


# ---------------------------------------------------------------------- LSTM baseline
def test_lstm_baseline(tmp_path):
    lm = LSTMLanguageModel(**{**SMALL, "hidden_size": 16}).fit(TEXT)
    assert lm.bits_per_char(make_text(200, seed=1)) < math.log2(len(lm.classes_))
    a = lm.generate(["the ", "my"], n_chars=30, temperature=0.7, random_state=0)
    assert a == lm.generate(["the ", "my"], n_chars=30, temperature=0.7, random_state=0)
    assert len(a) == 2 and all(len(s) == 30 for s in a)
    assert lm.generate("the ", 5, temperature=0)[0] == lm.predict(["the "])[0]
    lm.save(tmp_path / "lstm")
    back = LSTMLanguageModel.load(tmp_path / "lstm", device="cpu")
    np.testing.assert_allclose(back.predict_proba(["the k"]), lm.predict_proba(["the k"]))
    assert lm.explain_methods == ()
    with pytest.raises(ValueError, match="not supported by LSTMLanguageModel"):
        lm.explain("the k")


# ---------------------------------------------------------------------- sequence to sequence
def test_parentheses_counting_learnable():
    X, Y = make_parentheses(400, 30, n_types=2, max_count=3, random_state=0)
    Xt, Yt = make_parentheses(100, 80, n_types=2, max_count=3, random_state=1)
    m = ISANLanguageModel(hidden_size=20, loss="squared", max_epochs=30, lr=2e-2,
                          batch_size=32, min_count=1, random_state=0).fit(X, Y)
    assert m.mode_ == "seq2seq" and m.group_sizes_ == [4, 4]
    assert m.score(Xt, Yt) >= 0.97  # held out, longer than in training
    pred = m.predict(Xt[:2])
    assert pred[0].shape == (80, 2)
    proba = m.predict_proba(Xt[:1])[0]
    assert proba.shape == (80, 8)
    exp = m.explain(Xt[:1], target=3)
    assert np.all(exp.completeness_error <= 1e-4)
    from interpretable.metrics import parentheses_state_analysis

    analysis = parentheses_state_analysis(m, Xt, Yt)
    assert analysis["rank_readout"] == 8
    assert analysis["delayed_counts_from_readout"] >= 0.95  # the output part holds the delayed counts
    assert analysis["current_counts_from_full"] >= 0.95  # the state also knows the current ones
    with pytest.raises(ValueError, match="language model"):
        m.bits_per_char(["(("])
    with pytest.raises(ValueError, match="shape"):
        m.fit(X, [y[:-1] for y in Y])
    with pytest.raises(TypeError, match="integer"):
        m.fit(X[:2], [np.full(30, "a"), np.full(30, "b")])
    with pytest.raises(ValueError, match="y is required"):
        m.score(Xt)


def test_seq2seq_cross_entropy_single_group():
    rng = np.random.RandomState(0)
    X = ["".join(rng.choice(list("ab"), size=20)) for _ in range(60)]
    Y = [np.array([1 if c == "a" else 7 for c in x]) for x in X]  # label of the current symbol
    m = ISANLanguageModel(hidden_size=6, max_epochs=15, lr=2e-2, batch_size=16, random_state=0,
                          min_count=1).fit(X, Y)
    np.testing.assert_array_equal(m.classes_, [1, 7])
    assert m.score(X[:10], Y[:10]) == 1.0
    assert m.predict(["ab"])[0].tolist() == [1, 7]
    np.testing.assert_allclose(m.predict_proba(["ab"])[0].sum(1), 1.0)


# ---------------------------------------------------------------------- paper-figure analyses
@pytest.fixture(scope="module")
def wide():
    """H larger than the alphabet, so the computational subspace is non-empty."""
    return ISANLanguageModel(dtype="float64", **{**SMALL, "hidden_size": 32, "max_epochs": 1}).fit(TEXT)


def test_ngram_analyses_recover_planted_statistics(wide):
    from interpretable.metrics import input_bias_analysis, offsets_vs_bigram, readout_bias_vs_unigram

    m = copy.deepcopy(wide)
    ids = m._encode(TEXT)
    O, H = m.n_outputs_, m.hidden_size
    unigram = np.bincount(ids, minlength=O) / len(ids)
    pairs = np.zeros((O, O))
    np.add.at(pairs, (ids[:-1], ids[1:]), 1)
    bigram = (pairs + 1e-9) / (pairs + 1e-9).sum(1, keepdims=True)
    b_ro = np.log(unigram + 1e-12)
    with torch.no_grad():  # plant: W_ro = [I, 0], b_c[:O] = log P(.|c) - b_ro
        W_ro = torch.zeros(O, H, dtype=torch.float64)
        W_ro[:, :O] = torch.eye(O)
        m.module_.readout.weight.copy_(W_ro)
        m.module_.readout.bias.copy_(torch.as_tensor(b_ro))
        m.module_.b[:, :O] = torch.as_tensor(np.log(bigram) - b_ro)
    uni = readout_bias_vs_unigram(m, TEXT)
    assert uni["pearson"] > 0.999 and uni["kl_bits"] < 1e-6 < uni["kl_uniform_bits"]
    table, summary = offsets_vs_bigram(m, TEXT, min_count=5)
    assert summary["kl_offset_bits"] < 1e-6 < summary["kl_unigram_bits"]
    assert summary["pearson_offset"] > 0.999
    table, corr = input_bias_analysis(wide, TEXT)
    assert len(table) == O and set(corr) == {"bias_norm_vs_log_prob", "readout_norm_vs_log_prob",
                                             "computational_norm_vs_log_prob"}
    np.testing.assert_allclose(table.readout_norm ** 2 + table.computational_norm ** 2, table.bias_norm ** 2)
    with pytest.raises(TypeError, match="ISANLanguageModel"):
        readout_bias_vs_unigram(LSTMLanguageModel(), TEXT)


def test_bias_similarity_and_contribution_decay(wide):
    from interpretable.metrics import bias_similarity, contribution_decay

    sim = bias_similarity(wide, "computational", symbols=list("aeiou") + ["k", "g"])
    np.testing.assert_allclose(np.diag(sim), 1.0)
    np.testing.assert_allclose(sim.values, sim.values.T)
    with pytest.raises(ValueError, match="subspace"):
        bias_similarity(wide, "output")
    text = "the king is dead"
    decay = contribution_decay(wide, [text], max_lag=len(text) - 1)
    ids = torch.as_tensor(wide._encode(text))[None]
    kappa = wide.module_.decompose(ids)["kappa"][0]  # (T, O, T): all outputs
    norms = torch.linalg.vector_norm(kappa, dim=1).numpy()  # (T, T) [t, s]
    T = len(text)
    for lag in (0, 3, T - 1):
        expected = np.mean([norms[t, t - lag] for t in range(lag, T)])
        assert decay.mean_norm[lag] == pytest.approx(expected, rel=1e-9)


def test_word_context_effects_match_explanation(isan64):
    from interpretable.metrics import word_context_effects

    text = "the king is dead long live the queen"
    effects = word_context_effects(isan64, text)
    exp = isan64.explain(text, level="word")
    words = split_words(text)
    starts = np.cumsum([0] + [len(w) for w in words])
    assert len(effects) > 10
    for row in effects.itertuples():
        k = np.searchsorted(starts, row.position, side="right") - 1  # current word
        assert row.previous_word == words[k - 1]
        assert row.contribution == pytest.approx(exp.values[0][row.position, k - 1], abs=1e-10)
        assert row.prediction == exp.prediction[0][row.position]
        assert row.actual == text[row.position + 1]
