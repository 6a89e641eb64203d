"""Attention text backbone (interpretable.nn._attention) and AttentionTextClassifier contracts."""
import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from interpretable import AttentionTextClassifier
from interpretable.explanation import TokenExplanation
from interpretable.nn._attention import AttentionOutput, AttentionTextModule, conicity

ENCODERS = ["rnn", "lstm", "bilstm", "orthogonal"]
SMALL = dict(embed_dim=12, hidden_size=12, max_epochs=6, batch_size=16, lr=1e-2, device="cpu")



def _batch(pair=False, seed=0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([7, 3, 1, 5])
    tokens = torch.randint(2, 30, (4, 7), generator=g)
    tokens[torch.arange(7)[None] >= lengths[:, None]] = 0
    extra = {}
    if pair:
        extra = dict(query=torch.randint(2, 30, (4, 3), generator=g),
                     query_lengths=torch.tensor([3, 1, 2, 3]))
    return tokens, lengths, extra


@pytest.mark.parametrize("encoder", ENCODERS)
@pytest.mark.parametrize("pair", [False, True])
def test_attention_sums_to_one_on_real_tokens_and_zero_on_padding(encoder, pair):
    torch.manual_seed(0)
    module = AttentionTextModule(30, 3, embed_dim=8, hidden_size=6, encoder=encoder,
                                 pair=pair).eval()
    tokens, lengths, extra = _batch(pair)
    out = module(tokens, lengths, **extra)
    assert isinstance(out, AttentionOutput)
    assert out.logits.shape == (4, 3)
    assert out.hidden.shape[:2] == (4, 7)
    torch.testing.assert_close(out.attention.sum(1), torch.ones(4))
    assert (out.attention[~out.mask] == 0).all()
    assert (out.hidden[~out.mask] == 0).all()
    # extra padding columns change nothing
    padded = torch.cat([tokens, torch.zeros(4, 5, dtype=torch.long)], 1)
    torch.testing.assert_close(module(padded, lengths, **extra).logits, out.logits)


def test_overrides_attention_and_embedded():
    torch.manual_seed(0)
    module = AttentionTextModule(30, 2, embed_dim=8, hidden_size=6).eval()
    tokens, lengths, _ = _batch()
    out = module(tokens, lengths)
    torch.testing.assert_close(module(tokens, lengths, embedded=module.embed(tokens)).logits,
                               out.logits)
    uniform = out.mask.float() / lengths[:, None]
    forced = module(tokens, lengths, attention=uniform)
    assert torch.equal(forced.attention, uniform)
    manual = module.decode(out.hidden, uniform)
    torch.testing.assert_close(forced.logits, manual)
    # decode with K weightings at once equals K separate decodes
    stacked = module.decode(out.hidden, torch.stack([uniform, out.attention], 1))
    torch.testing.assert_close(stacked[:, 0], manual)
    torch.testing.assert_close(stacked[:, 1], out.logits)


def test_embeddings_init_freeze_and_custom_encoder():
    init = torch.randn(30, 5)
    module = AttentionTextModule(30, 2, embeddings=init, freeze_embeddings=True, hidden_size=4)
    assert torch.equal(module.embedding.weight, init) and not module.embedding.weight.requires_grad

    class MeanEncoder(torch.nn.Module):
        output_size = 5

        def forward(self, embedded, mask):
            return embedded.cumsum(1)

    module = AttentionTextModule(30, 2, embeddings=init, encoder=MeanEncoder(), pair=True)
    tokens, lengths, extra = _batch(pair=True)
    assert module(tokens, lengths, **extra).hidden.shape == (4, 7, 5)
    with pytest.raises(ValueError, match="shape"):
        AttentionTextModule(31, 2, embeddings=init)
    with pytest.raises(ValueError, match="encoder"):
        AttentionTextModule(30, 2, encoder="gru")
    with pytest.raises(TypeError, match="output_size"):
        AttentionTextModule(30, 2, encoder=torch.nn.Identity())
    with pytest.raises(ValueError, match="query"):
        module(tokens, lengths)


def test_conicity_known_vectors():
    assert float(conicity(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))) == pytest.approx(2 ** -0.5)
    assert float(conicity(torch.tensor([[1.0, 1.0], [3.0, 3.0]]))) == pytest.approx(1.0)
    # padding is ignored
    H = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [5.0, 5.0]]])
    assert float(conicity(H, torch.tensor([[True, True, False]]))[0]) == pytest.approx(2 ** -0.5)


@pytest.fixture(scope="module")
def fitted(sentiment_data):
    X, y = sentiment_data
    return AttentionTextClassifier(random_state=0, **SMALL).fit(X, y)


