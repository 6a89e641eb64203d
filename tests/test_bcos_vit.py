"""BcosViTClassifier / ViTClassifier: explanations, sklearn contracts, persistence, bad input."""
import pickle

import matplotlib
import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from interpretable import BcosViTClassifier, ViTClassifier
from interpretable.datasets import load_digits_images

matplotlib.use("Agg")

TINY = dict(patch_size=2, embed_dim=16, depth=2, num_heads=2, stem_channels=(4,),
            max_epochs=2, batch_size=32, random_state=0)


@pytest.fixture(scope="module")
def digits():
    X, y = load_digits_images(return_X_y=True)
    return X[:240], y[:240]


@pytest.fixture(scope="module")
def bcos(digits):
    return BcosViTClassifier(**TINY).fit(*digits)


@pytest.fixture(scope="module")
def vit(digits):
    return ViTClassifier(**TINY).fit(*digits)


def test_predict_and_proba(bcos, digits):
    X, y = digits
    proba = bcos.predict_proba(X[:10])
    assert proba.shape == (10, 10)
    np.testing.assert_allclose(proba.sum(1), 1, rtol=1e-5)
    assert set(bcos.predict(X[:10])) <= set(bcos.classes_)
    assert 0 <= bcos.score(X, y) <= 1
    assert bcos.decision_function(X[:3]).shape == (3, 10)


def test_inherent_explanation_is_complete(bcos, digits):
    X, _ = digits
    exp = bcos.explain(X[:6])
    assert exp.values.shape == (6, 8, 8)
    assert exp.weights.shape == (6, 8, 8, 2)  # W(x) over the [x, 1-x] encoding
    np.testing.assert_array_equal(exp.target, bcos.predict(X[:6]))
    assert exp.completeness_error.max() < 1e-4
    np.testing.assert_allclose(exp.logit, bcos.decision_function(X[:6])[
        np.arange(6), np.searchsorted(bcos.classes_, exp.target)], rtol=1e-5, atol=1e-6)
    # contribution maps = W(x)ᵀ ⊙ x summed over the encoded channels
    enc = np.concatenate([exp.images, 1 - exp.images], axis=-1)
    np.testing.assert_allclose((exp.weights * enc).sum(-1), exp.values, atol=1e-6)
    frame = exp.to_frame()
    assert len(frame) == 6 * 64 and set(frame["method"]) == {"inherent"}


def test_float64_explanation_is_exact_to_machine_precision(bcos, digits):
    X, _ = digits
    exp = bcos.explain(X[:8], dtype="float64")
    assert exp.completeness_error.max() < 1e-9
    np.testing.assert_allclose(exp.values, bcos.explain(X[:8]).values,
                               rtol=1e-3, atol=1e-5)
    with pytest.raises(ValueError, match="dtype"):
        bcos.explain(X[:2], dtype="int8")
    with pytest.raises(TypeError, match="dtype"):  # an option of method="inherent" only
        bcos.explain(X[:2], method="rollout", dtype="float64")


def test_explain_other_target_and_by_head(bcos, digits):
    X, _ = digits
    exp = bcos.explain(X[:4], target=3, by="head")
    assert (exp.target == 3).all()
    assert exp.completeness_error.max() < 1e-4
    assert exp.components.shape == (4, len(exp.component_names), 8, 8)
    assert exp.component_names[:3] == ["tokens", "layer0.head0", "layer0.head1"]
    np.testing.assert_allclose(exp.components.sum(1), exp.values, atol=1e-5)
    frame = exp.to_frame(by_component=True)
    assert set(frame["component"]) == set(exp.component_names)


@pytest.mark.parametrize("method", ["rollout", "final_attention", "gradsam", "gradcam",
                                    "input_x_gradient", "integrated_gradients"])
def test_baselines_on_both_models(bcos, vit, digits, method):
    X, _ = digits
    for clf in (bcos, vit):
        exp = clf.explain(X[:3], method=method)
        assert exp.values.shape == (3, 8, 8)
        assert np.isfinite(exp.values).all()
        assert exp.logit is None and exp.method == method


def test_attention_baselines_are_class_agnostic_but_inherent_is_not(bcos, digits):
    X, _ = digits
    a = bcos.explain(X[:2], target=0, method="rollout").values
    b = bcos.explain(X[:2], target=1, method="rollout").values
    np.testing.assert_allclose(a, b)
    a = bcos.explain(X[:2], target=0).values
    b = bcos.explain(X[:2], target=1).values
    assert not np.allclose(a, b)


