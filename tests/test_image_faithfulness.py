"""Faithfulness (pixel / region flipping: comprehensiveness, sufficiency) and stability of
image explanations (interpretable.metrics._image_faithfulness)."""

import dataclasses
import math

import numpy as np
import pytest

from interpretable import BcosViTClassifier, ViTClassifier
from interpretable.datasets import load_digits_images
from interpretable.explanation import ImageExplanation
from interpretable.metrics._image_faithfulness import (
    _crop_to_source,
    image_stability,
    pixel_flipping,
)


class _PlantedLinear:
    """Two classes on grey images (n, H, W): ``logit_1 − logit_0 = Σ W (x − 0.5)``, ``W``
    non-zero only on a planted block, so only those pixels matter. Explanations:

    * ``"oracle"``: ``±W (x − mean(x))``, the exact change of the margin when a pixel is set to
      the image's mean (the ``"mean"`` baseline), signed for the explained class;
    * ``"reversed"``: the oracle negated (least important first);
    * ``"random"``: uniform noise (seeded);
    * ``"constant"``: the same map for every image.
    """

    classes_ = np.array([0, 1])

    def __init__(self, shape=(8, 8)):
        self.weights = np.zeros(shape)
        self.weights[2:5, 3:6] = 4.0
        self.calls = 0

    def _margin(self, X):
        return (self.weights * (np.asarray(X, dtype=np.float64) - 0.5)).sum((1, 2))

    def predict_proba(self, X):
        self.calls += 1
        p1 = 1.0 / (1.0 + np.exp(-self._margin(X)))
        return np.stack([1 - p1, p1], axis=1)

    def explain(self, X, target=None, method="oracle", batch_size=None):
        X = np.asarray(X, dtype=np.float64)
        prediction = (self._margin(X) > 0).astype(int)
        target = prediction if target is None else np.asarray(target)
        sign = np.where(target == 1, 1.0, -1.0)[:, None, None]
        oracle = sign * self.weights * (X - X.mean((1, 2), keepdims=True))
        values = {"oracle": oracle, "reversed": -oracle,
                  "random": np.random.default_rng(1).random(X.shape),
                  "constant": np.broadcast_to(np.arange(X[0].size, dtype=float)
                                              .reshape(X.shape[1:]), X.shape).copy(),
                  }[method]
        return ImageExplanation(values=values, target=target, prediction=prediction,
                                method=method)


def _planted_images(n=24, shape=(8, 8)):
    return np.random.default_rng(0).random((n, *shape)).astype(np.float32)


