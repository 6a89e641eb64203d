"""Contrastive explanations: ``explain(contrast="mean" | label)`` explains
the target's logit minus the mean logit (or another class's logit) with the exact methods of
the embedding bag, the B-cos text model and the B-cos ViTs (holistic and v2). The difference
is linear in the logits, so completeness carries over: the terms sum to the logit difference
(float64: ≤ 1e-9), and the explanation is the difference of the plain explanations. The views
and tables say what is explained."""

import numpy as np
import pytest
import torch

from interpretable import BcosSimpleViTClassifier, BcosViTClassifier, EmbeddingBagClassifier

CLASSES = ("neg", "pos", "mixed")
CUES = {"neg": ["awful", "dull", "boring"], "pos": ["great", "superb", "moving"],
        "mixed": ["uneven", "patchy", "odd"]}


def three_classes(n=90, seed=0):
    rng = np.random.RandomState(seed)
    filler = ["the", "movie", "was", "a", "plot", "and", "film", "on"]
    X, y = [], []
    for i in range(n):
        label = CLASSES[i % 3]
        words = list(rng.choice(filler, size=rng.randint(2, 6)))
        words.insert(rng.randint(len(words) + 1), rng.choice(CUES[label]))
        X.append(" ".join(words))
        y.append(label)
    return X, np.array(y)


@pytest.fixture(scope="module")
def bag():
    X, y = three_classes()
    clf = EmbeddingBagClassifier(embed_dim=16, max_epochs=30, lr=0.05, random_state=0)
    return clf.fit(X, y), X


def _differences(clf, X, explanation):
    """The model's own ``logit(target) − mean logit`` per sample."""
    logits = clf.decision_function(X)
    rows = np.searchsorted(clf.classes_, explanation.target)
    return logits[np.arange(len(X)), rows] - logits.mean(1)


def test_mean_contrast_sums_to_the_logit_minus_the_mean_logit(bag):
    clf, X = bag
    exp = clf.explain(X[:9], contrast="mean")
    np.testing.assert_allclose(exp.logit, _differences(clf, X[:9], exp), atol=1e-5)
    totals = np.array([v.sum() for v in exp.values]) + exp.bias
    np.testing.assert_allclose(totals, exp.logit, atol=1e-5)
    assert exp.completeness_error.max() < 1e-6
    # the plain explanation of the target is positive almost everywhere; against the mean,
    # the cues of the other classes argue against it
    against = [v for v in clf.explain(X[:9], target="pos", contrast="mean").values]
    assert min(v.min() for v in against) < 0
    assert list(exp.contrast) == ["mean"] * 9


def test_contrast_is_the_difference_of_the_plain_explanations(bag):
    clf, X = bag
    plain = {c: clf.explain(X[:6], target=c) for c in CLASSES}
    exp = clf.explain(X[:6], target="pos", contrast="neg")
    for i in range(6):
        np.testing.assert_allclose(exp.values[i], plain["pos"].values[i] - plain["neg"].values[i],
                                   atol=1e-6)
    mean = clf.explain(X[:6], target="pos", contrast="mean")
    for i in range(6):
        expected = plain["pos"].values[i] - np.mean([plain[c].values[i] for c in CLASSES], 0)
        np.testing.assert_allclose(mean.values[i], expected, atol=1e-6)
    per_sample = clf.explain(X[:2], target="pos", contrast=["neg", "mixed"])
    assert per_sample.contrast.tolist() == ["neg", "mixed"]
    assert per_sample.explained(1) == "logit(pos) − logit(mixed)"


def test_views_and_tables_say_what_is_explained(bag):
    clf, X = bag
    exp = clf.explain(X[:2], target="pos", contrast="mean")
    assert exp.explained(0) == "logit(pos) − mean logit"
    html = exp.to_html()
    assert "logit(pos) − mean logit =" in html and "the mean logit" in html
    assert "lowers the target's logit − the mean logit" in html.replace("&#39;", "'")
    frame, samples = exp.to_frame(), exp.to_frame(kind="samples")
    assert set(frame["contrast"]) == {"mean"} and samples["contrast"].tolist() == ["mean"] * 2
    assert "contrast" not in clf.explain(X[:2]).to_frame()
    texts = [t.get_text() for t in exp.plot().findobj(lambda a: hasattr(a, "get_text"))]
    assert any("logit(pos) − mean logit" in t for t in texts)


