"""SEAT: the torch building blocks (L_topk, V_k, PGD) and SEATClassifier."""

import numpy as np
import pytest
import torch

from interpretable.nn._attacks import embedding_pgd, gold_margin, pgd_attention, project_ball
from interpretable.nn._losses import prediction_divergence
from interpretable.nn._seat import (
    AuthorsSEATCriterion,
    AuthorsSEATTrainer,
    authors_topk_loss,
    seat_objective,
    top_k_mask,
    top_k_overlap,
    topk_surrogate_loss,
)

# ---------------------------------------------------------------------- torch building blocks

W = torch.tensor([[0.5, 0.3, 0.1, 0.1], [0.1, 0.2, 0.3, 0.4]])
W_TILDE = torch.tensor([[0.1, 0.3, 0.4, 0.2], [0.1, 0.2, 0.3, 0.4]])


def test_top_k_overlap_hand_computed():
    # row 0: T_2(w) = {0, 1}, T_2(w~) = {1, 2} -> 1/2 ; row 1 identical -> 1
    assert top_k_overlap(W, W_TILDE, k=2).tolist() == [0.5, 1.0]
    assert top_k_overlap(W, W_TILDE, k=1).tolist() == [0.0, 1.0]
    # k larger than the sentence: everything is in the top-k
    assert top_k_overlap(W, W_TILDE, k=10).tolist() == [1.0, 1.0]


def test_top_k_ignores_padding():
    w = torch.tensor([[0.2, 0.3, 0.5, 0.0]])
    wt = torch.tensor([[0.6, 0.3, 0.0, 0.9]])  # the 0.9 sits on padding
    mask = torch.tensor([[True, True, True, False]])
    assert top_k_mask(wt, 2, mask).tolist() == [[True, True, False, False]]
    # T_2(w) = {2, 1}, T_2(w~) = {0, 1}
    assert top_k_overlap(w, wt, 2, mask).item() == pytest.approx(0.5)


def test_topk_surrogate_hand_computed():
    # row 0: S_w = {0, 1}: |0.5-0.1| + |0.3-0.3| = 0.4 ; S_w~ = {2, 1}: |0.1-0.4| + 0 = 0.3
    # L = (0.4 + 0.3) / (2 * 2) = 0.175 ; row 1: identical -> 0
    per_row = topk_surrogate_loss(W, W_TILDE, k=2, reduction="none")
    assert per_row.tolist() == pytest.approx([0.175, 0.0])
    assert topk_surrogate_loss(W, W_TILDE, k=2).item() == pytest.approx(0.0875)
    # k = 1: S_w = {0}: 0.4 ; S_w~ = {2}: 0.3 -> 0.7 / 2
    assert topk_surrogate_loss(W, W_TILDE, k=1, reduction="none")[0].item() == pytest.approx(0.35)


def test_topk_surrogate_gradient_only_on_topk_entries():
    wt = W_TILDE.clone().requires_grad_(True)
    topk_surrogate_loss(W, wt, k=2, reduction="sum").backward()
    # entry 3 of row 0 is in neither top-2 set; entry 1 has zero difference (subgradient 0)
    assert wt.grad[0, 3].item() == 0.0
    assert wt.grad[0, 0].item() == pytest.approx(-0.25)  # d|0.5 - x|/dx / 4 at x = 0.1
    assert wt.grad[0, 2].item() == pytest.approx(0.25)


def test_prediction_divergences():
    p = torch.tensor([[0.8, 0.2]])
    logits = torch.log(torch.tensor([[0.8, 0.2]]))
    bce = prediction_divergence(p, logits, "bce")
    assert bce.item() == pytest.approx(-(0.8 * np.log(0.8) + 0.2 * np.log(0.2)), rel=1e-5)
    assert prediction_divergence(p, logits, "kl").item() == pytest.approx(0.0, abs=1e-6)
    q_logits = torch.log(torch.tensor([[0.5, 0.5]]))
    assert prediction_divergence(p, q_logits, "tvd").item() == pytest.approx(0.3)
    with pytest.raises(ValueError, match="divergence"):
        prediction_divergence(p, logits, "hellinger")


