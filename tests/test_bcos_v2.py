"""B-cos v2 ViTs (nn.bcos.simple_vit) and their checkpoint loader (nn.bcos.zoo): the released
architectures' sizes, complete explanations with the positional term, thread safety, and the
loader's refusals. The equality with the ``bcos`` package itself is checked by
``benchmarks/check_bcos_zoo.py`` (it needs ``bcos``'s own venv)."""
import math
import pickle
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from interpretable.attribution import attribute_pixels
from interpretable.nn.bcos._layers import BcosConv2d, encode_image, explanation_mode
from interpretable.nn.bcos._simple_vit import (
    BcosSimpleViT,
    sincos_positional_embedding,
    vit_contributions,
)
from interpretable.nn.bcos._zoo import (
    PRETRAINED,
    bcos_key_map,
    build_model,
    checkpoint_path,
    load_checkpoint,
    to_bcos_state_dict,
)

# parameters and state-dict keys of bcos 0.1.3's models (bcos.models.pretrained.<name>)
BCOS_SIZES = {
    "simple_vit_ti_patch16_224": (5_800_128, 75),
    "simple_vit_s_patch16_224": (22_217_088, 75),
    "simple_vit_b_patch16_224": (86_901_504, 75),
    "simple_vit_l_patch16_224": (178_787_328, 87),
    "vitc_ti_patch1_14": (5_318_712, 77),
    "vitc_s_patch1_14": (20_878_704, 77),
    "vitc_b_patch1_14": (81_326_016, 81),
    "vitc_l_patch1_14": (167_444_160, 93),
}
TINY = {
    "simple_vit": dict(dim=16, depth=2, heads=2, mlp_dim=32, patch_size=8, num_classes=5,
                       image_size=32),
    # stem 6 -> 8 (stride 2) -> 8 (stride 1) -> 16 (stride 2), then 2×2 patches: stride 8
    "vitc": dict(dim=16, depth=2, heads=2, mlp_dim=24, patch_size=2, stem_channels=(8, 8, 16),
                 num_classes=5, image_size=32),
}


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def _tiny(family: str, dtype=torch.float64) -> BcosSimpleViT:
    model = BcosSimpleViT(**TINY[family]).to(dtype)
    with torch.no_grad():  # LayerNorm weights away from their initial ones
        for p in model.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    return model


def _images(n=3, h=32, w=32, dtype=torch.float64) -> torch.Tensor:
    return encode_image(torch.rand(n, 3, h, w, dtype=dtype))


@pytest.mark.parametrize("name", sorted(PRETRAINED))
def test_released_architectures_have_bcos_sizes(name):
    model = build_model(name, device="meta")
    parameters, keys = BCOS_SIZES[name]
    assert sum(p.numel() for p in model.parameters()) == parameters
    assert len(model.state_dict()) == keys
    assert all(p.is_meta for p in model.parameters())


def test_key_map_gives_the_bcos_layout():
    vit = bcos_key_map(build_model("simple_vit_ti_patch16_224", device="meta"))
    assert vit["to_patch_embedding.linear.weight"] == "0.to_patch_embedding.linear.linear.weight"
    assert vit["transformer.encoder_0.attn.to_qkv.weight"] == \
        "0.transformer.encoder_0.attn.to_qkv.weight"
    assert vit["transformer.encoder_11.ff.net.linear2.weight"] == \
        "0.transformer.encoder_11.ff.net.linear2.linear.weight"
    assert vit["linear_head.norm.weight"] == "0.linear_head.norm.weight"
    vitc = set(bcos_key_map(build_model("vitc_b_patch1_14", device="meta")).values())
    stem = {k for k in vitc if "conv_stem" in k}
    assert stem == {f"0.to_patch_embedding.conv_stem.{3 * i}.linear.weight" for i in range(6)} | \
        {f"0.to_patch_embedding.conv_stem.{3 * i + 1}.weight" for i in range(6)}


def test_stem_strides_follow_the_reference_rule():
    model = BcosSimpleViT(**TINY["vitc"])
    convs = [m for m in model.modules() if isinstance(m, BcosConv2d)]
    assert [c.stride for c in convs] == [2, 1, 2]
    assert all(c.patch_norm_eps == 1e-6 and c.max_out == 1 and c.scale == 1.0 for c in convs)
    assert model.token_stride == 8 and model.grid_size == (4, 4)


