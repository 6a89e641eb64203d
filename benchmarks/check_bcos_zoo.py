"""Our B-cos v2 ViTs against the ``bcos`` package (0.1.3) for the 8 released architectures.

For each name of :data:`interpretable.nn.bcos.PRETRAINED`: build ``bcos``'s model with its
own entry point (``bcos.models.pretrained.<name>(pretrained=False)``, random weights; the LayerNorm
weights, ones at initialisation, are redrawn from U(0.5, 1.5) so their mapping is tested too),
load its state dict into ours through :func:`~interpretable.nn.bcos._zoo.bcos_key_map` and
compare in float64 on 2 random encoded 224×224 images:

* parameter and state-dict key counts;
* logits (target: max |difference| <= 1e-10);
* ``W(x)`` of the predicted class: their gradient inside ``model.explanation_mode()`` against
  :func:`~interpretable.nn.bcos.vit_contributions`;
* completeness: their ``Σ W(x) ⊙ x`` misses the positional term, ours adds it back;
* the loader: their float32 state dict saved with ``torch.save`` and read back by
  :func:`~interpretable.nn.bcos.load_checkpoint` gives their float32 logits.

Also compares :func:`interpretable.datasets.eval_transform` with their evaluation
transform (``ImageNetClassificationPresetEval(crop_size=224, is_bcos=True)``: torchvision
``Resize(256)`` and ``CenterCrop(224)`` on PIL images) and with torchvision's resize of float
tensors, on scikit-learn's two sample photos and random uint8 images of several sizes.

Needs the ``bcos`` venv (``make <venv>/.installed BCOS_VENV=<venv>``, see the Makefile); without
``bcos`` it says so and exits 0. Writes ``benchmarks/results/bcos_zoo_equality.json``.
Run: ``<venv>/bin/python benchmarks/check_bcos_zoo.py [--names NAME ...]``.
"""
import argparse
import json
import platform
import tempfile
import time
import warnings
from pathlib import Path

import torch

from interpretable.datasets import eval_transform, sample_photos
from interpretable.nn.bcos import (
    PRETRAINED,
    bcos_key_map,
    build_model,
    encode_image,
    load_checkpoint,
    vit_contributions,
)

RESULTS = Path(__file__).parent / "results"
TOLERANCE = 1e-10
RANDOM_IMAGE_SIZES = ((300, 500), (500, 300), (256, 256), (750, 1000), (257, 999), (240, 241))


def _their_model(name: str, seed: int):
    import bcos.models.pretrained as bcos_pretrained

    torch.manual_seed(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = getattr(bcos_pretrained, name)(pretrained=False)
    with torch.no_grad():
        for tensor in model.state_dict(keep_vars=True).values():
            if tensor.dim() == 1:  # LayerNorm / GroupNorm weights
                tensor.uniform_(0.5, 1.5)
    return model.eval()


def _their_explanation(model, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    x = x.detach().requires_grad_(True)
    with model.explanation_mode():
        logits = model(x)
        weights, = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), x)
    return weights


def compare(name: str, seed: int, workdir: Path) -> dict:
    theirs = _their_model(name, seed)
    ours = build_model(name)
    key_map = bcos_key_map(ours)
    their_state = theirs.state_dict()
    ours.load_state_dict({k: their_state[v] for k, v in key_map.items()})
    checkpoint = workdir / f"{name}.pth"
    torch.save(their_state, checkpoint)
    torch.manual_seed(seed)
    x = encode_image(torch.rand(2, 3, 224, 224))
    with torch.no_grad():
        their_logits32 = theirs(x)
    loaded = load_checkpoint(checkpoint, architecture=name)
    with torch.no_grad():
        loaded_logits32 = loaded(x)
    checkpoint.unlink()
    del loaded

    theirs, ours, x = theirs.double(), ours.double(), x.double()
    start = time.perf_counter()
    with torch.no_grad():
        their_logits = theirs(x)
    ours_result = vit_contributions(ours, x)
    their_weights = _their_explanation(theirs, x, ours_result.target)
    seconds = time.perf_counter() - start
    explained = ours_result.logits.gather(1, ours_result.target[:, None])[:, 0] - ours.logit_bias
    their_sum = (their_weights * x).sum((1, 2, 3))
    ours_total = ours_result.maps.sum((1, 2)) + ours_result.positional
    return {
        "parameters": {"bcos": sum(p.numel() for p in theirs.parameters()),
                       "ours": sum(p.numel() for p in ours.parameters())},
        "state_dict_keys": {"bcos": len(their_state), "ours": len(ours.state_dict())},
        "logits_max_abs_diff_float64": (their_logits - ours_result.logits).abs().max().item(),
        "logit_scale": their_logits.abs().max().item(),
        "weights_max_abs_diff_float64": (their_weights - ours_result.weights).abs().max().item(),
        "weights_scale": their_weights.abs().max().item(),
        "explained_logit_minus_bias": explained.tolist(),
        "bcos_sum_of_contributions": their_sum.tolist(),
        "ours_positional_term": ours_result.positional.tolist(),
        "ours_completeness_error_float64": (ours_total - explained).abs().max().item(),
        "loader_logits_max_abs_diff_float32":
            (their_logits32 - loaded_logits32).abs().max().item(),
        "seconds_float64_both_models": round(seconds, 2),
    }


