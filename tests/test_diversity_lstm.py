"""Orthogonal LSTM cell and DiversityLSTMClassifier."""
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV

from interpretable import DiversityLSTMClassifier
from interpretable.metrics._attention_analysis import conicity as conicity_metric
from interpretable.nn._attention import AttentionOutput, conicity
from interpretable.nn._losses import DiversityLoss
from interpretable.nn._recurrent import OrthogonalLSTM

SMALL = dict(embed_dim=12, hidden_size=12, batch_size=16, lr=1e-2, device="cpu")
MASK = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0], [1, 0, 0, 0, 0, 0]], dtype=torch.bool)


def test_orthogonal_cell_is_orthogonal_to_sum_of_previous_states():
    torch.manual_seed(0)
    cell = OrthogonalLSTM(5, 8).double()
    h = cell(torch.randn(3, 6, 5, dtype=torch.double), MASK)
    previous = torch.cumsum(h, 1) - h
    dots = (h * previous).sum(-1)
    assert dots.abs().max() < 1e-10
    assert (h[~MASK] == 0).all()
    assert torch.isfinite(h).all() and h[:, 0].abs().sum() > 0   # t = 0: nothing to remove


def test_diversity_loss_adds_weighted_conicity():
    hidden = torch.tensor([[[1.0, 0.0], [1.0, 0.0]]])      # conicity 1
    out = AttentionOutput(torch.zeros(1, 2), torch.full((1, 2), 0.5), hidden,
                          torch.ones(1, 2, dtype=torch.bool))
    y = torch.tensor([0])
    base = DiversityLoss(0.0)(out, y)
    assert float(DiversityLoss(0.5)(out, y) - base) == pytest.approx(0.5)


def _hand_conicity(H, mask, absolute):
    """Mean (|)cos(h_t, mean of the real h)(|) over the real rows, one sample at a time."""
    out = []
    for h, m in zip(H, mask, strict=True):
        real = h[m]
        mean = real.mean(0)
        cos = real @ mean / (np.linalg.norm(real, axis=1) * np.linalg.norm(mean))
        out.append(np.abs(cos).mean() if absolute else cos.mean())
    return np.array(out)


def test_absolute_and_signed_conicity_match_hand_computation():
    rng = np.random.RandomState(0)
    H = rng.randn(3, 6, 4)
    H[0, 3:] = -H[0, :3] + 0.1 * rng.randn(3, 4)      # anti-aligned states: |cos| != cos
    mask = MASK.numpy()
    absolute, signed = _hand_conicity(H, mask, True), _hand_conicity(H, mask, False)
    assert np.abs(absolute - signed).max() > 0.1
    Ht, mt = torch.from_numpy(H), torch.from_numpy(mask)
    np.testing.assert_allclose(conicity(Ht, mt, absolute=True).numpy(), absolute, rtol=1e-10)
    np.testing.assert_allclose(conicity(Ht, mt).numpy(), signed, rtol=1e-10)  # old default
    np.testing.assert_allclose(conicity_metric(H, mask), absolute, rtol=1e-10)
    np.testing.assert_allclose(conicity_metric(H, mask, kind="signed"), signed, rtol=1e-10)
    out = AttentionOutput(torch.zeros(3, 2, dtype=torch.float64), torch.zeros(3, 6), Ht, mt)
    y = torch.zeros(3, dtype=torch.long)
    base = DiversityLoss(0.0)(out, y)
    penalty = DiversityLoss(0.5, absolute=True)(out, y) - base
    assert float(penalty) == pytest.approx(0.5 * absolute.mean())
    assert float(DiversityLoss(0.5)(out, y) - base) == pytest.approx(0.5 * signed.mean())
    with pytest.raises(ValueError, match="kind"):
        conicity_metric(H, mask, kind="abs")


def test_conicity_parameter_picks_the_penalty():
    assert DiversityLSTMClassifier()._criterion().absolute
    assert not DiversityLSTMClassifier(conicity="signed")._criterion().absolute
    assert DiversityLSTMClassifier(cell="vanilla")._criterion().weight == 0


@pytest.fixture(scope="module")
def fits(sentiment_data):
    X, y = sentiment_data
    return {cell: DiversityLSTMClassifier(cell=cell, max_epochs=8, random_state=0,
                                          **SMALL).fit(X, y)
            for cell in ("vanilla", "diversity", "orthogonal")}


