"""The grid pointing game on a fair setting: digits on black and digits on natural textures,
for the holistic B-cos ViT and a B-cos v2 ViT of the same size, every explanation method.

``python -m interpretable reproduce bcos-localisation [--quick]``. On MNIST digits on black,
a black background equals the baseline of integrated gradients and zeroes Input×Gradient, so
those methods localise for free; on textured digits (MNIST glyphs on crops of natural photos,
:func:`~interpretable.datasets.make_textured_digits`) no pixel is black. Both models
(``SIZE`` of :mod:`.bcos_vit`: 8×8 tokens of patch 4 at 32 px, width 64, 4 blocks of 4 heads;
the v2 ViT with the same width, depth, heads, MLP, stem channels and tokens) train on each
setting, from scratch, with the same epochs and learning rate;
the authors' protocol scores every method (:func:`~interpretable.metrics.grid_pointing_game`:
2×2 grids of confidently and correctly classified test images, maps smoothed before the
positive part).

Training: each model first learns MNIST-5k padded to 32 px (as RGB, so that one network
serves both settings) with random zoom-out of half the images (as :mod:`.bcos_vit`: the
half-size digits of the grid cells are otherwise out of distribution) and is scored on digits
on black; it then continues (``warm_start``) for as many epochs on textured digits, the glyph
at 3/4 and 3/8 of the image side (half each: the grid cells show half-size digits), from the
training split's glyphs, and is scored on textured digits of the test split's glyphs. (From
scratch, neither model learns textured digits within 8 epochs: accuracy .20 holistic, .10 v2.)
"""
from __future__ import annotations

import logging
import math
import time

import numpy as np

from interpretable._progress import report
from interpretable.attribution import PIXEL_METHODS
from interpretable.reproduce.bcos_vit import LOGIT_BIAS, SIZE, ZOOM_OUT, split

logger = logging.getLogger(__name__)

