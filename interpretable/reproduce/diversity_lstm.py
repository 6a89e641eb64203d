"""Reproduce Mohankumar et al. (ACL 2020): vanilla vs Diversity vs Orthogonal LSTM attention.

``python -m interpretable reproduce diversity-lstm [--quick]`` trains the three cells on
Rotten Tomatoes (fixed stratified 80/20 split, GloVe-50 initialisation) and on the bAbI-1-style
(story, question) task, then runs the paper's analyses on the test split: accuracy, conicity
(Table 2), median output TVD under attention permutation (Fig. 4), fraction of hidden states
erased until the decision flips with attention vs random order (Fig. 3), Pearson r / JSD of
attention vs integrated gradients (Table 4) and the share of attention on punctuation (Fig. 5).
Results go to ``benchmarks/results/diversity_lstm.json``.

As in the authors' code (akashkm99/Interpretable-Attention): the conicity penalty and the
reported conicity average ``|cos|`` (``conicity_signed`` is the paper's signed form; the row
``diversity_signed`` trains with it), the "gradient" agreement uses their gradient × embedding
of the class probability with attention detached (``pearson_detached_gradient``), and each model
is the epoch with the best validation accuracy (10 % of the training split held out).
"""
from __future__ import annotations

import logging
import time

import numpy as np

from interpretable._progress import report

logger = logging.getLogger(__name__)

#: (row name, cell, conicity kind of the penalty)
VARIANTS = (("vanilla", "vanilla", "absolute"), ("diversity", "diversity", "absolute"),
            ("diversity_signed", "diversity", "signed"), ("orthogonal", "orthogonal", "absolute"))
VALIDATION_FRACTION = 0.1

#: settings per run size; "full" fits in about 20 min on 2 cores with one torch thread
SETTINGS = {
    "quick": dict(rt_train=2000, rt_test=500, rt_epochs=3, babi_samples=1500, babi_epochs=12,
                  babi_lr=3e-3, analysis=100, permutations=50, ig_steps=20),
    "full": dict(rt_train=None, rt_test=None, rt_epochs=8, babi_samples=3000, babi_epochs=30,
                 babi_lr=1e-3, analysis=500, permutations=100, ig_steps=50),
}


def add_arguments(parser):
    parser.add_argument("--epochs", type=int, default=None,
                        help="override the Rotten Tomatoes epochs")
    parser.add_argument("--analysis-samples", dest="analysis_samples", type=int, default=None,
                        help="test samples used by the analyses")
    parser.add_argument("--hidden-size", dest="hidden_size", type=int, default=128)
    parser.add_argument("--skip-babi", dest="skip_babi", action="store_true")
    parser.add_argument("--seed", type=int, default=0)


def _rotten_tomatoes_split(n_train, n_test, seed):
    from sklearn.model_selection import train_test_split

    from interpretable.datasets import load_rotten_tomatoes

    rt = load_rotten_tomatoes()
    labels = rt.target_names[rt.target]
    X_train, X_test, y_train, y_test = train_test_split(
        rt.data, labels, test_size=0.2, stratify=labels, random_state=seed)
    return X_train[:n_train], X_test[:n_test], y_train[:n_train], y_test[:n_test]


def _babi_split(n_samples, seed):
    from interpretable.datasets import make_babi_task1

    data = make_babi_task1(n_samples, random_state=seed)
    cut = int(0.8 * n_samples)
    return data.data[:cut], data.data[cut:], data.target[:cut], data.target[cut:]


def evaluate(clf, X_test, y_test, n_analysis, n_permutations, ig_steps, seed=0) -> dict:
    """The paper's measurements for one fitted attention model (floats only)."""
    from interpretable import metrics

    X_a = X_test[:n_analysis]
    start = time.perf_counter()
    flip_att = metrics.decision_flip_fraction(clf, X_a, order="attention").summary
    flip_rnd = metrics.decision_flip_fraction(clf, X_a, order="random", random_state=seed).summary
    ig = metrics.attribution_agreement(clf, X_a, against="integrated_gradients",
                                  n_steps=ig_steps).summary
    grad = metrics.attribution_agreement(clf, X_a, against="gradient").summary
    detached = metrics.attribution_agreement(clf, X_a, against="detached_gradient").summary
    pos = metrics.pos_attention(clf, X_a).summary if not isinstance(X_a[0], tuple) else None
    out = {
        "accuracy": float(clf.score(X_test, y_test)),
        "conicity": metrics.hidden_state_conicity(clf, X_a).summary["mean_conicity"],
        "conicity_signed": metrics.hidden_state_conicity(clf, X_a, kind="signed")
                             .summary["mean_conicity"],
        "permutation_median_tvd": metrics.permutation_tvd(clf, X_a, n_permutations=n_permutations,
                                                     random_state=seed).summary["median_tvd"],
        "flip_fraction_attention": flip_att["mean_fraction"],
        "flip_fraction_random": flip_rnd["mean_fraction"],
        "flip_rate_attention": flip_att["flip_rate"],
        "pearson_ig": ig["mean_pearson"], "jsd_ig": ig["mean_jsd"],
        "pearson_gradient": grad["mean_pearson"], "jsd_gradient": grad["mean_jsd"],
        "pearson_detached_gradient": detached["mean_pearson"],
        "jsd_detached_gradient": detached["mean_jsd"],
        "n_analysis": len(X_a),
    }
    if pos is not None:
        out["punctuation_attention"] = pos["punctuation_attention"]
        out["punctuation_tokens"] = pos["punctuation_tokens"]
        by_tag = pos["by_tag"]
        out["adjective_attention"] = float(by_tag.loc[by_tag.tag == "ADJ", "attention_share"].sum())
    out["analysis_seconds"] = time.perf_counter() - start
    return out


