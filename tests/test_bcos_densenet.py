"""B-cos DenseNets (interpretable.nn.bcos._densenet): B-cosified torchvision DenseNets
(interpretable.nn.bcos._cnn_conversion) computing the original's logits, exact explanations of
the image and of every dense block's input, the recipe's fine-tuning start, the layouts of
DenseNet-121 / 161 / 169 / 201; then BcosResNetClassifier from a torchvision DenseNet's state
dict: fine-tuning, distillation, persistence. The torchvision models are the real package's
(tests/_real_vision.py), tiny, every BatchNorm statistic random, in float64."""
import copy
import pickle
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from interpretable import BcosResNetClassifier, bcosify
from interpretable.nn.bcos import BcosDenseNet, resnet_contributions
from interpretable.nn.bcos._cnn_conversion import (
    bcosify_densenet,
    cnn_finetuning_start,
    densenet_architecture,
)
from interpretable.nn.bcos._layers import encode_image

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision  # noqa: E402
from test_bcos_resnet import (  # noqa: E402
    FIT,
    _digits,
    _images,
    _incomplete,
    _normalised,
    _randomised,
    _Teacher,
)

TINY = dict(growth_rate=4, block_config=(2, 3, 2), num_init_features=8, bn_size=2)


def torchvision_densenet(num_classes: int = 3, seed: int = 0) -> nn.Module:
    """A tiny random ``torchvision.models.DenseNet`` (three dense blocks), float64, eval."""
    torchvision, _ = real_vision()
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return _randomised(torchvision.models.DenseNet(**TINY, num_classes=num_classes), seed)


@pytest.fixture(scope="module")
def converted():
    original = torchvision_densenet()
    return original, bcosify_densenet(original, image_size=32)


@pytest.mark.parametrize("size", [(32, 32), (33, 27)])
def test_the_converted_network_computes_the_original_logits(converted, size):
    """B = 1 with the biases and the input offset is the torchvision network on the same
    images, borders included (the floor of the transitions' pooling too); from the state dict,
    and from one with the keys of torchvision's released files; with the recipe's average
    pooling, the original with its max pool replaced."""
    original, model = converted
    x = _images(size=size)
    with torch.no_grad():
        expected = original(_normalised(x))
        scale = expected.abs().max()
        assert float((model(encode_image(x)) - expected).abs().max()) < 1e-12 * scale
        released = {re.sub(r"(denselayer\d+\.(?:norm|conv))([12])\.", r"\1.\2.", k): v
                    for k, v in original.state_dict().items()}
        assert "features.denseblock1.denselayer1.norm.1.weight" in released
        for state in (original.state_dict(), released):
            assert torch.equal(bcosify_densenet(state, image_size=32)(encode_image(x)),
                               model(encode_image(x)))
        assert isinstance(bcosify(original), BcosDenseNet)
        pooled = copy.deepcopy(model)
        pooled.features.pool0 = nn.AvgPool2d(3, 2, 1)
        maxpool, original.features.pool0 = original.features.pool0, nn.AvgPool2d(3, 2, 1)
        try:
            assert float((pooled(encode_image(x)) - original(_normalised(x))).abs().max()) \
                < 1e-12 * scale
        finally:
            original.features.pool0 = maxpool
    assert model.forward_features(encode_image(x))[0].shape[-2:] == \
        original.features(_normalised(x)).shape[-2:]


def test_explanations_are_exact_at_every_block_at_the_start_and_after_the_recipe_step(
        converted):
    original, model = converted
    x = encode_image(_images(size=(33, 27)))
    start = cnn_finetuning_start(model)
    assert start.layers == ("denseblock1", "denseblock2", "denseblock3", "classifier")
    assert start.features.conv0.b == 2.0 and start.stem_pool == "avg"
    assert isinstance(start.features.pool0, nn.AvgPool2d) and start.input_offset is None
    assert all(getattr(m, "bias", None) is None for m in start.modules()
               if not isinstance(m, (nn.AvgPool2d, nn.Sequential)))
    assert model.features.conv0.b == 1.0 and model.classifier.bias is not None  # unchanged
    with torch.no_grad():
        assert start(x).abs().max() > 1e-3  # not trivially zero
    for network in (model, start):
        for layer in (None, *network.layers):
            assert _incomplete(network, x, layer) < 1e-12
    c = resnet_contributions(model, x, target=[0, 1])
    assert c.constants.abs().min() > 0  # the biases' share is reported, not lost
    with pytest.raises(ValueError, match="one of .'denseblock1'"):
        model.run(x, stop="layer3")


def test_the_layouts_of_the_torchvision_densenets():
    """DenseNet-121 / 161 / 169 / 201 (built on the meta device): their sizes read off their
    state dicts, and a BcosDenseNet of those sizes has their keys and shapes (the first
    convolution takes the encoded image, the classifier is a 1×1 convolution)."""
    torchvision, _ = real_vision()
    for depth, growth, blocks in ((121, 32, [6, 12, 24, 16]), (161, 48, [6, 12, 36, 24]),
                                  (169, 32, [6, 12, 32, 32]), (201, 32, [6, 12, 48, 32])):
        with torch.device("meta"):
            theirs = getattr(torchvision.models, f"densenet{depth}")().state_dict()
            sizes = densenet_architecture(theirs)
            ours = BcosDenseNet(**sizes, bcosified=True, bias=True).state_dict()
        assert sizes["growth_rate"] == growth and sizes["block_config"] == blocks
        assert ours.keys() == theirs.keys()
        for key in ours.keys() - {"features.conv0.weight", "classifier.weight"}:
            assert ours[key].shape == theirs[key].shape, key


