"""Grid pointing game and pixel perturbation."""

import dataclasses
import numpy as np
import pytest

from interpretable import BcosViTClassifier
from interpretable.datasets import load_digits_images
from interpretable.explanation import ImageExplanation
from interpretable.metrics import grid_pointing_game, pixel_perturbation


class _ConstantImageClassifier:
    """Class c = images filled with (c + 1) / 10; explanations chosen by ``method``."""

    classes_ = np.arange(5)

    def predict_proba(self, X):
        c = np.clip(np.round(np.asarray(X).reshape(len(X), -1).mean(1) * 10 - 1), 0, 4)
        proba = np.full((len(X), 5), 0.05)
        proba[np.arange(len(X)), c.astype(int)] = 0.8
        return proba

    def explain(self, X, target=None, method="oracle"):
        X = np.asarray(X)[..., 0]
        level = (np.asarray(target)[:, None, None] + 1) / 10
        if method == "oracle":
            attr = np.isclose(X, level).astype(float)
        elif method == "uniform":
            attr = np.ones_like(X)
        else:  # everything but the right cell
            attr = (~np.isclose(X, level)).astype(float)
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
    score, scores = grid_pointing_game(_ConstantImageClassifier(), X, y, n_grids=6,
                                       method=method, return_scores=True)
    assert scores.shape == (6, 4)
    assert score == pytest.approx(expected)


def test_grid_pointing_game_errors():
    X, y = _constant_images()
    clf = _ConstantImageClassifier()
    with pytest.raises(ValueError, match="grid"):
        grid_pointing_game(clf, X, y, grid=1)
    with pytest.raises(ValueError, match="divisible"):
        grid_pointing_game(clf, X, y, grid=3)
    keep = y < 3
    with pytest.raises(ValueError, match="classes"):
        grid_pointing_game(clf, X[keep], y[keep])


@pytest.fixture(scope="module")
def tiny():
    X, y = load_digits_images(return_X_y=True)
    clf = BcosViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2,
                            stem_channels=(8,), max_epochs=8, lr=3e-3, batch_size=32,
                            random_state=0).fit(X[:500], y[:500])
    return clf, X[500:700], y[500:700]


def test_grid_pointing_game_on_a_model(tiny):
    clf, X, y = tiny
    for method in ("inherent", "rollout"):
        score = grid_pointing_game(clf, X, y, n_grids=4, method=method, n_per_class=3)
        assert 0.0 <= score <= 1.0


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