def compare_transforms(seed: int) -> dict:
    """Max |ours - theirs| over all pixels of the 224×224 crops, per image."""
    import numpy as np
    import torchvision.transforms.functional as TF
    from bcos.data.presets import ImageNetClassificationPresetEval
    from PIL import Image

    theirs = ImageNetClassificationPresetEval(crop_size=224, is_bcos=True)
    rng = np.random.RandomState(seed)
    images = {f"sample_photo_{i}": (photo * 255).round().astype(np.uint8)
              for i, photo in enumerate(sample_photos())}
    images.update({f"random_{h}x{w}": rng.randint(0, 256, (h, w, 3), dtype=np.uint8)
                   for h, w in RANDOM_IMAGE_SIZES})
    rows = {}
    for name, array in images.items():
        ours, box = eval_transform(array)
        pil = theirs(Image.fromarray(array))[:3]
        resized = TF.resize(torch.from_numpy(array).permute(2, 0, 1).float() / 255, 256,
                            antialias=True)
        tensor = TF.center_crop(resized, 224)
        rows[name] = {"size": list(array.shape[:2]), "crop_box": [round(v, 3) for v in box],
                      "max_abs_diff_vs_pil_pipeline": (ours - pil).abs().max().item(),
                      "mean_abs_diff_vs_pil_pipeline": (ours - pil).abs().mean().item(),
                      "max_abs_diff_vs_tensor_resize": (ours - tensor).abs().max().item()}
        print(f"{name:22s} vs PIL pipeline {rows[name]['max_abs_diff_vs_pil_pipeline']:.2e} "
              f"(mean {rows[name]['mean_abs_diff_vs_pil_pipeline']:.1e}), vs tensor resize "
              f"{rows[name]['max_abs_diff_vs_tensor_resize']:.2e}", flush=True)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--names", nargs="*", default=list(PRETRAINED))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        import bcos
    except ImportError:
        print("bcos is not installed: build its venv (see the Makefile) to run this check.")
        return
    results = {}
    with tempfile.TemporaryDirectory() as workdir:
        for name in args.names:
            results[name] = compare(name, args.seed, Path(workdir))
            row = results[name]
            print(f"{name:28s} params {row['parameters']['ours']:>11,d} "
                  f"(bcos {row['parameters']['bcos']:,d})  logits diff "
                  f"{row['logits_max_abs_diff_float64']:.2e}  W(x) diff "
                  f"{row['weights_max_abs_diff_float64']:.2e}  completeness "
                  f"{row['ours_completeness_error_float64']:.2e}  loader "
                  f"{row['loader_logits_max_abs_diff_float32']:.2e}", flush=True)
    transforms = compare_transforms(args.seed)
    passed = all(r["parameters"]["bcos"] == r["parameters"]["ours"]
                 and r["state_dict_keys"]["bcos"] == r["state_dict_keys"]["ours"]
                 and r["logits_max_abs_diff_float64"] <= TOLERANCE for r in results.values())
    report = {
        "description": "interpretable.nn.bcos._simple_vit vs bcos 0.1.3, random weights, float64, "
                       "2 random encoded 224x224 images per model",
        "tolerance": TOLERANCE,
        "passed": passed,
        "versions": {"bcos": getattr(bcos, "__version__", "0.1.3"), "torch": torch.__version__,
                     "python": platform.python_version()},
        "models": results,
        "eval_transform": transforms,
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "bcos_zoo_equality.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"passed={passed}; wrote {path}")


if __name__ == "__main__":
    main()
