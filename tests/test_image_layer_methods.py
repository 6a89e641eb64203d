"""ImageClassifier's layer methods and DeepLIFT (tests/_real_vision.py; skipped where
torchvision or timm cannot be imported), on tiny models built by the real libraries:

* ``layer=`` for integrated gradients and input × gradient equals captum's
  ``LayerIntegratedGradients`` / ``LayerGradientXActivation`` called directly, summed over the
  channels and spread over the image keeping their sum (channels first on a ResNet, channels
  last on a Swin); layer integrated gradients report the logit and, as ``bias``, the logit
  with the layer's output at its baseline value, and are complete up to their convergence;
* DeepLIFT equals captum's ``DeepLift`` called directly and sums to the logit minus the
  baseline's logit (torchvision's RegNetX); it is refused, naming the operation, where
  captum's rules are not exact (a ResNet's max pooling, whose rule loses shares; its reused
  in-place ReLUs the copy makes safe), and on transformers;
* the fitted module is unchanged (state dict, hooks, modules) and threads agree;
* the refusals of a layer that is no module, runs twice or outputs no spatial map.
"""
import copy
import sys
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from interpretable import ImageClassifier
from interpretable.attribution._feature_maps import spread_cells
from interpretable.attribution._hooked import deeplift_blockers, deeplift_copy
from interpretable.attribution._images import gaussian_blur

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision  # noqa: E402

