"""ISANLanguageModel / LSTMLanguageModel: estimator contracts, explanation (exact for the ISAN,
captum for the LSTM), composition, basis change, generation, unknown symbols, bad input."""

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

from interpretable import (
    ISANLanguageModel,
    ISANSequenceTagger,
    LSTMLanguageModel,
    SequenceExplanation,
)
from interpretable.estimators.sequence._alphabet import UNKNOWN, next_symbol_windows
from interpretable.estimators.sequence._language_model import split_words

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
    assert isan.classes_[0] == UNKNOWN and list(isan.classes_) == isan.symbols_
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
    ids = torch.as_tensor(isan.encode_symbols(text))[None]
    with torch.no_grad():
        logp = torch.log_softmax(isan.module_(ids)[0, :-1].double(), -1)
    direct = -logp.gather(1, ids[0, 1:, None]).mean() / math.log(2)
    assert isan.bits_per_char(text) == pytest.approx(float(direct), rel=1e-6)
    # long texts: overlapping windows score every character exactly once
    x, t = next_symbol_windows([isan.encode_symbols(TEXT)], isan.seq_len, train=False)
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
    ids = torch.as_tensor(isan64.encode_symbols(text))[None]
    with torch.no_grad():
        logits = isan64.module_(ids)[0, :, isan64.vocabulary_["k"]].numpy()
    np.testing.assert_allclose(fixed.logit[0], logits, rtol=1e-12)
    frame = words.to_frame()
    assert len(frame) == 1 + 2 + 3 + 4 and set(frame["token"]) == set(words.units[0])
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
    np.testing.assert_allclose(isan64.transition(text, cache=cache), isan64.transition(text),
                               rtol=1e-10)
    # the state from transition reproduces the model's logits
    logits = isan64.module_.readout(torch.as_tensor(isan64.transition(text)))
    ids = torch.as_tensor(isan64.encode_symbols(text))[None]
    np.testing.assert_allclose(logits.detach().numpy(),
                               isan64.module_(ids)[0, -1].detach().numpy(), rtol=1e-10)
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
    np.testing.assert_allclose(moved.explain(text).values[1], isan64.explain(text).values[1],
                               atol=1e-9)
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
    with pytest.raises(ValueError, match="dtype"):
        ISANLanguageModel(dtype="float16").fit(TEXT)
    with pytest.raises(ValueError, match="texts alone.*ISANSequenceTagger"):
        lm.fit([TEXT], [np.zeros(len(TEXT))])
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
    grid = GridSearchCV(ISANLanguageModel(**{**SMALL, "max_epochs": 1}), {"hidden_size": [4, 8]},
                        cv=2)
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
@pytest.fixture(scope="module")
def lstm():
    return LSTMLanguageModel(**{**SMALL, "hidden_size": 16}).fit(TEXT)


def test_lstm_baseline(lstm, tmp_path):
    assert lstm.bits_per_char(make_text(200, seed=1)) < math.log2(len(lstm.classes_))
    a = lstm.generate(["the ", "my"], n_chars=30, temperature=0.7, random_state=0)
    assert a == lstm.generate(["the ", "my"], n_chars=30, temperature=0.7, random_state=0)
    assert len(a) == 2 and all(len(s) == 30 for s in a)
    assert lstm.generate("the ", 5, temperature=0)[0] == lstm.predict(["the "])[0]
    lstm.save(tmp_path / "lstm")
    back = LSTMLanguageModel.load(tmp_path / "lstm", device="cpu")
    np.testing.assert_allclose(back.predict_proba(["the k"]), lstm.predict_proba(["the k"]))


def _step_gradients(lm, text, targets):
    """Reference: ∂ logit[t, targets[t]] / ∂ embedding (T, T, E), one backward per step."""
    m = lm.module_
    embedded = m.embedding(torch.as_tensor(lm.encode_symbols(text))[None]).detach()
    embedded.requires_grad_(True)
    logits = m.readout(m.lstm(embedded)[0])[0]
    grads = [torch.autograd.grad(logits[t, k], embedded, retain_graph=True)[0][0]
             for t, k in enumerate(targets)]
    return torch.stack(grads).detach(), embedded.detach()[0]


