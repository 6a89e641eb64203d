"""B-cos ResNets (interpretable.nn.bcos._resnet): B-cosified torchvision ResNets
(interpretable.nn.bcos._cnn_conversion) computing the original's logits, exact explanations of
the image and of every layer's input, the recipe's fine-tuning start, the released B-cos v2
ResNets' loader (interpretable.nn.bcos._resnet_zoo) and, where the ``bcos`` package is
installed, equality with its ResNets; then BcosResNetClassifier: fine-tuning a torchvision state
dict, distillation from a teacher, from_pretrained, persistence. The torchvision models are the
real package's (tests/_real_vision.py), every BatchNorm statistic random, in float64."""
import copy
import pickle
import sys
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch
from sklearn.base import clone
from torch import nn

from interpretable import BcosResNetClassifier, bcosify
from interpretable.nn.bcos._cnn_conversion import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    bcosify_resnet,
    cnn_finetuning_start,
    resnet_architecture,
)
from interpretable.nn.bcos._layers import encode_image
from interpretable.nn.bcos._resnet import (
    RESNET_LAYERS,
    BcosResNet,
    resnet_contributions,
    spread_to_pixels,
)
from interpretable.nn.bcos._resnet_zoo import (
    PRETRAINED_RESNETS,
    load_resnet_checkpoint,
    to_bcos_resnet_state_dict,
)

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision  # noqa: E402

matplotlib.use("Agg")

TINY = dict(block="basic", layers=[1, 1, 1, 1], width=4)
FIT = dict(image_size=None, max_epochs=1, batch_size=8, random_state=0, device="cpu")


def _randomised(model: nn.Module, seed: int = 0) -> nn.Module:
    """``model`` in float64 eval mode with random BatchNorm weights, biases and statistics (at
    initialisation they are ones and zeros, which would hide a wrong fold)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for module in model.modules():
            if isinstance(module, nn.BatchNorm2d):
                for tensor, (low, high) in ((module.weight, (0.5, 1.5)), (module.bias, (-.5, .5)),
                                            (module.running_mean, (-.5, .5)),
                                            (module.running_var, (0.5, 2.0))):
                    tensor.copy_(torch.rand(tensor.shape, generator=generator) * (high - low)
                                 + low)
    return model.double().eval()


def torchvision_resnet(depth: int = 18, num_classes: int = 3) -> nn.Module:
    torchvision, _ = real_vision()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(depth)
        return _randomised(getattr(torchvision.models, f"resnet{depth}")(
            num_classes=num_classes))


def _images(n=2, size=(32, 32), seed=0):
    return torch.rand(n, 3, *size, dtype=torch.float64,
                      generator=torch.Generator().manual_seed(seed))


def _normalised(x):
    mean, std = (torch.tensor(v, dtype=x.dtype)[:, None, None] for v in (IMAGENET_MEAN,
                                                                        IMAGENET_STD))
    return (x - mean) / std


def _incomplete(model, x, layer=None):
    """The largest |explained logit - (maps + constants + logit bias)| of x's explanation."""
    c = resnet_contributions(model, x, layer=layer)
    explained = c.logits.gather(1, c.target[:, None])[:, 0]
    return float((c.maps.sum((1, 2)) + c.constants + model.logit_bias - explained).abs().max())


@pytest.fixture(scope="module", params=[18, 50], ids=["resnet18", "resnet50"])
def converted(request):
    original = torchvision_resnet(request.param)
    return original, bcosify_resnet(original, image_size=32)


