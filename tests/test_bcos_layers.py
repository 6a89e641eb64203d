"""B-cos layers, the B-cos ViT module, the conventional ViT and the per-head identity."""
import functools
import math
import threading

import pytest
import torch
from torch import nn
from torch.nn import functional as F

from interpretable.attribution._heads import head_contributions
from interpretable.attribution._images import gradcam, inherent, inherent_terms
from interpretable.nn._heads import mha_forward
from interpretable.nn._stem_vit import ViT
from interpretable.nn.bcos import _layers as bcos_layers
from interpretable.nn.bcos._holistic_vit import BcosAttention, BcosViT
from interpretable.nn.bcos._layers import (
    BcosConv2d,
    BcosLinear,
    bcos_epilogue,
    constant_attention,
    encode_image,
    explanation_mode,
    scaled_unit_rows,
)


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def _grad_times_input(layer, x):
    x = x.clone().requires_grad_(True)
    with explanation_mode():
        out = layer(x)
    flat = out.reshape(len(x), -1)
    contribs = []
    for j in range(flat.shape[1]):
        g, = torch.autograd.grad(flat[:, j].sum(), x, retain_graph=True)
        contribs.append((g * x).reshape(len(x), -1).sum(1))
    return flat.detach(), torch.stack(contribs, 1)


def _input_gradient(layer, x):
    x = x.clone().requires_grad_(True)
    return torch.autograd.grad(layer(x).sum(), x)[0]


def _tiny_bcos(prior, **kw):
    return BcosViT(2, (8, 8), 5, patch_size=2, embed_dim=16, depth=2, num_heads=2,
                   stem_channels=(4,), attention_prior=prior, **kw).double()


def test_bcos_linear_output_is_maximal_for_aligned_input():
    layer = BcosLinear(16, 1, b=2, max_out=1).double()
    w = layer.weight.detach()[0]
    aligned = (w / w.norm() * 3.0)[None]
    random = torch.randn(2000, 16, dtype=torch.float64)
    random = random / random.norm(dim=1, keepdim=True) * 3.0
    out_aligned = layer(aligned).item()
    # |cos|^(B-1) · ŵᵀx = γ ||x|| for aligned input, the bound of every other input
    assert out_aligned == pytest.approx(3.0 / math.sqrt(16))
    assert (layer(random).abs() < out_aligned).all()


def test_bcos_linear_b1_is_linear_and_maxout_takes_max():
    layer = BcosLinear(8, 3, b=1, max_out=2, scale=2.0).double()
    x = torch.randn(5, 8, dtype=torch.float64)
    w = layer.weight / layer.weight.norm(dim=1, keepdim=True)
    lin = (x @ w.T * 2.0 / math.sqrt(8)).view(5, 2, 3)  # two contiguous blocks of 3 units
    torch.testing.assert_close(layer(x), lin.max(1).values)


def _reference_bcos(patches, weight, b, max_out, scale):
    """The B-cos transform written out: patches (..., fan_in), weight (max_out·out, fan_in) ->
    (..., out), the maximum over the max_out blocks of units of γ·|cos(x, ŵ)|^(B-1)·ŵᵀx."""
    w_hat = weight / weight.norm(dim=1, keepdim=True)
    lin = patches @ w_hat.T
    cos = lin / patches.norm(dim=-1, keepdim=True)
    out = scale * cos.abs() ** (b - 1) * lin
    return out.unflatten(-1, (max_out, -1)).max(-2).values


