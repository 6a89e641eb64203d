"""Our B-cos ViT side by side with the B-cos ViT of the ``bcos`` PyPI package (Böhle et al.).

Two settings, each on random RGB images encoded as ``[r, g, b, 1-r, 1-g, 1-b]`` (the encoding
both packages use for colour), 10 classes, randomly initialised models in eval mode, 1 thread:

* ``28x28``: batch 64, the model of ``python -m interpretable reproduce bcos-vit`` (patch 4,
  embed_dim 64, depth 4, 4 heads, MLP ratio 2, stem (32,); 7×7 tokens);
* ``64x64``: batch 32, the same with patch 8 and embed_dim 192 (8×8 tokens).

Theirs is ``bcos.models.vit.SimpleViT`` assembled as their ``vit_final`` ImageNet configs do
(B-cos linear/conv layers, b=2, bias-free detachable LayerNorms, no activation, sin-cos
positional embedding, ``LogitLayer`` bias) with the same dims; their conv stem has stride 2, so
their patches are p/2 × p/2 on half-resolution features. Ours is timed in three variants
(``VARIANTS``): our default (first 3×3 convolution at full resolution, ``stem_stride=1``, and
the multiplicative attention prior), ``stem_stride=2`` (their stem's geometry), and
``stem_stride=2`` without the attention prior (their architecture: their ViT has no prior).
MaxOut 2 everywhere (our default; their ImageNet configs use 1).

Times: the forward pass of the batch without autograd, and the batched explanation, i.e. W(x)
of the predicted logits in one backward pass (ours: :func:`interpretable.attribution.vision.
inherent`; theirs: one backward pass inside ``model.explanation_mode()``); also theirs through
``model.explain`` once per image, the only explanation entry point their package offers. The
callables run in interleaved rounds (so load changes hit all alike); each time is the median
over rounds of the wall-clock time and, since the machine may be shared, of the process CPU
time too. Ratios are theirs / ours (> 1: ours is faster). Each setting runs in a fresh
process: the timings of large tensors depend on the allocator's history (glibc returns freed
memory to the OS and page faults are costly, in a VM especially), which would otherwise carry
over from one setting to the next. Also checks completeness: contributions + logit bias vs
the explained logit.

Needs its own venv, built and run by ``make bench-bcos-package`` (``.venv-bcos``): ``bcos``
imports torchvision at import time, no PyPI torchvision works beside the project's pinned CPU
``torch==2.13.0``, and the only matching pair on hand (torch 2.14.1 + torchvision 0.29.1) is a
multi-GB CUDA build, which must not become an extra of the package. Without ``bcos`` the script
says so and exits 0, so ``python -m benchmarks`` still runs. Writes
``benchmarks/results/bcos_package.json``.
"""

import argparse
import json
import math
import platform
import statistics
import subprocess
import sys
import time
import warnings
from functools import partial
from pathlib import Path

import torch
from torch import nn

from interpretable.attribution.vision import inherent
from interpretable.nn.bcos import encode_image
from interpretable.nn.bcos_vit import BcosViT
from interpretable.reproduce.bcos_vit import SIZE

RESULTS = Path(__file__).parent / "results"
N_CLASSES, ROUNDS, MAX_OUT = 10, 9, 2
SETTINGS = {
    "28x28": {"image": 28, "batch": 64, "model": SIZE},
    "64x64": {"image": 64, "batch": 32, "model": {**SIZE, "patch_size": 8, "embed_dim": 192}},
}
#: our models: the default (full-resolution stem, multiplicative attention prior), their stem
#: geometry, and their whole architecture (stride-2 stem, no attention prior: theirs has none)
VARIANTS = {
    "stride1": {"stem_stride": 1},
    "stride2": {"stem_stride": 2},
    "stride2_no_prior": {"stem_stride": 2, "attention_prior": "none"},
}


def build_theirs(image: int, size: dict, n_classes: int = N_CLASSES) -> nn.Module:
    """``bcos`` SimpleViT with a conv stem and our dims: (B, 6, image, image) -> (B, n_classes)."""
    from bcos.models.vit import SimpleViT
    from bcos.modules import (
        BcosConv2d,
        BcosLinear,
        BcosSequential,
        DetachableGNLayerNorm2d,
        LogitLayer,
        norms,
    )

    down = 2 ** len(size["stem_channels"])  # stride 2 in each stem conv that widens channels
    with warnings.catch_warnings():  # warns that the LogitLayer below is needed
        warnings.simplefilter("ignore")
        vit = SimpleViT(
            image_size=image // down, patch_size=size["patch_size"] // down,
            num_classes=n_classes, dim=size["embed_dim"], depth=size["depth"],
            heads=size["num_heads"], mlp_dim=int(size["embed_dim"] * size["mlp_ratio"]),
            channels=6, conv_stem=list(size["stem_channels"]),
            linear_layer=partial(BcosLinear, b=2, max_out=MAX_OUT),
            conv2d_layer=partial(BcosConv2d, b=2, max_out=MAX_OUT),
            norm_layer=norms.NoBias(norms.DetachableLayerNorm),
            norm2d_layer=norms.NoBias(DetachableGNLayerNorm2d), act_layer=nn.Identity)
    return BcosSequential(vit, LogitLayer(logit_bias=math.log(1 / (n_classes - 1))))


@torch.no_grad()
def forward(model, x):
    """Logits without autograd: x (B, 6, H, W) -> (B, K)."""
    return model(x)


def ours_batched(model, x):
    """:func:`inherent` for the predicted logits: x -> (contributions (B, H, W), logits (B,))."""
    contributions, _, logits = inherent(model, x)
    return contributions, logits.max(1).values