@pytest.mark.parametrize("size", [(32, 32), (33, 27)])
def test_the_converted_network_computes_the_original_logits(converted, size):
    """B = 1 with the biases and the input offset is the torchvision network on the same
    images (normalised there, encoded [x, 1 - x] here), borders included; from the state dict
    too; with the recipe's average pooling, the original with its max pool replaced."""
    original, model = converted
    x = _images(size=size)
    with torch.no_grad():
        expected = original(_normalised(x))
        scale = expected.abs().max()
        assert float((model(encode_image(x)) - expected).abs().max()) < 1e-12 * scale
        from_state = bcosify_resnet(original.state_dict(), image_size=32)
        assert torch.equal(from_state(encode_image(x)), model(encode_image(x)))
        assert isinstance(bcosify(original), BcosResNet)
        pooled = copy.deepcopy(model)
        pooled.pool = nn.AvgPool2d(3, 2, 1)
        original.maxpool, maxpool = nn.AvgPool2d(3, 2, 1), original.maxpool
        try:
            assert float((pooled(encode_image(x)) - original(_normalised(x))).abs().max()) \
                < 1e-12 * scale
        finally:
            original.maxpool = maxpool
    assert resnet_architecture(original.state_dict())["block"] == model.block


def test_explanations_are_exact_at_every_layer_at_the_start_and_after_the_recipe_step(
        converted):
    original, model = converted
    x = encode_image(_images(size=(33, 27)))
    start = cnn_finetuning_start(model)
    assert start.conv1.b == 2.0 and start.stem_pool == "avg" and start.input_offset is None
    assert all(getattr(m, "bias", None) is None for m in start.modules()
               if not isinstance(m, (nn.AvgPool2d, nn.Sequential)))
    assert model.conv1.b == 1.0 and model.fc.bias is not None  # the original is unchanged
    for network in (model, start):
        for layer in (None, *RESNET_LAYERS):
            assert _incomplete(network, x, layer) < 1e-12
    c = resnet_contributions(model, x, target=[0, 1])
    assert c.constants.abs().min() > 0  # the biases' share is reported, not lost
    assert torch.equal(c.target, torch.tensor([0, 1]))


def test_explanation_mode_holds_the_batch_variance_in_training():
    """In training the BatchNorms use the batch variance, a dynamic weight: the explanation
    stays exact; the running variance follows it unless the BatchNorm is frozen."""
    model = BcosResNet(**TINY, num_classes=3, image_size=16).double().train()
    x = encode_image(_images(4, (16, 16)))
    before = model.bn1.running_var.clone()
    assert _incomplete(model, x) < 1e-12
    assert not torch.equal(model.bn1.running_var, before)
    model.requires_grad_(False)
    frozen = model.bn1.running_var.clone()
    with torch.no_grad():
        assert torch.equal(model(x), model.eval()(x))
    assert torch.equal(model.bn1.running_var, frozen)


def test_layer_maps_spread_each_cell_over_its_pixels():
    maps = torch.arange(6, dtype=torch.float64).reshape(1, 2, 3)
    pixels = spread_to_pixels(maps, (5, 7))
    assert pixels.shape == (1, 5, 7) and torch.isclose(pixels.sum(), maps.sum())
    assert torch.equal(spread_to_pixels(maps, (2, 3)), maps)


def test_state_dicts_that_do_not_convert_are_refused():
    torchvision, _ = real_vision()
    state = torchvision_resnet(18).state_dict()
    with pytest.raises(ValueError, match="missing keys: fc.bias"):
        bcosify_resnet({k: v for k, v in state.items() if k != "fc.bias"})
    with pytest.raises(ValueError, match=r"mis-shaped: conv1.weight \(64, 1, 7, 7\)"):
        bcosify_resnet({**state, "conv1.weight": state["conv1.weight"][:, :1]})
    with pytest.raises(ValueError, match="grouped or wide"):
        bcosify_resnet(torchvision.models.resnext50_32x4d(num_classes=3))
    with pytest.raises(ValueError, match="no ResNet's"):
        resnet_architecture({"x": torch.zeros(1)})


