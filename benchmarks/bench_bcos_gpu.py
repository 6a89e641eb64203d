"""Our B-cos ViTs against the ``bcos`` package's on a GPU at ImageNet sizes.

ViT-Ti/16 (dim 192, 12 blocks, 3 heads) and ViT-S/16 (dim 384, 12 blocks, 6 heads), MLP ratio 4,
224×224 RGB encoded to 6 channels, 1000 classes, randomly initialised: our holistic ViT (same
B-cos layers, b = 2, MaxOut 2, one 3×3 stem convolution of 32 channels) in three variants
(default, ``stem_stride=2``, and ``stem_stride=2`` without attention prior) against their
SimpleViT of the same dims with their stride-2 stem; and our v2 ViT-C Ti with the weights of
their ``vitc_ti_patch1_14`` (``bench_bcos_package.py``'s pairs). Ours also with the reference
B-cos implementation (``"auto"`` compiles MaxOut and the B-cos scale on CUDA, see
:mod:`interpretable.nn.bcos._kernels`). Per model:

* ``forward``: logits of a batch without autograd (float32);
* ``explain``: W(x) of the predicted logits of the batch in one backward pass (float32);
* ``train``: one optimisation step (forward, cross-entropy, backward, Adam) in float32 and under
  bf16 autocast (``torch.autocast("cuda", torch.bfloat16)``, what ``precision="bf16"`` does),
  reported as training images per second.

Times are medians over interleaved rounds, each call synchronised. Ratios are theirs / ours
(> 1: ours is faster). Also checks completeness of both explanations in float32. Needs CUDA and
``bcos`` (exits 0 with a message otherwise); writes ``benchmarks/results/bcos_gpu.json``.
"""

import argparse
import json
import platform
import statistics
import time
from functools import partial
from pathlib import Path

import torch
from bench_bcos_package import forward, ours_explain, their_vit, theirs_batched, v2_pair
from torch import nn

from interpretable.nn.bcos import PRETRAINED, BcosViT, bcos_implementation, encode_image

RESULTS = Path(__file__).parent / "results"
N_CLASSES, MAX_OUT, IMAGE = 1000, 2, 224
MODELS = {
    "vit_ti16": dict(patch_size=16, embed_dim=192, depth=12, num_heads=3, mlp_ratio=4.0,
                     stem_channels=(32,)),
    "vit_s16": dict(patch_size=16, embed_dim=384, depth=12, num_heads=6, mlp_ratio=4.0,
                    stem_channels=(32,)),
}
#: our holistic ViT's variants: default, their stem's geometry, their whole architecture
VARIANTS = {
    "stride1": {"stem_stride": 1},
    "stride2": {"stem_stride": 2},
    "stride2_no_prior": {"stem_stride": 2, "attention_prior": "none"},
}


def completeness(model, x) -> float:
    """Max |Σ contributions (+ positional term) - (explained logit - logit bias)| of ours."""
    maps, explained, positional = ours_explain(model, x)
    return (maps.sum((1, 2)) + positional - explained).abs().max().item()


def reference(fn, *args):
    """``fn(*args)`` with the reference B-cos implementation."""
    with bcos_implementation("reference"):
        return fn(*args)


def synchronised(fn):
    def call():
        out = fn()
        torch.cuda.synchronize()
        return out
    return call


def train_step(model, optimiser, x, y, bf16):
    """One step: x (B, 6, H, W), y (B,) -> loss (a 0-d tensor)."""
    optimiser.zero_grad(set_to_none=True)
    with torch.autocast("cuda", dtype=torch.bfloat16, enabled=bf16):
        loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    optimiser.step()
    return loss


def median_seconds(fns, rounds):
    """Median wall-clock seconds of each (synchronised) callable over interleaved rounds."""
    for fn in fns.values():
        fn(), fn()  # warm-up: kernels chosen, allocator filled
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(t) for name, t in times.items()}