def theirs_batched(model, x):
    """W(x) of the predicted logits in one backward pass in ``bcos``'s explanation mode.

    x: (B, 6, H, W) -> (contributions (B, H, W), explained logits (B,)).
    """
    x = x.detach().requires_grad_(True)
    with torch.enable_grad(), model.explanation_mode():
        logits = model(x).max(1).values
        weights, = torch.autograd.grad(logits.sum(), x)
    return (weights * x).sum(1).detach(), logits.detach()


def theirs_per_image(model, x):
    """``model.explain`` once per image: x (B, 6, H, W) -> contributions (B, H, W)."""
    return torch.cat([model.explain(img[None].clone().requires_grad_())["contribution_map"]
                      for img in x]).detach()


def completeness(contributions, logits, bias):
    """Max |Σ contributions + bias - logit| over the batch, and the mean |logit - bias|."""
    return {"max_abs_error": (contributions.sum((1, 2)) + bias - logits).abs().max().item(),
            "mean_abs_logit_minus_bias": (logits - bias).abs().mean().item()}


def timed(fns, rounds):
    """Median wall-clock and process-CPU seconds of each callable over interleaved rounds."""
    for fn in fns.values():
        fn()  # warm-up
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            fn()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start_wall)
    return ({name: statistics.median(t) for name, t in wall.items()},
            {name: statistics.median(t) for name, t in cpu.items()})


def ratios(seconds):
    """theirs / ours for the forward pass and the batched explanation, per variant of ours."""
    out = {}
    for task in ("forward", "explain_batched"):
        for name in VARIANTS:
            out[f"{task}_{name}"] = seconds[f"theirs_{task}"] / seconds[f"ours_{name}_{task}"]
    out["theirs_per_image_over_ours_batched_stride1"] = (
        seconds["theirs_explain_per_image"] / seconds["ours_stride1_explain_batched"])
    return out


def run_setting(image, batch, model):
    torch.manual_seed(0)
    ours = {name: BcosViT(6, (image, image), N_CLASSES, **model, max_out=MAX_OUT,
                          **variant).eval() for name, variant in VARIANTS.items()}
    theirs = build_theirs(image, model).eval()
    x = encode_image(torch.rand(batch, 3, image, image))
    for m in (*ours.values(), theirs):
        assert forward(m, x).shape == (batch, N_CLASSES)

    fns = {}
    for name, m in ours.items():
        fns[f"ours_{name}_forward"] = partial(forward, m, x)
        fns[f"ours_{name}_explain_batched"] = partial(ours_batched, m, x)
    fns["theirs_forward"] = partial(forward, theirs, x)
    fns["theirs_explain_batched"] = partial(theirs_batched, theirs, x)
    fns["theirs_explain_per_image"] = partial(theirs_per_image, theirs, x)
    wall, cpu = timed(fns, ROUNDS)

    bias = theirs[1].logit_bias
    theirs_maps, theirs_logits = theirs_batched(theirs, x)
    # the sin-cos positional embedding is an input-independent term: without it W(x)x is exact
    no_pos = theirs[0].positional_embedding.register_forward_hook(
        lambda module, args, pe: torch.zeros_like(pe))
    no_pos_check = completeness(*theirs_batched(theirs, x), bias)
    no_pos.remove()
    checks = {f"ours_{name}": completeness(*ours_batched(m, x), m.logit_bias)
              for name, m in ours.items()}
    checks.update({
        "theirs": completeness(theirs_maps, theirs_logits, bias),
        "theirs_without_positional_embedding": no_pos_check,
        "theirs_explain_vs_batched_max_abs_diff":
            (theirs_per_image(theirs, x) - theirs_maps).abs().max().item(),
    })
    return {
        "batch_size": batch, "image": f"{image}x{image}", "model": model,
        "parameters": {**{f"ours_{name}": sum(p.numel() for p in m.parameters())
                          for name, m in ours.items()},
                       "theirs": sum(p.numel() for p in theirs.parameters())},
        "ratios_theirs_over_ours_wall": ratios(wall),
        "ratios_theirs_over_ours_cpu": ratios(cpu),
        "seconds_wall": wall, "seconds_cpu": cpu, "completeness": checks,
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--setting", choices=list(SETTINGS),
                        help="measure this setting only and print its JSON (internal)")
    setting = parser.parse_args().setting
    try:
        import bcos
    except (ImportError, RuntimeError) as err:  # absent, or torchvision not matching torch
        print(f"skipped: the `bcos` package is not importable here ({err}). It needs its own "
              "venv: run `make bench-bcos-package`.")
        return
    torch.set_num_threads(1)
    if setting is not None:
        print(json.dumps(run_setting(**SETTINGS[setting])))
        return
    results = {name: json.loads(subprocess.run(
        [sys.executable, __file__, "--setting", name], check=True, capture_output=True,
        text=True).stdout) for name in SETTINGS}
    result = {
        "setting": {"input": "random RGB, encoded [x, 1-x] -> 6 channels",
                    "n_classes": N_CLASSES, "max_out": MAX_OUT, "init": "random",
                    "rounds": ROUNDS, "statistic": "median over interleaved rounds",
                    "threads": 1, "device": "cpu"},
        "versions": {"torch": torch.__version__, "bcos": bcos.__version__,
                     "python": platform.python_version()},
        "machine": platform.machine(),
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_package.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({name: {"wall": r["ratios_theirs_over_ours_wall"],
                             "cpu": r["ratios_theirs_over_ours_cpu"]}
                      for name, r in result["results"].items()}, indent=2))


if __name__ == "__main__":
    main()