def test_released_resnets_load_from_their_files(tmp_path, monkeypatch):
    """The bcos layout: every convolution's weight under ``.linear``; the sizes read off the
    shapes; released files hash-checked; nothing downloaded unless asked."""
    tiny = BcosResNet(block="bottleneck", layers=(1, 2, 1, 1), width=4, num_classes=3).double()
    state = to_bcos_resnet_state_dict(tiny)
    assert "layer2.1.conv3.linear.weight" in state and "fc.linear.weight" in state
    torch.save(state, tmp_path / "tiny.pth")
    loaded = load_resnet_checkpoint(tmp_path / "tiny.pth", image_size=32)
    x = encode_image(_images())
    with torch.no_grad():
        assert torch.equal(loaded(x), tiny.eval()(x))
    torch.save({k: v for k, v in state.items() if "layer4" not in k}, tmp_path / "cut.pth")
    with pytest.raises(ValueError, match="blocks per stage"):
        load_resnet_checkpoint(tmp_path / "cut.pth")
    torch.save(torchvision_resnet(18).state_dict(), tmp_path / "tv.pth")
    with pytest.raises(ValueError, match="bcosify_resnet"):
        load_resnet_checkpoint(tmp_path / "tv.pth")
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    with pytest.raises(FileNotFoundError, match="download=True"):
        load_resnet_checkpoint("resnet18")
    spec = PRETRAINED_RESNETS["resnet50"]
    assert spec.file_name == "resnet_50-ead259efe4.pth" and spec.top1 == 75.882
    (tmp_path / "checkpoints").mkdir()
    torch.save(state, tmp_path / "checkpoints" / spec.file_name)
    with pytest.raises(ValueError, match="SHA-256 prefix ead259efe4"):
        load_resnet_checkpoint("resnet50")


def test_logits_and_explanations_equal_the_bcos_package_s(tmp_path):
    """A randomly initialised ``bcos.models.pretrained.resnet18`` (its ImageNet configuration:
    B = 2, uncentered BatchNorms, logit bias -log 999) loaded here from its saved state dict.
    Runs where the ``bcos`` package (0.1.3) imports: ``pip install --no-deps bcos==0.1.3``,
    or its wheel unpacked on ``PYTHONPATH`` (it imports the real torchvision, found here)."""
    real_vision()  # bcos imports torchvision
    pretrained = pytest.importorskip("bcos.models.pretrained")
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        theirs = pretrained.resnet18(pretrained=False)
    with torch.no_grad():  # BatchNorm weights large enough that the logits are not the bias
        for key, tensor in theirs.state_dict(keep_vars=True).items():
            if key.endswith("running_var"):
                tensor.uniform_(0.5, 2.0)
            elif key.endswith(".weight") and tensor.dim() == 1:
                tensor.uniform_(10, 20)
    theirs = theirs.double().eval()
    torch.save(theirs.state_dict(), tmp_path / "resnet18.pth")
    ours = load_resnet_checkpoint(tmp_path / "resnet18.pth", image_size=64)
    x = encode_image(_images(size=(64, 64))).requires_grad_(True)
    with theirs.explanation_mode():
        logits = theirs(x)
        weights, = torch.autograd.grad(logits[:, 0].sum(), x)
    c = resnet_contributions(ours, x.detach(), target=0)
    assert (logits - theirs.logit_layer.logit_bias).abs().max() > 1
    assert float((c.logits - logits.detach()).abs().max()) < 1e-10
    assert float((c.weights - weights).abs().max()) < 1e-10


# ---------------------------------------------------------------------- the estimator
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """A torchvision ResNet-18 state dict (3 classes) saved as a file."""
    path = tmp_path_factory.mktemp("resnet") / "resnet18.pth"
    torch.save({k: v.float() for k, v in torchvision_resnet(18).state_dict().items()}, path)
    return path


def _digits(n=16, size=32, seed=0):
    rng = np.random.default_rng(seed)
    return rng.random((n, size, size, 3), dtype=np.float32), np.arange(n) % 2


