"""Our B-cos ViT side by side with the B-cos ViT of the ``bcos`` PyPI package (Böhle et al.).

Setting: a batch of 64 random RGB 28×28 images encoded as ``[r, g, b, 1-r, 1-g, 1-b]``
(64, 6, 28, 28), the encoding both packages use for colour (``bcos``'s ``explain`` colours its
explanation assuming these six channels); 10 classes; both models randomly initialised, eval
mode, 1 thread. Sizes are those of ``python -m interpretable reproduce bcos-vit`` (embed_dim 64,
depth 4, 4 heads, MLP ratio 2, stem (32,), 7×7 = 49 tokens). Theirs is ``bcos.models.vit.
SimpleViT`` assembled as their ``vit_final`` ImageNet configs do (B-cos linear/conv layers, b=2,
bias-free detachable LayerNorms, no activation, sin-cos positional embedding, ``LogitLayer``
bias) with the same dims; their conv stem halves the resolution, so their patches are 2×2 on
14×14 features. MaxOut 2 in both (our default; their ImageNet configs use 1).

Times (median over interleaved rounds): the forward pass of the batch; our explanation as one
batched :func:`interpretable.attribution.vision.inherent` call; theirs as ``model.explain`` once
per image (64 calls, the only explanation entry point the package offers) and as a batched W(x)
(one backward pass inside ``model.explanation_mode()``, the like-for-like comparison); ours per
image too. Also checks completeness: contributions + logit bias vs the explained logit.

Needs its own venv, built and run by ``make bench-bcos-package`` (``.venv-bcos``): ``bcos``
imports torchvision at import time, no PyPI torchvision works beside the project's pinned CPU
``torch==2.13.0``, and the only matching pair on hand (torch 2.14.1 + torchvision 0.29.1) is a
multi-GB CUDA build, which must not become an extra of the package. Without ``bcos`` the script
says so and exits 0, so ``python -m benchmarks`` still runs. Writes
``benchmarks/results/bcos_package.json``.
"""

import json
import math
import platform
import statistics
import time
import warnings
from functools import partial
from pathlib import Path

import torch
from torch import nn

from interpretable.attribution.vision import inherent
from interpretable.nn.bcos import BcosViT, encode_image
from interpretable.reproduce.bcos_vit import SIZE

RESULTS = Path(__file__).parent / "results"
BATCH, IMAGE, N_CLASSES, ROUNDS, MAX_OUT = 64, 28, 10, 5, 2


def build_theirs():
    """``bcos`` SimpleViT with a conv stem, dims of ``SIZE``: (B, 6, 28, 28) -> (B, 10)."""
    from bcos.models.vit import SimpleViT
    from bcos.modules import (
        BcosConv2d,
        BcosLinear,
        BcosSequential,
        DetachableGNLayerNorm2d,
        LogitLayer,
        norms,
    )

    down = 2 ** len(SIZE["stem_channels"])  # stride 2 in each stem conv that widens channels
    with warnings.catch_warnings():  # warns that the LogitLayer below is needed
        warnings.simplefilter("ignore")
        vit = SimpleViT(
            image_size=IMAGE // down, patch_size=SIZE["patch_size"] // down,
            num_classes=N_CLASSES, dim=SIZE["embed_dim"], depth=SIZE["depth"],
            heads=SIZE["num_heads"], mlp_dim=int(SIZE["embed_dim"] * SIZE["mlp_ratio"]),
            channels=6, conv_stem=list(SIZE["stem_channels"]),
            linear_layer=partial(BcosLinear, b=2, max_out=MAX_OUT),
            conv2d_layer=partial(BcosConv2d, b=2, max_out=MAX_OUT),
            norm_layer=norms.NoBias(norms.DetachableLayerNorm),
            norm2d_layer=norms.NoBias(DetachableGNLayerNorm2d), act_layer=nn.Identity)
    return BcosSequential(vit, LogitLayer(logit_bias=math.log(1 / (N_CLASSES - 1))))


@torch.no_grad()
def forward(model, x):
    """Logits without autograd: x (B, 6, H, W) -> (B, K)."""
    return model(x)


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


