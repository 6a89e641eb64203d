"""B-cosification of conventional ViTs (interpretable.nn.bcos._vit_conversion) and fine-tuning
them with BcosSimpleViTClassifier: the formats told apart, the converted network's logits equal
to the original's, exact explanations (the biases' and class token's share reported), the recipe's
fine-tuning start, refused checkpoints, and fitted models that no longer need the file. The
models are the real torchvision's and timm's tiny VisionTransformer (tests/_real_vision.py),
every parameter random; the package's own ConventionalViT (ViTClassifier's layouts) is checked
against them."""
import copy
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from sklearn.base import clone

from interpretable import BcosSimpleViTClassifier
from interpretable.nn._library_vit import CHECKPOINT_LAYOUTS, ConventionalViT
from interpretable.nn.bcos._layers import encode_image
from interpretable.nn.bcos._simple_vit import BcosSimpleViT, vit_contributions
from interpretable.nn.bcos._vit_conversion import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    bcosify_vit,
    checkpoint_format,
    vit_finetuning_start,
)
from interpretable.nn.bcos._zoo import to_bcos_state_dict

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import timm_vit, torchvision_vit  # noqa: E402
from conventional_vit import TINY, randomise  # noqa: E402

ARCH = dict(dim=16, depth=2, heads=2, mlp_dim=32, patch_size=4)
FIT = dict(architecture={"heads": 2}, image_size=None, max_epochs=2, batch_size=8,
           random_state=0, device="cpu")


def real_vit(layout):
    """The real package's tiny ViT of :data:`TINY`'s sizes, every parameter random, in eval
    mode."""
    if layout == "torchvision":
        return randomise(torchvision_vit(**TINY))
    return randomise(timm_vit(img_size=16, patch_size=4, depth=2, num_heads=2, embed_dim=16,
                              mlp_ratio=2.0, num_classes=5))


def _normalised(x):
    mean, std = (torch.tensor(v, dtype=x.dtype)[:, None, None] for v in (IMAGENET_MEAN,
                                                                        IMAGENET_STD))
    return (x - mean) / std


def _images(n=3, dtype=torch.float64, seed=0):
    return torch.rand(n, 3, 16, 16, dtype=dtype, generator=torch.Generator().manual_seed(seed))


def _complete(model, x):
    """The largest |logit - (maps + positional + constants + logit bias)| of x's explanation."""
    c = vit_contributions(model, encode_image(x))
    explained = c.logits.gather(1, c.target[:, None])[:, 0]
    return (c.maps.sum((1, 2)) + c.positional + c.constants + model.logit_bias
            - explained).abs().max().item(), c


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """{layout: path} of tiny conventional ViT state dicts."""
    folder = tmp_path_factory.mktemp("conventional")
    paths = {}
    for layout in CHECKPOINT_LAYOUTS:
        paths[layout] = folder / f"{layout}.pth"
        torch.save(real_vit(layout).state_dict(), paths[layout])
    return paths


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, 16, 16, 3), dtype=np.float32)
    X[:, :8, :, 0] += np.arange(n)[:, None, None] % 3 == 0  # a class shows in the red half
    return np.clip(X, 0, 1), np.arange(n) % 3


# ---------------------------------------------------------------------------- conversion
def test_formats_are_told_apart():
    assert checkpoint_format(real_vit("torchvision").state_dict()) == "torchvision"
    assert checkpoint_format(real_vit("timm").state_dict()) == "timm"
    bcos = to_bcos_state_dict(BcosSimpleViT(**ARCH, num_classes=3, image_size=16))
    assert checkpoint_format(bcos) == "bcos"
    with pytest.raises(ValueError, match="already B-cos"):
        bcosify_vit(bcos, num_heads=2)
    with pytest.raises(ValueError, match="cannot tell the format"):
        checkpoint_format({"weight": torch.zeros(1)})


@pytest.mark.parametrize("layout", CHECKPOINT_LAYOUTS)
def test_the_converted_network_computes_the_original_logits(layout):
    original = real_vit(layout).double()
    x = _images()
    with torch.no_grad():
        expected = original(_normalised(x))
        from_object = bcosify_vit(original)  # the number of heads read off the object
        from_state = bcosify_vit(original.state_dict(), num_heads=2)
        for model in (from_object, from_state):
            assert model.pos_embedding.dtype == torch.float64 and not model.training
            torch.testing.assert_close(model(encode_image(x)), expected, rtol=0, atol=1e-12)
        single = bcosify_vit(real_vit(layout))  # float32 stays float32
        torch.testing.assert_close(single(encode_image(x.float())),
                                   expected.float(), rtol=1e-5, atol=1e-5)
    assert from_state.transformer.encoder_0.attn.to_out.b == 1.0