def run_model(size, batch, rounds):
    device = torch.device("cuda")
    torch.manual_seed(0)
    models = {f"ours_{name}": BcosViT(6, (IMAGE, IMAGE), N_CLASSES, **size, max_out=MAX_OUT,
                                      **variant).to(device)
              for name, variant in VARIANTS.items()}
    models["theirs"] = their_vit(IMAGE, dim=size["embed_dim"], depth=size["depth"],
                                 heads=size["num_heads"],
                                 mlp_dim=int(size["embed_dim"] * size["mlp_ratio"]),
                                 patch_size=size["patch_size"] // 2,
                                 stem_channels=size["stem_channels"], max_out=MAX_OUT,
                                 num_classes=N_CLASSES).to(device)
    if size["embed_dim"] == 192:  # the v2 ViT-C Ti with their weights
        ours_v2, theirs_v2 = v2_pair(IMAGE, PRETRAINED["vitc_ti_patch1_14"].architecture)
        models.update(ours_v2=ours_v2.to(device), theirs_v2=theirs_v2.to(device))
    x = encode_image(torch.rand(batch, 3, IMAGE, IMAGE, device=device))
    y = torch.randint(0, N_CLASSES, (batch,), device=device)

    fns = {}
    for name, model in models.items():
        model.eval()
        fns[f"{name}_forward"] = synchronised(partial(forward, model, x))
        explain = ours_explain if name.startswith("ours") else theirs_batched
        fns[f"{name}_explain"] = synchronised(partial(explain, model, x))
        if name.startswith("ours"):
            fns[f"{name}_reference_forward"] = synchronised(partial(reference, forward, model, x))
            fns[f"{name}_reference_explain"] = synchronised(partial(reference, explain, model, x))
    seconds = median_seconds(fns, rounds)
    checks = {name: completeness(model, x) for name, model in models.items()
              if name.startswith("ours")}

    train_fns = {}
    for name, model in models.items():
        model.train()
        optimiser = torch.optim.Adam(model.parameters(), lr=1e-4)
        for bf16 in (False, True):
            precision = "bf16" if bf16 else "fp32"
            train_fns[f"{name}_train_{precision}"] = synchronised(
                partial(train_step, model, optimiser, x, y, bf16))
    seconds.update(median_seconds(train_fns, rounds))

    ratios = {}
    pairs = [(f"ours_{name}", "theirs") for name in VARIANTS]
    pairs += [("ours_v2", "theirs_v2")] if "ours_v2" in models else []
    for task in ("forward", "explain", "train_fp32", "train_bf16"):
        for ours, theirs in pairs:
            ratios[f"{task}_{ours[5:]}"] = seconds[f"{theirs}_{task}"] / seconds[f"{ours}_{task}"]
    for ours, _ in pairs:
        for task in ("forward", "explain"):
            ratios[f"{task}_{ours[5:]}_reference_over_auto"] = (
                seconds[f"{ours}_reference_{task}"] / seconds[f"{ours}_{task}"])
    images_per_second = {name: batch / t for name, t in seconds.items() if "_train_" in name}
    return {"batch_size": batch, "model": size,
            "parameters": {name: sum(p.numel() for p in m.parameters())
                           for name, m in models.items()},
            "ratios_theirs_over_ours": ratios, "training_images_per_second": images_per_second,
            "seconds": seconds, "completeness_float32": checks}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    try:
        import bcos
    except (ImportError, RuntimeError) as err:
        print(f"skipped: the `bcos` package is not importable here ({err})")
        return
    if not torch.cuda.is_available():
        print("skipped: needs CUDA")
        return
    torch.backends.cuda.matmul.allow_tf32 = False  # float32 means float32 for both packages
    torch.backends.cudnn.allow_tf32 = False
    results = {name: run_model(size, args.batch_size, args.rounds)
               for name, size in MODELS.items()}
    result = {
        "setting": {"image": f"{IMAGE}x{IMAGE}", "input": "random RGB, encoded [x, 1-x]",
                    "n_classes": N_CLASSES, "max_out": MAX_OUT, "init": "random",
                    "rounds": args.rounds, "statistic": "median over interleaved rounds",
                    "tf32": False},
        "device": torch.cuda.get_device_name(),
        "versions": {"torch": torch.__version__, "bcos": bcos.__version__,
                     "python": platform.python_version()},
        "results": results,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_gpu.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({name: {"ratios": r["ratios_theirs_over_ours"],
                             "images_per_second": r["training_images_per_second"]}
                      for name, r in results.items()}, indent=2))


if __name__ == "__main__":
    main()
