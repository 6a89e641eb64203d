"""The single-image and preprocessing traps of the image estimators.

* ``ViTClassifier.from_pretrained`` with its default ``image_size``: images of the model's
  input size are taken as they are (the logits are the model's own, against the real
  torchvision, tests/_real_vision.py), other sizes follow the weights' evaluation preset
  (torchvision's ``ImageClassification`` transform, resize then centre crop), the crop boxes
  saying which source pixels the explanation maps cover.
* One ``(H, W, C)`` image without its batch axis is refused on every image estimator and at
  every entry point, saying to pass ``X[None]`` (``refuse_single_image``); a batch of grey
  images ``(n, H, W)`` is still one.
"""
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from interpretable import BcosSimpleViTClassifier, BcosViTClassifier, ViTClassifier
from interpretable._validation import refuse_single_image
from interpretable.estimators.vision._base import resize_size
from interpretable.nn.bcos._vit_conversion import IMAGENET_MEAN, IMAGENET_STD

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision, torchvision_vit  # noqa: E402

CLASSES = ["a", "b", "c"]  # the head's rows, already sorted


def _torchvision_model():
    """A tiny real torchvision ViT (32 px) with every parameter perturbed (its head starts at
    zero)."""
    model = torchvision_vit()
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=generator))
    return model


@pytest.fixture(scope="module")
def pretrained():
    model = _torchvision_model()
    return model, ViTClassifier.from_pretrained(model, classes=CLASSES, device="cpu")


def _images(*shape, seed=0):
    return np.random.default_rng(seed).random(shape, dtype=np.float32)


def _logits(clf, X):
    return torch.as_tensor(clf.logits(clf.encode(X).inputs))


# ---------------------------------------------------------------------------- preprocessing
def test_images_of_the_models_size_give_the_models_own_logits(pretrained):
    model, clf = pretrained
    torchvision, _ = real_vision()
    X = _images(4, 32, 32, 3)
    normalise = torchvision.transforms.Normalize(IMAGENET_MEAN, IMAGENET_STD)
    with torch.no_grad():
        expected = model(normalise(torch.as_tensor(X).permute(0, 3, 1, 2)))
    assert clf.image_size == 32  # the default: the side the learned positions fix
    torch.testing.assert_close(_logits(clf, X), expected, rtol=0, atol=1e-6)
    uint8 = (X * 255).round().astype(np.uint8)  # uint8 and lists of arrays alike
    torch.testing.assert_close(_logits(clf, list(uint8)), _logits(clf, uint8 / 255.0),
                               rtol=0, atol=1e-6)
    explanation = clf.explain(X[:2], method="input_x_gradient")
    np.testing.assert_array_equal(explanation.crop_boxes, [[0, 0, 32, 32]] * 2)  # the source
    np.testing.assert_array_equal(explanation.images, X[:2])
    assert explanation.values.shape == (2, 32, 32)


def test_other_sizes_follow_the_weights_preset(pretrained):
    """Resize the shorter side to round(s·8/7) (256 for 224), centre-crop s: torchvision's
    ``ImageClassification`` preset, which ``weights.transforms()`` returns."""
    model, clf = pretrained
    torchvision, _ = real_vision()
    preset = torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1.transforms()
    assert (preset.crop_size, preset.resize_size) == ([224], [resize_size(224)])
    assert (tuple(preset.mean), tuple(preset.std)) == (IMAGENET_MEAN, IMAGENET_STD)
    transform = type(preset)(crop_size=32, resize_size=resize_size(32))  # the same at 32 px
    images = [_images(40, 48, 3), _images(32, 32, 3, seed=1), _images(64, 36, 3, seed=2)]
    with torch.no_grad():
        expected = torch.cat([model(transform(torch.as_tensor(image).permute(2, 0, 1)[None]))
                              for image in images[::2]])
    logits = _logits(clf, images)
    torch.testing.assert_close(logits[::2], expected, rtol=0, atol=1e-5)
    torch.testing.assert_close(logits[1], _logits(clf, images[1][None])[0], rtol=0, atol=1e-6)
    boxes = clf.explain(images, method="input_x_gradient").crop_boxes
    # 40 x 48 resized to 37 x 44: rows 2..34, columns 6..38 of it, in source pixels
    np.testing.assert_allclose(boxes[0], [2 * 40 / 37, 6 * 48 / 44, 34 * 40 / 37, 38 * 48 / 44])
    np.testing.assert_array_equal(boxes[1], [0, 0, 32, 32])


# ---------------------------------------------------------------------------- single images
def _color_estimators():
    """Every image estimator fitted on 8 color images of 16 px, as given and resized."""
    X, y = _images(8, 16, 16, 3), [0, 1] * 4
    tiny = dict(patch_size=8, embed_dim=8, depth=1, num_heads=2, max_epochs=1, random_state=0,
                device="cpu")
    v2 = dict(dim=8, depth=1, heads=2, mlp_dim=16, patch_size=8)
    estimators = {
        "BcosViTClassifier": BcosViTClassifier(**tiny, stem_channels=(4,)),
        "BcosViTClassifier(image_size=16)": BcosViTClassifier(**tiny, stem_channels=(4,),
                                                              image_size=16),
        "BcosSimpleViTClassifier": BcosSimpleViTClassifier(v2, max_epochs=1, random_state=0,
                                                           device="cpu"),
        "ViTClassifier": ViTClassifier(**tiny, stem_channels=(4,)),
        "ViTClassifier(image_size=16)": ViTClassifier(**tiny, layout="timm", image_size=16),
    }
    fitted = {name: est.fit(X, y) for name, est in estimators.items()}
    fitted["ViTClassifier.from_pretrained"] = ViTClassifier.from_pretrained(
        _torchvision_model(), classes=CLASSES, device="cpu")
    return fitted