@pytest.mark.parametrize("layout", CHECKPOINT_LAYOUTS)
def test_conventional_vit_is_the_real_packages_model(layout):
    """ViTClassifier's ConventionalViT (no real package builds it) has the real model's keys
    and shapes and, with its weights, its logits."""
    real = real_vit(layout).double()
    ours = ConventionalViT(layout, **TINY).double().eval()
    assert {k: v.shape for k, v in ours.state_dict().items()} == \
        {k: v.shape for k, v in real.state_dict().items()}
    ours.load_state_dict(real.state_dict())
    x = _normalised(_images())
    with torch.no_grad():
        torch.testing.assert_close(ours(x), real(x), rtol=0, atol=1e-12)


@pytest.mark.parametrize("layout", CHECKPOINT_LAYOUTS)
def test_the_fused_attention_forward_is_the_explicit_one(layout):
    """``forward`` (fused attention in timm's layout) computes ``forward_with_attention``'s
    logits and training gradients; the attention is returned where asked for."""
    model = randomise(ConventionalViT(layout, **TINY)).double()
    x = _normalised(_images())
    fused = model(x)
    explicit, attentions = model.forward_with_attention(x)
    assert all(a is not None and a.shape[-1] == a.shape[-2] == 17 for a in attentions)
    torch.testing.assert_close(fused, explicit, rtol=1e-12, atol=1e-12)
    params = list(model.parameters())
    for got, want in zip(torch.autograd.grad(fused.square().sum(), params),
                         torch.autograd.grad(explicit.square().sum(), params), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("layout", CHECKPOINT_LAYOUTS)
def test_explanations_are_exact_at_the_start_and_after_the_recipe_step(layout):
    converted = bcosify_vit(real_vit(layout).double())
    x = _images()
    error, c = _complete(converted, x)
    assert error <= 1e-12
    assert c.constants.abs().min() > 1e-3  # the biases' share, which completeness needs
    with pytest.raises(ValueError, match="remove the biases"):
        converted.term_logits(encode_image(x))
    start = vit_finetuning_start(converted)
    assert converted.transformer.encoder_0.attn.to_qkv.bias is not None  # unchanged
    assert all("bias" not in k for k in start.state_dict())
    assert {m.b for m in start.modules() if hasattr(m, "b")} == {2.0}
    error, c = _complete(start, x)
    assert error <= 1e-12 and c.constants.abs().min() > 0  # the class token's share
    logits, terms = start.term_logits(encode_image(x))
    torch.testing.assert_close(terms.sum(1) + start.logit_bias, start(encode_image(x)))


def _refused(match, state, **kwargs):
    with pytest.raises(ValueError, match=match):
        bcosify_vit(state, **kwargs)


def test_mismatched_and_hostile_state_dicts_are_refused():
    state = real_vit("torchvision").state_dict()
    _refused("number of attention heads", state)
    _refused(r"missing keys: encoder\.ln\.bias",
             {k: v for k, v in state.items() if k != "encoder.ln.bias"}, num_heads=2)
    _refused(r"has a pre-logits layer \(representation_size\)",
             {**state, "heads.pre_logits.weight": torch.zeros(16, 16)}, num_heads=2)
    _refused(r"mis-shaped: .*encoder_layer_1\.mlp\.0\.weight \(8, 16\) \(expected \(32, 16\)\)",
             {**state, "encoder.layers.encoder_layer_1.mlp.0.weight": torch.zeros(8, 16)},
             num_heads=2)
    _refused(r"mis-shaped: .*conv_proj\.weight", state, architecture={**ARCH, "dim": 32})
    _refused(r"mis-shaped: .*encoder\.pos_embedding \(1, 17, 16\) \(expected \(1, 65, 16\)\)",
             state, architecture={**ARCH, "image_size": 32})
    _refused("NaN or infinite", {**state, "class_token": torch.full((1, 1, 16), np.nan)},
             num_heads=2)
    _refused("takes RGB", {**state, "conv_proj.weight": torch.zeros(16, 1, 4, 4)}, num_heads=2)
    timm = real_vit("timm").state_dict()
    _refused(r"has layer scale \(init_values\), register tokens \(reg_tokens\): only the plain",
             {**timm, "reg_token": torch.zeros(1, 4, 16), "blocks.0.ls1.gamma": torch.ones(16)},
             num_heads=2)


# ---------------------------------------------------------------------------- estimator
@pytest.fixture(scope="module")
def fitted(checkpoints):
    return BcosSimpleViTClassifier(pretrained=checkpoints["timm"], **FIT).fit(*_data())


def test_fine_tuning_starts_from_the_recipe_and_explains_exactly(checkpoints, fitted):
    X, y = _data()
    assert fitted.architecture_["bcosified"] and fitted.classes_.tolist() == [0, 1, 2]
    module = fitted.module_
    assert isinstance(module, BcosSimpleViT) and module.bcosified
    assert all("bias" not in k for k in module.state_dict())
    assert {m.b for m in module.modules() if hasattr(m, "b")} == {2.0}
    exp = fitted.explain(X[:4], dtype="float64")
    assert exp.completeness_error.max() <= 1e-9
    exp32 = fitted.explain(X[:4])
    assert exp32.completeness_error.max() <= 1e-4
    assert exp.weights.shape == (4, 16, 16, 6)
    # finetune="head" trains the head only: the rest is the recipe's start
    head = BcosSimpleViTClassifier(pretrained=checkpoints["torchvision"], finetune="head",
                                   **{**FIT, "architecture": ARCH}).fit(X, y)  # a full dict, too
    start = vit_finetuning_start(bcosify_vit(torch.load(checkpoints["torchvision"]), num_heads=2))
    tuned = head.module_.state_dict()
    assert all(torch.equal(tuned[k], v) for k, v in start.state_dict().items()
               if not k.startswith("linear_head"))


def test_every_explanation_method_runs_on_the_class_token_model(fitted):
    X, _ = _data(2)
    for explainer in fitted.explainers:
        values = fitted.explain(X, method=explainer.name).values
        assert values.shape == (2, 16, 16)
        assert np.ptp(values, axis=(1, 2)).min() > 0, explainer.name  # GradCAM was all 0
    assert fitted.explain(X, by="head").components.shape == (2, 7, 16, 16)


def test_the_fitted_model_needs_no_checkpoint(checkpoints, fitted, tmp_path):
    X, y = _data()
    path = tmp_path / "tiny.pth"
    path.write_bytes(checkpoints["torchvision"].read_bytes())
    clf = BcosSimpleViTClassifier(pretrained=path, **FIT).fit(X, y)
    saved = clf.save(tmp_path / "saved")
    path.unlink()
    expected = clf.decision_function(X)
    loaded = BcosSimpleViTClassifier.load(saved, device="cpu")
    unpickled = pickle.loads(pickle.dumps(clf))
    for other in (loaded, unpickled):
        np.testing.assert_array_equal(other.decision_function(X), expected)
        np.testing.assert_array_equal(other.explain(X[:2]).values, clf.explain(X[:2]).values)
        assert other.architecture_ == clf.architecture_
    assert clone(clf).get_params()["pretrained"] == path
    continued = unpickled.set_params(warm_start=True).fit(X, y)  # reads no file
    assert len(continued.history_) == 2 * FIT["max_epochs"]
    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        clone(clf).fit(X, y)  # a fresh fit starts from the file
    np.testing.assert_array_equal(clf.decision_function(X), expected)  # fit is transactional


class _Exploit:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (Path.touch, (self.marker,))


def test_hostile_and_mismatched_checkpoints_are_refused_by_the_estimator(checkpoints,
                                                                         tmp_path):
    X, y = _data(8)
    marker = tmp_path / "pwned"
    torch.save({"conv_proj.weight": _Exploit(marker)}, tmp_path / "hostile.pth")
    with pytest.raises(ValueError, match="was refused"):
        BcosSimpleViTClassifier(pretrained=tmp_path / "hostile.pth", **FIT).fit(X, y)
    assert not marker.exists()
    state = torch.load(checkpoints["torchvision"])
    torch.save({k: v for k, v in state.items() if k != "heads.head.bias"},
               tmp_path / "missing.pth")
    with pytest.raises(ValueError, match=r"missing keys: heads\.head\.bias"):
        BcosSimpleViTClassifier(pretrained=tmp_path / "missing.pth", **FIT).fit(X, y)
    with pytest.raises(ValueError, match=r"mis-shaped: .*mlp\.0\.weight"):
        BcosSimpleViTClassifier(pretrained=checkpoints["torchvision"],
                                **{**FIT, "architecture": {"heads": 2, "mlp_dim": 64}}).fit(X, y)
    with pytest.raises(ValueError, match="does not record its number of attention heads"):
        BcosSimpleViTClassifier(pretrained=checkpoints["timm"], **{**FIT, "architecture": None}
                                ).fit(X, y)
    with pytest.raises(ValueError, match="must be fine-tuned"):
        BcosSimpleViTClassifier.from_pretrained(checkpoints["timm"], architecture=ARCH,
                                                classes=range(5))
    with pytest.raises(ValueError, match="which the estimator sets"):
        BcosSimpleViTClassifier(pretrained=checkpoints["timm"],
                                **{**FIT, "architecture": {**ARCH, "bcosified": False}}).fit(X, y)


# ---------------------------------------------------------------------------- your own ViT
@pytest.mark.parametrize("layout", CHECKPOINT_LAYOUTS)
def test_a_vit_trained_here_in_a_standard_layout_is_b_cosified_from_its_state_dict(layout,
                                                                                   tmp_path):
    """``ViTClassifier(layout=...)`` trains the standard ViT; its state dict is a checkpoint
    that converts with its function (float64) and fine-tunes as a B-cos model."""
    from interpretable import ViTClassifier, bcosify

    X, y = _data()
    original = ViTClassifier(patch_size=4, embed_dim=16, depth=2, num_heads=2, mlp_ratio=2.0,
                             stem_channels=(), layout=layout, image_size=None, max_epochs=1,
                             batch_size=8, random_state=0, device="cpu").fit(X, y)
    path = tmp_path / "vit.pth"
    torch.save(original.module_.state_dict(), path)
    network = bcosify(torch.load(path, weights_only=True), num_heads=2)
    images = torch.as_tensor(X[:4]).permute(0, 3, 1, 2)
    with torch.no_grad():  # the estimator's own input normalisation, float32
        np.testing.assert_allclose(network(encode_image(images)).numpy(),
                                   original.decision_function(X[:4]), rtol=0, atol=1e-4)
        reference = copy.deepcopy(original.module_).double()  # the function itself, float64
        mean, std = (torch.tensor(v, dtype=torch.float64)[:, None, None]
                     for v in (IMAGENET_MEAN, IMAGENET_STD))
        normalised = (images.double() - mean) / std
        exact = bcosify({k: v.double() for k, v in reference.state_dict().items()},
                        num_heads=2)
        torch.testing.assert_close(exact(encode_image(images.double())), reference(normalised),
                                   rtol=0, atol=1e-10)
    bcos = BcosSimpleViTClassifier(pretrained=path, **{**FIT, "max_epochs": 1}).fit(X, y)
    assert bcos.explain(X[:2], dtype="float64").completeness_error.max() <= 1e-9


def test_standard_layouts_refuse_a_stem_dropout_or_other_images():
    from interpretable import ViTClassifier

    X, y = _data()
    with pytest.raises(ValueError, match=r"pass stem_channels=None or \(\) and dropout=0"):
        ViTClassifier(layout="timm", stem_channels=(32,), max_epochs=1).fit(X, y)
    with pytest.raises(ValueError, match="takes RGB images, got 1 channel"):
        ViTClassifier(layout="timm", stem_channels=(), max_epochs=1, image_size=None,
                      device="cpu").fit(X[..., :1], y)


@pytest.mark.parametrize("layout", CHECKPOINT_LAYOUTS)
def test_the_head_computes_in_the_parameters_precision_under_autocast(layout):
    """bf16 prediction: the classifier head runs in float32 on the class token cast to
    float32, so the logits are float32 and equal to the head's outside autocast."""
    model = randomise(ConventionalViT(layout, **TINY)).eval()
    tokens = torch.randn(3, TINY["hidden_dim"], 17).to(torch.bfloat16)
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model.forward_head(tokens)
        expected = model.forward_head(tokens.float())
    assert logits.dtype == torch.float32
    torch.testing.assert_close(logits, expected, rtol=0, atol=0)
