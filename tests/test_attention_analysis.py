"""Attention analyses of interpretable.metrics._attention_analysis on tiny models."""
import numpy as np
import pytest
import torch

from interpretable import DiversityLSTMClassifier
from interpretable.metrics._attention_analysis import (
    attribution_agreement,
    conicity,
    decision_flip_fraction,
    hidden_state_conicity,
    permutation_tvd,
    pos_attention,
)
from interpretable.metrics._divergences import jensen_shannon

SMALL = dict(embed_dim=12, hidden_size=12, batch_size=16, lr=1e-2, device="cpu", max_epochs=6)



@pytest.fixture(scope="module")
def model(sentiment_data):
    X, y = sentiment_data
    return DiversityLSTMClassifier(cell="diversity", random_state=0, **SMALL).fit(X, y)


def test_conicity_known_vectors():
    assert conicity(np.eye(3)) == pytest.approx(1 / np.sqrt(3))
    assert conicity(np.ones((4, 3))) == pytest.approx(1.0)
    # opposite vectors around a non-zero mean
    H = np.array([[[1.0, 0.0], [0.0, 1.0], [9.0, 9.0]], [[2.0, 2.0], [1.0, 1.0], [0.0, 0.0]]])
    mask = np.array([[True, True, False], [True, True, False]])
    np.testing.assert_allclose(conicity(H, mask), [1 / np.sqrt(2), 1.0])
    with pytest.raises(ValueError, match="NaN"):
        conicity(np.array([[np.nan, 1.0]]))
    with pytest.raises(ValueError, match="mask"):
        conicity(H, mask[:, :2])
    with pytest.raises(ValueError, match="shape"):
        conicity(np.ones(3))


def test_hidden_state_conicity_frame(model, sentiment_data):
    X, _ = sentiment_data
    res = hidden_state_conicity(model, X[:10], kind="signed")
    assert list(res.frame.columns) == ["sample", "n_tokens", "conicity"] and len(res.frame) == 10
    np.testing.assert_allclose(res.frame.conicity, model.hidden_conicity(X[:10], kind="signed"),
                               rtol=1e-6)
    np.testing.assert_allclose(hidden_state_conicity(model, X[:10]).frame.conicity,
                               model.hidden_conicity(X[:10]), rtol=1e-6)
    with pytest.raises(ValueError, match="kind must be one of"):
        model.hidden_conicity(X[:10], kind="cos")
    assert res.summary["mean_conicity"] == pytest.approx(res.frame.conicity.mean())
    # the default is the authors' |cos| form, computed from the same hidden states
    inputs = model.encode(X[:10]).inputs
    out = model.forward_batch(inputs)
    expected = conicity(out.hidden.detach().numpy(), out.mask.numpy())
    np.testing.assert_allclose(hidden_state_conicity(model, X[:10]).frame.conicity, expected,
                               rtol=1e-5)
    with pytest.raises(ValueError, match="kind"):
        hidden_state_conicity(model, X[:2], kind="cosine")


def test_decision_flip_matches_sequential_erasure(model, sentiment_data):
    X, _ = sentiment_data
    res = decision_flip_fraction(model, X[:12], order="attention")
    assert len(res.frame) == 12 and res.frame.fraction.between(0, 1).all()
    # check against a slow per-sample loop through the attention override
    inputs = model.encode(X[:12]).inputs
    out = model.forward_batch(inputs)
    for i in range(12):
        n = int(inputs["lengths"][i])
        att = out.attention[i, :n].detach()
        pred = int(out.logits[i].argmax())
        order = torch.argsort(att, descending=True, stable=True)
        expected = n
        for k in range(1, n):
            kept = att.clone()
            kept[order[:k]] = 0
            new = torch.zeros_like(out.attention[i:i + 1])
            new[0, :n] = kept / kept.sum()
            one = {key: v[i:i + 1] for key, v in inputs.items()}
            logits = model.forward_batch(one, attention=new[:, : one["tokens"].shape[1]]).logits
            if int(logits.argmax()) != pred:
                expected = k
                break
        assert res.frame.n_erased[i] == expected
    rnd = decision_flip_fraction(model, X[:12], order="random", random_state=3)
    assert rnd.summary["order"] == "random"
    with pytest.raises(ValueError, match="order"):
        decision_flip_fraction(model, X[:2], order="gradient")


