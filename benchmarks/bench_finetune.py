"""Fine-tuning a pretrained B-cos v2 ViT on a small labelled set: the classifier only
(``finetune="head"``), the last 2 blocks, all weights, vs the same architecture from scratch.
Accuracy on held-out images and training images/s (N × epochs / fit seconds, one CPU thread),
mean ± s.d. over seeds. Writes ``benchmarks/results/bcos_finetune.json``.

**Real** (``--checkpoint NAME`` or a released checkpoint found in the torch hub cache): the
released ImageNet model, fine-tuned at 224 px (its evaluation transform) on textured digits
(MNIST glyphs on natural-texture crops, 64 px, 10 classes; ``datasets.textures``).

**Stand-in** (no released checkpoint here, the default when none is cached): a tiny v2 ViT
(dim 64, 4 blocks of 4 heads, MLP 128, a 3×3 B-cos stem to 16 channels, patch 4: 16 tokens at
32 px) is *pretrained* on MNIST-5k digits 0–4 (2,300 RGB images at 32 px, 10 epochs, lr 2e-3)
and saved in the ``bcos`` key layout; every mode then fits digits 5–9 (new classes: the
classifier is new) from N labelled images and is scored on 1,000 other digits 5–9. Ablations
(N = 250): the classifier alone and all weights with the authors' one-hot BCE and a random new
classifier (what the ``bcos`` issue tracker reports as "no learning"), and with the v2 BCE
(off-targets 1/K) but a random classifier (no imprinting).

``python benchmarks/bench_finetune.py [--sizes 250 1000] [--seeds 0 1 2] [--epochs 10]
[--figure docs/pretrained_explanation.png]`` (about 6 minutes on one CPU thread for the
stand-in).
"""
import argparse
import contextlib
import json
import platform
import statistics
import tempfile
import time
from pathlib import Path
from unittest import mock

import numpy as np
import torch

from interpretable import BcosSimpleViTClassifier
from interpretable.datasets import load_mnist_5k, make_textured_digits
from interpretable.nn import OneHotBCE
from interpretable.nn.bcos import PRETRAINED, checkpoint_path, to_bcos_state_dict

RESULTS = Path(__file__).parent / "results"
STAND_IN = dict(dim=64, depth=4, heads=4, mlp_dim=128, patch_size=4, stem_channels=(16,))
MODES = {"head": "head", "last_2_blocks": 2, "all": "all", "scratch": None}


class OneHotLoss(BcosSimpleViTClassifier):
    """Ablation: the holistic ViT's one-hot BCE on a v2 architecture."""

    def _criterion(self):
        return OneHotBCE()


def _no_imprinting():
    """Ablation: the new classifier keeps its random initialisation."""
    return mock.patch("interpretable.estimators.vision._bcos_simple_vit.imprint_classifier",
                      lambda module, features, y: module)


def stand_in_data():
    """MNIST-5k as RGB 32-px images, shuffled once: (pretraining digits 0-4, target 5-9)."""
    X, y = load_mnist_5k(return_X_y=True)
    X = np.repeat(np.pad(X, ((0, 0), (2, 2), (2, 2)))[..., None], 3, axis=-1)
    order = np.random.RandomState(0).permutation(len(X))
    X, y = X[order], y[order]
    return (X[y < 5], y[y < 5]), (X[y >= 5], y[y >= 5])


def pretrain_stand_in(X, y, folder: Path, epochs: int) -> tuple[Path, dict]:
    start = time.perf_counter()
    clf = BcosSimpleViTClassifier(architecture=STAND_IN, image_size=None, max_epochs=epochs,
                                  random_state=0).fit(X[:2300], y[:2300])
    path = folder / "stand_in.pth"
    torch.save(to_bcos_state_dict(clf.module_), path)
    return path, {"task": "MNIST-5k digits 0-4, RGB 32 px", "n_train": 2300, "epochs": epochs,
                  "held_out_accuracy": float(clf.score(X[2300:], y[2300:])),
                  "seconds": round(time.perf_counter() - start, 1)}


def save_figure(path: Path, images, figure: str) -> None:
    """The README's figure: ``from_pretrained`` on the stand-in checkpoint (its 5 classes,
    digits 0-4, the 32-px evaluation transform) explaining held-out digits."""
    clf = BcosSimpleViTClassifier.from_pretrained(path, architecture=STAND_IN, classes=range(5),
                                                  image_size=32)
    clf.explain(images).plot().savefig(figure, dpi=90)


