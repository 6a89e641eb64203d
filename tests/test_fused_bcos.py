"""The fused B-cos implementations (nn.bcos_kernels) compute what the reference computation
does: the same outputs, explanation-mode gradients and training gradients, for the layers, the
holistic ViT and the v2 ViTs; the oneDNN GEMM and its gradients equal ``F.linear``'s; the
implementation is chosen per construction or per thread, never by a shared switch."""
import os
import threading
import warnings

import pytest
import torch
from torch.nn import functional as F

from interpretable.attribution._images import inherent
from interpretable.nn.bcos import _kernels as bcos_kernels
from interpretable.nn.bcos._holistic_vit import BcosViT
from interpretable.nn.bcos._kernels import ONEDNN_MIN_MACS, linear, resolve_implementation
from interpretable.nn.bcos._layers import (
    BcosConv2d,
    BcosLinear,
    bcos_implementation,
    encode_image,
    explanation_mode,
)
from interpretable.nn.bcos._simple_vit import BcosSimpleViT, vit_contributions

EXACT = dict(rtol=0, atol=1e-10)  # float64: fused and reference differ by rounding only


@pytest.fixture(autouse=True)
def _seeded():
    torch.manual_seed(0)


def _outputs(module, x, implementation, explain):
    """Forward without autograd, and the gradient of the summed outputs w.r.t. the input and
    the weight (in explanation mode: the input gradient is W(x))."""
    with bcos_implementation(implementation):
        with torch.no_grad():
            out = module(x)
        x = x.detach().requires_grad_(True)
        with explanation_mode() if explain else torch.enable_grad():
            grads = torch.autograd.grad(module(x).square().sum(), (x, module.weight))
    return (out, *grads)


LAYERS = {
    "linear narrow input": lambda b, m: (BcosLinear(6, 9, b=b, max_out=m), (4, 5, 6)),
    # over twice as many outputs as inputs: prescaled in explanation mode too
    "linear wide output": lambda b, m: (BcosLinear(3, 8, b=b, max_out=m), (4, 5, 3)),
    "linear wide input": lambda b, m: (BcosLinear(9, 4, b=b, max_out=m, scale=3.0), (7, 9)),
    "linear one vector": lambda b, m: (BcosLinear(5, 8, b=b, max_out=m), (5,)),
    "conv": lambda b, m: (BcosConv2d(3, 4, 3, stride=2, padding=1, b=b, max_out=m), (2, 3, 9, 9)),
    "conv eps": lambda b, m: (BcosConv2d(2, 5, 2, stride=2, b=b, max_out=m,
                                         patch_norm_eps=1e-6), (2, 2, 6, 6)),
}


@pytest.mark.parametrize("b, max_out", [(1.0, 2), (2.0, 1), (2.0, 2), (2.5, 2), (2.0, 3)])
@pytest.mark.parametrize("layer", sorted(LAYERS))
@pytest.mark.parametrize("explain", [False, True], ids=["training", "explanation"])
def test_fused_layers_equal_the_reference(layer, b, max_out, explain):
    module, shape = LAYERS[layer](b, max_out)
    module = module.double()
    x = torch.randn(shape, dtype=torch.float64)
    if x.dim() == 4 and layer == "conv":
        x = x.contiguous(memory_format=torch.channels_last)
    reference = _outputs(module, x, "reference", explain)
    fused = _outputs(module, x, "fused", explain)
    for got, expected in zip(fused, reference, strict=True):
        torch.testing.assert_close(got, expected, **EXACT)


def _holistic():
    return BcosViT(6, (16, 16), 5, patch_size=4, embed_dim=16, depth=2, num_heads=2,
                   stem_channels=(8,)).double().eval()


def _v2(stem):
    model = BcosSimpleViT(dim=32, depth=2, heads=2, mlp_dim=64, patch_size=4 if not stem else 2,
                          stem_channels=stem, num_classes=7, image_size=16).double().eval()
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 1:
                p.uniform_(0.5, 1.5)
    return model