def test_permutation_tvd(model, sentiment_data):
    X, _ = sentiment_data
    res = permutation_tvd(model, X[:10], n_permutations=20, random_state=0)
    assert len(res.frame) == 10
    assert ((res.frame.median_tvd >= 0) & (res.frame.median_tvd <= 1)).all()
    assert res.frame.max_attention.between(0, 1).all()
    assert res.summary["by_max_attention"]["count"].sum() == 10
    # a single token has a single permutation: nothing changes
    same = permutation_tvd(model, ["good"], n_permutations=5)
    assert same.frame.median_tvd[0] < 1e-6
    with pytest.raises(ValueError, match="n_permutations"):
        permutation_tvd(model, X[:2], n_permutations=0)


def test_attribution_agreement(model, sentiment_data):
    X, _ = sentiment_data
    res = attribution_agreement(model, X[:6], against="gradient")
    assert list(res.frame.columns) == ["sample", "n_tokens", "pearson", "jsd"]
    assert res.frame.pearson.between(-1, 1).all()
    assert (res.frame.jsd >= 0).all() and (res.frame.jsd <= np.log(2) + 1e-9).all()
    assert jensen_shannon([1, 0], [1, 0]) == 0
    assert jensen_shannon([1, 0], [0, 1]) == pytest.approx(np.log(2))
    with pytest.raises(ValueError):
        attribution_agreement(model, X[:2], against="attention")
    # the authors' gradient: the agreement of attention with explain(method="detached_gradient")
    res = attribution_agreement(model, X[:6], against="detached_gradient")
    att = model.explain(X[:6], method="attention")
    grad = model.explain(X[:6], target=att.target, method="detached_gradient")
    for i, (a, g) in enumerate(zip(att.values, grad.values, strict=True)):
        g = np.abs(g) / np.abs(g).sum()
        assert res.frame.pearson[i] == pytest.approx(np.corrcoef(a, g)[0, 1], rel=1e-6)
        assert res.frame.jsd[i] == pytest.approx(jensen_shannon(a, g), rel=1e-6)


def test_pos_attention(model):
    res = pos_attention(model, ["The movie was great .", "A dull , boring plot ."])
    by_tag = res.summary["by_tag"]
    assert by_tag.attention_share.sum() == pytest.approx(1.0)
    assert by_tag.token_share.sum() == pytest.approx(1.0)
    assert res.summary["punctuation_tokens"] == pytest.approx(3 / 11)
    attention_cols = [c for c in res.frame.columns if c.startswith("attention_")]
    np.testing.assert_allclose(res.frame[attention_cols].sum(axis=1), 1.0, rtol=1e-5)


def test_jensen_shannon_rows_equal_the_definition_over_the_masked_entries():
    """scipy's distance squared equals ½KL(P‖M) + ½KL(Q‖M) over the real entries (padding
    ignored, zeros allowed)."""
    from interpretable.metrics._divergences import jensen_shannon_rows

    rng = np.random.default_rng(0)
    P, Q = rng.dirichlet(np.ones(6), 20), rng.dirichlet(np.ones(6), 20)
    P[:4, 4:] = 0
    P[:4] /= P[:4].sum(1, keepdims=True)
    mask = np.ones_like(P, dtype=bool)
    mask[10:, 5] = False
    P[10:, 5], Q[10:, 5] = 0.3, 0.7  # padding values are ignored
    P[10:, :5] /= P[10:, :5].sum(1, keepdims=True)
    Q[10:, :5] /= Q[10:, :5].sum(1, keepdims=True)
    Pm, Qm = np.where(mask, P, 0), np.where(mask, Q, 0)
    M = 0.5 * (Pm + Qm)
    with np.errstate(divide="ignore", invalid="ignore"):
        expected = 0.5 * sum(np.where(A > 0, A * np.log(A / M), 0).sum(1) for A in (Pm, Qm))
    np.testing.assert_allclose(jensen_shannon_rows(P, Q, mask), expected, atol=1e-15)