def _reference(clf, X, attributions, fractions, patch_size, fill):
    """One image, one fraction, one predict_proba call at a time, from the definition."""
    n, h, w = attributions.shape
    p = patch_size or 1
    rows, cols = -(-h // p), -(-w // p)
    out = np.zeros((n, 2, len(fractions)))
    for i in range(n):
        importance = [attributions[i, r * p:(r + 1) * p, c * p:(c + 1) * p].sum()
                      for r in range(rows) for c in range(cols)]
        order = sorted(range(rows * cols), key=lambda j: (-importance[j], j))
        proba = clf.predict_proba(X[i:i + 1])[0]
        label = int(np.argmax(proba))
        for j, f in enumerate(fractions):
            k = math.ceil(round(f * rows * cols, 6))
            for curve, removed in enumerate((order[:k], order[k:])):
                x = X[i].copy()
                for patch in removed:
                    r, c = divmod(patch, cols)
                    x[r * p:(r + 1) * p, c * p:(c + 1) * p] = fill[i]
                out[i, curve, j] = proba[label] - clf.predict_proba(x[None])[0, label]
    return out


@pytest.mark.parametrize("patch_size", [None, 2, 3])
def test_pixel_flipping_follows_the_definition(patch_size):
    clf, X = _PlantedLinear(), _planted_images(6)
    fractions = (0.01, 0.2, 0.5, 1.0)
    result = pixel_flipping(clf, X, method="random", fractions=fractions,
                            patch_size=patch_size)
    attributions = clf.explain(X, method="random").values
    expected = _reference(clf, X, attributions, fractions, patch_size,
                          X.mean((1, 2), dtype=np.float64))
    comp = result.frame[[f"comprehensiveness_k={f:g}" for f in fractions]].to_numpy()
    suff = result.frame[[f"sufficiency_k={f:g}" for f in fractions]].to_numpy()
    np.testing.assert_allclose(comp, expected[:, 0], atol=1e-12)
    np.testing.assert_allclose(suff, expected[:, 1], atol=1e-12)
    np.testing.assert_allclose(result.frame.comprehensiveness, comp.mean(1))
    np.testing.assert_allclose(result.frame.sufficiency, suff.mean(1))
    assert result.summary["n_patches"] == {None: 64, 2: 16, 3: 9}[patch_size]  # 3: ragged
    np.testing.assert_allclose(suff[:, -1], 0.0, atol=1e-12)  # f = 1 keeps every patch


def test_ties_are_broken_by_position():
    clf, X = _PlantedLinear(), _planted_images(4)
    flat = ImageExplanation(values=np.zeros((4, 8, 8)), target=np.zeros(4, int),
                            prediction=np.zeros(4, int), method="flat")
    result = pixel_flipping(clf, X, explanation=flat, fractions=(0.25,), patch_size=4,
                            baseline="zero")
    top_left_removed = X.copy()
    top_left_removed[:, :4, :4] = 0.0
    p = clf.predict_proba(X)
    label = p.argmax(1)
    expected = p[np.arange(4), label] - clf.predict_proba(top_left_removed)[np.arange(4), label]
    np.testing.assert_allclose(result.frame["comprehensiveness_k=0.25"], expected, atol=1e-12)


def test_the_planted_pixels_first_score_best():
    clf, X = _PlantedLinear(), _planted_images(24)
    scores = {method: pixel_flipping(clf, X, method=method).summary
              for method in ("oracle", "random", "reversed")}
    comp = {m: s["comprehensiveness"] for m, s in scores.items()}
    suff = {m: s["sufficiency"] for m, s in scores.items()}
    assert comp["oracle"] > comp["random"] + 0.05 and comp["oracle"] > comp["reversed"] + 0.05
    assert suff["oracle"] < suff["random"] - 0.05 and suff["oracle"] < suff["reversed"] - 0.05
    # removing the oracle's top pixels (all planted) flips the margin's sign: large drops
    assert scores["oracle"]["by_fraction"].loc[0.2, "comprehensiveness"] > 0.3


@pytest.fixture(scope="module")
def tiny():
    X, y = load_digits_images(return_X_y=True)
    clf = BcosViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2,
                            stem_channels=(8,), max_epochs=4, lr=3e-3, batch_size=32,
                            random_state=0).fit(X[:300], y[:300])
    return clf, X[500:532]


def test_a_b_cos_model_explanation_beats_its_reversal_and_noise(tiny):
    clf, X = tiny
    explanation = clf.explain(X)
    reversed_ = dataclasses.replace(explanation, values=-explanation.values)
    noise = dataclasses.replace(
        explanation, values=np.random.default_rng(0).random(explanation.values.shape))
    own = pixel_flipping(clf, X, explanation=explanation).summary
    for other in (reversed_, noise):
        summary = pixel_flipping(clf, X, explanation=other).summary
        assert own["comprehensiveness"] > summary["comprehensiveness"]
        assert own["sufficiency"] < summary["sufficiency"]


def test_frame_and_summary(tiny):
    clf, X = tiny
    result = pixel_flipping(clf, X[:5], fractions=(0.1, 0.5), patch_size=2)
    assert result.frame.columns.tolist() == [
        "sample", "comprehensiveness_k=0.1", "comprehensiveness_k=0.5", "sufficiency_k=0.1",
        "sufficiency_k=0.5", "comprehensiveness", "sufficiency"]
    assert result.frame["sample"].tolist() == [0, 1, 2, 3, 4]
    summary = result.summary
    assert summary["fractions"] == [0.1, 0.5] and summary["n_patches"] == 16
    assert summary["patch_size"] == 2 and summary["n_samples"] == 5
    assert summary["comprehensiveness"] == pytest.approx(result.frame.comprehensiveness.mean())
    assert summary["by_fraction"].shape == (2, 2)
    # the default explanation is the estimator's default method's
    given = pixel_flipping(clf, X[:5], explanation=clf.explain(X[:5]), fractions=(0.1, 0.5),
                           patch_size=2)
    np.testing.assert_array_equal(given.frame.to_numpy(), result.frame.to_numpy())