def test_fit_predict_score_explain(fitted, sentiment_data):
    X, y = sentiment_data
    assert fitted.score(X, y) > 0.9
    proba = fitted.predict_proba(X[:5])
    assert proba.shape == (5, 2) and np.allclose(proba.sum(1), 1)
    assert set(fitted.predict(X)) <= set(fitted.classes_)
    exp = fitted.explain(X[:4])
    assert isinstance(exp, TokenExplanation) and exp.method == "attention"
    for tokens, att in zip(exp.units, exp.values, strict=True):
        assert len(tokens) == len(att) and att.sum() == pytest.approx(1, abs=1e-5)
    frame = exp.to_frame()
    assert len(frame) == sum(len(t) for t in exp.units)
    assert "<span" in exp.to_html()
    assert list(exp.prediction) == list(fitted.predict(X[:4]))


@pytest.mark.parametrize("method", ["gradient", "input_x_gradient", "integrated_gradients"])
def test_posthoc_attributions(fitted, sentiment_data, method):
    X, _ = sentiment_data
    exp = fitted.explain(X[:3], method=method, target="pos")
    assert exp.method == method and list(exp.target) == ["pos"] * 3
    assert all(np.isfinite(a).all() for a in exp.values)
    if method == "integrated_gradients":
        # completeness: sum of attributions = logit(x) - logit(baseline)
        assert exp.completeness_error.max() < 0.05
    if method == "gradient":
        assert all((a >= 0).all() for a in exp.values)


def test_sklearn_contracts(fitted, sentiment_data):
    X, y = sentiment_data
    params = fitted.get_params()
    assert params["encoder"] == "lstm"
    est = clone(fitted)
    assert not hasattr(est, "module_")
    with pytest.raises(NotFittedError):
        est.predict(X[:2])
    est.set_params(encoder="bilstm")
    assert est.get_params()["encoder"] == "bilstm"
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_allclose(restored.predict_proba(X[:8]), fitted.predict_proba(X[:8]),
                               rtol=1e-6)
    # reproducible
    again = AttentionTextClassifier(random_state=0, **SMALL).fit(X, y)
    np.testing.assert_allclose(again.predict_proba(X[:8]), fitted.predict_proba(X[:8]), rtol=1e-5)


def test_gridsearch_and_pipeline(sentiment_data):
    X, y = sentiment_data
    pipe = Pipeline([("strip", FunctionTransformer(lambda xs: [x.strip() for x in xs])),
                     ("clf", AttentionTextClassifier(random_state=0,
                                                     **{**SMALL, "max_epochs": 2}))])
    search = GridSearchCV(pipe, {"clf__encoder": ["rnn", "lstm"]}, cv=2).fit(X[:60], y[:60])
    assert search.best_params_["clf__encoder"] in ("rnn", "lstm")
    assert search.predict(X[:3]).shape == (3,)


def test_save_load_roundtrip(fitted, sentiment_data, tmp_path):
    X, _ = sentiment_data
    fitted.save(tmp_path / "m")
    loaded = AttentionTextClassifier.load(tmp_path / "m", device="cpu")
    np.testing.assert_allclose(loaded.predict_proba(X[:8]), fitted.predict_proba(X[:8]), rtol=1e-6)


def test_pairs_multiclass_any_labels():
    from interpretable.datasets import make_babi_task1

    data = make_babi_task1(120, random_state=0)
    clf = AttentionTextClassifier(random_state=0, **{**SMALL, "max_epochs": 2}).fit(
        data.data, data.target)
    assert len(clf.classes_) > 2 and clf.pair_input_
    exp = clf.explain(data.data[:2])
    assert exp.queries is not None and len(exp.queries[0]) > 0
    assert set(clf.predict(data.data[:5])) <= set(data.target)
    with pytest.raises(ValueError, match="pairs"):
        clf.predict(["a plain text"])


def test_bad_input(fitted, sentiment_data):
    X, y = sentiment_data
    est = AttentionTextClassifier(**SMALL)
    with pytest.raises(ValueError, match="empty"):
        est.fit([], [])
    with pytest.raises(ValueError, match="empty"):
        est.fit(["good", "   "], ["a", "b"])
    with pytest.raises(ValueError, match="samples"):
        est.fit(X[:10], y[:9])
    with pytest.raises((TypeError, ValueError), match="X"):
        est.fit([1, 2], ["a", "b"])
    with pytest.raises(ValueError, match="pair"):
        est.fit([("text", "query", "extra"), ("a", "b", "c")], ["a", "b"])
    with pytest.raises(ValueError, match="encoder"):
        AttentionTextClassifier(encoder="gru").fit(X, y)
    with pytest.raises(ValueError, match="dropout"):
        AttentionTextClassifier(dropout=1.5).fit(X, y)
    with pytest.raises((TypeError, ValueError), match="embeddings"):
        AttentionTextClassifier(embeddings="word2vec").fit(X, y)
    with pytest.raises(ValueError, match="method"):
        fitted.explain(X[:2], method="deeplift")
    with pytest.raises(ValueError, match="not seen"):
        fitted.explain(X[:2], target="maybe")
    with pytest.raises(ValueError, match="plain texts"):
        fitted.predict([("a", "b")])
    predicted = fitted.predict(X[:2])  # score counts a label unseen in fit as wrong
    assert fitted.score(X[:2], [predicted[0], "maybe"]) == 0.5