def test_project_ball():
    d = torch.tensor([[3.0, 4.0], [0.03, 0.04]])
    out = project_ball(d, 1.0)
    assert out[0].norm().item() == pytest.approx(1.0)
    assert torch.equal(out[1], d[1])  # already inside
    assert project_ball(d, 1.0, "linf").tolist()[0] == [1.0, 1.0]


def _toy_predictor(seed=0, hidden=6, classes=2):
    g = torch.Generator().manual_seed(seed)
    h = torch.randn(4, 5, hidden, generator=g)
    theta = torch.randn(hidden, classes, generator=g) * 3

    def predict(attention):
        return torch.einsum("bt,bth->bh", attention, h) @ theta

    w = torch.softmax(torch.randn(4, 5, generator=g), dim=1)
    return predict, w


@pytest.mark.parametrize("norm", ["l2", "linf"])
def test_pgd_stays_in_ball_and_increases_d2(norm):
    predict, w = _toy_predictor()
    mask = torch.ones_like(w, dtype=torch.bool)
    mask[0, 3:] = False
    radius = 0.05
    target = torch.softmax(predict(w), -1)
    g = torch.Generator().manual_seed(1)
    d0 = pgd_attention(predict, w, mask, radius, steps=0)
    assert torch.equal(d0, torch.zeros_like(w))
    delta1 = pgd_attention(predict, w, mask, radius, steps=1, norm=norm, generator=g)
    delta = pgd_attention(predict, w, mask, radius, steps=10, norm=norm, generator=g)
    norms = delta.norm(dim=1) if norm == "l2" else delta.abs().amax(dim=1)
    assert (norms <= radius + 1e-6).all()
    assert (delta[0, 3:] == 0).all()  # padding is never perturbed
    # random perturbations of the same size do much less damage than PGD
    rand = project_ball(torch.randn(w.shape, generator=g) * mask, radius, norm)
    d2 = lambda d: prediction_divergence(target, predict(w + d), "kl")  # noqa: E731
    assert (d2(delta) >= d2(rand) - 1e-7).all()
    assert d2(delta).sum() > d2(delta1).sum()
    assert d2(delta).sum() > 1.5 * d2(rand).sum()


def test_seat_objective_terms():
    predict, w = _toy_predictor()
    mask = torch.ones_like(w, dtype=torch.bool)
    vanilla_probs = torch.softmax(predict(w), -1)
    same = seat_objective(predict(w), w, predict(w), vanilla_probs, w, mask, 2, 1.0, 1.0, "kl")
    assert same.total.item() == pytest.approx(0.0, abs=1e-6)
    wt = torch.softmax(torch.randn(4, 5), 1)
    out = seat_objective(predict(wt), wt, predict(wt + 0.1), vanilla_probs, w, mask, 2, 2.0, 3.0)
    expected = out.closeness + 2.0 * out.topk + 3.0 * out.stability
    assert out.total.item() == pytest.approx(expected.item())
    assert out.topk.item() == pytest.approx(topk_surrogate_loss(w, wt, 2).item())


# ---------------------------------------------------------------------- the authors' code
def _their_topk_overlap_loss(gt, pred, k):
    """kaustpradalab/SEAT ``utlis.topk_overlap_loss(metric="l1")``, restated."""
    idx = torch.argsort(gt, dim=1, descending=True)[:, :k]
    idx_pred = torch.argsort(pred, dim=1, descending=True)[:, :k]
    loss = (pred.gather(1, idx) - gt.gather(1, idx)).abs() \
        + (gt.gather(1, idx_pred) - pred.gather(1, idx_pred)).abs()
    return (loss / (2 * k)).mean()


def _their_pgd(predict, x, labels, radius, steps, noise, clamp):
    """kaustpradalab/SEAT ``PGDAttacker.perturb`` (l-infty, random start, ascending
    ``batch_tvd(y, p_1)`` of one sigmoid output ``p_1``), restated for two-class logits."""
    def clip(adv):
        adv = x + (adv - x).clamp(-radius, radius)
        return adv.clamp(0, 1) if clamp else adv

    adv = clip(x + 2 * (noise - 0.5) * radius)
    for _ in range(steps):
        adv = adv.detach().requires_grad_(True)
        p1 = torch.softmax(predict(adv), -1)[:, 1]
        loss = (0.5 * (labels.float() - p1).abs()).sum()
        (grad,) = torch.autograd.grad(loss, adv)
        adv = clip(adv.detach() + 2 * radius / steps * grad.sign())
    return adv.detach()


