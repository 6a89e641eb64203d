"""Holistically explainable B-cos ViTs on MNIST-5k (Böhle, Fritz & Schiele).

``python -m interpretable reproduce bcos-vit [--quick]``: accuracy of the B-cos ViT with each
attention prior vs a conventional ViT of the same size; on the multiplicative-prior model (the
paper's choice), the grid pointing game with the authors' protocol (token-aligned cells,
smoothing before the positive part, confident unused images; mean ± s.e.) and pixel
perturbation (area between curves, two removal baselines, per-image MoRF AUC) of the inherent
explanation vs every post-hoc baseline; completeness error; a cascading model-randomisation
sanity check (inherent vs integrated gradients).
"""
from __future__ import annotations

import copy
import logging
import math
import time

import numpy as np

from interpretable._progress import report
from interpretable.attribution import PIXEL_METHODS
from interpretable.datasets import load_mnist_5k

logger = logging.getLogger(__name__)

PRIORS = ("multiplicative", "additive", "none")
SIZE = dict(patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0, stem_channels=(32,))
#: the paper's logit bias for every B-cos model (the paper's output scaling 10⁻³ undoes its
#: feature scaling by 10³; neither is used here: ``output_scale=1``)
LOGIT_BIAS = math.log(0.01 / 0.99)
#: 28-px digits padded to 32 px: 8x8 tokens of patch 4, so each cell of a 2x2 grid (scaled to
#: 32 px) is exactly 4x4 tokens; 1,500 test images leave enough confidently classified ones for
#: 250 grids of unused images
PAD, TEST_SIZE = 2, 1500
#: random zoom-out of half the training images (both models): without it the half-size digits
#: of the 2x2 pointing-game grids are out of distribution (a B-cos ViT trained on centred
#: digits classifies 32 % of half-size test digits correctly, ~90 % with it)
ZOOM_OUT = (0.4, 0.8)
FULL = dict(n_train=3500, epochs=20, priors=PRIORS, n_grids=250, n_perturb=250, n_sanity=32,
            lr=2e-3, lr_decay_at=0.6, zoom_out=ZOOM_OUT)
# --quick: two epochs at a constant learning rate, one prior, small metric samples
QUICK = dict(n_train=3500, epochs=2, priors=("multiplicative",), n_grids=16, n_perturb=24,
             n_sanity=4, lr=2e-3, lr_decay_at=None, zoom_out=ZOOM_OUT)
SANITY_METHODS = ("inherent", "integrated_gradients")


def add_arguments(parser) -> None:
    parser.add_argument("--epochs", type=int, help="training epochs per model")
    parser.add_argument("--n-train", dest="n_train", type=int,
                        help="training images used (of the 3,500 in the split)")
    parser.add_argument("--priors", nargs="+", choices=PRIORS, help="B-cos attention priors")
    parser.add_argument("--n-grids", dest="n_grids", type=int, help="pointing-game grids")
    parser.add_argument("--n-perturb", dest="n_perturb", type=int,
                        help="images for the pixel perturbation metric")
    parser.add_argument("--n-sanity", dest="n_sanity", type=int,
                        help="images for the cascading-randomisation check")
    parser.add_argument("--zoom-out", dest="zoom_out", type=float, nargs=2,
                        metavar=("LOW", "HIGH"),
                        help=f"zoom-out range of half the training images (default {ZOOM_OUT}; "
                             "1 1 turns the augmentation off)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (default 1: intra-op threading stalls badly "
                             "on a loaded machine; 0 keeps torch's default)")
    parser.add_argument("--no-vit", dest="vit", action="store_false",
                        help="skip the conventional ViT baseline")
    parser.add_argument("--no-metrics", dest="metrics", action="store_false",
                        help="accuracy only: skip completeness, localisation and perturbation")


def split(seed: int = 0):
    """Fixed stratified split of MNIST-5k, digits zero-padded to 32x32: 3,500 train / 1,500
    test images."""
    from sklearn.model_selection import train_test_split

    X, y = load_mnist_5k(return_X_y=True)
    X = np.pad(X, ((0, 0), (PAD, PAD), (PAD, PAD)))
    return train_test_split(X, y, test_size=TEST_SIZE, stratify=y, random_state=seed)