@pytest.mark.parametrize("b, max_out", [(1.0, 2), (2.0, 1), (2.0, 2), (2.5, 2), (2.0, 3)])
@pytest.mark.parametrize("block_bytes", [None, 100], ids=["one block", "many blocks"])
def test_bcos_layers_equal_the_reference_formulation(monkeypatch, b, max_out, block_bytes):
    if block_bytes:  # predictions' epilogue over many blocks (bcos_epilogue)
        monkeypatch.setattr(bcos_layers, "EPILOGUE_BLOCK_BYTES", block_bytes)
    linear = BcosLinear(12, 5, b=b, max_out=max_out, scale=3.0).double()
    x = torch.randn(4, 7, 12, dtype=torch.float64)
    expected_linear = _reference_bcos(x, linear.weight, b, max_out, 3.0 / math.sqrt(12))

    conv = BcosConv2d(3, 4, 3, stride=2, padding=1, b=b, max_out=max_out, scale=3.0).double()
    img = torch.randn(2, 3, 9, 9, dtype=torch.float64)
    patches = F.unfold(img, 3, padding=1, stride=2).transpose(1, 2)  # (B, L, C·k²)
    expected_conv = _reference_bcos(patches, conv.weight.flatten(1), b, max_out,
                                    3.0 / math.sqrt(27)).transpose(1, 2).reshape(2, 4, 5, 5)
    channels_last = img.contiguous(memory_format=torch.channels_last)
    # with autograd, without (in-place paths) and in explanation mode: the same outputs
    for context in (torch.enable_grad, torch.no_grad, explanation_mode):
        with context():
            torch.testing.assert_close(linear(x), expected_linear, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(conv(img), expected_conv, rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(conv(channels_last), expected_conv, rtol=1e-12,
                                       atol=1e-12)


def test_maxout_ties_keep_gradients_exact():
    layer = BcosLinear(6, 3, max_out=2).double()
    single = BcosLinear(6, 3, max_out=1).double()
    with torch.no_grad():
        single.weight.copy_(layer.weight[:3])
        layer.weight[3:] = layer.weight[:3]  # both blocks equal: every output is a tie
    x = torch.randn(4, 6, dtype=torch.float64)
    torch.testing.assert_close(layer(x), single(x))
    torch.testing.assert_close(_input_gradient(layer, x), _input_gradient(single, x))
    out, contrib = _grad_times_input(layer, x)
    torch.testing.assert_close(contrib, out, atol=1e-12, rtol=1e-10)


@pytest.mark.parametrize("max_out", [2, 3])
def test_bcos_layer_gradients_match_finite_differences(max_out):
    linear = BcosLinear(6, 3, max_out=max_out).double()
    conv = BcosConv2d(2, 3, 3, padding=1, max_out=max_out).double().to(
        memory_format=torch.channels_last)
    for layer, x in ((linear, torch.randn(4, 6, dtype=torch.float64)),
                     (conv, torch.randn(2, 2, 5, 5, dtype=torch.float64))):
        def call(inputs, weight, layer=layer):
            return torch.func.functional_call(layer, {"weight": weight}, (inputs,))
        assert torch.autograd.gradcheck(
            call, (x.requires_grad_(), layer.weight.detach().clone().requires_grad_()))


@pytest.mark.parametrize("b", [1.0, 2.0, 2.5])
def test_bcos_linear_explanation_gradient_times_input_is_output(b):
    layer = BcosLinear(12, 4, b=b, max_out=2).double()
    x = torch.randn(6, 12, dtype=torch.float64)
    out, contrib = _grad_times_input(layer, x)
    torch.testing.assert_close(contrib, out, atol=1e-12, rtol=1e-10)
    if b != 1:  # the plain gradient is not W(x): the cos factor depends on x
        x2 = x.clone().requires_grad_(True)
        g, = torch.autograd.grad(layer(x2)[:, 0].sum(), x2)
        with explanation_mode():
            w, = torch.autograd.grad(layer(x2)[:, 0].sum(), x2)
        assert not torch.allclose(g, w)


def test_bcos_conv_explanation_gradient_times_input_is_output():
    conv = BcosConv2d(2, 3, 3, stride=2, padding=1, b=2, max_out=2).double()
    x = torch.rand(2, 2, 7, 7, dtype=torch.float64)
    out, contrib = _grad_times_input(conv, x)
    torch.testing.assert_close(contrib, out, atol=1e-12, rtol=1e-10)
    assert conv(x).shape == (2, 3, 4, 4)


@pytest.mark.parametrize("max_out", [1, 2, 3])
def test_forward_parts_sum_to_forward(max_out):
    layer = BcosLinear(10, 5, max_out=max_out).double()
    x = torch.randn(4, 10, dtype=torch.float64)
    parts = [x * (torch.arange(10) < 4), x * (torch.arange(10) >= 4)]
    torch.testing.assert_close(sum(layer.forward_parts(x, parts)), layer(x))


def test_explanation_mode_is_scoped_to_the_context_and_the_thread():
    layer = BcosLinear(10, 5).double()
    x = torch.randn(4, 10, dtype=torch.float64)
    plain = _input_gradient(layer, x)
    before = dict(vars(layer))
    seen_by_thread = []
    with explanation_mode():
        explained = _input_gradient(layer, x)
        # a thread started inside the context runs outside it
        thread = threading.Thread(target=lambda: seen_by_thread.append(_input_gradient(layer, x)))
        thread.start()
        thread.join()
    assert vars(layer) == before  # no flag on the module
    assert not torch.allclose(plain, explained)
    torch.testing.assert_close((explained * x).sum(), layer(x).sum(), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(seen_by_thread[0], plain, rtol=0, atol=0)
    torch.testing.assert_close(_input_gradient(layer, x), plain, rtol=0, atol=0)


def test_bad_layer_arguments():
    with pytest.raises(ValueError, match="max_out"):
        BcosLinear(4, 4, max_out=0)
    with pytest.raises(ValueError, match="exponent"):
        BcosLinear(4, 4, b=0.5)
    with pytest.raises(ValueError, match="attention_prior"):
        BcosAttention(8, 2, 4, attention_prior="relative")
    with pytest.raises(ValueError, match="divisible"):
        BcosViT(2, (10, 10), 3, patch_size=4)
    with pytest.raises(ValueError, match="stem stride"):
        BcosViT(2, (8, 8), 3, patch_size=4, stem_stride=3)
    with pytest.raises(ValueError, match="stem stride"):
        BcosViT(2, (8, 8), 3, patch_size=4, stem_channels=(), stem_stride=2)


def test_stem_stride_keeps_the_token_grid():
    model = BcosViT(2, (8, 8), 3, patch_size=4, embed_dim=8, depth=1, num_heads=2,
                    stem_channels=(4,), stem_stride=2)
    first, patch = model.stem.layers
    assert (first.stride, patch.kernel_size, patch.stride) == (2, 2, 2)
    token_map, attentions = model.forward_features(torch.rand(3, 2, 8, 8))
    assert token_map.shape == (3, 8, 2, 2) and attentions[0].shape == (3, 2, 4, 4)


def test_reset_parameters_redraws_bcos_weights_and_resets_the_prior():
    model = _tiny_bcos("multiplicative")
    with torch.no_grad():
        for block in model.blocks:
            block.attn.prior.normal_()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    for module in model.modules():
        if hasattr(module, "reset_parameters"):
            module.reset_parameters()
    after = model.state_dict()
    assert {k: v.shape for k, v in after.items()} == {k: v.shape for k, v in before.items()}
    bcos = [n for n, m in model.named_modules() if isinstance(m, (BcosLinear, BcosConv2d))]
    assert len(bcos) == 2 + 2 * 4 + 1  # stem, 4 per block, head
    for name in bcos:
        assert not torch.allclose(after[f"{name}.weight"], before[f"{name}.weight"])
    for layer in range(2):
        torch.testing.assert_close(after[f"blocks.{layer}.attn.prior"],
                                   torch.zeros_like(before[f"blocks.{layer}.attn.prior"]))


@pytest.mark.parametrize("prior, kw", [("multiplicative", {}), ("additive", {}), ("none", {}),
                                       ("multiplicative", {"stem_stride": 2, "max_out": 3})])
def test_full_model_completeness_float64(prior, kw):
    model = _tiny_bcos(prior, **kw)
    with torch.no_grad():  # a non-trivial prior so that it matters
        for block in model.blocks:
            if block.attn.prior is not None:
                block.attn.prior.normal_()
    x = encode_image(torch.rand(4, 1, 8, 8, dtype=torch.float64))
    target = torch.tensor([0, 1, 2, 4])
    contrib, weights, logits = inherent(model, x, target)
    explained = logits.gather(1, target[:, None])[:, 0]
    torch.testing.assert_close(contrib.sum((1, 2)) + model.logit_bias, explained,
                               atol=1e-10, rtol=0)
    torch.testing.assert_close(model(x).detach(), logits)  # explanation mode changes no value
    assert weights.shape == x.shape


def test_attention_prior_modes():
    x = torch.randn(3, 4, 8)
    mult = BcosAttention(8, 2, 4, "multiplicative")
    add = BcosAttention(8, 2, 4, "additive")
    none = BcosAttention(8, 2, 4, "none")
    assert none.prior is None and mult.prior.shape == (2, 4, 4)
    for m in (mult, add):
        m.load_state_dict({**none.state_dict(), "prior": torch.randn(2, 4, 4)})
    a_none, a_add, a_mult = none.attention(x), add.attention(x), mult.attention(x)
    torch.testing.assert_close(a_none.sum(-1), torch.ones(3, 2, 4))
    torch.testing.assert_close(a_add.sum(-1), torch.ones(3, 2, 4))
    torch.testing.assert_close(a_mult, a_none * mult.prior.softmax(-1))
    torch.testing.assert_close(a_add, (torch.log(a_none) + add.prior).softmax(-1))


def test_head_terms_sum_to_attention_output():
    attn = BcosAttention(12, 3, 5, "additive").double()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    terms, _ = attn.head_terms(x)
    assert terms.shape == (2, 3, 5, 12)
    torch.testing.assert_close(terms.sum(1), attn(x))


def test_per_head_contributions_sum_to_the_explanation():
    model = _tiny_bcos("multiplicative")
    x = encode_image(torch.rand(3, 1, 8, 8, dtype=torch.float64))
    target = torch.tensor([1, 3, 0])
    maps, names = inherent_terms(model, x, target)
    assert names[0] == "tokens" and "layer1.head1" in names and names[-1] == "layer1.mlp"
    assert maps.shape == (3, len(names), 8, 8)
    total = inherent(model, x, target)[0]
    torch.testing.assert_close(maps.sum(1), total, atol=1e-10, rtol=1e-8)
    assert maps[:, 1:].abs().sum() > 0  # the heads contribute something


@pytest.mark.parametrize("batch_first", [True, False])
def test_head_contributions_identity_against_multihead_attention(batch_first):
    mha = nn.MultiheadAttention(12, 3, batch_first=batch_first).double().eval()
    x = torch.randn(2, 5, 12, dtype=torch.float64)
    if not batch_first:
        x = x.transpose(0, 1)
    expected, weights = mha(x, x, x, average_attn_weights=False)
    hc = head_contributions(mha, x)
    assert hc.terms.shape[-2:] == (3, 12)
    torch.testing.assert_close(hc.terms.sum(-2) + hc.bias, expected)
    torch.testing.assert_close(hc.attention, weights)


def test_head_contributions_cross_attention_masks_and_unbatched():
    mha = nn.MultiheadAttention(8, 2, kdim=6, vdim=4, batch_first=True, bias=False).double()
    q = torch.randn(2, 3, 8, dtype=torch.float64)
    k = torch.randn(2, 5, 6, dtype=torch.float64)
    v = torch.randn(2, 5, 4, dtype=torch.float64)
    pad = torch.tensor([[False] * 5, [False, False, False, True, True]])
    expected, _ = mha(q, k, v, key_padding_mask=pad)
    hc = head_contributions(mha, q, k, v, key_padding_mask=pad)
    torch.testing.assert_close(hc.terms.sum(-2) + hc.bias, expected)
    self_mha = nn.MultiheadAttention(8, 2).double()
    x = torch.randn(4, 8, dtype=torch.float64)
    causal = torch.triu(torch.ones(4, 4, dtype=torch.bool), 1)
    hc = head_contributions(self_mha, x, attn_mask=causal)
    torch.testing.assert_close(hc.terms.sum(-2) + hc.bias,
                               self_mha(x, x, x, attn_mask=causal)[0])
    with pytest.raises(TypeError, match="MultiheadAttention"):
        head_contributions(nn.Linear(8, 8), x)
    with pytest.raises(ValueError, match="shape"):
        head_contributions(self_mha, torch.randn(4, 7))


class _FinalMapLayer(nn.Module):
    """The model as captum's LayerGradCam needs it: an identity layer on the final map."""

    def __init__(self, model):
        super().__init__()
        self.model = model
        self.final_map = nn.Identity()

    def forward(self, x):
        return self.model.forward_head(self.final_map(self.model.forward_features(x)[0]))


@pytest.mark.parametrize("make", [
    lambda: _tiny_bcos("multiplicative").float(),
    lambda: ViT(2, (8, 8), 5, patch_size=2, embed_dim=16, depth=2, num_heads=2).eval()])
def test_gradcam_equals_captum_layer_gradcam(make):
    ca = pytest.importorskip("captum.attr")
    model = make()
    x = encode_image(torch.rand(4, 1, 8, 8))
    target = torch.tensor([0, 1, 4, 2])
    wrapped = _FinalMapLayer(model)
    expected = ca.LayerGradCam(wrapped, wrapped.final_map).attribute(
        x, target=target, relu_attributions=True)
    cam = gradcam(model, x, target)
    assert cam.shape == (4, 4, 4) and (cam > 0).any()
    # float32 rounding: captum's forward runs with autograd, gradcam's layers below the map
    # without it (B-cos layers then scale their inputs, not their outputs)
    torch.testing.assert_close(cam, expected[:, 0].detach(), rtol=1e-5, atol=1e-6)


def test_vit_shapes_and_mha_forward_matches_module():
    model = ViT(1, (8, 8), 5, patch_size=2, embed_dim=16, depth=2, num_heads=2).eval()
    x = torch.rand(3, 1, 8, 8)
    logits, attentions = model.forward_with_attention(x)
    assert logits.shape == (3, 5) and len(attentions) == 2
    token_map, _ = model.forward_features(x)
    assert token_map.shape == (3, 16, 4, 4)
    torch.testing.assert_close(model.forward_head(token_map), logits)
    assert attentions[0].shape == (3, 2, 16, 16)
    mha = model.blocks[0].attn
    t = torch.randn(3, 16, 16)
    torch.testing.assert_close(mha_forward(mha, t)[0], mha(t, t, t)[0], atol=1e-6, rtol=1e-5)


def test_normal_cdf_is_the_standard_normal_cdf_with_and_without_gradients():
    from interpretable.nn.bcos._layers import normal_cdf

    x = torch.linspace(-8, 8, 1001, dtype=torch.float64)
    torch.testing.assert_close(normal_cdf(x), torch.special.ndtr(x), rtol=0, atol=1e-15)
    leaf = x.clone().requires_grad_(True)
    normal_cdf(leaf).sum().backward()  # out of place: autograd keeps what it needs
    density = torch.exp(-x ** 2 / 2) / (2 * torch.pi) ** 0.5
    torch.testing.assert_close(leaf.grad, density, rtol=0, atol=1e-15)
    before = x.clone()
    with torch.no_grad():
        normal_cdf(x)
    assert torch.equal(x, before)  # in place on its own temporary only


def _inverse_norms(layer, x: torch.Tensor) -> torch.Tensor:
    """``1/max(‖x‖, 1e-12)`` of a linear layer's input vectors through autograd's own chain;
    a convolution's patch norms as the layer computes them."""
    if isinstance(layer, BcosConv2d):
        return layer._inv_norm(x)
    return torch.linalg.vector_norm(x, dim=-1, keepdim=True).clamp_min(1e-12).reciprocal()


@pytest.mark.parametrize("clamped", [False, True])
@pytest.mark.parametrize("b", [2.0, 1.5, 2.5])
@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_training_gradients_are_autograds_through_the_formula(kind, b, clamped):
    """Training runs the written-out scale, inverse norms and their gradients
    (``_CosineScale``, ``_InverseNorm``): equal to autograd through
    ``a · max(|a| / max(‖x‖, 1e-12), 1e-12)^(B-1)``, for the input and the weights."""
    torch.manual_seed(0)
    layer = (BcosLinear(6, 4, b=b, max_out=2) if kind == "linear"
             else BcosConv2d(3, 4, 3, b=b, max_out=1)).double()
    x = torch.randn(2, 3, 5, 5, dtype=torch.float64) if kind == "conv" \
        else torch.randn(5, 6, dtype=torch.float64)
    if clamped:
        x[0, 0] = 0.0  # a zero input vector / patch row: clamped factors
    torch.autograd.gradcheck(lambda v: layer(v), (x.clone().requires_grad_(True),))
    leaf = x.clone().requires_grad_(True)
    out = layer(leaf)
    got = torch.autograd.grad(out.square().sum(), (leaf, layer.weight))
    leaf2 = x.clone().requires_grad_(True)  # the formula, through autograd
    lin = layer._responses(leaf2, layer._scaled_unit_weight(), False)
    winners = lin if layer.max_out == 1 else torch.maximum(*lin.chunk(2, layer._unit_dim))
    factor = (winners.abs() * _inverse_norms(layer, leaf2)).clamp_min(1e-12).pow(b - 1)
    expected_out = winners * factor
    expected = torch.autograd.grad(expected_out.square().sum(), (leaf2, layer.weight))
    torch.testing.assert_close(out, expected_out, rtol=1e-12, atol=1e-14)
    for g, e in zip(got, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-12)


def test_gelu_gate_is_fused_outside_explanation_mode_only():
    from interpretable.nn.bcos._bert_layers import gated_gelu

    x = torch.randn(4, 7, dtype=torch.float64, requires_grad=True)
    fused_grad, = torch.autograd.grad(gated_gelu(x).sum(), x)
    torch.testing.assert_close(fused_grad, torch.autograd.grad(F.gelu(x).sum(), x)[0])
    with explanation_mode():  # the gate is a constant: the gradient is Φ(x) alone
        gate_grad, = torch.autograd.grad(gated_gelu(x).sum(), x)
    torch.testing.assert_close(gate_grad, torch.special.ndtr(x.detach()), rtol=0, atol=1e-15)


@pytest.mark.parametrize("shape", [(3, 4, 6), (6,)], ids=["batch", "one vector"])
def test_biased_gelu_gate_gradients_are_autograds(shape):
    """With a gate bias, training runs ``x · Φ(x + bias)`` with written-out gradients: equal
    to autograd through ``torch.special.ndtr`` (one vector: nothing summed for the bias);
    explanation mode keeps the gate constant."""
    from interpretable.nn.bcos._bert_layers import gated_gelu

    x = torch.randn(*shape, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(6, dtype=torch.float64, requires_grad=True)
    torch.autograd.gradcheck(gated_gelu, (x, bias))
    out = gated_gelu(x, bias)
    reference = x * torch.special.ndtr(x + bias)
    torch.testing.assert_close(out, reference, rtol=0, atol=1e-15)
    grads = torch.autograd.grad(out.sum(), (x, bias))
    for got, want in zip(grads, torch.autograd.grad(reference.sum(), (x, bias)), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-14)
    with explanation_mode():
        gate_grad, = torch.autograd.grad(gated_gelu(x, bias).sum(), x)
    torch.testing.assert_close(gate_grad, torch.special.ndtr((x + bias).detach()))


def test_layer_norm_scale_is_a_constant_in_explanation_mode_only():
    """``constant_scale_layer_norm``: the fused forward; in explanation mode the gradients of
    ``(x - mean) / σ ⊙ w`` with σ detached (input and weight), outside it ``F.layer_norm``'s."""
    from interpretable.nn.bcos._layers import constant_scale_layer_norm

    x = torch.randn(3, 5, 8, dtype=torch.float64, requires_grad=True)
    weight = torch.rand(8, dtype=torch.float64, requires_grad=True)
    g = torch.randn(3, 5, 8, dtype=torch.float64)
    centred = x - x.mean(-1, keepdim=True)
    reference = centred / (centred.square().mean(-1, keepdim=True) + 1e-5).sqrt().detach() * weight
    with explanation_mode():
        out = constant_scale_layer_norm(x, weight, 1e-5)
        grads = torch.autograd.grad(out, (x, weight), g)
    torch.testing.assert_close(out, reference, rtol=1e-12, atol=1e-12)
    for got, want in zip(grads, torch.autograd.grad(reference, (x, weight), g), strict=True):
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    fused = F.layer_norm(x, (8,), weight, None, 1e-5)
    for got, want in zip(torch.autograd.grad(constant_scale_layer_norm(x, weight, 1e-5),
                                             (x, weight), g),
                         torch.autograd.grad(fused, (x, weight), g), strict=True):
        torch.testing.assert_close(got, want, rtol=0, atol=0)


def _clamped_unit_rows(weight, gains):
    """The formula: gains · w / max(‖w‖, 1e-12) per row, by autograd's chain."""
    view = (-1,) + (1,) * (weight.dim() - 1)
    norms = torch.linalg.vector_norm(weight.flatten(1), dim=1).clamp_min(1e-12)
    return weight * (torch.as_tensor(gains, dtype=weight.dtype) / norms).view(view)


@pytest.mark.parametrize("shape", [(5, 7), (4, 3, 2, 2)])
@pytest.mark.parametrize("per_row", [False, True])
@pytest.mark.parametrize("zero_row", [False, True], ids=["fused", "zero row: the formula"])
def test_scaled_unit_rows_equal_the_clamped_formula_with_gradients(shape, per_row, zero_row):
    weight = torch.randn(shape, dtype=torch.float64)
    if zero_row:  # the fused kernel would divide by its zero norm
        weight[1] = 0.0
    gains = torch.rand(shape[0], dtype=torch.float64) + 0.5 if per_row else 1.5
    grad = torch.randn(shape, dtype=torch.float64)
    results = []
    for compute in (scaled_unit_rows, _clamped_unit_rows):
        leaf = weight.clone().requires_grad_(True)
        out = compute(leaf, gains)
        results.append((out.detach(), *torch.autograd.grad(out, leaf, grad)))
    (out, got), (expected, want) = results
    torch.testing.assert_close(out, expected, rtol=1e-12, atol=0)
    assert torch.isfinite(got).all()
    torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("bias", [None, "mask", "prior"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.bfloat16])
def test_constant_attention_is_the_softmax_of_the_scaled_scores(bias, dtype):
    # q and k as the models slice them out of one projection: permuted views
    q, k = torch.randn(2, 5, 2, 3, 4, dtype=dtype).permute(2, 0, 3, 1, 4)  # (2, 3, 5, 4) each
    bias = {None: None, "mask": torch.randn(2, 1, 1, 5),  # float32: promotes bfloat16 scores
            "prior": torch.randn(3, 5, 5, dtype=dtype)}[bias]
    scores = q @ k.transpose(-1, -2) * 0.5
    expected = (scores if bias is None else scores + bias).softmax(-1)
    with torch.no_grad():
        got = constant_attention(q, k, 0.5, bias)
    assert got.dtype == expected.dtype
    torch.testing.assert_close(got, expected, rtol=0, atol=1e-12 if dtype == torch.float64 else 0)


@pytest.mark.parametrize("b", [1.0, 1.5, 2.0, 2.5])
@pytest.mark.parametrize("max_out", [1, 2, 3])
@pytest.mark.parametrize("layout", ["rows", "tokens", "feature map", "vector", "broadcast"])
def test_blockwise_epilogue_is_maxout_then_the_bcos_scale(monkeypatch, b, max_out, layout):
    # blocks of 100 bytes: several blocks and a partial last one (the first dimension is 7)
    monkeypatch.setattr(bcos_layers, "EPILOGUE_BLOCK_BYTES", 100)
    units = 5
    shape, dim, inv_shape = {
        "rows": ((7, max_out * units), -1, (7, 1)),                   # linear layers' 2-d rows
        "tokens": ((7, 3, max_out * units), -1, (7, 3, 1)),          # the B-cos BERT's layers
        "feature map": ((7, max_out * units, 4, 3), 1, (7, 1, 4, 3)),  # convolutions
        "vector": ((max_out * units,), -1, (1,)),                     # one unbatched input
        "broadcast": ((7, max_out * units), -1, (1, 1)),
    }[layout]
    lin = torch.randn(shape, dtype=torch.float64)
    inv = torch.rand(inv_shape, dtype=torch.float64) + 0.5
    winners = functools.reduce(torch.maximum, lin.chunk(max_out, dim))
    expected = winners * (winners.abs() * inv) ** (b - 1)
    for scale in (inv, None):  # None: inputs already scaled
        want = expected if scale is not None else winners * winners.abs() ** (b - 1)
        got = bcos_epilogue(lin.clone(), scale, b, max_out, dim)
        torch.testing.assert_close(got, want, rtol=1e-12, atol=0)
    if layout != "vector":  # no rows (an empty batch): an empty output
        empty = bcos_epilogue(lin[:0].clone(), inv[:0] if inv.shape[0] > 1 else inv, b, max_out,
                              dim)
        assert empty.shape == (0, *winners.shape[1:])
