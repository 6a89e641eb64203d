"""ImageClassifier: any torchvision or timm classifier as it is (tests/_real_vision.py; skipped
where torchvision or timm cannot be imported). For tiny models of each family built by the real
libraries (ResNet, ConvNeXt, EfficientNet, DenseNet, Swin, DeiT): the logits are the
original's, GradCAM finds the last spatial feature map and equals captum's ``LayerGradCam``
there (or the same formula computed through timm's own API where the map is channels last or
tokens), every method runs and is not constant, integrated gradients and input × gradient are
captum's; state dicts and files with the architecture's name, the preprocessing preset,
save / load / pickle / clone, fine-tuning (transactional) and the named refusals."""
import copy
import pickle
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.base import clone

from interpretable import ImageClassifier

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision  # noqa: E402

CLASSES = ["cat", "ant", "bee"]  # row order; classes_ sorted: ant, bee, cat
ROWS = [1, 2, 0]  # the original's rows in classes_ order
CHEAP = {"integrated_gradients": {"n_steps": 4}, "smoothgrad": {"nt_samples": 2},
         "gradient_shap": {"n_samples": 2}, "lime": {"n_samples": 16},
         "kernel_shap": {"n_samples": 16}}
SWIN = dict(img_size=32, window_size=2, embed_dim=16, depths=[1, 1], num_heads=[1, 2])
DEIT = dict(img_size=32, patch_size=8, depth=2, embed_dim=32, num_heads=2)
CONVNEXT = dict(depths=[1, 1, 1, 1], dims=[8, 16, 32, 64])
RESNET = dict(layers=[1, 1, 1, 1], channels=[8, 16, 32, 64], stem_width=8)


def _torchvision(name):
    return lambda tv, timm: tv.models.get_model(name, num_classes=3)


def _timm(name, options):
    return lambda tv, timm: timm.create_model(name, num_classes=3, **options)


#: family -> (builds the model, image side, builder options to pass, GradCAM layer, layout)
FAMILIES = {
    "resnet": (_torchvision("resnet18"), 64, None, "layer4", "NCHW"),
    "convnext": (_timm("convnext_atto", CONVNEXT), 64, CONVNEXT, "stages", "NCHW"),
    "efficientnet": (_torchvision("efficientnet_b0"), 64, None, "features", "NCHW"),
    "densenet": (_torchvision("densenet121"), 64, None, "features", "NCHW"),
    "swin": (_timm("swin_tiny_patch4_window7_224", SWIN), 32, SWIN, "norm", "NHWC"),
    "deit": (_timm("deit_tiny_patch16_224", DEIT), 32, DEIT, "blocks.1.norm1", "tokens"),
}


