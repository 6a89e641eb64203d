"""Our B-cos ViTs side by side with the ``bcos`` PyPI package (Böhle et al., 0.1.3) on CPU.

Rows, each on random RGB images encoded ``[r, g, b, 1-r, 1-g, 1-b]``, models in eval mode,
1 thread:

* **v2, same weights**: ``bcos``'s B-cos v2 ViT (their ``SimpleViT`` as their ``vit_final``
  configs build it: B = 2, no MaxOut, bias-free detachable LayerNorms, sin-cos positional
  embedding, ``LogitLayer``) and ours (:class:`~interpretable.nn.bcos.BcosSimpleViT`)
  holding the same weights (:func:`~interpretable.nn.bcos._zoo.bcos_key_map`), 1000 classes. At
  224×224 the released ViT-C Ti (``vitc_ti_patch1_14``: 4 stride-2 stem convolutions, 14×14
  tokens) and simple ViT Ti (``simple_vit_ti_patch16_224``), batch 8; at 28×28 (batch 64) and
  64×64 (batch 32), whose side is no multiple of the released token stride 16, the ViT-C Ti
  dims (192, 11 blocks, 3 heads, MLP 768) with the stem cut to (24,) + patch 2 (7×7 tokens)
  and to (24, 48, 96) + patch 1 (8×8 tokens).
* **holistic, beside** (not the same computation): our holistic B-cos ViT
  (:class:`~interpretable.nn.bcos.BcosViT`: full-resolution stem, multiplicative
  attention prior, MaxOut 2) against their ``SimpleViT`` of the same dims with MaxOut 2 and a
  stride-2 stem, 10 classes: 28×28 the ``reproduce bcos-vit`` size (patch 4, dim 64, depth 4),
  64×64 the same with patch 8 and dim 192, 224×224 the Ti dims with patch 16 and stem (32,).

Timed callables: the forward pass without autograd (ours with the default implementation,
``"auto"`` = fused on CPU, and with ``"reference"``, see :mod:`interpretable.nn.bcos._kernels`);
our batched explanation, one forward and one backward pass in explanation mode for the whole
batch (v2: :func:`~interpretable.nn.bcos.vit_contributions`, holistic:
:func:`~interpretable.attribution.inherent`); theirs batched the same way (one backward
inside ``model.explanation_mode()``) and through ``model.explain``, the only explanation entry
point of their package, which explains one image per call. Times are process-CPU medians over
interleaved rounds (wall-clock medians beside them); ratios are theirs / ours (> 1: ours is
faster). Targets: v2 forward >= 1.2 at every size, v2 explanation (theirs per image / ours
batched) >= 1.2. Each size runs in a fresh process (the allocator's history would otherwise
carry over). Also checks that the same-weight models agree and that our explanations are
complete.

Needs the ``bcos`` venv (``make bench-bcos-package``: ``bcos`` imports torchvision, which needs a
torch other than the project's pin); without ``bcos`` it says so and exits 0. ``--profile SIZE``
prints torch.profiler tables of both v2 forwards instead. Writes
``benchmarks/results/bcos_package.json``.
"""
import argparse
import json
import math
import subprocess
import sys
import warnings
from functools import partial

import torch
from ratios import RESULTS, finish_record, run_record, target, timed
from torch import nn

from interpretable.attribution import inherent
from interpretable.nn.bcos import (
    PRETRAINED,
    BcosSimpleViT,
    BcosViT,
    bcos_implementation,
    bcos_key_map,
    build_model,
    encode_image,
    vit_contributions,
)
from interpretable.reproduce.bcos_vit import SIZE

ROUNDS = 7
TI = dict(dim=192, heads=3, depth=11, mlp_dim=768)
SETTINGS = {
    "28x28": {"image": 28, "batch": 64,
              "v2": {"vitc_ti_stem24_patch2": dict(**TI, patch_size=2, stem_channels=(24,))},
              "holistic": SIZE},
    "64x64": {"image": 64, "batch": 32,
              "v2": {"vitc_ti_stem24-48-96": dict(**TI, patch_size=1,
                                                   stem_channels=(24, 48, 96))},
              "holistic": {**SIZE, "patch_size": 8, "embed_dim": 192}},
    "224x224": {"image": 224, "batch": 8,
                "v2": {name: PRETRAINED[name].architecture
                       for name in ("vitc_ti_patch1_14", "simple_vit_ti_patch16_224")},
                "holistic": {"patch_size": 16, "embed_dim": 192, "depth": 12, "num_heads": 3,
                             "mlp_ratio": 4.0, "stem_channels": (32,)}},
}
TARGET = 1.2