def ours_per_image(model, x):
    """:func:`inherent` once per image: x (B, C, H, W) -> contributions (B, H, W)."""
    return torch.cat([inherent(model, img[None])[0] for img in x])


def completeness(contributions, logits, bias):
    """Max |Σ contributions + bias - logit| over the batch, and the mean |logit - bias|."""
    return {"max_abs_error": (contributions.sum((1, 2)) + bias - logits).abs().max().item(),
            "mean_abs_logit_minus_bias": (logits - bias).abs().mean().item()}


def timed(fns, rounds):
    """Median seconds of each callable; rounds interleave them so load changes hit all alike."""
    for fn in fns.values():
        fn()  # warm-up
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def main():
    try:
        import bcos
    except (ImportError, RuntimeError) as err:  # absent, or torchvision not matching torch
        print(f"skipped: the `bcos` package is not importable here ({err}). It needs its own "
              "venv: run `make bench-bcos-package`.")
        return
    torch.set_num_threads(1)
    torch.manual_seed(0)
    ours = BcosViT(6, (IMAGE, IMAGE), N_CLASSES, **SIZE, max_out=MAX_OUT).eval()
    theirs = build_theirs().eval()
    x = encode_image(torch.rand(BATCH, 3, IMAGE, IMAGE))
    assert forward(ours, x).shape == forward(theirs, x).shape == (BATCH, N_CLASSES)

    seconds = timed({
        "ours_forward": lambda: forward(ours, x),
        "theirs_forward": lambda: forward(theirs, x),
        "ours_explain_batched": lambda: inherent(ours, x),
        "theirs_explain_batched": lambda: theirs_batched(theirs, x),
        "ours_explain_per_image": lambda: ours_per_image(ours, x),
        "theirs_explain_per_image": lambda: theirs_per_image(theirs, x),
    }, ROUNDS)
    ratios = {
        "theirs_over_ours_forward": seconds["theirs_forward"] / seconds["ours_forward"],
        "theirs_per_image_over_ours_batched":
            seconds["theirs_explain_per_image"] / seconds["ours_explain_batched"],
        "theirs_batched_over_ours_batched":
            seconds["theirs_explain_batched"] / seconds["ours_explain_batched"],
        "theirs_per_image_over_ours_per_image":
            seconds["theirs_explain_per_image"] / seconds["ours_explain_per_image"],
        "ours_explain_batched_over_forward":
            seconds["ours_explain_batched"] / seconds["ours_forward"],
        "theirs_explain_batched_over_forward":
            seconds["theirs_explain_batched"] / seconds["theirs_forward"],
    }

    contributions, _, logits = inherent(ours, x)
    ours_logits = logits.max(1).values
    theirs_maps, theirs_logits = theirs_batched(theirs, x)
    bias = theirs[1].logit_bias
    # the sin-cos positional embedding is an input-independent term: without it W(x)x is exact
    no_pos = theirs[0].positional_embedding.register_forward_hook(
        lambda module, args, pe: torch.zeros_like(pe))
    no_pos_maps, no_pos_logits = theirs_batched(theirs, x)
    no_pos.remove()
    checks = {
        "ours": completeness(contributions, ours_logits, ours.logit_bias),
        "theirs": completeness(theirs_maps, theirs_logits, bias),
        "theirs_without_positional_embedding": completeness(no_pos_maps, no_pos_logits, bias),
        "theirs_explain_vs_batched_max_abs_diff":
            (theirs_per_image(theirs, x) - theirs_maps).abs().max().item(),
    }

    result = {
        "setting": {"input": f"random RGB {IMAGE}x{IMAGE}, encoded [x, 1-x] -> 6 channels",
                    "batch_size": BATCH, "n_classes": N_CLASSES, "model": SIZE,
                    "max_out": MAX_OUT, "init": "random", "rounds": ROUNDS,
                    "statistic": "median", "threads": 1, "device": "cpu"},
        "versions": {"torch": torch.__version__, "bcos": bcos.__version__,
                     "python": platform.python_version()},
        "machine": platform.machine(),
        "parameters": {"ours": sum(p.numel() for p in ours.parameters()),
                       "theirs": sum(p.numel() for p in theirs.parameters())},
        "seconds": seconds, "ratios": ratios, "completeness": checks,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_package.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