def test_fine_tuning_a_torchvision_resnet_explains_exactly(checkpoint, tmp_path):
    X, y = _digits()
    clf = BcosResNetClassifier(pretrained=checkpoint, **FIT).fit(X, y)
    assert clf.architecture_["bcosified"] and clf.architecture_["layers"] == [2, 2, 2, 2]
    assert clf.module_.conv1.b == 2.0 and clf.module_.fc.bias is None
    for layer, contrast in ((None, None), ("layer2", "mean"), ("fc", None), (None, 1)):
        explanation = clf.explain(X[:2], layer=layer, dtype="float64", contrast=contrast)
        assert explanation.values.shape == (2, 32, 32)
        assert abs(explanation.completeness_error).max() < 1e-10
        assert (explanation.weights is None) == (layer is not None)
        assert explanation.plot() is not None and len(explanation.to_frame()) == 2 * 32 * 32
    assert "gradcam" in clf.explain_methods and "rollout" not in clf.explain_methods
    assert clf.explain(X[:2], method="gradcam").values.shape == (2, 32, 32)
    loaded = BcosResNetClassifier.load(clf.save(tmp_path / "model"))
    restored = pickle.loads(pickle.dumps(clf))
    for other in (loaded, restored):
        np.testing.assert_array_equal(other.predict_proba(X), clf.predict_proba(X))
    with pytest.raises(ValueError, match="layer must be None or one of"):
        clf.explain(X[:1], layer="layer5")


def test_the_head_alone_keeps_the_backbone_and_its_statistics(checkpoint):
    X, y = _digits()
    clf = BcosResNetClassifier(pretrained=checkpoint, finetune="head", **FIT).fit(X, y)
    start = cnn_finetuning_start(bcosify_resnet(torch.load(checkpoint, weights_only=True),
                                            image_size=32))
    fitted = clf.module_.state_dict()
    for key, value in start.state_dict().items():
        if not key.startswith("fc."):
            assert torch.equal(fitted[key], value), key


class _Teacher:
    """A fixed predictor (no fit): always the second class, recording its inputs."""

    classes_ = np.array([0, 1])

    def __init__(self):
        self.seen = []

    def predict_proba(self, X):
        self.seen.append(X)
        return np.tile([0.1, 0.9], (len(X), 1))


def test_distillation_learns_from_the_teacher_and_never_stores_it(tmp_path):
    X, y = _digits()
    teacher = _Teacher()
    student = BcosResNetClassifier(TINY, teacher=teacher, teacher_weight=1.0, lr=0.05,
                                   **{**FIT, "max_epochs": 5}).fit(X, y)
    assert len(teacher.seen) == 1 and teacher.seen[0] is X  # once, the images as given
    assert (student.predict(X) == 1).mean() > 0.9  # it follows the teacher, not the labels
    assert clone(student).teacher is teacher
    assert pickle.loads(pickle.dumps(student)).teacher is None
    assert BcosResNetClassifier.load(student.save(tmp_path / "s")).teacher is None


def test_released_models_as_they_are_and_refusals(tmp_path, checkpoint):
    tiny = BcosResNet(**TINY, num_classes=3)
    torch.save(to_bcos_resnet_state_dict(tiny), tmp_path / "tiny.pth")
    clf = BcosResNetClassifier.from_pretrained(tmp_path / "tiny.pth", classes=["c", "a", "b"],
                                               image_size=32)
    X, y = _digits(4, 40)
    with torch.no_grad():  # rows sorted by label: a, b, c are rows 1, 2, 0
        expected = tiny.eval()(clf.encode(X).inputs["x"])[:, [1, 2, 0]]
    np.testing.assert_allclose(clf.decision_function(X), expected.numpy(), rtol=1e-6)
    assert clf.architecture_["logit_bias"] == pytest.approx(np.log(1 / 2))
    refit = clone(clf).set_params(max_epochs=1, random_state=0).fit(X, y)
    assert refit.classes_.tolist() == [0, 1] and not refit.architecture_["bcosified"]
    with pytest.raises(ValueError, match="must be fine-tuned"):
        BcosResNetClassifier.from_pretrained(checkpoint)
    with pytest.raises(ValueError, match="needs architecture="):
        BcosResNetClassifier(**FIT).fit(X, y)
    with pytest.raises(ValueError, match="not of architecture"):
        BcosResNetClassifier({"block": "bottleneck", "layers": [1, 1, 1, 1]},
                             pretrained=tmp_path / "tiny.pth", **FIT).fit(X, y)
    with pytest.raises(ValueError, match="finetune='head' trains part"):
        BcosResNetClassifier(TINY, finetune="head", **FIT).fit(X, y)
    with pytest.raises(ValueError, match="architecture dicts take"):
        BcosResNetClassifier({"block": "basic"}, **FIT).fit(X, y)