@pytest.fixture(scope="module")
def color_estimators():
    return _color_estimators()


ONE_IMAGE = re.escape("is one (H, W, C) image, not a batch: pass X[None] (shape (1, ")


@pytest.mark.parametrize("name", ["BcosViTClassifier", "BcosViTClassifier(image_size=16)",
                                  "BcosSimpleViTClassifier", "ViTClassifier",
                                  "ViTClassifier(image_size=16)",
                                  "ViTClassifier.from_pretrained"])
def test_one_image_is_refused_at_every_entry_point(color_estimators, name):
    clf = color_estimators[name]
    side = clf.image_shape_[0]
    image = _images(side, side, 3)
    label = clf.classes_[0]
    calls = {"predict": lambda X: clf.predict(X), "predict_proba": clf.predict_proba,
             "decision_function": clf.decision_function, "score": lambda X: clf.score(X, [label]),
             "explain": lambda X: clf.explain(X, method="input_x_gradient"),
             "encode": clf.encode}
    for call in calls.values():
        for X in (image, torch.as_tensor(image), (image * 255).astype(np.uint8)):
            with pytest.raises(ValueError, match=ONE_IMAGE):
                call(X)
        call(image[None])  # the fix works
    with pytest.raises(ValueError, match=r"2 dimensions.*single image.*X\[None\]"):
        clf.predict(image[..., 0])
    assert clf.predict_proba(image[None]).shape == (1, len(clf.classes_)), name


def test_a_refit_continuing_the_model_refuses_one_image(color_estimators):
    clf = color_estimators["ViTClassifier"]
    before = clf.predict_proba(_images(2, 16, 16, 3))
    with pytest.raises(ValueError, match=ONE_IMAGE):
        clf.set_params(warm_start=True).fit(_images(16, 16, 3), [0] * 8 + [1] * 8)
    clf.set_params(warm_start=False)
    np.testing.assert_array_equal(clf.predict_proba(_images(2, 16, 16, 3)), before)
    resized = color_estimators["ViTClassifier(image_size=16)"]
    with pytest.raises(ValueError, match=ONE_IMAGE):  # any size: refused before training
        ViTClassifier(patch_size=8, embed_dim=8, depth=1, num_heads=2, layout="timm",
                      image_size=16, max_epochs=1).fit(_images(20, 24, 3), [0, 1] * 10)
    assert resized.predict(_images(3, 20, 24, 3)).shape == (3,)


def test_a_batch_of_grey_images_is_still_a_batch():
    X, y = _images(8, 16, 16), [0, 1] * 4
    grey = BcosViTClassifier(patch_size=8, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                             max_epochs=1, random_state=0, device="cpu").fit(X, y)
    assert grey.n_channels_ == 1
    assert grey.predict_proba(X[:3]).shape == (3, 2)  # (3, 16, 16): three grey images
    assert grey.predict_proba(X[:1, ..., None]).shape == (1, 2)
    with pytest.raises(ValueError, match=ONE_IMAGE + r".*\(16, 16\) is the fitted size"):
        grey.predict(X[0][..., None])  # (16, 16, 1): one grey image
    resized = ViTClassifier(patch_size=8, embed_dim=8, depth=1, num_heads=2, layout="timm",
                            image_size=16, max_epochs=1, random_state=0, device="cpu").fit(X, y)
    assert resized.n_channels_ == 3  # grey images become RGB
    assert resized.predict_proba(_images(3, 20, 24)).shape == (3, 2)
    np.testing.assert_array_equal(resized.encode(X[:2]).images,
                                  np.repeat(X[:2, ..., None], 3, axis=-1))  # 16 px: as given


@pytest.mark.parametrize("shape, options, single", [
    ((32, 32, 3), dict(channels=3, image_shape=(32, 32)), True),
    ((20, 24, 3), dict(channels=3, image_shape=(32, 32)), True),   # a color model: not grey
    ((32, 32, 4), dict(channels=3, image_shape=(32, 32)), False),  # then: the channel count
    ((5, 32, 32), dict(channels=1, image_shape=(32, 32)), False),
    ((32, 32, 1), dict(channels=1, image_shape=(32, 32)), True),
    ((1, 1, 1), dict(channels=1, image_shape=(1, 1)), False),     # one 1-pixel grey image
    ((300, 200, 3), dict(image_shape="any"), True),
    ((300, 200, 1), dict(image_shape="any"), True),
    ((3, 300, 200), dict(image_shape="any"), False),
    ((32, 32, 3), dict(), False),  # before a first fit: grey images
])
def test_the_rule(shape, options, single):
    if single:
        with pytest.raises(ValueError, match=ONE_IMAGE):
            refuse_single_image(np.zeros(shape), **options)
    else:
        refuse_single_image(np.zeros(shape), **options)