def test_state_dicts_that_do_not_convert_are_refused():
    state = torchvision_densenet().state_dict()
    with pytest.raises(ValueError, match="missing keys: classifier.bias"):
        bcosify_densenet({k: v for k, v in state.items() if k != "classifier.bias"})
    key = "features.denseblock2.denselayer1.norm1.weight"
    with pytest.raises(ValueError, match=re.escape(f"mis-shaped: {key} (5,) (expected (8,))")):
        bcosify_densenet({**state, key: state[key][:5]})
    with pytest.raises(ValueError, match=r"mis-shaped: features.conv0.weight \(8, 1, 7, 7\)"):
        bcosify_densenet({**state, "features.conv0.weight": state["features.conv0.weight"][:, :1]})
    with pytest.raises(ValueError, match="unexpected keys: extra"):
        bcosify_densenet({**state, "extra": torch.zeros(1)})
    with pytest.raises(ValueError, match="no DenseNet's"):
        densenet_architecture({"x": torch.zeros(1)})


# ---------------------------------------------------------------------- the estimator
@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    """The tiny torchvision DenseNet's state dict (3 classes) saved as a file."""
    path = tmp_path_factory.mktemp("densenet") / "densenet.pth"
    torch.save({k: v.float() for k, v in torchvision_densenet().state_dict().items()}, path)
    return path


def test_fine_tuning_a_torchvision_densenet_explains_exactly(checkpoint, tmp_path):
    X, y = _digits()
    clf = BcosResNetClassifier(pretrained=checkpoint, **FIT).fit(X, y)
    assert isinstance(clf.module_, BcosDenseNet) and clf.architecture_["bcosified"]
    assert clf.architecture_["block_config"] == [2, 3, 2]
    assert clf.module_.features.conv0.b == 2.0 and clf.module_.classifier.bias is None
    for contrast in (None, "mean"):
        explanation = clf.explain(X[:2], dtype="float64", contrast=contrast)
        assert explanation.values.shape == (2, 32, 32) and explanation.weights is not None
        assert abs(explanation.completeness_error).max() < 1e-10
    assert clf.explain(X[:2], method="gradcam").values.shape == (2, 32, 32)
    block = clf.explain(X[:2], layer="denseblock2", dtype="float64")  # a block's input
    assert block.values.shape == (2, 32, 32) and abs(block.completeness_error).max() < 1e-10
    with pytest.raises(ValueError, match=r"layer must be None or one of \['denseblock1'"):
        clf.explain(X[:2], layer="layer3")
    loaded = BcosResNetClassifier.load(clf.save(tmp_path / "model"))
    restored = pickle.loads(pickle.dumps(clf))
    for other in (loaded, restored):
        assert other.architecture_ == clf.architecture_
        np.testing.assert_array_equal(other.predict_proba(X), clf.predict_proba(X))
    with pytest.raises(ValueError, match="not of architecture"):
        BcosResNetClassifier({"growth_rate": 4, "block_config": [2, 2]}, pretrained=checkpoint,
                             **FIT).fit(X, y)


def test_the_head_alone_and_distillation_from_a_densenet(checkpoint):
    X, y = _digits()
    clf = BcosResNetClassifier(pretrained=checkpoint, finetune="head", **FIT).fit(X, y)
    start = cnn_finetuning_start(bcosify_densenet(torch.load(checkpoint, weights_only=True),
                                              image_size=32))
    fitted = clf.module_.state_dict()
    for key, value in start.state_dict().items():
        if not key.startswith("classifier."):
            assert torch.equal(fitted[key], value), key
    teacher = _Teacher()
    student = BcosResNetClassifier(pretrained=checkpoint, teacher=teacher, teacher_weight=1.0,
                                   **FIT).fit(X, y)
    assert len(teacher.seen) == 1 and isinstance(student.module_, BcosDenseNet)
    assert pickle.loads(pickle.dumps(student)).teacher is None


def test_a_densenet_from_scratch_and_its_architecture_checks():
    X, y = _digits(8, 32)
    clf = BcosResNetClassifier({"growth_rate": 4, "block_config": [1, 1]}, **FIT).fit(X, y)
    assert clf.architecture_["num_init_features"] == 64 and not clf.architecture_["bcosified"]
    assert isinstance(clf.module_.features.relu0, nn.Identity)  # B-cos: no ReLUs
    assert abs(clf.explain(X[:1], dtype="float64").completeness_error).max() < 1e-10
    with pytest.raises(ValueError, match="DenseNet architecture dicts take"):
        BcosResNetClassifier({"growth_rate": 4, "block_config": [1], "width": 3},
                             **FIT).fit(X, y)
    with pytest.raises(ValueError, match="block_config one or more integers"):
        BcosResNetClassifier({"growth_rate": 4, "block_config": []}, **FIT).fit(X, y)