@pytest.mark.parametrize("family", sorted(TINY))
@pytest.mark.parametrize("dtype, tolerance", [(torch.float64, 1e-10), (torch.float32, 1e-4)])
def test_contributions_are_complete(family, dtype, tolerance):
    model = _tiny(family, dtype)
    x = _images(dtype=dtype)
    result = vit_contributions(model, x)
    explained = result.logits.gather(1, result.target[:, None])[:, 0]
    total = result.maps.sum((1, 2)) + result.positional + model.logit_bias
    scale = (explained - model.logit_bias).abs()
    assert ((total - explained).abs() / scale).max() <= tolerance
    # the positional term matters: without it the explanation is far from complete
    assert (result.positional.abs() / scale).min() > 1e-3
    assert torch.equal(result.maps, (result.weights * x).sum(1))
    assert torch.equal(result.target, model(x).argmax(1))


def test_contributions_of_given_targets_and_other_sizes():
    model = _tiny("vitc")
    x = _images(2, 48, 32)
    for target in (3, [1, 4], torch.tensor([0, 2])):
        result = vit_contributions(model, x, target)
        expected = torch.as_tensor(target).expand(2)
        assert torch.equal(result.target, expected)
        explained = result.logits[torch.arange(2), expected]
        total = result.maps.sum((1, 2)) + result.positional + model.logit_bias
        torch.testing.assert_close(total, explained, rtol=0, atol=1e-12)
    with pytest.raises(ValueError, match="target has 3 entries for 2 images"):
        vit_contributions(model, x, [0, 1, 2])
    with pytest.raises(ValueError, match="multiples of 8"):
        model(_images(1, 36, 32))


def test_explanation_mode_changes_gradients_not_values():
    model = _tiny("simple_vit")
    x = _images().requires_grad_(True)
    plain = model(x)
    plain_grad, = torch.autograd.grad(plain[:, 0].sum(), x)
    with explanation_mode():
        explained = model(x)
        explained_grad, = torch.autograd.grad(explained[:, 0].sum(), x)
    # the same function (outside explanation mode its LayerNorms run fused: float64 rounding)
    torch.testing.assert_close(plain, explained, rtol=0, atol=1e-12)
    assert not torch.allclose(plain_grad, explained_grad)


def _explanation_gradients(model, x, **mode):
    """Gradients of the summed first logits w.r.t. x and every parameter (None where the
    graph has no path to it) in explanation mode, and the bytes autograd kept for them."""
    kept = 0

    def pack(tensor):
        nonlocal kept
        kept += tensor.numel() * tensor.element_size()
        return tensor

    x = x.clone().requires_grad_(True)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), explanation_mode(**mode):
        logits = model(x)
    grads = torch.autograd.grad(logits[:, 0].sum(), (x, *model.parameters()), allow_unused=True)
    return grads[0], grads[1:], kept


@pytest.mark.parametrize("kind", ["simple_vit", "vitc", "bcosified"])
def test_constant_parameters_give_the_same_explanation_keeping_less(kind):
    model = (BcosSimpleViT(**TINY["simple_vit"], bcosified=True, bias=True).double()
             if kind == "bcosified" else _tiny(kind))
    x = _images()
    weights, parameter_grads, kept = _explanation_gradients(model, x)
    constant_weights, constant_parameter_grads, constant_kept = _explanation_gradients(
        model, x, constant_parameters=True)
    # the same map (differentiable weights are normalised by torch's fused kernel: rounding)
    torch.testing.assert_close(constant_weights, weights, rtol=0,
                               atol=1e-12 * weights.abs().max().item())
    assert all(g is not None for g in parameter_grads)
    assert all(g is None for g in constant_parameter_grads)
    assert constant_kept < 0.8 * kept  # the layer inputs kept for weight gradients are gone
    assert all(p.requires_grad for p in model.parameters())  # the model is unchanged


def test_positional_embedding_is_float32_sincos():
    pe = sincos_positional_embedding(2, 3, 8)
    assert pe.shape == (6, 8) and pe.dtype == torch.float32
    # token (row 1, column 2): x = 2, y = 1; ω = (1, 1/10000)
    omega = torch.tensor([1.0, 1e-4])
    expected = torch.cat([(2 * omega).sin(), (2 * omega).cos(), omega.sin(), omega.cos()])
    torch.testing.assert_close(pe[5], expected)
    with pytest.raises(ValueError, match="divisible by 4"):
        sincos_positional_embedding(2, 2, 10)
    model = _tiny("simple_vit")
    assert model.positional_embedding(_images(1)).dtype == torch.float64


def test_threads_explaining_and_predicting_share_one_model():
    torch.set_num_threads(1)
    model = _tiny("vitc")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    inputs = [_images(2) for _ in range(8)]
    def work(i):
        x = inputs[i]
        with torch.no_grad():  # the fused inference path
            logits = model(x)
        return logits, vit_contributions(model, x)

    sequential = [work(i) for i in range(len(inputs))]

    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(work, range(8)))
    for (logits, result), (logits_seq, result_seq) in zip(parallel, sequential, strict=True):
        assert torch.equal(logits, logits_seq)
        for a, b in zip(result, result_seq, strict=True):
            assert torch.equal(a, b)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