pytestmark = [pytest.mark.filterwarnings("ignore:Setting forward, backward hooks:UserWarning"),
              pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already:UserWarning")]

CLASSES = ["a", "b", "c"]  # sorted: the rows of classes_ are the model's
SIDE = 32
SWIN = dict(img_size=32, window_size=2, embed_dim=16, depths=[1, 1], num_heads=[1, 2])
DEIT = dict(img_size=32, patch_size=8, depth=1, embed_dim=16, num_heads=2)


def _perturbed(model, seed=0):
    """``model`` in eval mode with every parameter moved (no all-zero head)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=generator))
    return model.eval()


def _adopted(model, architecture, options=None):
    """``(the model's copy, its ImageClassifier)``: the copy is what captum is called on."""
    reference = copy.deepcopy(model)
    clf = ImageClassifier.from_pretrained(model, architecture=architecture,
                                          architecture_options=options, classes=CLASSES,
                                          image_size=SIDE, device="cpu")
    return reference, clf


@pytest.fixture(scope="module")
def resnet():
    torchvision, _ = real_vision()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return _adopted(_perturbed(torchvision.models.resnet18(num_classes=3)), "resnet18")


@pytest.fixture(scope="module")
def regnet():
    torchvision, _ = real_vision()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return _adopted(_perturbed(torchvision.models.regnet_x_400mf(num_classes=3)),
                        "regnet_x_400mf")


@pytest.fixture(scope="module")
def swin():
    _, timm = real_vision()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = timm.create_model("swin_tiny_patch4_window7_224", num_classes=3, **SWIN)
        return _adopted(_perturbed(model), "timm:swin_tiny_patch4_window7_224", SWIN)


def _images(n=2, seed=0):
    return np.random.default_rng(seed).random((n, SIDE, SIDE, 3), dtype=np.float32)


def _baseline(clf, x, baseline):
    """The encoded baseline image of the explainers: a constant image or the blurred one."""
    if baseline == "blur":
        return gaussian_blur(x, 5.0)
    value = 0.0 if baseline == "zeros" else baseline
    return clf.encode(np.full((1, SIDE, SIDE, 3), value, np.float32)).inputs["x"].expand_as(x)


def _on_pixels(cells):
    """captum's own upsampling of a channel-summed ``(B, h, w)`` layer attribution, times
    ``hw / HW``: the map keeps the attributions' sum (the image side a multiple of the map's)."""
    from captum.attr import LayerAttribution

    up = LayerAttribution.interpolate(cells[:, None], (SIDE, SIDE), "bilinear")[:, 0]
    return up * (cells.shape[-2] * cells.shape[-1]) / (SIDE * SIDE)


def _close(got, expected, tol=1e-5):
    expected = expected.detach().double().numpy()
    np.testing.assert_allclose(got, expected, atol=tol * max(1.0, np.abs(expected).max()),
                               rtol=0)


def _logit(model, x, target):
    with torch.no_grad():
        return model(x).gather(1, target[:, None])[:, 0].double().numpy()


# ------------------------------------------------------------------------------ layer methods
@pytest.mark.parametrize("baseline", ["zeros", "blur"])
def test_layer_integrated_gradients_equal_captum_and_are_complete(resnet, baseline):
    from captum.attr import LayerIntegratedGradients

    model, clf = resnet
    X, target = _images(), torch.tensor([2, 0])
    x = clf.encode(X).inputs["x"]
    base = _baseline(clf, x, baseline)
    exp = clf.explain(X, method="integrated_gradients", layer="layer2", n_steps=64,
                      baseline=baseline, target=clf.classes_[target.numpy()])
    attr = LayerIntegratedGradients(model, model.layer2).attribute(
        x, baselines=base, target=target, n_steps=64)
    _close(exp.values, _on_pixels(attr.sum(1)))
    assert exp.values.shape == (2, SIDE, SIDE)
    # the spread keeps the layer's sum (to float32 summation: the cells sum to ~1e2 here)
    np.testing.assert_allclose(exp.values.sum((1, 2)), attr.sum((1, 2, 3)).detach().numpy(),
                               rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(exp.logit, _logit(model, x, target), atol=1e-5)
    # every path from the pixels runs through layer2: the swapped logit is the baseline's
    np.testing.assert_allclose(exp.bias, _logit(model, base, target), atol=1e-4)
    assert exp.completeness_error.max() < 1e-2  # 64 steps' convergence
    assert np.abs(exp.values.sum((1, 2)) + exp.bias - exp.logit).max() > 0


def test_layer_integrated_gradients_swap_the_layer_alone(resnet):
    """At a layer inside a residual block, the rest of the network sees the image: the bias is
    the logit with that layer's output alone at its baseline value."""
    model, clf = resnet
    X, target = _images(1), torch.tensor([1])
    x = clf.encode(X).inputs["x"]
    exp = clf.explain(X, method="integrated_gradients", layer="layer3.0.conv2", n_steps=64,
                      target=clf.classes_[target.numpy()])
    twin = copy.deepcopy(model)
    kept = []
    handle = twin.layer3[0].conv2.register_forward_hook(lambda m, a, out: kept.append(out))
    twin(_baseline(clf, x, "zeros"))
    handle.remove()
    twin.layer3[0].conv2.register_forward_hook(lambda m, a, out: kept[0])
    np.testing.assert_allclose(exp.bias, _logit(twin, x, target), atol=1e-4)
    assert exp.completeness_error.max() < 5e-2  # 64 steps' convergence


def test_layer_input_x_gradient_equals_captum(resnet, swin):
    from captum.attr import LayerGradientXActivation

    X = _images()
    for (model, clf), layer, channels_last in ((resnet, "layer3", False),
                                               (swin, "layers.0", True)):
        x = clf.encode(X).inputs["x"]
        target = torch.tensor([0, 1])
        exp = clf.explain(X, method="input_x_gradient", layer=layer, target=["a", "b"])
        attr = LayerGradientXActivation(model, model.get_submodule(layer)).attribute(
            x, target=target)
        assert attr.dim() == 4
        _close(exp.values, _on_pixels(attr.sum(-1 if channels_last else 1)))
        assert exp.logit is None and exp.completeness_error is None
        assert all(np.ptp(v) > 0 for v in exp.values), layer


def test_without_a_layer_nothing_changes(resnet):
    from captum.attr import InputXGradient, IntegratedGradients

    model, clf = resnet
    X, target = _images(), torch.tensor([1, 2])
    x = clf.encode(X).inputs["x"]
    exp = clf.explain(X, method="integrated_gradients", n_steps=4, target=["b", "c"])
    ig = IntegratedGradients(model).attribute(x, baselines=_baseline(clf, x, "zeros"),
                                              target=target, n_steps=4)
    _close(exp.values, ig.sum(1))
    assert exp.logit is None and exp.bias is None
    exp = clf.explain(X, method="input_x_gradient", target=["b", "c"])
    _close(exp.values, InputXGradient(model).attribute(x.clone().requires_grad_(),
                                                       target=target).sum(1))


def test_spread_cells_keeps_the_sum_on_any_image_size():
    cells = torch.randn(2, 3, 5, generator=torch.Generator().manual_seed(0))
    for size in ((3, 5), (12, 20), (32, 29), (7, 100)):
        pixels = spread_cells(cells, size)
        assert pixels.shape == (2, *size)
        torch.testing.assert_close(pixels.sum((1, 2)), cells.sum((1, 2)), atol=1e-5, rtol=0)
    _close(spread_cells(cells[:, :2, :2], (SIDE, SIDE)).numpy(), _on_pixels(cells[:, :2, :2]),
           1e-6)


# ------------------------------------------------------------------------------ DeepLIFT
@pytest.mark.parametrize("baseline", ["zeros", 0.5, "blur"])
def test_deeplift_equals_captum_and_is_complete(regnet, baseline):
    from captum.attr import DeepLift

    model, clf = regnet
    assert deeplift_blockers(clf.module_) == []
    X, target = _images(), torch.tensor([0, 2])
    x = clf.encode(X).inputs["x"]
    base = _baseline(clf, x, baseline)
    exp = clf.explain(X, method="deeplift", baseline=baseline,
                      target=clf.classes_[target.numpy()])
    attr = DeepLift(copy.deepcopy(model)).attribute(x, baselines=base, target=target)
    _close(exp.values, attr.sum(1))
    np.testing.assert_allclose(exp.logit, _logit(model, x, target), atol=1e-5)
    np.testing.assert_allclose(exp.bias, _logit(model, base, target), atol=1e-5)
    assert exp.completeness_error.max() < 1e-5


def test_deeplift_is_refused_on_a_resnet_naming_its_max_pooling(resnet):
    """captum's rules cover a ResNet but for its max pooling: the copy gives each run of its
    reused in-place ReLUs a module of its own (on the original captum raises), and with the
    pooling taken out DeepLIFT is exact; the pooling's rule loses shares (a tiny network with
    the stem's 3 x 3 pooling of stride 2 shows it), so the method is refused naming it."""
    from captum.attr import DeepLift

    model, clf = resnet
    with pytest.raises(ValueError, match=r"method='deeplift' does not explain ImageClassifier: "
                                         r"DeepLIFT .*f\(x\) - f\(baseline\)\. .*network has: "
                                         r"model\.maxpool \(MaxPool2d\): captum's max-pooling"):
        clf.explain(_images(1), method="deeplift")
    assert [b.split(" (")[0] for b in deeplift_blockers(clf.module_)] == ["model.maxpool"]
    x = clf.encode(_images()).inputs["x"]
    target, base = torch.tensor([0, 1]), _baseline(clf, x, 0.5)
    with pytest.raises(RuntimeError, match="used more than once"):
        DeepLift(copy.deepcopy(model)).attribute(x, baselines=base, target=target)
    pooled = copy.deepcopy(model)
    pooled.maxpool = torch.nn.Identity()
    attr = DeepLift(deeplift_copy(pooled, x[:1])).attribute(x, baselines=base, target=target)
    expected = _logit(pooled, x, target) - _logit(pooled, base, target)
    np.testing.assert_allclose(attr.sum((1, 2, 3)).detach().numpy(), expected,
                               rtol=1e-4, atol=1e-4)
    tiny = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.MaxPool2d(3, 2, 1),
                               torch.nn.Flatten(), torch.nn.Linear(4 * 16 * 16, 2)).eval()
    attr = DeepLift(tiny).attribute(x, baselines=base, target=target)
    expected = _logit(tiny, x, target) - _logit(tiny, base, target)
    assert np.abs(attr.sum((1, 2, 3)).detach().numpy() - expected).max() > \
        1e-2 * np.abs(expected).max()


def test_deeplift_is_refused_on_transformers_naming_the_operations(swin):
    _, clf = swin
    with pytest.raises(ValueError, match=r"does not explain ImageClassifier: .*\(LayerNorm\): "
                                         r"normalisation .*attention.*GELU"):
        clf.explain(_images(1), method="deeplift")
    assert "deeplift" in clf.explain_methods


# ------------------------------------------------------------------------------ purity
def _state(module):
    """Every module's class, hooks and attributes (by identity) and the tensors."""
    modules = [(name, type(m), {k: dict(v) for k, v in vars(m).items()
                                if "hook" in k and isinstance(v, dict)},
                {k: v if isinstance(v, (bool, int, float, str, type(None))) else id(v)
                 for k, v in vars(m).items() if "hook" not in k})
               for name, m in module.named_modules()]
    return modules, {k: v.clone() for k, v in module.state_dict().items()}


def test_explain_never_changes_the_fitted_module_and_threads_agree(regnet):
    model, clf = regnet
    X = _images(3)
    calls = {"deeplift": {"baseline": "blur"},
             "integrated_gradients": {"layer": "trunk_output.block2", "n_steps": 4},
             "input_x_gradient": {"layer": "trunk_output.block3.block3-0"}}
    modules, tensors = _state(clf.module_)
    serial = {m: clf.explain(X, method=m, **o).values for m, o in calls.items()}
    results, errors = {}, []

    def run(method):
        try:
            results[method] = clf.explain(X, method=method, **calls[method]).values
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(m,)) for m in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for method, values in serial.items():
        np.testing.assert_array_equal(results[method], values, err_msg=method)
    after_modules, after_tensors = _state(clf.module_)
    assert after_modules == modules
    assert after_tensors.keys() == tensors.keys()
    for key, value in tensors.items():
        assert torch.equal(after_tensors[key], value), key
    relus = [m for m in clf.module_.modules() if isinstance(m, torch.nn.ReLU)]
    assert relus and all(m.inplace for m in relus)  # the copy's are not in place, these are


# ------------------------------------------------------------------------------ refusals
def test_layer_refusals_name_the_layer(resnet):
    _, clf = resnet
    X = _images(1)
    for method in ("integrated_gradients", "input_x_gradient"):
        with pytest.raises(ValueError, match=r"layer='layer22' is not a module .*did you mean "
                                             r"'layer2'"):
            clf.explain(X, method=method, layer="layer22")
        with pytest.raises(ValueError, match=r"layer='fc' outputs shape \(1, 3\), no spatial "
                                             r"map of the 32 x 32 image: .*\(B, C, h, w\)"):
            clf.explain(X, method=method, layer="fc")
        with pytest.raises(ValueError, match=r"layer='layer1\.0\.relu' runs 2 times"):
            clf.explain(X, method=method, layer="layer1.0.relu")
    with pytest.raises(TypeError, match=r"unexpected option\(s\) \['layer'\]"):
        clf.explain(X, method="smoothgrad", layer="layer2")


def test_a_token_layer_is_refused():
    _, timm = real_vision()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = _perturbed(timm.create_model("deit_tiny_patch16_224", num_classes=3, **DEIT))
    clf = ImageClassifier.from_pretrained(model, architecture="timm:deit_tiny_patch16_224",
                                          architecture_options=DEIT, classes=CLASSES,
                                          image_size=SIDE, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no captum warning reaches the user either
        with pytest.raises(ValueError, match=r"layer='blocks\.0\.norm1' outputs shape "
                                             r"\(1, 17, 16\), no spatial map"):
            clf.explain(_images(1), method="integrated_gradients", layer="blocks.0.norm1")