def their_vit(image: int, *, dim, depth, heads, mlp_dim, patch_size, stem_channels,
              max_out=1, num_classes=1000) -> nn.Module:
    """``bcos``'s B-cos SimpleViT as ``bcos.experiments.ImageNet.vit_final`` builds it."""
    from bcos.models.vit import SimpleViT
    from bcos.modules import (
        BcosConv2d,
        BcosLinear,
        BcosSequential,
        DetachableGNLayerNorm2d,
        LogitLayer,
        norms,
    )

    down = 2 ** len(stem_channels)  # their stem: stride 2 where a convolution widens
    with warnings.catch_warnings():  # warns when not built by their model zoo
        warnings.simplefilter("ignore")
        vit = SimpleViT(
            image_size=image // down, patch_size=patch_size, num_classes=num_classes, dim=dim,
            depth=depth, heads=heads, mlp_dim=mlp_dim, channels=6,
            conv_stem=list(stem_channels) or None,
            linear_layer=partial(BcosLinear, b=2, max_out=max_out),
            conv2d_layer=partial(BcosConv2d, b=2, max_out=max_out),
            norm_layer=norms.NoBias(norms.DetachableLayerNorm),
            norm2d_layer=norms.NoBias(DetachableGNLayerNorm2d), act_layer=nn.Identity)
    return BcosSequential(vit, LogitLayer(logit_bias=math.log(1 / (num_classes - 1))))


def v2_pair(image: int, architecture: dict) -> tuple[BcosSimpleViT, nn.Module]:
    """Ours and theirs with the same (random) weights."""
    theirs = their_vit(image, **architecture).eval()
    ours = build_model(dict(architecture, image_size=image)).eval()
    state = theirs.state_dict()
    ours.load_state_dict({k: state[v] for k, v in bcos_key_map(ours).items()})
    return ours, theirs


def holistic_pair(image: int, size: dict) -> tuple[BcosViT, nn.Module]:
    ours = BcosViT(6, (image, image), 10, **size, max_out=2).eval()
    theirs = their_vit(image, dim=size["embed_dim"], depth=size["depth"],
                       heads=size["num_heads"], mlp_dim=int(size["embed_dim"] * size["mlp_ratio"]),
                       patch_size=size["patch_size"] // 2, stem_channels=size["stem_channels"],
                       max_out=2, num_classes=10).eval()
    return ours, theirs


@torch.no_grad()
def forward(model, x, implementation=None):
    if implementation is None:
        return model(x)
    with bcos_implementation(implementation):
        return model(x)


def ours_explain(model, x, implementation=None):
    """Batched explanation of the predicted classes: (contribution maps (B, H, W), explained
    logits minus the logit bias (B,), what the maps and the positional term must sum to)."""
    with bcos_implementation(implementation or "auto"):
        if isinstance(model, BcosSimpleViT):
            result = vit_contributions(model, x)
            explained = result.logits.gather(1, result.target[:, None])[:, 0]
            return result.maps, explained - model.logit_bias, result.positional
        maps, _, logits = inherent(model, x)
        return maps, logits.max(1).values - model.logit_bias, torch.zeros(len(x))


def theirs_batched(model, x):
    """One backward pass in ``bcos``'s explanation mode: contribution maps (B, H, W)."""
    x = x.detach().requires_grad_(True)
    with torch.enable_grad(), model.explanation_mode():
        weights, = torch.autograd.grad(model(x).max(1).values.sum(), x)
    return (weights * x).sum(1)


def theirs_per_image(model, x):
    """``model.explain`` once per image: contribution maps (B, H, W)."""
    return torch.cat([model.explain(img[None].clone().requires_grad_())["contribution_map"]
                      for img in x]).detach()


def callables(ours, theirs, x) -> dict:
    return {"ours_forward": partial(forward, ours, x),
            "ours_reference_forward": partial(forward, ours, x, "reference"),
            "theirs_forward": partial(forward, theirs, x),
            "ours_explain": partial(ours_explain, ours, x),
            "ours_reference_explain": partial(ours_explain, ours, x, "reference"),
            "theirs_explain_batched": partial(theirs_batched, theirs, x),
            "theirs_explain_per_image": partial(theirs_per_image, theirs, x)}


def ratios(seconds: dict, batch: int) -> dict:
    s = seconds
    return {
        "forward": s["theirs_forward"] / s["ours_forward"],
        "explain_theirs_per_image_over_ours_batched":
            s["theirs_explain_per_image"] / s["ours_explain"],
        "explain_batched_over_batched": s["theirs_explain_batched"] / s["ours_explain"],
        "fused_speedup_forward": s["ours_reference_forward"] / s["ours_forward"],
        "fused_speedup_explain": s["ours_reference_explain"] / s["ours_explain"],
        "explain_images_per_second": {"ours_batched": batch / s["ours_explain"],
                                      "theirs_per_image": batch / s["theirs_explain_per_image"]},
    }