@pytest.mark.parametrize("method", ["rollout", "gradcam", "integrated_gradients"])
def test_post_hoc_attributions_accept_v2_models(method):
    model = _tiny("simple_vit")
    x = _images(2)
    maps = attribute_pixels(model, x, [0, 1], method, n_steps=4)
    assert maps.shape == (2, 32, 32) and torch.isfinite(maps).all()


# ---- checkpoints -------------------------------------------------------------------------

def _save(state, path: Path) -> Path:
    torch.save(state, path)
    return path


@pytest.fixture()
def tiny_checkpoint(tmp_path):
    model = _tiny("vitc", torch.float32)
    return model, _save(to_bcos_state_dict(model), tmp_path / "tiny.pth")


def test_checkpoint_in_bcos_layout_loads_with_equal_logits(tiny_checkpoint):
    model, path = tiny_checkpoint
    loaded = load_checkpoint(path, architecture=TINY["vitc"])
    x = _images(dtype=torch.float32)
    assert torch.equal(loaded(x), model(x))
    assert not any(p.is_meta for p in loaded.parameters())


def _refused(path, match, **kwargs):
    with pytest.raises(ValueError, match=match):
        load_checkpoint(path, architecture=kwargs.pop("architecture", TINY["vitc"]), **kwargs)


def test_mismatched_checkpoints_name_the_keys(tiny_checkpoint, tmp_path):
    _, path = tiny_checkpoint
    state = torch.load(path)
    missing = dict(state)
    del missing["0.linear_head.norm.weight"]
    _refused(_save(missing, tmp_path / "m.pth"), r"missing keys: 0\.linear_head\.norm\.weight")
    extra = {**state, "0.extra.weight": torch.zeros(2)}
    _refused(_save(extra, tmp_path / "e.pth"), r"unexpected keys: 0\.extra\.weight")
    shaped = {**state, "0.linear_head.linear.linear.weight": torch.zeros(7, 16)}
    _refused(_save(shaped, tmp_path / "s.pth"),
             r"mis-shaped: 0\.linear_head\.linear\.linear\.weight \(7, 16\) \(expected \(5, 16\)\)")
    _refused(path, "does not fit the architecture", architecture=TINY["simple_vit"])
    ours = _save(_tiny("vitc", torch.float32).state_dict(), tmp_path / "ours.pth")
    _refused(ours, "save with to_bcos_state_dict")


def test_non_finite_and_non_float_values_are_refused(tiny_checkpoint, tmp_path):
    _, path = tiny_checkpoint
    state = torch.load(path)
    state["0.to_patch_embedding.linear.linear.weight"][0, 0] = math.nan
    _refused(_save(state, tmp_path / "nan.pth"),
             r"NaN or infinite values in: 0\.to_patch_embedding\.linear\.linear\.weight")
    state = torch.load(path)
    state["0.linear_head.norm.weight"] = torch.ones(16, dtype=torch.int64)
    _refused(_save(state, tmp_path / "int.pth"), "non-floating-point tensors")