def _toy_embedding_model():
    g = torch.Generator().manual_seed(0)
    proj = torch.randn(6, 2, generator=g)

    def predict(e):  # (B, T, 6) -> (B, 2): mean-pooled tanh features
        return torch.tanh(e).mean(1) @ proj

    x = torch.rand(3, 4, 6, generator=g)
    return predict, x


def test_gold_margin_is_their_objective():
    logits = torch.tensor([[2.0, -1.0], [0.5, 0.5], [-3.0, 1.0]])
    labels = torch.tensor([1, 0, 1])
    p1 = torch.softmax(logits, -1)[:, 1]
    torch.testing.assert_close(gold_margin(logits, labels), 0.5 * (labels - p1).abs())


@pytest.mark.parametrize("clamp", [None, (0.0, 1.0)])
def test_embedding_pgd_equals_the_authors_attack(clamp):
    predict, x = _toy_embedding_model()
    labels = torch.tensor([0, 1, 1])
    mask = torch.ones(3, 4, dtype=torch.bool)
    radius = 0.2
    noise = torch.rand(x.shape, generator=torch.Generator().manual_seed(5))
    expected = _their_pgd(predict, x, labels, radius, 10, noise, clamp is not None) - x
    delta = embedding_pgd(predict, x, mask, labels, radius, clamp=clamp,
                          generator=torch.Generator().manual_seed(5))
    torch.testing.assert_close(delta, expected)
    if clamp is None:
        assert delta.abs().max() <= radius + 1e-6
    else:
        assert ((x + delta) >= 0).all() and ((x + delta) <= 1).all()
    # ascent: the gold-label margin grows well beyond the random start's
    start = embedding_pgd(predict, x, mask, labels, radius, steps=0)
    assert torch.equal(start, torch.zeros_like(x))
    assert gold_margin(predict(x + delta), labels).sum() > gold_margin(predict(x), labels).sum()


def test_embedding_pgd_l2_padding_and_errors():
    predict, x = _toy_embedding_model()
    labels = torch.tensor([0, 1, 1])
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[0, 2:] = False
    delta = embedding_pgd(predict, x, mask, labels, 0.1, norm="l2", steps=5)
    assert (delta[0, 2:] == 0).all()
    assert (delta.norm(dim=-1) <= 0.1 + 1e-6).all()
    assert delta.norm(dim=-1)[mask].min() > 0.09  # normalised steps reach the sphere
    with pytest.raises(ValueError, match="norm"):
        embedding_pgd(predict, x, mask, labels, 0.1, norm="l1")
    with pytest.raises(ValueError, match="radius"):
        embedding_pgd(predict, x, mask, labels, -0.1)


def test_authors_topk_loss_is_theirs():
    # the surrogate (5) divided by k: (0.175 + 0) / 2 rows / k = 2
    assert authors_topk_loss(W, W_TILDE, 2).item() == pytest.approx(0.04375)
    g = torch.Generator().manual_seed(0)
    a, b = torch.softmax(torch.randn(5, 9, generator=g), 1), torch.softmax(torch.randn(5, 9), 1)
    for k in (1, 3, 7):
        torch.testing.assert_close(authors_topk_loss(a, b, k), _their_topk_overlap_loss(a, b, k))