def _perturbed(model, seed=0):
    """``model`` in eval mode with every parameter moved (random heads are not all-zero, as
    torchvision's ViT's are, and small inits do not hide the methods' differences)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    return model.eval()


def _images(side, n=2, seed=0):
    return np.random.default_rng(seed).random((n, side, side, 3), dtype=np.float32)


@pytest.fixture(scope="module")
def libraries():
    return real_vision()


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request, libraries):
    """``(name, original model, fitted ImageClassifier, side)`` per family, built once."""
    make, side, options, _, _ = FAMILIES[request.param]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = _perturbed(make(*libraries))
    clf = ImageClassifier.from_pretrained(model, classes=CLASSES, architecture_options=options,
                                          image_size=side, device="cpu")
    return request.param, model, clf, side


def _encoded(clf, X):
    return clf.encode(X).inputs["x"]


def test_logits_equal_the_original(family):
    name, model, clf, side = family
    X = _images(side, 3)
    x = _encoded(clf, X)
    mean, std = (torch.tensor(v)[:, None, None] for v in ((0.485, 0.456, 0.406),
                                                            (0.229, 0.224, 0.225)))
    torch.testing.assert_close(x, (torch.as_tensor(X).permute(0, 3, 1, 2) - mean) / std)
    with torch.no_grad():
        expected = model(x)[:, ROWS]
    assert clf.classes_.tolist() == sorted(CLASSES)
    torch.testing.assert_close(clf.logits(clf.encode(X).inputs), expected, atol=1e-5, rtol=0)
    np.testing.assert_allclose(clf.predict_proba(X), torch.softmax(expected.double(), 1),
                               atol=1e-5)
    assert clf.image_shape_ == (side, side) and clf.crop_size_ == side


def test_gradcam_finds_the_layer_and_equals_the_reference(family):
    name, model, clf, side = family
    _, _, _, layer, layout = FAMILIES[name]
    assert clf.gradcam_layer_ == layer
    X = _images(side)
    x, target = _encoded(clf, X), torch.tensor([0, 2])
    exp = clf.explain(X, method="gradcam", target=clf.classes_[target.numpy()])
    rows = torch.tensor(ROWS)[target]  # the original's rows of the explained classes
    twin = copy.deepcopy(model)
    if layout == "NCHW":
        from captum.attr import LayerAttribution, LayerGradCam

        cam = LayerGradCam(twin, twin.get_submodule(layer)).attribute(
            x, target=rows, relu_attributions=True)
        expected = LayerAttribution.interpolate(cam, (side, side), "bilinear")[:, 0]
    else:  # channels last (Swin: timm's forward_features / forward_head) or tokens (DeiT)
        kept = []
        twin.get_submodule(layer).register_forward_hook(
            lambda m, args, out: kept.append(out.detach().requires_grad_()) or kept[-1])
        if layout == "NHWC":
            logits = twin.forward_head(twin.forward_features(x))
            maps = kept[-1].permute(0, 3, 1, 2)
        else:
            logits = twin(x)
            maps = kept[-1][:, 1:].transpose(1, 2).unflatten(2, (side // 8, side // 8))
        grads, = torch.autograd.grad(logits.gather(1, rows[:, None]).sum(), kept[-1])
        grads = grads.permute(0, 3, 1, 2) if layout == "NHWC" else \
            grads[:, 1:].transpose(1, 2).unflatten(2, (side // 8, side // 8))
        cam = (grads.mean((2, 3), keepdim=True) * maps).sum(1, keepdim=True).clamp_min(0)
        expected = torch.nn.functional.interpolate(cam, (side, side), mode="bilinear")[:, 0]
    scale = float(expected.detach().abs().max())
    assert scale > 0
    np.testing.assert_allclose(exp.values, expected.detach().numpy(), atol=1e-5 * scale,
                               rtol=0)


def test_every_method_runs_and_is_not_constant(family):
    name, model, clf, side = family
    X = _images(side)
    assert list(clf.explain_methods) == ["gradcam", "gradient", "input_x_gradient",
                                         "integrated_gradients", "occlusion", "lime",
                                         "kernel_shap", "smoothgrad", "gradient_shap",
                                         "deeplift"]
    values = {}
    for method in clf.explain_methods:
        if method == "deeplift":  # refused on these (see the next tests)
            continue
        values[method] = clf.explain(X, method=method, **CHEAP.get(method, {})).values
        assert values[method].shape == (2, side, side), method
        assert np.isfinite(values[method]).all(), method
    for method, maps in values.items():
        for i, v in enumerate(maps):
            if method == "lime" and np.ptp(v) == 0:
                # captum's Lasso (alpha 0.01) zeroes every patch of a random tiny network
                # whose patches move the logit by less than that (their Shapley values show it)
                assert np.abs(values["kernel_shap"][i]).max() < 0.05
                continue
            assert np.ptp(v) > 0, method


@pytest.mark.parametrize("name", ["resnet", "swin"])
def test_gradient_methods_equal_captum(libraries, name):
    from captum.attr import InputXGradient, IntegratedGradients

    make, side, options, _, _ = FAMILIES[name]
    torch.manual_seed(1)
    model = _perturbed(make(*libraries), seed=1)
    clf = ImageClassifier.from_pretrained(model, classes=CLASSES, architecture_options=options,
                                          image_size=side, device="cpu")
    X = _images(side)
    x, rows = _encoded(clf, X), torch.tensor(ROWS)[[1, 0]]
    target = clf.classes_[[1, 0]]
    baseline = _encoded(clf, np.zeros((1, side, side, 3), np.float32))
    ig = IntegratedGradients(model).attribute(x, baselines=baseline.expand_as(x), target=rows,
                                              n_steps=8)
    got = clf.explain(X, method="integrated_gradients", n_steps=8, target=target).values
    np.testing.assert_allclose(got, ig.sum(1).detach().numpy(), atol=1e-5, rtol=0)
    ixg = InputXGradient(model).attribute(x.clone().requires_grad_(), target=rows)
    got = clf.explain(X, method="input_x_gradient", target=target).values
    np.testing.assert_allclose(got, ixg.sum(1).detach().numpy(), atol=1e-6, rtol=0)


def test_gradcam_at_a_named_layer_and_named_refusals(family):
    name, model, clf, side = family
    X = _images(side, 1)
    if name == "resnet":
        assert clf.explain(X, method="gradcam", layer="layer3").values.shape == (1, side, side)
        with pytest.raises(ValueError, match="did you mean 'layer3'"):
            clf.explain(X, method="gradcam", layer="layer33")
        with pytest.raises(ValueError, match="no map of the 64 x 64 image"):
            clf.explain(X, method="gradcam", layer="fc")
    named = r"model\.maxpool \(MaxPool2d\)" if name == "resnet" else \
        rf"model \({type(model).__name__}\): its forward"
    with pytest.raises(ValueError, match=r"method='deeplift' does not explain "
                                         rf"ImageClassifier: DeepLIFT .* network has: .*{named}"):
        clf.explain(X, method="deeplift")


def test_a_state_dict_or_a_file_with_the_architecture_name(libraries, tmp_path):
    tv, timm = libraries
    torch.manual_seed(0)
    resnet = _perturbed(tv.models.resnet18(num_classes=3))
    swin = _perturbed(timm.create_model("swin_tiny_patch4_window7_224", num_classes=3, **SWIN))
    torch.save(resnet.state_dict(), tmp_path / "resnet.pth")
    from safetensors.torch import save_file

    save_file(swin.state_dict(), tmp_path / "swin.safetensors")
    cases = [(resnet, resnet.state_dict(), "resnet18", None, 64),
             (resnet, tmp_path / "resnet.pth", "torchvision:resnet18", None, 64),
             (swin, tmp_path / "swin.safetensors", "timm:swin_tiny_patch4_window7_224", SWIN,
              32)]
    for model, source, architecture, options, side in cases:
        clf = ImageClassifier.from_pretrained(source, architecture=architecture,
                                              architecture_options=options, classes=CLASSES,
                                              image_size=side, device="cpu")
        X = _images(side)
        with torch.no_grad():
            expected = model(_encoded(clf, X))[:, ROWS]
        torch.testing.assert_close(clf.logits(clf.encode(X).inputs), expected, atol=1e-5,
                                   rtol=0)
        assert clf.architecture_["library"] == type(model).__module__.split(".")[0]
    with pytest.raises(ValueError, match="pass architecture="):
        ImageClassifier.from_pretrained(resnet.state_dict(), classes=CLASSES)
    with pytest.raises(ValueError, match=r"torchvision:resnet34: missing keys: layer1\.2"):
        ImageClassifier.from_pretrained(resnet.state_dict(), architecture="resnet34",
                                        classes=CLASSES)
    with pytest.raises(ValueError, match="did you mean"):
        ImageClassifier.from_pretrained(resnet.state_dict(), architecture="resnet1",
                                        classes=CLASSES)
    with pytest.raises(ValueError, match="never loads weights by name"):
        ImageClassifier.from_pretrained(resnet, architecture_options={"weights": "DEFAULT"})
    with pytest.raises(ValueError, match="neither a torchvision nor a timm model"):
        ImageClassifier.from_pretrained(torch.nn.Linear(2, 3))
    tiny = _perturbed(timm.create_model("resnet18", num_classes=3, **RESNET))
    with pytest.raises(ValueError, match="computes other logits"):  # not its activation
        ImageClassifier.from_pretrained(tiny, classes=CLASSES, architecture_options={
            **RESNET, "act_layer": "gelu"})


def test_images_of_another_size_follow_the_preset(libraries):
    """At the input size an image is taken as it is; another is resized (the preset's ratio:
    torchvision's ResNet 256 / 224) and centre-cropped as torchvision's transforms do."""
    tv, _ = libraries
    model = _perturbed(tv.models.resnet18(num_classes=3))
    clf = ImageClassifier.from_pretrained(model, classes=CLASSES, image_size=64, device="cpu")
    assert (clf.resize_size, clf.mean, clf.std) == (73, (0.485, 0.456, 0.406),
                                                   (0.229, 0.224, 0.225))
    image = np.random.default_rng(1).random((80, 96, 3), dtype=np.float32)
    encoded = clf.encode([image, _images(64, 1)[0]])
    transform = tv.transforms.Compose([tv.transforms.Resize(73, antialias=True),
                                       tv.transforms.CenterCrop(64)])
    expected = transform(torch.as_tensor(image).permute(2, 0, 1)).clamp(0, 1)
    np.testing.assert_allclose(encoded.images[0], expected.permute(1, 2, 0).numpy(),
                               atol=1e-5)
    np.testing.assert_array_equal(encoded.images[1], _images(64, 1)[0])
    assert encoded.crop_boxes[1].tolist() == [0, 0, 64, 64]
    with pytest.raises(ValueError, match=r"pass X\[None\]"):
        clf.predict(_images(64, 1)[0])


@pytest.mark.parametrize("family", ["resnet", "swin"], indirect=True)
def test_save_load_pickle_clone(family, tmp_path):
    name, model, clf, side = family
    X = _images(side)
    expected = clf.predict_proba(X)
    loaded = ImageClassifier.load(clf.save(tmp_path / "model"), device="cpu")
    np.testing.assert_allclose(loaded.predict_proba(X), expected, atol=1e-6)
    assert loaded.pretrained is None and loaded.gradcam_layer_ == clf.gradcam_layer_
    np.testing.assert_allclose(loaded.explain(X, method="gradcam").values,
                               clf.explain(X, method="gradcam").values, atol=1e-6)
    copied = pickle.loads(pickle.dumps(clf))
    np.testing.assert_allclose(copied.predict_proba(X), expected, atol=1e-6)
    twin = clone(clf)
    assert twin.pretrained is clf.pretrained and not hasattr(twin, "module_")
    assert twin.get_params()["architecture"] == clf.architecture


def test_fit_fine_tunes_transactionally(libraries):
    _, timm = libraries
    model = _perturbed(timm.create_model("resnet18", num_classes=3, **RESNET))
    clf = ImageClassifier.from_pretrained(model, classes=CLASSES, architecture_options=RESNET,
                                          image_size=32, device="cpu", random_state=0)
    X, y = _images(32, 8), np.array(["x", "y"] * 4)
    before = clf.predict_proba(X)
    with pytest.raises(ValueError):
        clf.fit(X, y[:3])  # a rejected refit leaves the model as it was
    np.testing.assert_allclose(clf.predict_proba(X), before)
    clf.set_params(lr=1e-12, max_epochs=1).fit(X, y)  # a new head for y, the backbone kept
    assert clf.classes_.tolist() == ["x", "y"] and clf.module_.model.fc.out_features == 2
    for key, value in model.state_dict().items():
        if not key.startswith("fc.") and value.is_floating_point() and "running" not in key:
            torch.testing.assert_close(clf.module_.model.state_dict()[key], value, atol=1e-6,
                                       rtol=0)
    clf.set_params(lr=1e-2, warm_start=True).fit(X, y)  # continues its own head
    assert len(clf.history_) == 2 and clf.gradcam_layer_ == "layer4"


@pytest.mark.parametrize("family", ["convnext"], indirect=True)
def test_explanations_from_threads_equal_serial_ones(family):
    name, model, clf, side = family
    X = _images(side, 4)
    serial = {m: clf.explain(X, method=m, **CHEAP.get(m, {})).values
              for m in ("gradcam", "integrated_gradients")}
    hooks = [dict(m._forward_hooks) for m in clf.module_.modules()]
    results, errors = {}, []

    def run(method):
        try:
            results[method] = clf.explain(X, method=method, **CHEAP.get(method, {})).values
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,)) for m in serial]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for method, values in serial.items():
        np.testing.assert_allclose(results[method], values, atol=1e-6)
    assert hooks == [dict(m._forward_hooks) for m in clf.module_.modules()]


def test_vit_from_pretrained_hands_other_architectures_on(family):
    """``ViTClassifier.from_pretrained`` takes a plain ViT itself and hands any other
    torchvision or timm classifier object to ``ImageClassifier.from_pretrained``."""
    from interpretable import ViTClassifier

    name, model, clf, side = family
    if name == "deit":  # a timm VisionTransformer: converted by ViTClassifier itself
        assert type(ViTClassifier.from_pretrained(model, classes=CLASSES)) is ViTClassifier
        return
    handed = ViTClassifier.from_pretrained(model, classes=CLASSES, image_size=side,
                                           architecture_options=FAMILIES[name][2])
    assert type(handed) is ImageClassifier and handed.gradcam_layer_ == clf.gradcam_layer_
    X = _images(side)
    np.testing.assert_allclose(handed.predict_proba(X), clf.predict_proba(X), atol=1e-6)
