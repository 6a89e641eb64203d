"""ViTClassifier.from_pretrained and B-cosification against the real torchvision and timm
VisionTransformer (tests/_real_vision.py; skipped where torchvision cannot be imported): the
same logits (object, state dict, file; float32 and float64; several normalisations), every
post-hoc method, save / load, named refusals of the variants it does not compute."""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from interpretable import ViTClassifier
from interpretable.nn.bcos._bcosify import bcosify
from interpretable.nn.bcos._layers import encode_image
from interpretable.nn.bcos._vit_conversion import IMAGENET_MEAN, IMAGENET_STD

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision, timm_vit, torchvision_vit  # noqa: E402

NORMALISATIONS = [(IMAGENET_MEAN, IMAGENET_STD), ((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
                  ((0.1, 0.2, 0.3), (0.3, 0.25, 0.2))]
CLASSES = ["cat", "ant", "bee"]  # row order; classes_ sorted: ant, bee, cat
ROWS = [1, 2, 0]  # the original's rows in classes_ order


def _model(package, dtype=torch.float32, seed=0):
    """A tiny real ViT with every parameter perturbed (biases, norms, positions too)."""
    model = torchvision_vit() if package == "torchvision" else timm_vit()
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.2 * torch.randn(p.shape, generator=generator))
    return model.to(dtype)


def _images(n=4):
    return np.random.default_rng(0).random((n, 32, 32, 3), dtype=np.float32)


def _reference(model, X, mean, std):
    dtype = next(model.parameters()).dtype
    x = torch.as_tensor(X, dtype=dtype).permute(0, 3, 1, 2)
    mean, std = (torch.tensor(v, dtype=dtype)[:, None, None] for v in (mean, std))
    with torch.no_grad():
        return model((x - mean) / std)[:, ROWS]


@pytest.mark.parametrize("package", ["torchvision", "timm"])
@pytest.mark.parametrize("mean, std", NORMALISATIONS)
def test_logits_equal_the_original_in_float32(package, mean, std, tmp_path):
    model, X = _model(package), _images()
    expected = _reference(model, X, mean, std)
    path = tmp_path / "weights.pth"
    torch.save(model.state_dict(), path)
    sources = {"object": (model, None), "state dict": (model.state_dict(), {"heads": 2}),
               "file": (path, {"heads": 2})}
    for name, (source, architecture) in sources.items():
        clf = ViTClassifier.from_pretrained(source, classes=CLASSES, architecture=architecture,
                                            mean=mean, std=std, image_size=None, device="cpu")
        assert clf.layout == package and clf.classes_.tolist() == sorted(CLASSES), name
        torch.testing.assert_close(torch.as_tensor(clf.logits(clf.encode(X).inputs)),
                                   expected, rtol=1e-5, atol=1e-5, msg=name)


@pytest.mark.parametrize("package", ["torchvision", "timm"])
@pytest.mark.parametrize("mean, std", NORMALISATIONS)
def test_logits_equal_the_original_in_float64(package, mean, std):
    model, X = _model(package, torch.float64), _images()
    clf = ViTClassifier.from_pretrained(model.state_dict(), classes=CLASSES,
                                        architecture={"heads": 2}, mean=mean, std=std,
                                        image_size=None, device="cpu")
    x = clf.encode(X).inputs["x"]
    assert x.dtype == torch.float64
    with torch.no_grad():
        torch.testing.assert_close(clf.module_(x), _reference(model, X, mean, std), rtol=0,
                                   atol=1e-12)


def test_a_safetensors_file_and_sizes_from_the_shapes(tmp_path):
    from safetensors.torch import save_file

    model = _model("timm")
    path = tmp_path / "vit.safetensors"
    save_file(model.state_dict(), path)
    clf = ViTClassifier.from_pretrained(path, classes=CLASSES, architecture={"heads": 2},
                                        device="cpu")
    assert (clf.patch_size, clf.embed_dim, clf.depth, clf.num_heads, clf.mlp_ratio,
            clf.image_size) == (8, 32, 2, 2, 2, 32)
    with pytest.raises(ValueError, match="number of attention heads"):
        ViTClassifier.from_pretrained(path, classes=CLASSES)
    with pytest.raises(ValueError, match="classes must hold 3 distinct labels"):
        ViTClassifier.from_pretrained(model, classes=["a", "b"])
    with pytest.raises(ValueError, match="fix images of 32 pixels"):
        ViTClassifier.from_pretrained(model, classes=CLASSES, image_size=48)


@pytest.mark.parametrize("package", ["torchvision", "timm"])
def test_every_method_explains_and_the_model_saves_and_loads(package, tmp_path):
    model, X = _model(package), _images(3)
    clf = ViTClassifier.from_pretrained(model, classes=CLASSES, device="cpu")
    before = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    for method in clf.explain_methods:
        values = clf.explain(X, method=method).values
        assert values.shape == (3, 32, 32) and np.ptp(values, axis=(1, 2)).min() > 0, method
    assert all(torch.equal(before[k], v) for k, v in clf.module_.state_dict().items())
    loaded = ViTClassifier.load(clf.save(tmp_path / "model"), device="cpu")
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))
    assert loaded.get_params() == clf.get_params() | {"device": "cpu"}