def test_bad_contrasts_are_refused_by_name(bag):
    clf, X = bag
    with pytest.raises(ValueError, match="contrast contains labels not seen in fit"):
        clf.explain(X[:1], contrast="great")
    with pytest.raises(ValueError, match="contrast must be one label or 2 labels"):
        clf.explain(X[:2], contrast=["neg", "pos", "neg"])
    with pytest.raises(ValueError, match=r"method='gradient' does not explain a contrast.*"
                                         r"\['inherent'\]"):
        clf.explain(X[:1], method="gradient", contrast="mean")
    named_mean = EmbeddingBagClassifier(max_epochs=1).fit(["a b", "c d"], ["mean", "other"])
    with pytest.raises(ValueError, match="ambiguous"):
        named_mean.explain(["a"], contrast="mean")
    assert named_mean.explain(["a"], target="other", contrast=["mean"]).contrast[0] == "mean"


# ---------------------------------------------------------------------------- B-cos text
def test_bcos_text_contrast_is_exact_in_float64():
    pytest.importorskip("transformers")
    from interpretable import BcosTextClassifier

    config = {"vocab_size": 30522, "hidden_size": 16, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
              "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1}
    X, y = three_classes(48)
    clf = BcosTextClassifier(checkpoint=config, max_length=16, lr=3e-3, max_epochs=2,
                             batch_size=16, random_state=0, device="cpu").fit(X, y)
    before = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    for level in ("piece", "word"):
        exp = clf.explain(X[:6], contrast="mean", level=level, dtype="float64")
        assert exp.completeness_error.max() < 1e-9
        logits = clf.astype("float64").module_(**clf.encode(X[:6]).inputs).detach().numpy()
        rows = np.searchsorted(clf.classes_, exp.target)
        np.testing.assert_allclose(exp.logit, logits[np.arange(6), rows] - logits.mean(1),
                                   atol=1e-9)
    other = clf.explain(X[:6], target="pos", contrast="neg", dtype="float64")
    plain = {c: clf.explain(X[:6], target=c, dtype="float64") for c in ("pos", "neg")}
    for i in range(6):
        np.testing.assert_allclose(other.values[i], plain["pos"].values[i]
                                   - plain["neg"].values[i], atol=1e-9)
        np.testing.assert_allclose(other.position_type[i], plain["pos"].position_type[i]
                                   - plain["neg"].position_type[i], atol=1e-9)
    assert all(torch.equal(v, clf.module_.state_dict()[k]) for k, v in before.items())


# ---------------------------------------------------------------------------- B-cos ViTs
@pytest.mark.parametrize("architecture", [None, dict(dim=16, depth=2, heads=2, mlp_dim=32,
                                                     patch_size=2)], ids=["holistic", "v2"])
def test_bcos_vit_contrast_is_exact_in_float64_per_head_too(architecture):
    rng = np.random.RandomState(0)
    X = rng.rand(30, 8, 8).astype(np.float32)
    y = np.arange(30) % 3
    X[y == 1, :4] += 0.5
    X[y == 2, :, :4] += 0.5
    params = dict(max_epochs=2, random_state=0, device="cpu")
    if architecture is None:
        clf = BcosViTClassifier(patch_size=2, embed_dim=16, depth=2, num_heads=2,
                                stem_channels=(4,), **params)
    else:
        clf = BcosSimpleViTClassifier(architecture, image_size=None, **params)
    clf.fit(np.clip(X, 0, 1), y)
    X = np.clip(X[:4], 0, 1)
    exp = clf.explain(X, contrast="mean", by="head", dtype="float64")
    assert exp.completeness_error.max() < 1e-9
    np.testing.assert_allclose(exp.components.sum(1), exp.values, atol=1e-9)
    logits = clf.decision_function(X)
    rows = np.searchsorted(clf.classes_, exp.target)
    np.testing.assert_allclose(exp.logit, logits[np.arange(4), rows] - logits.mean(1),
                               atol=1e-4)
    other = clf.explain(X, target=2, contrast=0, dtype="float64")
    plain = {c: clf.explain(X, target=c, dtype="float64") for c in (0, 2)}
    np.testing.assert_allclose(other.values, plain[2].values - plain[0].values, atol=1e-9)
    np.testing.assert_allclose(other.weights, plain[2].weights - plain[0].weights, atol=1e-9)
    np.testing.assert_allclose(other.bias, plain[2].bias - plain[0].bias, atol=1e-9)
    assert other.explained(0) == "logit(2) − logit(0)"