def test_layouts_and_uint8_give_the_same_numbers():
    clf, X = _PlantedLinear(), _planted_images(5)

    class Channels(_PlantedLinear):  # takes (n, H, W, 1)
        def predict_proba(self, X):
            assert np.ndim(X) == 4
            return super().predict_proba(np.asarray(X)[..., 0])

        def explain(self, X, **kwargs):
            return super().explain(np.asarray(X)[..., 0], **kwargs)

    grey = pixel_flipping(clf, X, method="oracle").frame
    channels = pixel_flipping(Channels(), X[..., None], method="oracle").frame
    np.testing.assert_allclose(grey.to_numpy(), channels.to_numpy(), atol=1e-12)
    as_uint8 = np.round(X * 255).astype(np.uint8)
    np.testing.assert_allclose(
        pixel_flipping(clf, as_uint8, method="oracle").frame.to_numpy(),
        pixel_flipping(clf, as_uint8 / np.float32(255), method="oracle").frame.to_numpy(),
        atol=1e-7)


def test_baselines():
    clf, X = _PlantedLinear(), _planted_images(4)
    zero = pixel_flipping(clf, X, method="random", fractions=(1.0,), baseline="zero").frame
    half = pixel_flipping(clf, X, method="random", fractions=(1.0,), baseline=0.5).frame
    p = clf.predict_proba(X)
    label = p.argmax(1)
    rows = np.arange(4)
    for frame, value in ((zero, 0.0), (half, 0.5)):  # f = 1: the whole image is the baseline
        blank = clf.predict_proba(np.full_like(X, value))
        np.testing.assert_allclose(frame["comprehensiveness_k=1"],
                                   p[rows, label] - blank[rows, label], atol=1e-12)
    mean = pixel_flipping(clf, X, method="random", fractions=(1.0,)).frame
    means = clf.predict_proba(np.broadcast_to(X.mean((1, 2), keepdims=True), X.shape))
    np.testing.assert_allclose(mean["comprehensiveness_k=1"],
                               p[rows, label] - means[rows, label], atol=1e-6)


def test_batching_gives_the_numbers_of_one_image_at_a_time(tiny):
    clf, X = tiny
    explanation = clf.explain(X)
    single = pixel_flipping(clf, X, explanation=explanation, batch_size=1)
    for batch_size in (None, 23, 10_000):
        batched = pixel_flipping(clf, X, explanation=explanation, batch_size=batch_size)
        np.testing.assert_allclose(batched.frame.to_numpy(), single.frame.to_numpy(),
                                   atol=1e-6)


def test_one_predict_proba_call_per_chunk():
    clf, X = _PlantedLinear(), _planted_images(10)
    pixel_flipping(clf, X, method="oracle", fractions=(0.1, 0.5))  # 5 images per image
    assert clf.calls == 1
    clf.calls = 0
    pixel_flipping(clf, X, method="oracle", fractions=(0.1, 0.5), batch_size=10)
    assert clf.calls == 5  # two images (2 x 5 perturbed) per call
    clf.calls = 0
    pixel_flipping(clf, X, method="oracle", fractions=(0.1, 0.5), batch_size=1)
    assert clf.calls == 10  # at least one image per call