def checks(ours, theirs, x) -> dict:
    """Completeness of our explanations (float32) and, for same-weight pairs, the logits."""
    maps, explained, positional = ours_explain(ours, x)
    out = {"ours_completeness_max_abs_error":
           (maps.sum((1, 2)) + positional - explained).abs().max().item(),
           "ours_mean_abs_explained_logit": explained.abs().mean().item()}
    if isinstance(ours, BcosSimpleViT):
        out["logits_max_abs_diff_vs_theirs"] = (forward(ours, x) - forward(theirs, x)).abs(
        ).max().item()
    return out


def run_setting(name: str, rounds: int) -> dict:
    setting = SETTINGS[name]
    image, batch = setting["image"], setting["batch"]
    torch.manual_seed(0)
    pairs = {f"v2:{arch}": v2_pair(image, spec) for arch, spec in setting["v2"].items()}
    pairs["holistic"] = holistic_pair(image, setting["holistic"])
    x = encode_image(torch.rand(batch, 3, image, image))
    fns = {f"{model}/{fn}": call for model, (ours, theirs) in pairs.items()
           for fn, call in callables(ours, theirs, x).items()}
    wall, cpu = timed(fns, rounds)
    rows = {}
    for model, (ours, theirs) in pairs.items():
        def own(seconds, model=model):
            return {k.split("/", 1)[1]: v for k, v in seconds.items() if k.startswith(model)}
        rows[model] = {"ratios_cpu": ratios(own(cpu), batch),
                       "ratios_wall": ratios(own(wall), batch),
                       "seconds_cpu": own(cpu), "seconds_wall": own(wall),
                       "parameters": sum(p.numel() for p in ours.parameters()),
                       "checks": checks(ours, theirs, x)}
    return {"image": f"{image}x{image}", "batch_size": batch, "models": rows}


def profile(name: str) -> None:
    from torch.profiler import profile as torch_profile

    setting = SETTINGS[name]
    x = encode_image(torch.rand(setting["batch"], 3, setting["image"], setting["image"]))
    for arch, spec in setting["v2"].items():
        for who, model in zip(("ours", "theirs"), v2_pair(setting["image"], spec), strict=True):
            forward(model, x)
            with torch_profile() as prof:
                forward(model, x)
            print(f"== {arch}: {who}\n" + prof.key_averages().table(
                sort_by="self_cpu_time_total", row_limit=15))


def summary_targets(results: dict) -> list:
    rows = []
    for size, result in results.items():
        for model, row in result["models"].items():
            if model.startswith("v2:"):
                r = row["ratios_cpu"]
                rows.append(target(f"B-cos {model[3:]} {size} forward vs bcos", r["forward"],
                                   TARGET))
                rows.append(target(f"B-cos {model[3:]} {size} explain vs bcos per image",
                                   r["explain_theirs_per_image_over_ours_batched"], TARGET))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", choices=list(SETTINGS),
                        help="measure this size only and print its JSON (internal)")
    parser.add_argument("--sizes", nargs="*", choices=list(SETTINGS), default=list(SETTINGS))
    parser.add_argument("--rounds", type=int, default=ROUNDS)
    parser.add_argument("--profile", choices=list(SETTINGS))
    args = parser.parse_args()
    try:
        import bcos
    except (ImportError, RuntimeError) as err:  # absent, or torchvision not matching torch
        print(f"skipped: the `bcos` package is not importable here ({err}). It needs its own "
              "venv: run `make bench-bcos-package`.")
        return
    torch.set_num_threads(1)
    if args.profile:
        return profile(args.profile)
    if args.setting:
        print(json.dumps(run_setting(args.setting, args.rounds)))
        return
    record = run_record(bcos=getattr(bcos, "__version__", "0.1.3"))
    results = {}
    for size in args.sizes:
        results[size] = json.loads(subprocess.run(
            [sys.executable, __file__, "--setting", size, "--rounds", str(args.rounds)],
            check=True, capture_output=True, text=True).stdout)
        print(f"{size}: " + ", ".join(
            f"{model} forward {row['ratios_cpu']['forward']:.2f}x explain "
            f"{row['ratios_cpu']['explain_theirs_per_image_over_ours_batched']:.2f}x"
            for model, row in results[size]["models"].items()), flush=True)
    report = {**finish_record(record), "statistic": "median over interleaved rounds of "
              "process-CPU seconds (wall beside); ratios theirs / ours", "rounds": args.rounds,
              "results": results, "targets": summary_targets(results)}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_package.json").write_text(json.dumps(report, indent=2))
    for row in report["targets"]:
        print(f"{row['name']:<60} {row['value']:>6.2f} {row['goal']:>8} "
              f"{'met' if row['met'] else 'MISSED'}")


if __name__ == "__main__":
    main()