def test_lstm_explain_matches_per_step_gradients(lstm):
    texts = ["the king is dead", "my lord"]
    default = lstm.explain(texts)
    assert lstm.explain_methods[0] == "input_x_gradient" == default.method
    assert default.logit is None  # post hoc: no completeness claim
    gradient = lstm.explain(texts, method="gradient", target="actual")
    for i, text in enumerate(texts):
        assert default.values[i].shape == (len(text), len(text))
        assert list(default.target[i]) == list(default.prediction[i])
        ids = [lstm.vocabulary_.get(c, 0) for c in default.target[i]]
        grads, embedded = _step_gradients(lstm, text, ids)
        np.testing.assert_allclose(default.values[i], (grads * embedded).sum(-1).numpy(),
                                   rtol=1e-4, atol=1e-6)
        actual = [lstm.vocabulary_.get(c, 0) for c in text[1:]] + ids[-1:]
        grads, _ = _step_gradients(lstm, text, actual)
        np.testing.assert_allclose(gradient.values[i], grads.norm(dim=-1).numpy(),
                                   rtol=1e-4, atol=1e-6)
        assert np.all(np.triu(gradient.values[i], 1) == 0)  # the future never contributes


def test_lstm_integrated_gradients_converge_and_words(lstm):
    coarse = lstm.explain("the king is dead", method="integrated_gradients", n_steps=2,
                          target="k")
    fine = lstm.explain("the king is dead", method="integrated_gradients", n_steps=64,
                        target="k")
    assert set(fine.target[0]) == {"k"}
    assert fine.completeness_error.max() < 1e-3 < coarse.completeness_error.max()
    # the baseline logit is the logit with all embeddings at zero
    m = lstm.module_
    with torch.no_grad():
        zero = m.readout(m.lstm(torch.zeros(1, 16, m.embedding.embedding_dim))[0])[0]
    np.testing.assert_allclose(fine.bias[0], zero[:, lstm.vocabulary_["k"]].numpy(), rtol=1e-5)
    words = lstm.explain("the king is dead", method="integrated_gradients", n_steps=64,
                         target="k", level="word")
    np.testing.assert_allclose(words.values[0].sum(1), fine.values[0].sum(1), rtol=1e-9)
    with pytest.raises(TypeError, match="n_steps"):
        lstm.explain("the king", method="gradient", n_steps=4)


# ---------------------------------------------------------------------- ISAN: positions, window
def test_positions_and_window_equal_the_full_explanation(isan64):
    texts = ["the king is dead", "long live the queen"]
    full = isan64.explain(texts, target="actual")
    steps = [9, 0, 15, 9]
    part = isan64.explain(texts, target="actual", positions=steps)
    for i in range(2):
        np.testing.assert_allclose(part.values[i], full.values[i][steps], rtol=1e-12, atol=1e-14)
        for name in ("logit", "bias"):
            np.testing.assert_allclose(getattr(part, name)[i], getattr(full, name)[i][steps],
                                       rtol=1e-12)
        for name in ("target", "prediction"):
            np.testing.assert_array_equal(getattr(part, name)[i], getattr(full, name)[i][steps])
    w = 4
    windowed = isan64.explain(texts, target="actual", positions=steps, window=w)
    for i in range(2):
        inside = np.array([[t - w < s <= t for s in range(len(texts[i]))] for t in steps])
        assert windowed.values[i].shape == (len(steps), w)  # compact: O(T * window) memory
        np.testing.assert_allclose(windowed._dense(i, np.arange(len(steps)), np.array(steps)),
                                   np.where(inside, part.values[i], 0), atol=1e-12)
        older = np.where(inside, 0, part.values[i]).sum(1)  # folded into the bias exactly
        np.testing.assert_allclose(windowed.bias[i], part.bias[i] + older, rtol=1e-10)
        np.testing.assert_allclose(windowed.logit[i], part.logit[i], rtol=1e-12)
    assert np.all(windowed.completeness_error <= 1e-10)
    every = isan64.explain(texts, window=w)
    assert every.values[1].shape == (19, w) and np.all(every.completeness_error <= 1e-10)
    # the table lists only the units inside each step's window, with the dense values
    frame, dense = every.to_frame(), isan64.explain(texts).to_frame()
    inside = dense["unit"] > dense["step"] - w
    np.testing.assert_allclose(frame["attribution"], dense.loc[inside, "attribution"],
                               atol=1e-12)
    assert "<span" in every.to_html(steps=[3, -1])
    with pytest.raises(ValueError, match="level='char'"):
        isan64.explain(texts, window=w, level="word")
    with pytest.raises(ValueError, match="positions"):
        isan64.explain(texts, positions=[16])  # beyond the shorter text
    with pytest.raises(ValueError, match="positions"):
        isan64.explain(texts, positions=[-1])
    with pytest.raises(ValueError, match="window"):
        isan64.explain(texts, window=0)


