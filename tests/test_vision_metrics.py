"""Grid pointing game (the B-cos authors' protocol), pixel perturbation, Quantus interop."""

import dataclasses

import numpy as np
import pytest
import torch

from interpretable import BcosViTClassifier, ViTClassifier
from interpretable.datasets import load_digits_images
from interpretable.explanation import ImageExplanation
from interpretable.metrics import grid_pointing_game, pixel_perturbation
from interpretable.metrics._localisation import confident_grids, smoothing_kernel


class _ConstantImageClassifier:
    """Class c = images filled with (c + 1) / 10; explanations chosen by ``method``."""

    classes_ = np.arange(5)

    def decision_function(self, X):
        c = np.clip(np.round(np.asarray(X).reshape(len(X), -1).mean(1) * 10 - 1), 0, 4)
        logits = np.full((len(X), 5), -3.0)
        logits[np.arange(len(X)), c.astype(int)] = 2.0
        return logits

    def predict_proba(self, X):
        logits = self.decision_function(X)
        return np.exp(logits) / np.exp(logits).sum(1, keepdims=True)

    def explain(self, X, target=None, method="oracle"):
        X = np.asarray(X)[..., 0]
        level = (np.asarray(target)[:, None, None] + 1) / 10
        right = np.isclose(X, level)
        if method == "oracle":
            attr = right.astype(float)
        elif method == "uniform":
            attr = np.ones_like(X)
        elif method == "speck":  # one positive pixel in the right cell amid negative ones
            attr = np.where(right, -2.0, 0.125)
            for i in range(len(X)):
                r, c = np.argwhere(right[i])[5]
                attr[i, r, c] = 4.0
        else:  # everything but the right cell
            attr = (~right).astype(float)
        return ImageExplanation(values=attr, target=np.asarray(target),
                                prediction=np.asarray(target), method=method)


def _constant_images():
    y = np.repeat(np.arange(5), 4)
    X = np.repeat(((y + 1) / 10)[:, None, None], 8, 1).repeat(8, 2).astype(np.float32)
    return X, y


@pytest.mark.parametrize("method, expected", [("oracle", 1.0), ("uniform", 0.25),
                                              ("anti", 0.0)])
def test_grid_pointing_game_scores(method, expected):
    X, y = _constant_images()
    score, scores = grid_pointing_game(_ConstantImageClassifier(), X, y, n_grids=3,
                                       method=method, smooth=1, return_scores=True)
    assert scores.shape == (3, 4)
    assert score == pytest.approx(expected)


def test_smoothing_comes_before_the_positive_part():
    X, y = _constant_images()
    clf = _ConstantImageClassifier()
    # 4 px cells: unsmoothed, the speck (4) is the right cell's only positive mass; every
    # 3x3 average in that cell is negative, so smoothing first leaves none there
    sharp = grid_pointing_game(clf, X, y, n_grids=3, method="speck", smooth=1)
    assert sharp == pytest.approx(4 / (4 + 48 * 0.125))
    assert grid_pointing_game(clf, X, y, n_grids=3, method="speck", smooth=3) == 0.0
    assert smoothing_kernel(224) == 15 and smoothing_kernel(32) == 3
    assert smoothing_kernel(28) == 1 and smoothing_kernel(8) == 1


def _authors_indices(conf, correct, y, cells, seed=42):
    """The authors' ``get_sorted_indices`` (B-cos-v2 localisation.py), written with masks."""
    classes = np.unique(y)
    ranked = {c: sorted((i for i in np.flatnonzero((y == c) & correct)),
                        key=lambda i: -conf[i]) for c in classes}
    position = {c: 0 for c in classes}

    def usable(c):
        return position[c] < len(ranked[c]) and conf[ranked[c][position[c]]] > 0.5

    mask = np.array([usable(c) for c in classes])
    np.random.seed(seed)
    out = []
    while mask.sum() > cells:
        for c in np.random.choice(classes[mask], size=cells, replace=False):
            out.append(ranked[c][position[c]])
            position[c] += 1
            mask[np.searchsorted(classes, c)] = usable(c)
    return np.asarray(out).reshape(-1, cells)