def _explanation(model, x):
    """Logits, W(x) and (v2) the positional term, from one batched explanation."""
    if isinstance(model, BcosSimpleViT):
        result = vit_contributions(model, x)
        return result.logits, result.weights, result.positional
    _, weights, logits = inherent(model, x)
    return logits, weights


@pytest.mark.parametrize("make", [_holistic, lambda: _v2(()), lambda: _v2((8, 16))],
                         ids=["holistic", "v2-simple", "v2-vitc"])
def test_fused_models_explain_exactly_as_the_reference(make):
    model = make()
    x = encode_image(torch.rand(5, 3, 16, 16, dtype=torch.float64))
    with bcos_implementation("reference"):
        expected_logits = model(x)
        expected = _explanation(model, x)
    with torch.no_grad():  # the default, "auto": fused on CPU for inference and explanations
        torch.testing.assert_close(model(x), expected_logits, **EXACT)
    for got, want in zip(_explanation(model, x), expected, strict=True):
        torch.testing.assert_close(got, want, **EXACT)


@pytest.fixture
def onednn_float32(monkeypatch):
    """float32 products on oneDNN whatever the CPU (on Intel CPUs MKL's are the default)."""
    monkeypatch.setattr(bcos_kernels, "ONEDNN_DTYPES", (torch.float32, torch.bfloat16))


def test_float32_models_on_the_onednn_path_match_the_reference(onednn_float32):
    """Large enough for oneDNN's GEMM: equal up to float32 rounding, explanations complete."""
    model = BcosSimpleViT(dim=64, depth=1, heads=2, mlp_dim=256, patch_size=4, num_classes=3,
                          image_size=32).eval()
    x = encode_image(torch.rand(16, 3, 32, 32))
    assert ONEDNN_MIN_MACS <= 16 * 64 * 64 * 256  # the MLP's first layer takes oneDNN
    with bcos_implementation("reference"):
        expected = vit_contributions(model, x)
    got = vit_contributions(model, x)
    for a, b in zip(got, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)
    explained = got.logits.gather(1, got.target[:, None])[:, 0] - model.logit_bias
    torch.testing.assert_close(got.maps.sum((1, 2)) + got.positional, explained, rtol=1e-4,
                               atol=1e-5)


def _assert_float32_close(got, want):
    """Equal up to float32 rounding of sums over hundreds of terms."""
    assert (got - want).abs().max() <= 1e-5 * want.abs().max()


@pytest.mark.skipif(not bcos_kernels._ONEDNN, reason="needs oneDNN")
@pytest.mark.parametrize("with_bias", [False, True])
def test_onednn_linear_and_its_gradients_equal_f_linear(with_bias, onednn_float32):
    x = torch.randn(512, 64, requires_grad=True)
    w = torch.randn(256, 64, requires_grad=True)
    bias = torch.randn(256, requires_grad=True) if with_bias else None
    assert bcos_kernels._use_onednn(x, w)
    out = linear(x, w, bias)
    assert out.grad_fn.name().endswith("_OneDnnLinearBackward")
    expected = F.linear(x, w, bias)
    _assert_float32_close(out, expected)
    inputs = [t for t in (x, w, bias) if t is not None]
    g = torch.randn_like(out)
    for got, want in zip(torch.autograd.grad(out, inputs, g),
                         torch.autograd.grad(expected, inputs, g), strict=True):
        _assert_float32_close(got, want)
    # only what is asked for is computed, and the backward is differentiable
    grad_x, = torch.autograd.grad(linear(x, w, bias).sum(), x, create_graph=True)
    second, = torch.autograd.grad(grad_x.square().sum(), w)
    expected_second, = torch.autograd.grad(
        torch.autograd.grad(F.linear(x, w, bias).sum(), x, create_graph=True)[0].square().sum(),
        w)
    _assert_float32_close(second, expected_second)