def test_language_model_and_tagger_train_identically():
    """The shared training loop: a tagger fitted on the language model's own windows and
    next-character ids learns the very same weights."""
    lm = ISANLanguageModel(**{**SMALL, "max_epochs": 2}).fit(TEXT)
    L, X, Y = lm.seq_len, [], []
    ids = lm.encode_symbols(TEXT)
    for start in range(0, len(TEXT) - 1, L):
        n = len(ids[start + 1: start + L + 1])
        X.append(TEXT[start: start + n])
        Y.append(ids[start + 1: start + 1 + n])
    params = {k: v for k, v in SMALL.items() if k != "seq_len"}
    tagger = ISANSequenceTagger(**{**params, "max_epochs": 2}).fit(X, Y)
    assert tagger.symbols_ == lm.symbols_
    np.testing.assert_array_equal(tagger.classes_, np.arange(lm.n_symbols_))
    for name, value in lm.module_.state_dict().items():
        assert torch.equal(tagger.module_.state_dict()[name], value), name
    text = "the king is dead"
    np.testing.assert_array_equal(tagger.explain([text]).values[0], lm.explain(text).values[0])


# ---------------------------------------------------------------------- paper-figure analyses
@pytest.fixture(scope="module")
def wide():
    """H larger than the alphabet, so the computational subspace is non-empty."""
    return ISANLanguageModel(dtype="float64",
                             **{**SMALL, "hidden_size": 32, "max_epochs": 1}).fit(TEXT)


def test_ngram_analyses_recover_planted_statistics(wide):
    from interpretable.metrics import (
        input_bias_analysis,
        offsets_vs_bigram,
        readout_bias_vs_unigram,
    )

    m = copy.deepcopy(wide)
    ids = m.encode_symbols(TEXT)
    n_out, H = m.n_outputs_, m.hidden_size
    unigram = np.bincount(ids, minlength=n_out) / len(ids)
    pairs = np.zeros((n_out, n_out))
    np.add.at(pairs, (ids[:-1], ids[1:]), 1)
    bigram = (pairs + 1e-9) / (pairs + 1e-9).sum(1, keepdims=True)
    b_ro = np.log(unigram + 1e-12)
    with torch.no_grad():  # plant: W_ro = [I, 0], b_c[:n_out] = log P(.|c) - b_ro
        W_ro = torch.zeros(n_out, H, dtype=torch.float64)
        W_ro[:, :n_out] = torch.eye(n_out)
        m.module_.readout.weight.copy_(W_ro)
        m.module_.readout.bias.copy_(torch.as_tensor(b_ro))
        m.module_.b[:, :n_out] = torch.as_tensor(np.log(bigram) - b_ro)
    uni = readout_bias_vs_unigram(m, TEXT)
    assert uni["pearson"] > 0.999 and uni["kl_bits"] < 1e-6 < uni["kl_uniform_bits"]
    table, summary = offsets_vs_bigram(m, TEXT, min_count=5)
    assert summary["kl_offset_bits"] < 1e-6 < summary["kl_unigram_bits"]
    assert summary["pearson_offset"] > 0.999
    table, corr = input_bias_analysis(wide, TEXT)
    assert len(table) == n_out and set(corr) == {"bias_norm_vs_log_prob",
                                                 "readout_norm_vs_log_prob",
                                                 "computational_norm_vs_log_prob"}
    np.testing.assert_allclose(table.readout_norm ** 2 + table.computational_norm ** 2,
                               table.bias_norm ** 2)
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
    ids = torch.as_tensor(wide.encode_symbols(text))[None]
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