def test_confident_grids_follow_the_authors_selection():
    rng = np.random.RandomState(0)
    y = rng.randint(0, 6, 120)
    X = rng.rand(120, 8, 8).astype(np.float32)
    logits = rng.normal(0, 2, (120, 6))

    class Scored(_ConstantImageClassifier):
        classes_ = np.arange(6)

        def decision_function(self, images):
            return logits[[int(np.argmin(np.abs(X - im).sum((1, 2)))) for im in images[..., 0]]]

    bunch = confident_grids(Scored(), X, y)
    conf = 1 / (1 + np.exp(-logits[np.arange(120), y]))
    correct = logits.argmax(1) == y
    expected = _authors_indices(conf, correct, y, 4)
    np.testing.assert_array_equal(bunch.cell_index, expected)
    np.testing.assert_array_equal(bunch.cell_labels, y[expected])
    assert len(np.unique(bunch.cell_index)) == bunch.cell_index.size  # no image reused
    assert (conf[bunch.cell_index] > 0.5).all() and correct[bunch.cell_index].all()
    # tiles in row-major cells, scaled to the input size by 2x2 averaging
    first = X[bunch.cell_index[0]].reshape(4, 4, 2, 4, 2).mean((2, 4))
    np.testing.assert_allclose(bunch.data[0, :4, 4:, 0], first[1], rtol=1e-6)
    np.testing.assert_allclose(bunch.data[0, 4:, :4, 0], first[2], rtol=1e-6)
    with pytest.raises(ValueError, match="allow"):
        confident_grids(Scored(), X, y, n_grids=len(expected) + 1)


def test_grid_pointing_game_errors():
    X, y = _constant_images()
    clf = _ConstantImageClassifier()
    with pytest.raises(ValueError, match="grid"):
        grid_pointing_game(clf, X, y, grid=1)
    with pytest.raises(ValueError, match="divisible"):
        grid_pointing_game(clf, X, y, grid=3)
    with pytest.raises(ValueError, match="smooth"):
        grid_pointing_game(clf, X, y, smooth=2)
    with pytest.raises(ValueError, match="confidence"):
        grid_pointing_game(clf, X, y, confidence="max")
    keep = y < 4
    with pytest.raises(ValueError, match="allow 0"):
        grid_pointing_game(clf, X[keep], y[keep])

    class Patched(_ConstantImageClassifier):
        patch_size = 3

    with pytest.raises(ValueError, match="token-aligned"):
        grid_pointing_game(Patched(), X, y)


@pytest.fixture(scope="module")
def tiny():
    X, y = load_digits_images(return_X_y=True)
    clf = BcosViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2,
                            stem_channels=(8,), max_epochs=8, lr=3e-3, batch_size=32,
                            random_state=0).fit(X[:500], y[:500])
    return clf, X[500:700], y[500:700]


def test_grid_pointing_game_equals_quantus_focus(tiny):
    quantus = pytest.importorskip("quantus")
    from interpretable.attribution._quantus import QuantusModel, explain_func

    clf, X, y = tiny
    _, ours = grid_pointing_game(clf, X, y, n_grids=4, smooth=1, return_scores=True)
    bunch = confident_grids(clf, X, y, n_grids=4)
    mosaics = np.repeat(np.moveaxis(bunch.data, -1, 1), 4, axis=0)
    positions = np.tile(np.eye(4, dtype=int), (4, 1))
    focus = quantus.Focus(disable_warnings=True)(
        model=QuantusModel(clf), x_batch=mosaics, y_batch=bunch.cell_labels.reshape(-1),
        custom_batch=[tuple(p) for p in positions], explain_func=explain_func,
        explain_func_kwargs={"method": "inherent"})
    np.testing.assert_allclose(focus, ours.reshape(-1), rtol=1e-5, atol=1e-7)


def test_quantus_model_randomisation_resets_every_layer(tiny):
    quantus = pytest.importorskip("quantus")
    from interpretable.attribution._quantus import QuantusModel, explain_func

    clf, X, _ = tiny
    wrapped = quantus.helpers.model.pytorch_model.PyTorchModel(QuantusModel(clf))
    before = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    # (name, the one copy, randomised further)
    layers = list(wrapped.get_random_layer_generator(order="top_down"))
    names = [name for name, _ in layers]
    randomised = layers[-1][1]
    assert names[0] == "net.head" and names[-1] == "net.stem.layers.0"
    assert randomised.estimator.module_ is randomised.net  # explains with the random net
    after = randomised.net.state_dict()
    for key, value in before.items():
        assert not torch.equal(after[key], value), key
    images = np.moveaxis(X[:3, :, :, None], -1, 1)
    original = explain_func(QuantusModel(clf), images, [0, 1, 2])
    assert original.shape == (3, 1, 8, 8)
    assert not np.allclose(explain_func(randomised, images, [0, 1, 2]), original)
    for key, value in before.items():  # the estimator itself is untouched
        assert torch.equal(clf.module_.state_dict()[key], value)