def test_explain_errors(bcos, vit, digits):
    X, _ = digits
    with pytest.raises(ValueError, match="method"):
        vit.explain(X[:2], method="inherent")
    with pytest.raises(ValueError, match="method"):
        bcos.explain(X[:2], method="lrp")
    with pytest.raises(ValueError, match="by"):
        bcos.explain(X[:2], by="layer")
    with pytest.raises(TypeError, match="by"):  # an option of another method, named
        bcos.explain(X[:2], method="rollout", by="head")
    with pytest.raises(ValueError, match="not seen"):
        bcos.explain(X[:2], target=42)
    with pytest.raises(ValueError, match="target"):
        bcos.explain(X[:2], target=[1, 2, 3])


def test_rgb_images_and_color_weights():
    rng = np.random.RandomState(0)
    X = rng.randint(0, 256, size=(40, 8, 8, 3)).astype(np.uint8)
    y = np.array(["cat", "dog"] * 20)
    clf = BcosViTClassifier(**{**TINY, "max_epochs": 1}).fit(X, y)
    assert list(clf.classes_) == ["cat", "dog"]
    exp = clf.explain(X[:2], target="dog")
    assert exp.weights.shape == (2, 8, 8, 6)
    assert exp.completeness_error.max() < 1e-4
    fig = exp.plot(kind="weights")
    assert len(fig.axes) >= 2
    with pytest.raises(ValueError, match="channel"):
        clf.predict(X[:2, :, :, 0])


def test_sklearn_contracts(digits):
    X, y = digits
    clf = BcosViTClassifier(**TINY)
    params = clf.get_params()
    assert params["attention_prior"] == "multiplicative" and params["stem_channels"] == (4,)
    cloned = clone(clf)
    assert cloned.get_params() == params
    cloned.set_params(attention_prior="additive", max_out=1)
    assert cloned.attention_prior == "additive"
    with pytest.raises(NotFittedError):
        clf.predict(X[:2])
    with pytest.raises(NotFittedError):
        clf.explain(X[:2])


def test_learning_rate_decay(bcos):
    lrs = [epoch["event_lr"] for epoch in bcos.history_]
    assert lrs[0] == pytest.approx(bcos.lr) and lrs[-1] == pytest.approx(bcos.lr * 0.1)


def test_reproducible_pickle_save_load(bcos, digits, tmp_path):
    X, y = digits
    again = clone(bcos).fit(X, y)
    np.testing.assert_allclose(again.predict_proba(X[:20]), bcos.predict_proba(X[:20]),
                               rtol=1e-5, atol=1e-6)
    restored = pickle.loads(pickle.dumps(bcos))
    np.testing.assert_allclose(restored.predict_proba(X[:5]), bcos.predict_proba(X[:5]))
    loaded = BcosViTClassifier.load(bcos.save(tmp_path / "bcos"))
    np.testing.assert_allclose(loaded.predict_proba(X[:5]), bcos.predict_proba(X[:5]),
                               rtol=1e-6)
    np.testing.assert_allclose(loaded.explain(X[:2]).values,
                               bcos.explain(X[:2]).values, rtol=1e-5, atol=1e-7)
    assert loaded.get_params()["stem_channels"] == (4,)


def test_grid_search_and_pipeline(digits):
    X, y = digits
    flat = X[:120].reshape(120, -1)
    pipe = Pipeline([("reshape", FunctionTransformer(lambda Z: Z.reshape(-1, 8, 8))),
                     ("clf", ViTClassifier(**{**TINY, "max_epochs": 1}))])
    search = GridSearchCV(pipe, {"clf__depth": [1, 2]}, cv=2).fit(flat, y[:120])
    assert search.best_params_["clf__depth"] in (1, 2)
    assert search.predict(flat[:4]).shape == (4,)


@pytest.mark.parametrize("bad, error, match", [
    (np.zeros(5), ValueError, "shape"),
    (np.zeros((2, 8, 8, 1, 1)), ValueError, "shape"),
    (np.full((2, 8, 8), np.nan), ValueError, "NaN"),
    (np.full((2, 8, 8), 2.0), ValueError, r"\[0, 1\]"),
    (np.zeros((2, 8, 8), dtype=np.int64), TypeError, "integer"),
    (np.zeros((2, 6, 6)), ValueError, "size"),
    (np.zeros((2, 8, 8, 3)), ValueError, "channel"),
])
def test_bad_input_at_predict(bcos, bad, error, match):
    with pytest.raises(error, match=match):
        bcos.predict(bad)


def test_bad_input_at_fit(digits):
    X, y = digits
    with pytest.raises(ValueError, match="NaN"):
        BcosViTClassifier(**TINY).fit(np.full_like(X[:10], np.nan), y[:10])
    with pytest.raises(ValueError, match="attention_prior"):
        BcosViTClassifier(**{**TINY, "attention_prior": "relative"}).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="patch_size"):
        BcosViTClassifier(**{**TINY, "patch_size": 3}).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="divisible"):
        ViTClassifier(**{**TINY, "embed_dim": 15}).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="lr_decay_at"):
        BcosViTClassifier(**{**TINY, "lr_decay_at": 1.5}).fit(X[:10], y[:10])
    with pytest.raises(ValueError, match="samples"):
        BcosViTClassifier(**TINY).fit(X[:10], y[:9])
    for scale in ((0.0, 0.5), (0.8, 0.5), (0.5, 1.5), 0.5, (0.5,)):
        with pytest.raises(ValueError, match="zoom_out"):
            BcosViTClassifier(**{**TINY, "zoom_out": scale}).fit(X[:10], y[:10])
    for p in (-0.1, 1.5, "half"):
        with pytest.raises(ValueError, match="zoom_out_probability"):
            BcosViTClassifier(**{**TINY, "zoom_out_probability": p}).fit(X[:10], y[:10])