def test_validation(tiny):
    clf, X = tiny
    explanation = clf.explain(X[:4])
    with pytest.raises(ValueError, match="fractions"):
        pixel_flipping(clf, X[:4], explanation=explanation, fractions=(0.0, 0.5))
    with pytest.raises(ValueError, match="fractions"):
        pixel_flipping(clf, X[:4], explanation=explanation, fractions=(1.5,))
    with pytest.raises(ValueError, match="fractions"):
        pixel_flipping(clf, X[:4], explanation=explanation, fractions=())
    with pytest.raises(ValueError, match="distinct"):
        pixel_flipping(clf, X[:4], explanation=explanation, fractions=(0.5, 0.5))
    for bad in (0, 9, 2.5, True, "2"):
        with pytest.raises(ValueError, match="patch_size"):
            pixel_flipping(clf, X[:4], explanation=explanation, patch_size=bad)
    for bad in ("blur", 1.5, -0.1, True, None):
        with pytest.raises(ValueError, match="baseline"):
            pixel_flipping(clf, X[:4], explanation=explanation, baseline=bad)
    for bad in (0, -1, 2.0):
        with pytest.raises(ValueError, match="batch_size"):
            pixel_flipping(clf, X[:4], explanation=explanation, batch_size=bad)
    with pytest.raises(ValueError, match="has values of shape"):
        pixel_flipping(clf, X[:3], explanation=explanation)
    small = dataclasses.replace(explanation, values=explanation.values[:, :4, :4])
    with pytest.raises(ValueError, match="explanation maps are 4x4 pixels but X has 8x8"):
        pixel_flipping(clf, X[:4], explanation=small)
    nan = dataclasses.replace(explanation, values=np.full((4, 8, 8), np.nan))
    with pytest.raises(ValueError, match="NaN"):
        pixel_flipping(clf, X[:4], explanation=nan)
    with pytest.raises(TypeError, match="ImageExplanation"):
        pixel_flipping(clf, X[:4], explanation=explanation.values)
    with pytest.raises(TypeError, match="predict_proba and explain"):
        pixel_flipping(object(), X[:4])
    with pytest.raises(ValueError, match="channels-first"):
        pixel_flipping(clf, np.zeros((2, 3, 8, 8), np.float32))
    with pytest.raises(ValueError, match="empty"):
        pixel_flipping(clf, np.zeros((0, 8, 8), np.float32))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pixel_flipping(clf, X[:4] * 2)
    with pytest.raises(ValueError, match="method"):
        pixel_flipping(clf, X[:4], method="lrp")