def _fit(clf, X, y):
    start = time.perf_counter()
    clf.fit(X, y)
    return clf, time.perf_counter() - start


def _mean_se(values) -> dict:
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    return {"mean": float(values.mean()),
            "se": float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else None,
            "n": len(values)}


def randomised_top_down(clf, seed: int = 42):
    """Cascading model randomisation as Quantus's MPRT (``order="top_down"``): a copy of the
    fitted estimator whose modules with ``reset_parameters`` are reset one after another, from
    the last to the first; yields ``(module name, the copy)`` after each reset (the same copy,
    randomised further each time; torch seeded with ``seed`` before each reset)."""
    import torch

    randomised = copy.deepcopy(clf)
    layers = [(name, module) for name, module in randomised.module_.named_modules()
              if hasattr(module, "reset_parameters")]
    for name, module in reversed(layers):
        torch.manual_seed(seed)
        module.reset_parameters()
        yield name, randomised


def _rank_correlations(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Mean over images of the Spearman correlation of two (n, H, W) maps, signed and of the
    absolute values (Adebayo et al.)."""
    from scipy.stats import spearmanr

    def mean_rho(u, v):
        rhos = [spearmanr(p.ravel(), q.ravel())[0] for p, q in zip(u, v, strict=True)]
        return float(np.nanmean(rhos))

    return mean_rho(a, b), mean_rho(np.abs(a), np.abs(b))


def cascading_randomisation(clf, X, y, methods=SANITY_METHODS, seed: int = 42) -> dict:
    """Similarity of each method's explanations of images X (target: labels y) before and
    after every step of :func:`randomised_top_down`: per method, lists aligned with
    ``layers`` of ``spearman`` and ``spearman_abs`` (1 = unchanged; a faithful explanation
    should drop towards 0 as layers are randomised)."""
    reference = {m: clf.explain(X, target=y, method=m).values for m in methods}
    result = {"layers": [], **{m: {"spearman": [], "spearman_abs": []} for m in methods}}
    for name, randomised in randomised_top_down(clf, seed):
        result["layers"].append(name)
        for m in methods:
            signed, absolute = _rank_correlations(
                reference[m], randomised.explain(X, target=y, method=m).values)
            result[m]["spearman"].append(signed)
            result[m]["spearman_abs"].append(absolute)
    return result


def run(quick: bool = False, epochs=None, n_train=None, priors=None, n_grids=None,
        n_perturb=None, n_sanity=None, zoom_out=None, seed: int = 0, device: str = "auto",
        threads=1, vit: bool = True, metrics: bool = True) -> dict:
    import torch

    from interpretable.estimators.vision import BcosViTClassifier, ViTClassifier
    from interpretable.metrics import (
        confident_grids,
        grid_pointing_game,
        pixel_perturbation,
        smoothing_kernel,
    )

    if threads:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    cfg = dict(QUICK if quick else FULL)
    given = dict(epochs=epochs, n_train=n_train, priors=priors, n_grids=n_grids,
                 n_perturb=n_perturb, n_sanity=n_sanity, zoom_out=zoom_out)
    cfg.update({k: (tuple(v) if k in ("priors", "zoom_out") else v)
                for k, v in given.items() if v is not None})
    X_train, X_test, y_train, y_test = split(seed)
    X_train, y_train = X_train[:cfg["n_train"]], y_train[:cfg["n_train"]]
    common = dict(max_epochs=cfg["epochs"], lr=cfg["lr"], lr_decay_at=cfg["lr_decay_at"],
                  zoom_out=cfg["zoom_out"], batch_size=32, random_state=seed, device=device,
                  **SIZE)
    results = {"quick": quick,
               "config": {**cfg, **SIZE, "batch_size": 32, "seed": seed, "logit_bias": LOGIT_BIAS,
                          "output_scale": 1.0, "image_size": X_train.shape[1],
                          "n_test": len(X_test), "torch_threads": torch.get_num_threads()},
               "accuracy": {}, "fit_seconds": {}}

    models = {}
    for prior in cfg["priors"]:
        name = f"bcos_vit_{prior}"
        clf, seconds = _fit(BcosViTClassifier(attention_prior=prior, logit_bias=LOGIT_BIAS,
                                              **common), X_train, y_train)
        models[name] = clf
        results["accuracy"][name] = float(clf.score(X_test, y_test))
        results["fit_seconds"][name] = round(seconds, 1)
        report(logger, f"{name}: accuracy {results['accuracy'][name]:.4f} ({seconds:.0f} s)")
    if vit:
        baseline, seconds = _fit(ViTClassifier(**common), X_train, y_train)
        results["accuracy"]["vit"] = float(baseline.score(X_test, y_test))
        results["fit_seconds"]["vit"] = round(seconds, 1)
        report(logger, f"vit: accuracy {results['accuracy']['vit']:.4f} ({seconds:.0f} s)")
    if not metrics:
        return results

    explained = "bcos_vit_multiplicative" if "bcos_vit_multiplicative" in models else \
        max(models, key=lambda n: results["accuracy"][n])
    clf = models[explained]
    results["explained_model"] = explained
    exp, exp64 = clf.explain(X_test), clf.explain(X_test, dtype="float64")
    absolute = np.abs(exp.values.reshape(len(exp), -1).sum(1) + exp.bias - exp.logit)
    results["completeness_error"] = {
        "max_relative": float(exp.completeness_error.max()),
        "mean_relative": float(exp.completeness_error.mean()),
        "max_absolute": float(absolute.max()), "dtype": "float32",
        "float64_max_relative": float(exp64.completeness_error.max())}

    available = len(confident_grids(clf, X_test, y_test).cell_labels)
    grids = min(cfg["n_grids"], available)
    results["grids"] = {"n": grids, "available": available, "grid": 2,
                        "smoothing_kernel": smoothing_kernel(X_test.shape[1]),
                        "confidence": "sigmoid(logit) > 0.5", "seed": 42}
    results["localisation"], results["perturbation"] = {}, {}
    for method in PIXEL_METHODS:
        start = time.perf_counter()
        _, scores = grid_pointing_game(clf, X_test, y_test, n_grids=grids, method=method,
                                       return_scores=True)
        results["localisation"][method] = _mean_se(scores.mean(1))
        rows = {}
        for removal in ("encoding", "image"):
            area, curves = pixel_perturbation(clf, X_test, y_test, method=method,
                                              n_samples=cfg["n_perturb"], baseline=removal,
                                              return_curves=True)
            rows[f"abc_{removal}"] = area
            rows[f"morf_auc_{removal}"] = _mean_se(curves["morf_auc"])
        results["perturbation"][method] = rows
        report(logger, f"{method:>22}: localisation "
                       f"{results['localisation'][method]['mean']:.3f}  "
                       f"ABC {rows['abc_encoding']:.4f} / image {rows['abc_image']:.4f}  "
                       f"({time.perf_counter() - start:.0f} s)")

    sanity = np.arange(min(cfg["n_sanity"], len(X_test)))
    results["cascading_randomisation"] = cascading_randomisation(clf, X_test[sanity],
                                                                 y_test[sanity])
    results["checks"] = _checks(results, explained, vit)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    report(logger, _table(results))
    return results


def _checks(results: dict, explained: str, vit: bool) -> dict:
    """Each target: met (bool) with the numbers behind it."""
    acc, loc, pert = results["accuracy"], results["localisation"], results["perturbation"]
    post_hoc = [m for m in PIXEL_METHODS if m != "inherent"]
    best_loc = max(post_hoc, key=lambda m: loc[m]["mean"])
    ratio = loc["inherent"]["mean"] / max(loc[best_loc]["mean"], 1e-12)
    checks = {
        "accuracy_at_least_0.95": {"met": acc[explained] >= 0.95, "model": explained,
                                   "accuracy": acc[explained]},
        "localisation_at_least_1.5x_best_post_hoc": {
            "met": ratio >= 1.5 and results["grids"]["n"] >= 250, "ratio": ratio,
            "inherent": loc["inherent"], "best_post_hoc": best_loc,
            "best_post_hoc_score": loc[best_loc], "n_grids": results["grids"]["n"]},
        "max_completeness_error_at_most_1e-4": {
            "met": results["completeness_error"]["max_relative"] <= 1e-4,
            "max_relative": results["completeness_error"]["max_relative"]},
    }
    for removal in ("encoding", "image"):
        key = f"abc_{removal}"
        best = max(post_hoc, key=lambda m: pert[m][key])
        checks[f"best_area_between_curves_{removal}_baseline"] = {
            "met": pert["inherent"][key] > pert[best][key], "inherent": pert["inherent"][key],
            "best_post_hoc": best, "best_post_hoc_abc": pert[best][key]}
    if vit:
        checks["bcos_within_2_points_of_vit"] = {"met": acc[explained] >= acc["vit"] - 0.02,
                                                 "bcos": acc[explained], "vit": acc["vit"]}
    return checks


def _table(results: dict) -> str:
    import pandas as pd

    rows = [(m, results["localisation"][m]["mean"], results["localisation"][m]["se"],
             p["abc_encoding"], p["abc_image"], p["morf_auc_encoding"]["mean"],
             p["morf_auc_image"]["mean"]) for m, p in results["perturbation"].items()]
    frame = pd.DataFrame(rows, columns=["method", "localisation", "s.e.", "abc", "abc_image",
                                        "morf_auc", "morf_auc_image"])
    acc = ", ".join(f"{k} {v:.3f}" for k, v in results["accuracy"].items())
    sanity = results["cascading_randomisation"]
    steps = ", ".join(f"{m} {sanity[m]['spearman'][-1]:.2f}" for m in SANITY_METHODS)
    checks = {k: v["met"] for k, v in results["checks"].items()}
    return (f"accuracy: {acc}\nexplained: {results['explained_model']} "
            f"({results['grids']['n']} grids)\n"
            f"{frame.to_string(index=False, float_format='%.4f')}\n"
            f"completeness (max rel.): float32 "
            f"{results['completeness_error']['max_relative']:.2e}, float64 "
            f"{results['completeness_error']['float64_max_relative']:.2e}\n"
            f"Spearman after randomising every layer: {steps}\n"
            f"checks: {checks}")


def demo() -> None:
    """A small B-cos ViT on 8×8 digits: exact contribution maps and the per-head split."""
    import torch

    from interpretable.datasets import load_digits_images
    from interpretable.estimators.vision import BcosViTClassifier

    torch.set_num_threads(1)
    X, y = load_digits_images(return_X_y=True)
    clf = BcosViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2, stem_channels=(8,),
                            max_epochs=8, lr=3e-3, batch_size=32, random_state=0)
    clf.fit(X[:1000], y[:1000])
    print(f"BcosViTClassifier on 8x8 digits: held-out accuracy {clf.score(X[1000:], y[1000:]):.3f}")
    exp = clf.explain(X[1000:1002], by="head")
    print("contributions of each (layer, head) / skip path to the explained logit:")
    per_component = exp.components.sum(axis=(2, 3))
    for i in range(len(exp)):
        parts = ", ".join(f"{n} {v:+.3f}"
                          for n, v in zip(exp.component_names, per_component[i], strict=True))
        print(f"  sample {i} (class {exp.target[i]}): logit {exp.logit[i]:+.3f} = "
              f"bias {exp.bias[i]:+.3f} + {parts}")
    frame = exp.to_frame()
    top = frame.sort_values("attribution", ascending=False).groupby("sample").head(3)
    print(top[["sample", "row", "col", "target", "attribution"]].to_string(index=False))
    print(f"completeness error (relative): {exp.completeness_error.max():.2e}")