def test_zoom_out_batches_shrink_every_image_onto_a_black_canvas():
    import torch

    from interpretable.estimators.vision._augmentation import ZoomOutBatches

    images = torch.ones(6, 8, 8, 1)
    items = [({"x": img}, torch.tensor(i)) for i, img in enumerate(images)]
    batches = ZoomOutBatches(lambda z: z.permute(0, 3, 1, 2), (0.5, 0.5), 1.0,
                              torch.Generator().manual_seed(0))
    X, y = batches(items)
    assert X["x"].shape == (6, 1, 8, 8) and y.tolist() == list(range(6))
    # each image becomes a 4x4 white square at a random position, the rest black
    assert (X["x"].sum(dim=(1, 2, 3)) == 16).all()
    positions = {tuple(torch.nonzero(x[0])[0].tolist()) for x in X["x"]}
    assert len(positions) > 1
    for scale, probability in ((None, 1.0), ((0.5, 0.5), 0.0)):
        unchanged = ZoomOutBatches(lambda z: z, scale, probability, torch.Generator())(items)
        assert torch.equal(unchanged[0]["x"], images)
    again = ZoomOutBatches(lambda z: z.permute(0, 3, 1, 2), (0.5, 0.5), 1.0,
                            torch.Generator().manual_seed(0))(items)[0]["x"]
    assert torch.equal(again, X["x"])
    some = ZoomOutBatches(lambda z: z, (0.5, 0.5), 0.5, torch.Generator().manual_seed(0))
    shrunk = torch.cat([some(items)[0]["x"] for _ in range(10)]).sum(dim=(1, 2, 3)) == 16
    assert 0.2 < shrunk.float().mean() < 0.8  # about half the images, the rest untouched


def test_zoom_out_is_reproducible_and_changes_training(digits):
    X, y = digits
    zoomed = BcosViTClassifier(**{**TINY, "max_epochs": 1, "zoom_out": (0.5, 0.8)})
    first = zoomed.fit(X, y).predict_proba(X[:10])
    np.testing.assert_allclose(clone(zoomed).fit(X, y).predict_proba(X[:10]), first,
                               rtol=1e-5, atol=1e-6)
    plain = BcosViTClassifier(**{**TINY, "max_epochs": 1}).fit(X, y).predict_proba(X[:10])
    assert not np.allclose(plain, first, atol=1e-4)


def test_integrated_gradients_start_from_a_black_image(bcos, digits):
    X, _ = digits
    ig = bcos.explain(X[:4], target=2, method="integrated_gradients", n_steps=512).values
    ixg = bcos.explain(X[:4], target=2, method="input_x_gradient").values
    assert not np.allclose(ig, ixg, rtol=1e-2, atol=1e-4)  # no longer the zero encoding
    # completeness: the attributions sum to logit(x) - logit(black image) (up to the path
    # integral's discretisation: MaxOut and |cos| make the path piecewise smooth)
    logits = bcos.decision_function(np.concatenate([X[:4], np.zeros_like(X[:1])]))[:, 2]
    np.testing.assert_allclose(ig.sum((1, 2)), logits[:4] - logits[4], rtol=1e-2)


def test_cascading_randomisation_resets_every_layer(bcos, digits):
    from interpretable.reproduce.bcos_vit import cascading_randomisation, randomised_top_down

    before = {k: v.clone() for k, v in bcos.module_.state_dict().items()}
    layers = list(randomised_top_down(bcos))  # (name, the one copy, randomised further)
    steps = [name for name, _ in layers]
    randomised = layers[-1][1]
    assert steps[0] == "head" and steps[-1] == "stem.layers.0"
    owners = {k.rsplit(".", 1)[0] for k in before}
    assert owners <= set(steps)  # every module owning parameters is reset
    after = randomised.module_.state_dict()
    for key, value in before.items():
        assert not torch.equal(after[key], value), key
        assert torch.equal(bcos.module_.state_dict()[key], value)  # the estimator is untouched
    X, y = digits
    result = cascading_randomisation(bcos, X[:3], y[:3], methods=("inherent",))
    assert result["layers"] == steps
    assert len(result["inherent"]["spearman"]) == len(steps)
    assert result["inherent"]["spearman_abs"][-1] < 0.9