def fine_tune(mode, seed, X, y, X_test, y_test, common, cls=BcosSimpleViTClassifier,
              imprint=True):
    params = dict(common, random_state=seed)
    if MODES[mode] is None:
        params.pop("pretrained")
    else:
        params["finetune"] = MODES[mode]
    start = time.perf_counter()
    with _no_imprinting() if not imprint else contextlib.nullcontext():
        clf = cls(**params).fit(X, y)
    seconds = time.perf_counter() - start
    exp = clf.explain(X_test[:16])
    return {"accuracy": float(clf.score(X_test, y_test)),
            "train_images_per_s": len(X) * clf.max_epochs / seconds,
            "max_completeness_error": float(exp.completeness_error.max())}


def summarise(runs: list[dict]) -> dict:
    out = {}
    for key in runs[0]:
        values = [r[key] for r in runs]
        out[key] = {"mean": statistics.mean(values),
                    "sd": statistics.stdev(values) if len(values) > 1 else None,
                    "runs": values}
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--checkpoint", help="a released name or a .pth path (default: the "
                                             "first released checkpoint in the hub cache)")
    parser.add_argument("--architecture", type=json.loads,
                        help="JSON dict of BcosSimpleViT sizes for a non-released .pth")
    parser.add_argument("--sizes", type=int, nargs="+", help="labelled training images N")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, help="fine-tuning epochs")
    parser.add_argument("--pretrain-epochs", type=int, default=10)
    parser.add_argument("--figure", help="also save the explanation figure of the README "
                                         "(from_pretrained on the stand-in) to this PNG")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    started = time.perf_counter()
    checkpoint = args.checkpoint or next(
        (name for name in PRETRAINED if checkpoint_path(name).is_file()), None)
    result = {"threads": 1, "device": "cpu", "machine": platform.machine(),
              "torch": torch.__version__, "seeds": args.seeds}
    with tempfile.TemporaryDirectory() as folder:
        if checkpoint is None:
            (X_a, y_a), (X, y) = stand_in_data()
            path, result["pretraining"] = pretrain_stand_in(X_a, y_a, Path(folder),
                                                            args.pretrain_epochs)
            result["setting"] = ("STAND-IN (no released checkpoint available): tiny B-cos v2 "
                                 "ViT pretrained on MNIST-5k digits 0-4, fine-tuned on digits "
                                 "5-9")
            common = dict(pretrained=str(path), architecture=STAND_IN, image_size=None,
                          max_epochs=args.epochs or 10)
            sizes, test = args.sizes or [250, 1000], (X[1500:2500], y[1500:2500])
            result["architecture"] = STAND_IN
            if args.figure:
                save_figure(path, X_a[2300:2304], args.figure)
        else:
            digits = load_mnist_5k(return_X_y=True)
            data = make_textured_digits(2500, size=64, glyphs=digits, random_state=0)
            X, y = data.data, data.target
            result["setting"] = (f"REAL: {checkpoint} fine-tuned at 224 px on textured digits "
                                 "(MNIST glyphs on natural textures, 64 px)")
            common = dict(pretrained=checkpoint, architecture=args.architecture,
                          max_epochs=args.epochs or 5)
            sizes, test = args.sizes or [250], (X[1500:], y[1500:])
        result.update({"epochs": common["max_epochs"], "n_test": len(test[0]),
                       "modes": {}, "ablations": {}})
        for n in sizes:
            for mode in MODES:
                runs = [fine_tune(mode, s, X[:n], y[:n], *test, common) for s in args.seeds]
                result["modes"][f"{mode}_n{n}"] = summarise(runs)
                print(f"N={n:>5} {mode:>14}: accuracy "
                      f"{result['modes'][f'{mode}_n{n}']['accuracy']['mean']:.3f}", flush=True)
        if checkpoint is None:
            n = min(sizes)
            for name, mode, cls, imprint in (("head_one_hot_bce_random_head", "head", OneHotLoss,
                                              False),
                                             ("head_random_head", "head",
                                              BcosSimpleViTClassifier, False),
                                             ("all_one_hot_bce_random_head", "all", OneHotLoss,
                                              False)):
                runs = [fine_tune(mode, s, X[:n], y[:n], *test, common, cls, imprint)
                        for s in args.seeds]
                result["ablations"][f"{name}_n{n}"] = summarise(runs)
                print(f"N={n:>5} {name}: accuracy "
                      f"{result['ablations'][f'{name}_n{n}']['accuracy']['mean']:.3f}",
                      flush=True)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_finetune.json").write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