SETTINGS = ("mnist_black", "textured")
#: the B-cos v2 ViT of the size of SIZE, ViT-C design: a 3×3 B-cos stem to 32 channels
#: (stride 2), then 2×2 patches: the same 8×8 tokens (without the stem, the image signal is
#: small beside the sin-cos positional embedding at this size, and it learns 2× slower)
V2_SIZE = dict(dim=SIZE["embed_dim"], depth=SIZE["depth"], heads=SIZE["num_heads"],
               mlp_dim=int(SIZE["embed_dim"] * SIZE["mlp_ratio"]),
               patch_size=SIZE["patch_size"] // 2, stem_channels=SIZE["stem_channels"])
MODELS = {"holistic": dict(SIZE, logit_bias=LOGIT_BIAS), "v2": dict(architecture=V2_SIZE)}
FULL = dict(n_train=3500, epochs=20, n_grids=250)
QUICK = dict(n_train=2500, epochs=3, n_grids=16)


def add_arguments(parser) -> None:
    parser.add_argument("--epochs", type=int, help="training epochs per model")
    parser.add_argument("--n-grids", dest="n_grids", type=int, help="pointing-game grids")
    parser.add_argument("--settings", nargs="+", choices=SETTINGS)
    parser.add_argument("--models", nargs="+", choices=sorted(MODELS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (0 keeps torch's default)")


def results_suffix(options) -> str:
    """``_<n>_epochs`` for a full run with other epochs than :data:`FULL`'s."""
    epochs = options.get("epochs")
    return f"_{epochs}_epochs" if epochs and epochs != FULL["epochs"] and \
        not options.get("quick") else ""


def textured_split(n_train: int, seed: int = 0):
    """Textured digits at 32 px: (X_train, X_test, y_train, y_test), glyphs of MNIST-5k's
    training / test split (1,500 test images)."""
    from interpretable.datasets import make_textured_digits

    G_train, G_test, g_train, g_test = split(seed)
    glyphs = (G_train[:, 2:-2, 2:-2], g_train)  # unpadded 28-px glyphs
    halves = [make_textured_digits(n, size=32, digit_size=d, glyphs=glyphs, random_state=seed + i)
              for i, (n, d) in enumerate(((n_train - n_train // 2, 24), (n_train // 2, 12)))]
    order = np.random.RandomState(seed).permutation(n_train)
    X = np.concatenate([h.data for h in halves])[order]
    y = np.concatenate([h.target for h in halves])[order]
    test = make_textured_digits(len(G_test), size=32, glyphs=(G_test[:, 2:-2, 2:-2], g_test),
                                random_state=seed + 2)
    return X, test.data, y, test.target


def mean_se(values) -> dict:
    """Mean, standard error and count of the values."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    return {"mean": float(values.mean()),
            "se": float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1
            else None, "n": len(values)}


def run(quick: bool = False, epochs=None, n_grids=None, settings=None, models=None,
        seed: int = 0, threads=1) -> dict:
    import torch

    from interpretable.estimators.vision import BcosSimpleViTClassifier, BcosViTClassifier

    if threads:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    cfg = dict(QUICK if quick else FULL)
    cfg.update({k: v for k, v in dict(epochs=epochs, n_grids=n_grids).items() if v is not None})
    settings, models = settings or SETTINGS, models or sorted(MODELS)
    results = {"quick": quick, "config": {**cfg, "seed": seed, "holistic": MODELS["holistic"],
                                          "v2": V2_SIZE, "zoom_out_on_black": ZOOM_OUT,
                                          "torch_threads": torch.get_num_threads()},
               "settings": {}}
    phases = SETTINGS[:max(SETTINGS.index(s) for s in settings) + 1]
    estimators = {"holistic": BcosViTClassifier, "v2": BcosSimpleViTClassifier}
    for name in models:
        clf = estimators[name](**MODELS[name], max_epochs=cfg["epochs"], lr=2e-3,
                               zoom_out=ZOOM_OUT, image_size=None, batch_size=32,
                               random_state=seed)
        for setting in phases:  # black first, then textured (warm start)
            X_train, X_test, y_train, y_test = setting_split(setting, cfg["n_train"], seed)
            start = time.perf_counter()
            clf.fit(X_train[:cfg["n_train"]], y_train[:cfg["n_train"]])
            clf.set_params(warm_start=True, zoom_out=None)
            if setting not in settings:
                continue
            row = localisation_scores(clf, X_test, y_test, cfg["n_grids"])
            row["fit_seconds"] = round(time.perf_counter() - start, 1)
            results["settings"].setdefault(setting, {})[name] = row
            scores = ", ".join(f"{m} {v['mean']:.3f}" for m, v in row["localisation"].items())
            report(logger, f"{setting:>11} {name:>8}: accuracy {row['accuracy']:.3f}, "
                           f"{row['grids']} grids, {scores} "
                           f"({time.perf_counter() - start:.0f} s)")
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    report(logger, _table(results))
    return results


def setting_split(setting: str, n_train: int, seed: int):
    """(X_train, X_test, y_train, y_test) of a setting, RGB 32 px."""
    if setting == "textured":
        return textured_split(n_train, seed)
    return [np.repeat(a[..., None], 3, -1) if a.ndim == 3 else a for a in split(seed)]


def localisation_scores(clf, X_test, y_test, n_grids: int, methods=PIXEL_METHODS,
                        confidence: str = "sigmoid") -> dict:
    """Accuracy, completeness (with ``"inherent"``) and each method's pointing-game score
    (mean ± s.e. over grids) of a fitted model; ``confidence`` picks the grids' images (see
    :func:`~interpretable.metrics.grid_pointing_game`)."""
    from interpretable.metrics import confident_grids, grid_pointing_game

    row = {"accuracy": float(clf.score(X_test, y_test))}
    if "inherent" in methods:
        row["max_completeness_error"] = float(clf.explain(X_test[:64]).completeness_error.max())
    try:
        available = len(confident_grids(clf, X_test, y_test,
                                        confidence=confidence).cell_labels)
    except ValueError:  # no confidently and correctly classified images
        available = 0
    row["grids"] = grids = min(n_grids, available)
    row["localisation"] = {}
    for method in methods if grids else ():
        _, scores = grid_pointing_game(clf, X_test, y_test, n_grids=grids, method=method,
                                       confidence=confidence, return_scores=True)
        row["localisation"][method] = mean_se(scores.mean(1))
    row["best_method"] = max(row["localisation"], default=None,
                             key=lambda m: row["localisation"][m]["mean"])
    return row


def _table(results: dict) -> str:
    import pandas as pd

    rows = {f"{setting}/{name}": {m: v["mean"] for m, v in row["localisation"].items()}
            for setting, by_model in results["settings"].items()
            for name, row in by_model.items()}
    return pd.DataFrame(rows).T.to_string(float_format="%.3f")