def test_diversity_term_lowers_conicity(fits, sentiment_data):
    X, y = sentiment_data
    con = {cell: clf.hidden_conicity(X).mean() for cell, clf in fits.items()}
    assert con["diversity"] < 0.7 * con["vanilla"]
    assert con["orthogonal"] < con["vanilla"]
    for clf in fits.values():
        assert clf.score(X, y) > 0.85


def test_cell_selects_encoder(fits):
    from interpretable.nn._recurrent import OrthogonalLSTM as Cell
    assert isinstance(fits["orthogonal"].module_.encoder.rnn, Cell)
    assert isinstance(fits["vanilla"].module_.encoder.rnn, torch.nn.LSTM)


def test_estimator_contracts(fits, sentiment_data, tmp_path):
    X, y = sentiment_data
    fits["orthogonal"].save(tmp_path / "ortho")
    loaded = DiversityLSTMClassifier.load(tmp_path / "ortho", device="cpu")
    assert loaded.cell == "orthogonal"
    torch.testing.assert_close(torch.from_numpy(loaded.predict_proba(X[:8])),
                               torch.from_numpy(fits["orthogonal"].predict_proba(X[:8])))
    est = clone(fits["diversity"])
    assert est.get_params()["cell"] == "diversity" and est.get_params()["diversity_weight"] == 0.5
    assert "encoder" not in est.get_params()
    exp = fits["orthogonal"].explain(X[:2], method="integrated_gradients", n_steps=20)
    assert exp.completeness_error.max() < 0.05
    search = GridSearchCV(DiversityLSTMClassifier(max_epochs=1, random_state=0, **SMALL),
                          {"cell": ["vanilla", "diversity"], "diversity_weight": [0.5]}, cv=2)
    search.fit(X[:48], y[:48])
    assert search.best_params_["cell"] in ("vanilla", "diversity")


def test_detached_gradient_equals_hand_autograd(fits, sentiment_data):
    X, _ = sentiment_data
    clf = fits["diversity"]
    exp = clf.explain(X[:6], method="detached_gradient", batch_size=4)
    inputs = clf.encode(X[:6]).inputs
    emb = clf.module_.embed(inputs["tokens"]).detach().requires_grad_(True)
    detached = clf.module_(**inputs, embedded=emb).attention.detach()
    logits = clf.module_(**inputs, embedded=emb, attention=detached).logits
    target = np.searchsorted(clf.classes_, exp.target)
    live = clf.module_(**inputs, embedded=emb).logits          # attention not detached
    for i, n in enumerate(inputs["lengths"].tolist()):
        grad, = torch.autograd.grad(torch.softmax(logits[i], 0)[target[i]], emb, retain_graph=True)
        np.testing.assert_allclose(exp.values[i], (grad[i] * emb[i]).sum(-1)[:n].detach().numpy(),
                                   rtol=1e-5, atol=1e-8)
        grad, = torch.autograd.grad(torch.softmax(live[i], 0)[target[i]], emb, retain_graph=True)
        assert not np.allclose(exp.values[i], (grad[i] * emb[i]).sum(-1)[:n].detach().numpy(),
                               rtol=1e-3, atol=1e-6)
    # two classes: p_other = 1 - p_target, so the other class's attribution is the negative
    other = clf.classes_[1 - target]
    flipped = clf.explain(X[:6], target=other, method="detached_gradient")
    for a, b in zip(exp.values, flipped.values, strict=True):
        np.testing.assert_allclose(a, -b, rtol=1e-5, atol=1e-8)
    with pytest.raises(TypeError, match="n_steps"):
        clf.explain(X[:2], method="detached_gradient", n_steps=3)


def test_bad_params(sentiment_data):
    X, y = sentiment_data
    with pytest.raises(ValueError, match="conicity"):
        DiversityLSTMClassifier(conicity="abs").fit(X, y)
    with pytest.raises(ValueError, match="cell"):
        DiversityLSTMClassifier(cell="gru").fit(X, y)
    with pytest.raises(ValueError, match="diversity_weight"):
        DiversityLSTMClassifier(diversity_weight=-1).fit(X, y)
    with pytest.raises(ValueError, match="diversity_weight"):
        DiversityLSTMClassifier(diversity_weight=float("nan")).fit(X, y)
