"""Accuracy of B-cos MiniLM recipes against the conventional MiniLM, several seeds.

``OMP_NUM_THREADS=1 python benchmarks/parity_bcos_text.py --out NAME [--train 2000]
[--test 500] [--seeds 0 1 2] [--conventional] [--variant NAME JSON ...]``; ``--out NAME
--merge A B`` merges the results of runs split by seed.

Fine-tunes, on the reproduction's Rotten Tomatoes split (``interpretable reproduce
bcos-text``: stratified 80/20, seed 0; ``--dataset convention``: its speeches split by
speaker; ``--dataset trec``: TREC's questions, stratified 80/20; ``--train``/``--test``
keep the first texts of each side, default all), the conventional MiniLM
(``--conventional``) and every B-cos variant (``--variant name '{"param": value}'``:
:class:`~interpretable.BcosTextClassifier` parameters over the budget; ``{seed}`` in a
string value is the seed, e.g. a ``teacher`` saved by an earlier ``--conventional --save``
run: ``"models/minilm_seed{seed}"``) with the reproduction's budget (``--epochs``, default
one; lr 5e-5 unless a variant sets its own; batch 32; at most 64 word pieces; 10 % warm-up)
and each seed of ``--seeds`` (the estimators' ``random_state``; the split stays the same).
Records accuracy and training seconds per seed, the mean over seeds (``--save DIR``: each
fitted model saved as ``DIR/<name>_seed<seed>``, for :mod:`benchmarks.faithfulness_bcos_text`),
and, for the first seed, predict throughput of each B-cos variant over the conventional
model's and explain / predict (256 test texts, one thread, median of 3).
``benchmarks/results/<out>.json`` is rewritten after every fit.
"""
import argparse
import json
import platform
import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).parent / "results"


def main(args):
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from interpretable import BcosTextClassifier, BertTextClassifier
    from interpretable.reproduce.bcos_text import BERT, _timed, split

    torch.set_num_threads(args.threads)
    X_train, X_test, y_train, y_test = split(args.dataset, args.train, args.test, 0)
    budget = dict(BERT, lr=args.lr, max_epochs=args.epochs, device="cpu")
    out = {"command": "OMP_NUM_THREADS=1 python " + " ".join(sys.argv),
           "n_train": len(X_train), "n_test": len(X_test), "budget": budget,
           "dataset": args.dataset, "threads": args.threads, "seeds": args.seeds,
           "torch": torch.__version__, "python": platform.python_version(),
           "variants": dict(args.variant),
           "accuracy": {}, "mean_accuracy": {}, "train_seconds": {}, "cost": {}}
    tfidf = make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=1000))
    out["accuracy"]["tfidf_logreg"] = {"-": float(tfidf.fit(X_train, y_train)
                                                  .score(X_test, y_test))}
    path = RESULTS / f"{args.out}.json"

    def record(name, seed, clf, seconds):
        accuracy = float(np.mean(clf.predict(X_test) == y_test))
        out["accuracy"].setdefault(name, {})[str(seed)] = accuracy
        out["train_seconds"].setdefault(name, {})[str(seed)] = seconds
        out["mean_accuracy"][name] = statistics.mean(out["accuracy"][name].values())
        path.write_text(json.dumps(out, indent=1) + "\n")
        print(f"[seed {seed}] {name}: accuracy {accuracy:.4f} ({seconds:.0f} s)", flush=True)

    models = [(name, BcosTextClassifier, params) for name, params in args.variant]
    if args.conventional:  # first, or after the B-cos variants with --conventional-last
        models.insert(len(models) if args.conventional_last else 0,
                      ("minilm", BertTextClassifier, {}))
    for seed in args.seeds:
        fitted = {}
        for name, cls, params in models:
            clf = cls(**{**budget, "random_state": seed, **{
                k: v.format(seed=seed) if isinstance(v, str) else v for k, v in params.items()}})
            start = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf.fit(X_train, y_train)
            record(name, seed, clf, time.perf_counter() - start)
            if args.save:
                clf.save(Path(args.save) / f"{name}_seed{seed}")
            fitted[name] = clf
        if seed == args.seeds[0] and "minilm" in fitted and args.speed:
            X = X_test[:args.speed]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name in [n for n in fitted if n != "minilm"]:
                    conventional, bcos = fitted["minilm"], fitted[name]
                    s = {"predict_minilm": _timed(lambda m=conventional, X=X: m.predict_proba(X)),
                         "predict_bcos": _timed(lambda m=bcos, X=X: m.predict_proba(X)),
                         "explain_bcos": _timed(lambda m=bcos, X=X: m.explain(X))}
                    error = fitted[name].explain(X[:32], dtype="float64").completeness_error
                    out["cost"][name] = {
                        "texts": len(X), "seconds": s,
                        "predict_throughput_ratio": s["predict_minilm"] / s["predict_bcos"],
                        "explain_over_predict": s["explain_bcos"] / s["predict_bcos"],
                        "completeness_error_float64_max": float(error.max())}
            path.write_text(json.dumps(out, indent=1) + "\n")
    return out


def merge(out: str, parts: list) -> dict:
    """One results file from runs of the same budget split by seed (e.g. two processes side
    by side): their accuracies and seconds per seed, the means over all seeds, the first
    run's cost; ``benchmarks/results/<out>.json``."""
    runs = [json.loads((RESULTS / f"{name}.json").read_text()) for name in parts]
    if any(run["budget"] != runs[0]["budget"] or run["n_train"] != runs[0]["n_train"]
           for run in runs):
        raise ValueError("the runs to merge must share their budget and split")
    merged = {**runs[0], "command": [run["command"] for run in runs], "merged_from": parts,
              "seeds": sorted({seed for run in runs for seed in run["seeds"]}),
              "variants": {k: v for run in runs for k, v in run["variants"].items()}}
    for field in ("accuracy", "train_seconds"):
        merged[field] = {}
        for run in runs:
            for model, per_seed in run[field].items():
                merged[field].setdefault(model, {}).update(per_seed)
    merged["mean_accuracy"] = {model: statistics.mean(per_seed.values())
                               for model, per_seed in merged["accuracy"].items()
                               if model != "tfidf_logreg"}
    merged["cost"] = next((run["cost"] for run in runs if run["cost"]), {})
    (RESULTS / f"{out}.json").write_text(json.dumps(merged, indent=1) + "\n")
    return merged


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--dataset", default="rotten-tomatoes",
                        choices=("rotten-tomatoes", "convention", "trec"))
    parser.add_argument("--train", type=int, default=None)
    parser.add_argument("--test", type=int, default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--speed", type=int, default=256, help="texts timed (0: no timing)")
    parser.add_argument("--conventional", action="store_true")
    parser.add_argument("--save", default=None, help="folder to save every fitted model in")
    parser.add_argument("--conventional-last", action="store_true")
    parser.add_argument("--variant", nargs=2, action="append", default=[],
                        metavar=("NAME", "JSON"))
    parser.add_argument("--merge", nargs="+", default=None, metavar="RESULTS",
                        help="merge these results files (names) into --out; nothing is fitted")
    args = parser.parse_args()
    if args.merge:
        merge(args.out, args.merge)
        sys.exit()
    args.variant = [(name, json.loads(params)) for name, params in args.variant]
    main(args)