def test_deletion_curve_equals_quantus_region_perturbation(tiny):
    """Quantus' ``RegionPerturbation(order="morf")`` curve is ``p0 − p(x with the r most
    relevant patches replaced)`` for r = 1..regions_evaluation, patches ranked by their summed
    attribution: our comprehensiveness columns at ``fractions = (1/N, ..., N/N)``, on softmax
    probabilities (``softmax=True``) of the predicted classes (``y_batch``), with
    ``normalise=False`` and ``abs=False`` (rankings would not change, but keep it literal).

    Baselines: a number is the same in both. Quantus' ``perturb_baseline="mean"`` is a scalar,
    the mean over all channels of the image *as perturbed so far*, recomputed at every step;
    ours is the original image's per-channel mean, which Quantus takes as an explicit array
    ``(batch, C·p²)`` (one value per index of a patch, in its (channel, row, column) order)."""
    quantus = pytest.importorskip("quantus")
    from interpretable.attribution._quantus import QuantusModel

    clf, X = tiny
    X = X[:16]
    explanation = clf.explain(X)
    attributions = np.asarray(explanation.values, dtype=np.float64)[:, None]
    y_hat = clf.predict_proba(X).argmax(1)
    for patch_size, ours_baseline, theirs_baseline in (
            (1, 0.5, 0.5),  # pixel flipping, a constant
            (2, "mean", np.repeat(X.mean((1, 2), dtype=np.float64)[:, None], 4, axis=1))):
        n_patches = (8 // patch_size) ** 2
        fractions = tuple(np.arange(1, n_patches + 1) / n_patches)
        ours = pixel_flipping(clf, X, explanation=explanation, fractions=fractions,
                              patch_size=patch_size, baseline=ours_baseline).frame
        metric = quantus.RegionPerturbation(
            patch_size=patch_size, order="morf", regions_evaluation=n_patches, abs=False,
            normalise=False, perturb_baseline=theirs_baseline, disable_warnings=True)
        theirs = metric(model=QuantusModel(clf), x_batch=X[:, None], y_batch=y_hat,
                        a_batch=attributions, softmax=True, device="cpu")
        curve = ours[[f"comprehensiveness_k={f:g}" for f in fractions]].to_numpy()
        np.testing.assert_allclose(curve, np.asarray(theirs), rtol=0, atol=1e-6)
        assert np.ptp(curve) > 0.1  # a real curve, not a flat zero


# ---------------------------------------------------------------------------- stability
def test_stability_is_zero_for_an_unchanging_explanation():
    clf, X = _PlantedLinear(), _planted_images(6) * 0.6 + 0.2
    constant = image_stability(clf, X, method="constant", radius=0.05, random_state=0)
    assert constant.frame.jsd.max() < 1e-12
    changing = image_stability(clf, X, method="oracle", radius=0.05, random_state=0)
    assert (changing.frame.jsd > 1e-6).all()
    assert changing.frame.columns.tolist() == ["sample", "jsd", "tvd", "prediction_changed",
                                               "relative_noise"]
    # pixels in (0.2, 0.8): nothing is clipped, the noise has exactly the relative norm
    np.testing.assert_allclose(changing.frame.relative_noise, 0.05, rtol=1e-5)
    assert set(changing.summary) >= {"mean_jsd", "median_jsd", "mean_tvd", "n_samples",
                                     "prediction_changed", "radius"}


def test_stability_of_a_b_cos_model(tiny):
    clf, X = tiny
    zero = image_stability(clf, X[:8], radius=0.0, random_state=0)
    assert zero.frame.jsd.max() < 1e-9 and zero.frame.tvd.max() < 1e-9
    small = image_stability(clf, X[:8], random_state=0)
    large = image_stability(clf, X[:8], radius=0.2, random_state=0)
    assert (small.frame.jsd > 0).all() and (small.frame.jsd <= math.log(2)).all()
    assert large.summary["mean_jsd"] > small.summary["mean_jsd"]
    again = image_stability(clf, X[:8], random_state=0)
    np.testing.assert_array_equal(again.frame.to_numpy(), small.frame.to_numpy())
    other = image_stability(clf, X[:8], random_state=1)
    assert not np.allclose(other.frame.jsd, small.frame.jsd)
    # digits have black pixels: clipping removes part of the noise
    assert (small.frame.relative_noise <= 0.01 + 1e-6).all()


def test_stability_validation(tiny):
    clf, X = tiny
    for bad in (-0.1, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(ValueError, match="radius"):
            image_stability(clf, X[:2], radius=bad)
    with pytest.raises(ValueError, match="batch_size"):
        image_stability(clf, X[:2], batch_size=0)
    with pytest.raises(TypeError, match="predict_proba and explain"):
        image_stability(object(), X[:2])


# ---------------------------------------------------------------------------- conventional ViT
def test_crop_maps_go_back_to_the_source_pixels():
    values = np.arange(16.0).reshape(1, 4, 4)
    np.testing.assert_array_equal(_crop_to_source(values, [[0, 0, 4, 4]], (4, 4)), values)
    doubled = _crop_to_source(values, [[0, 0, 8, 8]], (8, 8))
    np.testing.assert_array_equal(doubled, values.repeat(2, 1).repeat(2, 2) / 4)
    inner = _crop_to_source(values, [[2, 1, 6, 5]], (8, 6))
    np.testing.assert_array_equal(inner[0, 2:6, 1:5], values[0])
    assert inner.sum() == values.sum()  # outside the box: 0


def test_a_pretrained_conventional_vit_with_crops():
    """``ViTClassifier.from_pretrained`` (a timm-layout ViT) resizes and centre-crops: the
    images are perturbed at their own size, the crop explanations mapped back to them."""
    rng = np.random.default_rng(0)
    X = rng.random((8, 16, 16, 3), dtype=np.float32)
    vit = ViTClassifier(patch_size=8, embed_dim=8, depth=1, num_heads=2, layout="timm",
                        max_epochs=1, random_state=0).fit(X, [0, 1] * 4)
    clf = ViTClassifier.from_pretrained(vit.module_.state_dict(), classes=["cat", "dog"],
                                        architecture={"heads": 2})
    images = rng.random((5, 20, 24, 3), dtype=np.float32)
    result = pixel_flipping(clf, images, method="input_x_gradient", patch_size=4,
                            fractions=(0.1, 0.5, 1.0))
    assert result.frame.shape == (5, 9) and result.summary["n_patches"] == 30
    assert np.isfinite(result.frame.to_numpy()).all()
    np.testing.assert_allclose(result.frame["sufficiency_k=1"], 0.0, atol=1e-6)
    stability = image_stability(clf, images, method="input_x_gradient", random_state=0)
    assert stability.frame.shape == (5, 5) and (stability.frame.jsd > 0).all()


def test_a_conventional_vit():
    X, y = load_digits_images(return_X_y=True)
    vit = ViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2, max_epochs=2,
                        random_state=0).fit(X[:200], y[:200])
    for method in ("rollout", "input_x_gradient"):
        result = pixel_flipping(vit, X[200:216], method=method, patch_size=2)
        assert result.frame.shape == (16, 13)
        assert np.isfinite(result.frame.to_numpy()).all()
    assert image_stability(vit, X[200:216], method="rollout",
                           random_state=0).frame.jsd.notna().all()