def test_small_products_autocast_and_float64_keep_f_linear(onednn_float32):
    big = torch.randn(512, 64), torch.randn(256, 64)
    assert bcos_kernels._use_onednn(*big) == bcos_kernels._ONEDNN
    assert not bcos_kernels._use_onednn(torch.randn(8, 64), torch.randn(256, 64))
    assert not bcos_kernels._use_onednn(*(t.double() for t in big))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        assert not bcos_kernels._use_onednn(*big)
        layer = BcosLinear(64, 256, max_out=1)
        x = torch.randn(512, 64)
        with bcos_implementation("reference"):
            expected = layer(x)
        got = layer(x)
    assert got.dtype == expected.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), expected.float(), rtol=2e-2, atol=1e-2)


def test_implementation_is_chosen_per_construction_and_per_thread():
    x = torch.randn(3, 4)
    with torch.no_grad():
        assert resolve_implementation("auto", x, explaining=False) == "fused"
    # training (autograd through the dynamic weights) keeps the reference's rounding on CPU
    assert resolve_implementation("auto", x, explaining=False) == "reference"
    assert resolve_implementation("auto", x, explaining=True) == "fused"
    assert BcosLinear(4, 2, implementation="reference").implementation == "reference"
    with pytest.raises(ValueError, match="implementation must be one of"):
        BcosLinear(4, 2, implementation="fast")
    with (pytest.raises(ValueError, match="implementation must be one of"),
          bcos_implementation("fast")):
        pass
    seen = {}
    inside, release = threading.Event(), threading.Event()

    def other_thread():
        inside.wait()
        seen["other"] = resolve_implementation("auto", x, explaining=True)
        release.set()

    thread = threading.Thread(target=other_thread)
    thread.start()
    with bcos_implementation("reference"):
        seen["this"] = resolve_implementation("compiled", x, True)  # the thread's choice wins
        inside.set()
        release.wait()
    thread.join()
    assert seen == {"this": "reference", "other": "fused"}
    assert resolve_implementation("compiled", x, True) == "compiled"


def test_compiled_epilogue_equals_the_reference_or_falls_back(monkeypatch):
    """torch.compile of MaxOut and the scale (the CUDA default); if compiling fails, a warning
    and the eager result."""
    conv = BcosConv2d(3, 4, 3, padding=1, max_out=2).double()
    linear_layer = BcosLinear(6, 5, max_out=1, b=2.5).double()
    cases = ((conv, torch.rand(2, 3, 6, 6, dtype=torch.float64)),
             (linear_layer, torch.randn(4, 3, 6, dtype=torch.float64)))

    def fail(*args, **kwargs):
        raise RuntimeError("no compiler here")

    # torch 2.13's inductor, with the CPU kernels forced by ATEN_CPU_CAPABILITY (avx2 on an
    # AVX-512 machine), returned uninitialised values (1e304) for these graphs; the compiled
    # path is the CUDA default, the CPU default is the fused eager kernels: compared there only
    forced = "ATEN_CPU_CAPABILITY" in os.environ
    for module, x in cases if not forced else ():
        reference = _outputs(module, x, "reference", explain=True)
        compiled = _outputs(module, x, "compiled", explain=True)
        for got, expected in zip(compiled, reference, strict=True):
            torch.testing.assert_close(got, expected, **EXACT)
    failing = bcos_kernels.compiled(lambda t: t * 2, "doubled")
    monkeypatch.setattr(torch, "compile", lambda fn, **kw: fail)
    with pytest.warns(RuntimeWarning, match="torch.compile of doubled failed on cpu"):
        assert failing(torch.ones(2)).tolist() == [2.0, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # warned once; eager from then on
        assert failing(torch.ones(1)).tolist() == [2.0]


def test_layer_gradients_match_finite_differences_fused():
    layer = BcosLinear(4, 6, max_out=2).double()  # narrow input: the input-scaled path
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    weight = layer.weight.detach().clone().requires_grad_()

    def call(inputs, weight):
        return torch.func.functional_call(layer, {"weight": weight}, (inputs,))

    with bcos_implementation("fused"):
        assert torch.autograd.gradcheck(call, (x, weight))