class _Exploit:
    """Unpickling this would create ``marker`` (code execution)."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return Path.touch, (Path(self.marker),)


def test_corrupt_truncated_and_hostile_files_are_refused(tiny_checkpoint, tmp_path):
    _, path = tiny_checkpoint
    data = path.read_bytes()
    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(data[: len(data) // 2])
    _refused(truncated, "not a readable PyTorch checkpoint")
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(bytes(range(256)) * 8)
    _refused(garbage, "not a readable PyTorch checkpoint")
    marker = tmp_path / "pwned"
    _refused(_save({"0.x": _Exploit(marker)}, tmp_path / "hostile.pth"), "was refused")
    assert not marker.exists()
    raw = tmp_path / "raw_pickle.pth"
    raw.write_bytes(pickle.dumps(_Exploit(marker)))
    _refused(raw, "not a readable PyTorch checkpoint|was refused")
    assert not marker.exists()
    _refused(_save([torch.zeros(1)], tmp_path / "list.pth"), "holds a list, not a state dict")
    _refused(_save({"0.x": 3}, tmp_path / "int.pth"), "entry '0.x' holds a int")
    with pytest.raises(FileNotFoundError, match="no checkpoint file"):
        load_checkpoint(tmp_path / "absent.pth", architecture=TINY["vitc"])
    with pytest.raises(ValueError, match="cannot tell the architecture"):
        load_checkpoint(path)


def test_named_checkpoints_come_from_the_hub_cache_and_are_hash_checked(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path))
    name = "simple_vit_ti_patch16_224"
    with pytest.raises(FileNotFoundError, match="download=True"):
        load_checkpoint(name)  # never downloads unless asked
    path = checkpoint_path(name)
    assert path == tmp_path / "checkpoints" / "bcos_simple_vit_ti_patch16_224-4b0824b1c1.pth"
    path.parent.mkdir()
    _save(to_bcos_state_dict(build_model(name)), path)
    with pytest.raises(ValueError, match="SHA-256 prefix 4b0824b1c1"):
        load_checkpoint(name)
    with pytest.raises(ValueError, match="SHA-256 prefix"):  # a released file name elsewhere
        load_checkpoint(path.rename(tmp_path / path.name))
    with pytest.raises(ValueError, match="unknown pretrained B-cos ViT 'vit_xl'"):
        build_model("vit_xl")


def test_released_table():
    assert len(PRETRAINED) == 8
    spec = PRETRAINED["vitc_l_patch1_14"]
    assert spec.url == ("https://github.com/B-cos/B-cos-v2/releases/download/v0.0.1-weights/"
                        "bcos_vitc_l_patch1_14-8739e18b8d.pth")
    assert (spec.resize_size, spec.crop_size, spec.top1) == (256, 224, 77.782)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_contributions_on_cuda_match_the_cpu():
    model = _tiny("vitc")
    x = _images()
    cpu = vit_contributions(model, x)
    cuda = vit_contributions(model.cuda(), x.cuda())
    for a, b in zip(cpu, cuda, strict=True):
        torch.testing.assert_close(b.cpu(), a, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("family", ["simple_vit", "vitc"])
def test_inference_without_gradients_is_the_same_function(family):
    """Without autograd the LayerNorms run fused (F.layer_norm / F.group_norm): the same
    function as the differentiable path, to float64 rounding."""
    model = _tiny(family)
    x = _images(3)
    with torch.no_grad():
        fused = model(x)
    torch.testing.assert_close(fused, model(x).detach(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("bcosified", [False, True])
def test_fused_attention_computes_the_explicit_attention_s_function(bcosified):
    """Without returned attention and outside explanation mode the blocks use one q/k/v
    product and ``scaled_dot_product_attention``: the same logits and training gradients as
    the explicit softmax attention (float64)."""
    torch.manual_seed(0)
    model = BcosSimpleViT(dim=32, depth=2, heads=4, mlp_dim=64, patch_size=4, num_classes=3,
                          image_size=16, bcosified=bcosified, bias=bcosified).double()
    x = encode_image(torch.rand(2, 3, 16, 16, dtype=torch.float64))
    fused = model(x)
    explicit, attentions = model.forward_with_attention(x)
    assert len(attentions) == 2 and attentions[0].shape == (2, 4, 17 if bcosified else 16,
                                                           17 if bcosified else 16)
    torch.testing.assert_close(fused, explicit, rtol=1e-12, atol=1e-12)
    params = [p for p in model.parameters() if p.requires_grad]
    for got, want in zip(torch.autograd.grad(fused.square().sum(), params),
                         torch.autograd.grad(explicit.square().sum(), params), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


def test_the_head_computes_in_the_parameters_precision_under_autocast():
    """bf16 prediction: LayerNorm and classifier of the head run in float32, so the logits are
    float32 and equal the head's outside autocast on the same features."""
    model = BcosSimpleViT(dim=32, depth=1, heads=4, mlp_dim=64, patch_size=4, num_classes=3,
                          image_size=16).eval()
    x = encode_image(torch.rand(2, 3, 16, 16))
    with torch.no_grad():
        with torch.autocast("cpu", dtype=torch.bfloat16):
            token_map = model.forward_features(x)[0].to(torch.bfloat16)  # bf16 features
            logits = model.forward_head(token_map)
        expected = model.linear_head(model.pooled(token_map).float()) + model.logit_bias
    assert logits.dtype == torch.float32
    torch.testing.assert_close(logits, expected, rtol=0, atol=0)


def test_a_float64_model_under_autocast_computes_in_float64():
    """Autocast casts only float32: the patch rearrangement and the prescaled layers keep a
    float64 model's inputs in float64 (the same logits as without autocast)."""
    model = BcosSimpleViT(dim=32, depth=1, heads=4, mlp_dim=64, patch_size=4, num_classes=3,
                          image_size=16).double().eval()
    x = encode_image(torch.rand(2, 3, 16, 16, dtype=torch.float64))
    with torch.no_grad():
        expected = model(x)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            logits = model(x)
    assert logits.dtype == torch.float64
    torch.testing.assert_close(logits, expected, rtol=0, atol=0)