def test_authors_loss_equals_a_hand_computation_on_one_batch():
    from interpretable.nn._attention import AttentionTextModule, lengths_to_mask

    torch.manual_seed(0)
    core = AttentionTextModule(vocab_size=20, num_classes=2, embed_dim=6, hidden_size=5,
                               encoder="rnn").eval()
    tokens = torch.tensor([[3, 4, 5, 6, 7], [8, 9, 10, 0, 0], [11, 12, 13, 14, 0]])
    lengths, labels = torch.tensor([5, 3, 4]), torch.tensor([1, 0, 1])
    attack = dict(radius=0.05, steps=3, step_size=None, norm="linf", clamp=None)
    out = AuthorsSEATTrainer(core, attack, seed=3)(tokens, lengths, labels)
    criterion = AuthorsSEATCriterion(k=2, lambda_adversarial=0.5, lambda_topk=100.0)
    loss = criterion(out)
    # by hand: the same attack, then CE(clean) + 0.5 CE(attacked) + 100 * their top-k loss
    with torch.no_grad():
        e = core.embed(tokens)
    delta = embedding_pgd(lambda x: core(tokens, lengths, embedded=x).logits, e,
                          lengths_to_mask(lengths, 5), labels, 0.05, steps=3,
                          generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        clean, adv = core(tokens, lengths), core(tokens, lengths, embedded=e + delta)
        ce = lambda z: -torch.log_softmax(z, -1)[torch.arange(3), labels].mean()  # noqa: E731
        terms = {"clean": ce(clean.logits).item(), "adversarial": ce(adv.logits).item(),
                 "topk": _their_topk_overlap_loss(adv.attention, clean.attention, 2).item()}
    assert criterion.last_terms == pytest.approx(terms, rel=1e-5)
    expected = terms["clean"] + 0.5 * terms["adversarial"] + 100.0 * terms["topk"]
    assert loss.item() == pytest.approx(expected, rel=1e-5)
    # the loss reaches every parameter (the whole model trains)
    loss.backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in core.parameters())


# ---------------------------------------------------------------------- SEATClassifier
import pickle  # noqa: E402

from sklearn.base import clone  # noqa: E402
from sklearn.exceptions import NotFittedError  # noqa: E402
from sklearn.frozen import FrozenEstimator  # noqa: E402

from interpretable import AttentionTextClassifier, SEATClassifier  # noqa: E402
from interpretable.estimators.seat import (  # noqa: E402
    SEAT,
    AttentionAT,
    AttentionRP,
    AuthorsSEAT,
    Vanilla,
    WordAT,
)
from interpretable.estimators.seat._variants import VARIANTS  # noqa: E402
from interpretable.explanation import TokenExplanation  # noqa: E402

TINY = dict(encoder="rnn", embed_dim=12, hidden_size=12, max_epochs=6, batch_size=16, lr=2e-2,
            device="cpu", random_state=0)


@pytest.fixture(scope="module")
def vanilla(sentiment_data):
    X, y = sentiment_data
    return SEATClassifier(variant=Vanilla(), **TINY).fit(X, y)