def test_options_validated_at_the_call(isan, monkeypatch):
    from interpretable.estimators.sequence import _explainers as sequence

    # a temperature so small that logits / temperature overflows is the greedy limit
    assert isan.generate("the ", 8, temperature=1e-320) == isan.generate("the ", 8, temperature=0)
    with pytest.raises(ValueError, match=r"state must be a finite \(12,\) vector"):
        isan.transition("the", state=np.zeros(3))
    with pytest.raises(ValueError, match="state must be a finite"):
        isan.transition("the", state=np.full(12, np.nan))
    # dense explanations estimate their memory first and name the option that avoids it
    monkeypatch.setattr(sequence, "DENSE_EXPLANATION_LIMIT", 8 * 50 * 50)
    with pytest.raises(ValueError, match=r"GiB.*positions="):
        isan.explain("the king " * 10)
    assert isan.explain("the king " * 10, positions=[5, 7]).values[0].shape == (2, 90)


@pytest.mark.slow
def test_predict_proba_stays_finite_and_exact_on_very_long_texts():
    """A state growing geometrically (transitions of norm 1.05 here, as trained models can
    have) overflows float32 after ~1,800 symbols: probabilities stay finite and equal to a
    float64 reference, and a 1,000,000-character text is predicted (not NaN)."""
    import copy

    text = "the king is dead, long live the king. " * 27000
    lm = ISANLanguageModel(hidden_size=8, max_epochs=1, seq_len=20, random_state=0)
    lm.fit([text[:2000]])
    with torch.no_grad():
        lm.module_.W.copy_(1.05 * torch.linalg.qr(lm.module_.W)[0])  # norm 1.05, orthogonal
    x = torch.as_tensor(lm.encode_symbols(text[:6000]))[None]
    reference = copy.deepcopy(lm.module_).double()
    with torch.no_grad():
        assert not torch.isfinite(lm.module_(x)[0, -1]).all()  # plain float32 overflows
        expected = torch.softmax(reference(x)[0, -1], -1).numpy()
    proba = lm.predict_proba([text[:6000], text[:3000]])
    np.testing.assert_allclose(proba[0], expected, atol=1e-6)
    long = lm.predict_proba([text[:1_000_000]])
    assert np.isfinite(long).all() and long.sum() == pytest.approx(1.0)
    # an explanation that would overflow says so; float64 explains the same text exactly
    with pytest.raises(ValueError, match="dtype='float64'"):
        lm.explain(text[:6000], positions=[5999])
    exact = lm.explain(text[:6000], positions=[5999], dtype="float64")
    assert exact.completeness_error[0].max() < 1e-9


def test_dense_explanations_of_very_long_texts_are_refused_before_allocating(lstm):
    """1,000,000 characters would need ~7 TiB of (steps x steps) values: a clear error with
    the number and what avoids it, at once (no numpy MemoryError)."""
    import time

    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"needs ~\d+\.\d GiB.*shorter texts"):
        lstm.explain("to be or not " * 80000)
    assert time.perf_counter() - start < 20