class _Negated:
    """Proxy of a classifier whose attributions are negated (reverses the ranking)."""

    def __init__(self, clf):
        self._clf = clf

    def __getattr__(self, name):
        return getattr(self._clf, name)

    def explain(self, *args, **kwargs):
        explanation = self._clf.explain(*args, **kwargs)
        return dataclasses.replace(explanation, values=-explanation.values)


def test_pixel_perturbation_curves(tiny):
    clf, X, y = tiny
    area, curves = pixel_perturbation(clf, X, y, n_samples=20, return_curves=True)
    assert curves["fractions"][-1] == pytest.approx(0.25) and len(curves["fractions"]) == 9
    assert curves["most_first"][0] == curves["least_first"][0] == 1.0
    expected = np.trapezoid(curves["least_first"] - curves["most_first"], curves["fractions"])
    assert area == pytest.approx(expected)
    # reversing the ranking swaps the curves and negates the area
    area_neg, neg = pixel_perturbation(_Negated(clf), X, y, n_samples=20, return_curves=True)
    np.testing.assert_allclose(neg["most_first"], curves["least_first"], rtol=1e-5)
    assert area_neg == pytest.approx(-area, rel=1e-4, abs=1e-6)


def test_pixel_perturbation_baselines_and_morf_auc(tiny):
    clf, X, y = tiny
    # nothing removed (1/1000 of 64 pixels rounds to 0): each MoRF AUC is the image's own
    # probability of its class
    _, curves = pixel_perturbation(clf, X, y, n_samples=10, max_fraction=1e-3,
                                   return_curves=True)
    chosen = np.argsort(-clf.predict_proba(X)[np.arange(len(y)), y], kind="stable")
    chosen = [i for i in chosen if clf.predict(X[i:i + 1])[0] == y[i]][:10]
    np.testing.assert_allclose(curves["morf_auc"],
                               clf.predict_proba(X[chosen])[np.arange(10), y[chosen]], rtol=1e-5)
    # a black pixel is encoded (0, 1), not (0, 0): the baselines differ for B-cos models
    area = pixel_perturbation(clf, X, y, n_samples=20)
    assert pixel_perturbation(clf, X, y, n_samples=20, baseline="image") != pytest.approx(area)


def test_pixel_perturbation_baselines_agree_without_an_encoding():
    X, y = load_digits_images(return_X_y=True)
    vit = ViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2, stem_channels=(4,),
                        max_epochs=2, random_state=0).fit(X[:200], y[:200])
    a, ca = pixel_perturbation(vit, X[200:260], y[200:260], method="rollout", n_samples=10,
                               return_curves=True)
    b, cb = pixel_perturbation(vit, X[200:260], y[200:260], method="rollout", n_samples=10,
                               baseline="image", return_curves=True)
    assert a == b
    np.testing.assert_array_equal(ca["morf_auc"], cb["morf_auc"])


def test_pixel_perturbation_errors(tiny):
    clf, X, y = tiny
    with pytest.raises(ValueError, match="max_fraction"):
        pixel_perturbation(clf, X, y, max_fraction=0)
    with pytest.raises(ValueError, match="steps"):
        pixel_perturbation(clf, X, y, steps=1)
    with pytest.raises(TypeError, match="estimators.vision"):
        pixel_perturbation(_ConstantImageClassifier(), X, y)
    with pytest.raises(ValueError, match="method"):
        pixel_perturbation(clf, X, y, method="lrp", n_samples=5)
    with pytest.raises(ValueError, match="baseline"):
        pixel_perturbation(clf, X, y, baseline="blur")


def test_confident_grids_of_a_two_class_classifier_say_why_there_are_none():
    """decision_function of two classes is scikit-learn's margin (n,): the sigmoid confidence
    takes the per-class logits (it raised an AxisError); two classes make no 2x2 grid."""
    rng = np.random.RandomState(0)
    X = rng.rand(12, 8, 8, 3).astype(np.float32)
    y = np.arange(12) % 2
    clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                            max_epochs=1, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="allow 0 2x2 grids"):
        confident_grids(clf, X, y, min_confidence=0.0)