def _attention_attack_divergence(clf, X, radius, attention_of=None):
    """Mean D2 (KL) after a PGD attack of the given radius on the model's attention."""
    inputs = clf.encode(X).inputs
    module = clf.module_
    with torch.no_grad():
        out = module(**inputs)
    w = out.attention if attention_of is None else attention_of(out)
    predict = lambda a: module.decode(out.hidden, a)  # noqa: E731
    delta = pgd_attention(predict, w, out.mask, radius, steps=10,
                          generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        clean = torch.softmax(predict(w), -1)
        return prediction_divergence(clean, predict(w + delta), "kl").mean().item()


def test_seat_lowers_attention_sensitivity_and_keeps_predictions(sentiment_data, vanilla):
    X, y = sentiment_data
    seat = SEATClassifier(variant=SEAT(k=2, lambda_topk=1.0, lambda_stability=20.0,
                                       pgd_radius=0.3, epochs=8, lr=2e-2),
                          base_estimator=FrozenEstimator(vanilla),
                          **{k: v for k, v in TINY.items() if k != "max_epochs"})
    seat.fit(X, y)
    no_stability = clone(seat).set_params(variant__lambda_stability=0.0).fit(X, y)
    # the inner maximisation of (6) is what SEAT minimises: w~ is harder to attack than w
    # (with hidden states and decoder fixed, only by more decided predictions: a 20% drop)
    d_vanilla = _attention_attack_divergence(vanilla, X, 0.3)
    d_seat = _attention_attack_divergence(seat, X, 0.3)
    assert d_seat < 0.9 * d_vanilla
    assert d_seat < 0.9 * _attention_attack_divergence(no_stability, X, 0.3)
    # ... while staying close to the vanilla model in prediction and top-k explanation
    assert np.mean(seat.predict(X) == vanilla.predict(X)) >= 0.9
    assert seat.fit_diagnostics_["agreement"] >= 0.9
    w = vanilla.explain(X, method="attention")
    assert np.mean([
        len(set(np.argsort(-a)[:2]) & set(np.argsort(-b)[:2])) / min(2, len(a))
        for a, b in zip(w.values, seat.explain(X).values, strict=True)
    ]) >= 0.6
    # the vanilla attention w is kept and reproduced exactly
    vw = seat.explain(X[:10], method="vanilla")
    assert vw.method == "vanilla"
    for a, b in zip(vw.values, w.values[:10], strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    # only the attention layer changed
    for name, p in seat.module_.named_parameters():
        if name.startswith("attention.") or name.startswith("vanilla_attention."):
            continue
        assert torch.equal(p, dict(vanilla.module_.named_parameters())[name]), name
    assert not torch.equal(seat.module_.attention.v.weight, vanilla.module_.attention.v.weight)


def test_lambda_zero_and_no_steps_keeps_vanilla(sentiment_data, vanilla):
    """With only D1 and L_topk at their minimum (w~ = w), SEAT stays at the vanilla model."""
    X, y = sentiment_data
    seat = SEATClassifier(variant=SEAT(lambda_stability=0.0, divergence="kl", lr=1e-4),
                          base_estimator=FrozenEstimator(vanilla),
                          **{k: v for k, v in TINY.items() if k not in ("lr",)}).fit(X, y)
    np.testing.assert_allclose(seat.predict_proba(X), vanilla.predict_proba(X), atol=1e-2)


def _variant(name):
    return SEAT(pgd_steps=2) if name == "seat" else VARIANTS[name]()


@pytest.mark.parametrize("method", ["seat", "vanilla", "attention-rp", "attention-at", "word-at"])
def test_every_method_fits_predicts_explains(sentiment_data, method):
    X, y = sentiment_data
    clf = SEATClassifier(variant=_variant(method), **{**TINY, "max_epochs": 4}).fit(X, y)
    assert clf.score(X, y) >= 0.7
    exp = clf.explain(X[:4])
    assert isinstance(exp, TokenExplanation)
    for a in exp.values:
        assert a.sum() == pytest.approx(1.0, abs=1e-5)
    # reproducible under random_state
    again = SEATClassifier(variant=_variant(method), **{**TINY, "max_epochs": 4}).fit(X, y)
    np.testing.assert_allclose(again.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    if method == "seat":
        assert set(clf.history_[0]) >= {"closeness", "topk", "stability"}
        assert len(clf.vanilla_history_) == 4
    else:
        with pytest.raises(ValueError, match="vanilla"):
            clf.explain(X[:2], method="vanilla")


def test_baselines_differ_from_vanilla(sentiment_data, vanilla):
    X, y = sentiment_data
    p = vanilla.predict_proba(X)
    for variant in (AttentionRP(epsilon=0.5), AttentionAT(epsilon=0.5), WordAT(epsilon=0.5)):
        clf = clone(vanilla).set_params(variant=variant).fit(X, y)
        assert not np.allclose(clf.predict_proba(X), p, atol=1e-4), variant


def test_base_estimator_variants(sentiment_data, vanilla):
    X, y = sentiment_data
    # an AttentionTextClassifier works as the vanilla model; its architecture is used
    base = AttentionTextClassifier(encoder="lstm", embed_dim=10, hidden_size=6, max_epochs=3,
                                   batch_size=16, lr=2e-2, device="cpu", random_state=1).fit(X, y)
    seat = SEATClassifier(base_estimator=FrozenEstimator(base), variant=SEAT(pgd_steps=2, epochs=2),
                          device="cpu", random_state=0).fit(X, y)
    for a, b in zip(seat.explain(X[:5], method="vanilla").values,
                    base.explain(X[:5]).values, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert seat.architecture_["hidden_size"] == 6
    # an unfitted base is fitted first (as clone() inside GridSearchCV would leave it)
    unfitted = SEATClassifier(base_estimator=clone(vanilla), variant=SEAT(pgd_steps=2),
                              **{**TINY, "max_epochs": 2}).fit(X, y)
    assert not hasattr(vanilla, "architecture_") or vanilla.architecture_ is None
    assert unfitted.predict(X[:3]).shape == (3,)
    # "vanilla" with a base copies it
    copy_ = SEATClassifier(variant="vanilla", base_estimator=FrozenEstimator(vanilla)).fit(X, y)
    np.testing.assert_allclose(copy_.predict_proba(X), vanilla.predict_proba(X), atol=1e-6)
    copy_.module_.output.weight.data.zero_()
    assert vanilla.module_.output.weight.abs().sum() > 0  # a copy, not the same module


def test_sklearn_contracts_and_persistence(sentiment_data, tmp_path):
    X, y = sentiment_data
    clf = SEATClassifier(variant=SEAT(pgd_steps=2), **{**TINY, "max_epochs": 3})
    params = clf.get_params()
    with pytest.raises(NotFittedError):
        clf.predict(X[:2])
    clf.fit(X, y)
    assert clf.get_params() == params  # fit does not touch the constructor arguments
    assert clone(clf).get_params() == params
    restored = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(restored.predict_proba(X), clf.predict_proba(X))
    clf.save(tmp_path / "seat")
    loaded = SEATClassifier.load(tmp_path / "seat")
    np.testing.assert_allclose(loaded.predict_proba(X), clf.predict_proba(X), atol=1e-6)
    for a, b in zip(loaded.explain(X[:5], method="vanilla").values,
                    clf.explain(X[:5], method="vanilla").values, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    assert loaded.fit_diagnostics_ == clf.fit_diagnostics_


AUTHORS = dict(variant=AuthorsSEAT(k=3, lambda_topk=1000.0, lambda_stability=1.0, pgd_radius=0.01,
                                   pgd_steps=3, pgd_norm="linf", epochs=2, lr=1e-2))


def test_authors_objective_trains_the_whole_model(sentiment_data, vanilla, tmp_path,
                                                  monkeypatch):
    from interpretable.estimators.core import _training as training

    groups = []

    class Recording(torch.optim.Adam):
        def __init__(self, params, **kwargs):
            super().__init__(params, **kwargs)
            groups.append([(len(g["params"]), g["lr"], g["amsgrad"]) for g in self.param_groups])

    monkeypatch.setitem(training.OPTIMIZERS, "adam", Recording)
    X, y = sentiment_data
    seat = SEATClassifier(base_estimator=FrozenEstimator(vanilla), **AUTHORS,
                          **{k: v for k, v in TINY.items() if k != "max_epochs"}).fit(X, y)
    # the authors' optimiser: attention (1 weight matrix + bias + v) and decoder (weight,
    # bias) at 1e-3, embedding and encoder at seat_lr, all amsgrad
    assert groups == [[(3, 1e-3, True), (2, 1e-3, True), (5, 1e-2, True)]]
    assert seat.score(X, y) >= vanilla.score(X, y) - 0.1
    # every part moved from the vanilla weights: embedding, encoder, attention and decoder
    before, after = vanilla.module_.state_dict(), seat.module_.state_dict()
    assert set(after) == set(before)  # no vanilla attention kept beside it
    for name in ("embedding.weight", "attention.v.weight", "output.weight"):
        assert name in before and not torch.equal(before[name], after[name]), name
    assert any(not torch.equal(before[n], after[n]) for n in before if n.startswith("encoder."))
    assert {"clean", "adversarial", "topk"} <= set(seat.history_[-1])
    assert len(seat.history_) == 2 and len(seat.vanilla_history_) == len(vanilla.history_)
    assert set(seat.fit_diagnostics_) == {"top_k_overlap", "prediction_tvd", "agreement"}
    with pytest.raises(ValueError, match="paper's objective"):
        seat.explain(X[:2], method="vanilla")
    seat.save(tmp_path / "authors")
    loaded = SEATClassifier.load(tmp_path / "authors")
    np.testing.assert_allclose(loaded.predict_proba(X), seat.predict_proba(X), atol=1e-6)
    # the training attack is the authors' clamp when asked: another model
    clamped = clone(seat).set_params(variant__pgd_clamp=(0.0, 1.0)).fit(X, y)
    assert not np.allclose(clamped.predict_proba(X), seat.predict_proba(X))


@pytest.mark.parametrize("params, match", [
    (dict(variant="code"), "variant"),
    (dict(variant=AuthorsSEAT(pgd_clamp=(1.0, 0.0))), "pgd_clamp"),
    (dict(variant=AuthorsSEAT(pgd_clamp=[0.0, 1.0])), "pgd_clamp"),
    (dict(variant="authors", optimizer="sgd"), "optimizer must be 'adam'"),
    (dict(variant=SEAT(k=0)), "'k' parameter"),
    (dict(variant=SEAT(lambda_topk=-1.0)), "lambda_topk"),
    (dict(variant=SEAT(lambda_stability=float("nan"))), "lambda_stability"),
    (dict(variant=SEAT(pgd_radius=-0.1)), "pgd_radius"),
    (dict(variant=SEAT(pgd_steps=1.5)), "pgd_steps"),
    (dict(variant=SEAT(pgd_norm="l1")), "pgd_norm"),
    (dict(variant=SEAT(divergence="js")), "divergence"),
    (dict(variant=SEAT(epochs=0)), "epochs"),
    (dict(variant=WordAT(epsilon=0.0)), "epsilon"),
])
def test_bad_parameters(sentiment_data, params, match):
    X, y = sentiment_data
    with pytest.raises(ValueError, match=match):
        SEATClassifier(**params).fit(X, y)


def test_bad_inputs(sentiment_data, vanilla):
    X, y = sentiment_data
    with pytest.raises(TypeError, match="base_estimator"):
        SEATClassifier(base_estimator="vanilla").fit(X, y)
    with pytest.raises(ValueError, match="unknown to base_estimator"):
        SEATClassifier(base_estimator=FrozenEstimator(vanilla)).fit(X[:4], ["a", "b", "a", "b"])
    with pytest.raises(ValueError, match="method"):
        vanilla.explain(X[:2], method="deeplift")
    with pytest.raises(ValueError, match="empty"):
        SEATClassifier(**TINY).fit([], [])


# ---------------------------------------------------------------------- BERT encoder
TINY_BERT = dict(vocab_size=30522, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=32, max_position_embeddings=64)


def test_bert_encoder_module_ignores_padding():
    pytest.importorskip("transformers")
    from interpretable.nn._attention import AttentionTextModule
    from interpretable.nn._bert_encoder import BertEncoder

    torch.manual_seed(0)
    enc = BertEncoder.from_config({**TINY_BERT, "vocab_size": 40})
    assert enc.output_size == 16 and enc.word_embeddings.shape == (40, 16)
    assert enc.bert.embeddings.word_embeddings is None  # the table lives in the attention module
    module = AttentionTextModule(40, 2, encoder=enc, embeddings=enc.word_embeddings).eval()
    tokens = torch.randint(1, 40, (3, 6))
    lengths = torch.tensor([6, 3, 1])
    out = module(tokens, lengths)
    garbage = tokens.clone()
    garbage[1, 3:], garbage[2, 1:] = 7, 9  # change only padding positions
    torch.testing.assert_close(module(garbage, lengths).logits, out.logits)
    assert (out.attention[1, 3:] == 0).all()


def test_seat_with_tiny_random_bert(sentiment_data):
    pytest.importorskip("transformers")
    from interpretable.metrics import sufficiency
    from interpretable.nn._bert_encoder import BertEncoder

    X, y = sentiment_data
    torch.manual_seed(0)
    enc = BertEncoder.from_config(TINY_BERT)
    before = enc.bert.encoder.layer[0].output.dense.weight.detach().clone()
    clf = SEATClassifier(encoder=enc, max_epochs=3, lr=5e-3, batch_size=16,
                         variant=SEAT(pgd_steps=2), device="cpu", random_state=0).fit(X, y)
    assert clf.score(X, y) >= 0.8
    exp = clf.explain(X[:3])
    assert exp.units[0][0] == "[CLS]" and exp.units[0][-1] == "[SEP]"
    assert clf.explain(X[:3], method="vanilla").units == exp.units
    assert np.isfinite(sufficiency(clf, X[:10], fractions=(0.2,)).summary["aopc"])
    again = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(again.predict_proba(X[:5]), clf.predict_proba(X[:5]), atol=1e-6)
    # the passed encoder is copied, never trained in place
    assert torch.equal(enc.bert.encoder.layer[0].output.dense.weight, before)
    assert not torch.equal(clf.module_.encoder.bert.encoder.layer[0].output.dense.weight, before)
    with pytest.raises(ValueError, match="embeddings must be None"):
        SEATClassifier(encoder=enc, embeddings="glove-50").fit(X, y)
    with pytest.raises(ValueError, match="word pieces"):
        SEATClassifier(encoder=BertEncoder.from_config({**TINY_BERT, "vocab_size": 50}),
                       max_epochs=1).fit(X, y)


# ---------------------------------------------------------------------- reproduction plumbing
def test_reproduction_runs_end_to_end_on_a_tiny_setting(monkeypatch):
    import json

    from interpretable.reproduce import seat as repro

    tiny = dict(train=240, test=60, epochs=1, lr=5e-3, seat_epochs=1, hidden_size=8, eval=30,
                sensitivity=6, n_search=2, seeds=(0, 1))
    monkeypatch.setitem(repro.SETTINGS, "quick", tiny)
    results = repro.run(quick=True, encoder=["rnn"])
    entry = results["encoders"]["rnn"]
    assert set(entry["methods"]) == set(repro.METHODS)
    for values in entry["methods"].values():
        for key in ("f1", "embedding_jsd", "embedding_tvd", "word1_jsd", "word2_tvd",
                    "comprehensiveness", "sufficiency", "sensitivity", "top4_overlap_vanilla"):
            assert np.isfinite(values[key]), key
    assert entry["methods"]["vanilla"]["top4_overlap_vanilla"] == 1.0
    for key in repro.ATTACKS:
        values = entry["methods"]["seat-authors"]
        assert np.isfinite(values[f"embedding_jsd_{key}"]) and values[f"embedding_tvd_{key}"] >= 0
    assert set(entry["seed_stability"]) == {"vanilla", "seat"}
    assert set(entry["checks"]) == {"seat", "seat-authors"}
    for checks in entry["checks"].values():
        assert all(isinstance(c["met"], bool) for c in checks.values())
        ratio = checks["jsd_10x_below_vanilla_pgd_r1e-2"]
        assert ratio["met"] == (ratio["ratio_vanilla_over_seat"] >= 10)
    json.dumps(results, default=float)  # what `reproduce` writes


def test_reproduction_results_are_named_by_encoder():
    from interpretable.reproduce import seat as repro

    assert repro.results_suffix({"encoder": ["rnn", "bilstm"]}) == ""
    assert repro.results_suffix({"encoder": ["minilm"]}) == "-minilm"
    assert repro.results_suffix({"encoder": ["rnn", "minilm"]}) == "-rnn-minilm"
    assert repro.results_suffix({"encoder": ["minilm"], "methods": ["vanilla", "word-at"]}) \
        == "-minilm-vanilla-word-at"
    assert repro.results_suffix({"methods": list(repro.METHODS)[::-1]}) == ""


def test_reproduction_runs_a_subset_of_methods(monkeypatch):
    from interpretable.reproduce import seat as repro

    tiny = dict(train=120, test=40, epochs=1, lr=5e-3, seat_epochs=1, hidden_size=8, eval=20,
                sensitivity=4, n_search=2, seeds=())
    monkeypatch.setitem(repro.SETTINGS, "quick", tiny)
    results = repro.run(quick=True, encoder=["rnn"], methods=["word-at"])
    entry = results["encoders"]["rnn"]
    assert set(entry["methods"]) == {"vanilla", "word-at"} and entry["checks"] == {}