@pytest.mark.parametrize("option, name", [
    (dict(reg_tokens=2), "register tokens"), (dict(init_values=0.1), "layer scale"),
    (dict(qk_norm=True), "q/k norms"), (dict(global_pool="avg"), "average pooling"),
    (dict(class_token=False, global_pool="avg"), "no class token")])
def test_timm_variants_are_refused_by_name(option, name):
    model = timm_vit(**option)
    for source in (model, model.state_dict()):
        with pytest.raises(ValueError, match=name):
            ViTClassifier.from_pretrained(source, classes=CLASSES,
                                          architecture={"heads": 2})
        with pytest.raises(ValueError, match=name):
            bcosify(source, num_heads=2)


@pytest.mark.parametrize("package", ["torchvision", "timm"])
def test_bcosify_keeps_float64_and_matches_torchvisions_normalisation(package):
    """The default mean / std are torchvision's ImageNet transform's, exactly."""
    torchvision, _ = real_vision()
    model, X = _model(package, torch.float64), _images()
    transform = torchvision.models.ViT_B_16_Weights.IMAGENET1K_V1.transforms()
    assert (tuple(transform.mean), tuple(transform.std)) == (IMAGENET_MEAN, IMAGENET_STD)
    x = torch.as_tensor(X, dtype=torch.float64).permute(0, 3, 1, 2)
    converted = bcosify(model)
    assert next(converted.parameters()).dtype == torch.float64
    normalise = torchvision.transforms.Normalize(transform.mean, transform.std)
    with torch.no_grad():
        torch.testing.assert_close(converted(encode_image(x)), model(normalise(x)), rtol=0,
                                   atol=1e-12)


def test_b_cos_fine_tuning_of_a_real_checkpoint_names_the_image_size(tmp_path):
    """``image_size="auto"`` is 224 with pretrained weights; a 32-pixel checkpoint says so."""
    from interpretable import BcosSimpleViTClassifier

    path = tmp_path / "vit.pth"
    torch.save(_model("torchvision").state_dict(), path)
    architecture = dict(dim=32, depth=2, heads=2, mlp_dim=64, patch_size=8)
    X, y = _images(6), [0, 1, 2] * 2
    with pytest.raises(ValueError, match=r"images of 32 x 32 pixels, not \(224, 224\).*"
                                         r"pass image_size=32"):
        BcosSimpleViTClassifier(pretrained=path, architecture=architecture, max_epochs=1).fit(X, y)
    clf = BcosSimpleViTClassifier(pretrained=path, architecture=architecture, image_size=None,
                                  max_epochs=1, device="cpu", random_state=0).fit(X, y)
    assert clf.module_.bcosified