def _checks(results: dict) -> dict:
    """The paper's qualitative pattern, per task (True = reproduced); conicity is ``|cos|``."""
    van = results["vanilla"]
    checks = {}
    for cell in (name for name in results if name != "vanilla"):
        r = results[cell]
        checks[cell] = {
            "conicity_50pct_below_vanilla": r["conicity"] <= 0.5 * van["conicity"],
            "accuracy_within_3_points": r["accuracy"] >= van["accuracy"] - 0.03,
            "higher_permutation_tvd": r["permutation_median_tvd"] > van["permutation_median_tvd"],
            "lower_flip_fraction": r["flip_fraction_attention"] < van["flip_fraction_attention"],
            "higher_pearson_ig": r["pearson_ig"] > van["pearson_ig"],
        }
    return checks


def _table(results: dict) -> str:
    import pandas as pd

    cols = ["accuracy", "best_epoch", "conicity", "conicity_signed", "permutation_median_tvd",
            "flip_fraction_attention", "flip_fraction_random", "pearson_ig", "jsd_ig",
            "pearson_detached_gradient", "punctuation_attention", "train_seconds"]
    frame = pd.DataFrame(results).T
    return frame[[c for c in cols if c in frame.columns]].astype(float).round(3).to_string()


def run(quick: bool = False, epochs=None, analysis_samples=None, hidden_size=128, skip_babi=False,
        seed=0) -> dict:
    import torch
    from skorch.callbacks import EarlyStopping

    from interpretable.estimators.text import DiversityLSTMClassifier

    torch.set_num_threads(1)
    cfg = dict(SETTINGS["quick" if quick else "full"])
    if epochs is not None:
        cfg["rt_epochs"] = epochs
    if analysis_samples is not None:
        cfg["analysis"] = analysis_samples
    tasks = {"rotten_tomatoes": (_rotten_tomatoes_split(cfg["rt_train"], cfg["rt_test"], seed),
                                 dict(embeddings="glove-50", max_epochs=cfg["rt_epochs"]))}
    if not skip_babi:
        tasks["babi1"] = (_babi_split(cfg["babi_samples"], seed),
                          dict(embeddings=None, embed_dim=50, max_epochs=cfg["babi_epochs"],
                               lr=cfg["babi_lr"]))
    output = {"config": {**cfg, "hidden_size": hidden_size, "seed": seed, "quick": bool(quick),
                         "validation_fraction": VALIDATION_FRACTION,
                         "model_selection": "epoch with the best validation accuracy"}}
    for task, ((X_train, X_test, y_train, y_test), params) in tasks.items():
        results = {}
        for name, cell, kind in VARIANTS:
            # every epoch runs; the weights of the best validation accuracy are restored
            select = EarlyStopping(monitor="valid_acc", lower_is_better=False, threshold=0.0,
                                   patience=params["max_epochs"] + 1, load_best=True,
                                   sink=lambda *_: None)
            clf = DiversityLSTMClassifier(cell=cell, diversity_weight=0.5, conicity=kind,
                                          hidden_size=hidden_size, random_state=seed, device="cpu",
                                          validation_fraction=VALIDATION_FRACTION,
                                          callbacks=[("select_by_valid_acc", select)], **params)
            start = time.perf_counter()
            clf.fit(X_train, y_train)
            train_seconds = time.perf_counter() - start
            valid_acc = [epoch["valid_acc"] for epoch in clf.history_]
            results[name] = evaluate(clf, X_test, y_test, cfg["analysis"], cfg["permutations"],
                                     cfg["ig_steps"], seed)
            results[name].update(best_epoch=int(np.argmax(valid_acc)) + 1,
                                 best_valid_accuracy=float(max(valid_acc)),
                                 train_seconds=train_seconds,
                                 epoch_seconds=train_seconds / len(valid_acc))
            report(logger, f"[{task}] {name}: accuracy {results[name]['accuracy']:.3f} (epoch "
                           f"{results[name]['best_epoch']}/{len(valid_acc)}), conicity "
                           f"{results[name]['conicity']:.3f} ({train_seconds:.0f} s)")
        output[task] = {"n_train": len(X_train), "n_test": len(X_test), "results": results,
                        "checks": _checks(results)}
        report(logger, f"\n{task} (train {len(X_train)}, test {len(X_test)}, analyses on "
                       f"{min(cfg['analysis'], len(X_test))}):\n{_table(results)}")
        for cell, checks in output[task]["checks"].items():
            missed = [k for k, ok in checks.items() if not ok]
            report(logger, f"  {cell}: " + ("all paper targets met" if not missed
                                            else "missed: " + ", ".join(missed)))
    return output


def demo():
    """Train a small Diversity LSTM on Rotten Tomatoes and show its attention explanation."""
    import torch

    from interpretable.estimators.text import DiversityLSTMClassifier

    torch.set_num_threads(1)
    X_train, X_test, y_train, y_test = _rotten_tomatoes_split(3000, 300, 0)
    start = time.perf_counter()
    clf = DiversityLSTMClassifier(cell="diversity", embeddings="glove-50", hidden_size=64,
                                  max_epochs=3, random_state=0, device="cpu")
    clf.fit(X_train, y_train)
    print("DiversityLSTMClassifier (GloVe-50, 3,000 snippets, "
          f"{time.perf_counter() - start:.1f} s): "
          f"held-out accuracy {clf.score(X_test, y_test):.3f}, mean conicity "
          f"{clf.hidden_conicity(X_test).mean():.3f}")
    exp = clf.explain(["a gorgeous, witty and heartfelt film .",
                       "dull, lifeless and far too long ."])
    frame = exp.to_frame()
    print(frame[["sample", "token", "attribution", "prediction"]].to_string(index=False))
