"""The model you already have, and its exact twin, side by side.

``OMP_NUM_THREADS=1 python benchmarks/explain_pretrained.py --checkpoint DIR_OR_HUB_ID
--twin DIR [--out NAME] [--faithfulness 300] [--train N] [--test N] [--report-models ...]``

On the reproductions' Rotten Tomatoes split (stratified 80/20, seed 0):

1. ``BertTextClassifier.from_pretrained(checkpoint)``: the fine-tuned ``transformers``
   classifier as it is (e.g. written by ``benchmarks/finetune_transformers.py``), no training;
2. its exact twin: ``BcosTextClassifier(checkpoint=checkpoint, teacher=checkpoint)``, the same
   encoder B-cosified and distilled from the original on the training texts (one epoch, the
   estimator's defaults, ``random_state=0``), saved to ``--twin`` (an existing twin there is
   loaded instead of trained again);
3. one table of both on the same texts: accuracy and agreement with the original's predictions
   on the whole test split, and :func:`interpretable.metrics.evaluate_explanations` (every
   explanation method of each model) on the first ``--faithfulness`` test texts.

``--methods`` limits the report to some explanation methods; ``--report-models original`` (or
``bcos_twin``) reports one model only, so that two processes can share the work;
``--merge A B ...`` writes ``<out>.json`` from the results files ``A``, ``B``, ... of such runs
(their report rows concatenated). Writes ``benchmarks/results/<out>.json``.
"""
import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).parent / "results"


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def twin(args, X_train, y_train):
    """The B-cos twin: loaded from ``--twin`` or trained (distilled) and saved there."""
    from interpretable import BcosTextClassifier

    folder = Path(args.twin)
    if (folder / "config.json").is_file():
        return BcosTextClassifier.load(folder, device="cpu"), None
    clf = BcosTextClassifier(checkpoint=args.checkpoint, teacher=args.checkpoint,
                             random_state=0, device="cpu")
    clf, seconds = _timed(clf.fit, X_train, y_train)
    clf.save(folder)
    return clf, seconds


def merge(args):
    """One results file from runs that reported some models or methods each."""
    runs = [json.loads((RESULTS / f"{name}.json").read_text()) for name in args.merge]
    out = {**runs[0], "command": [run["command"] for run in runs], "merged_from": args.merge}
    for name, record in out["models"].items():
        rows = [row for run in runs for row in run["models"][name].get("report", [])]
        out["models"][name] = {**record, **({"report": rows} if rows else {})}
    (RESULTS / f"{args.out}.json").write_text(json.dumps(out, indent=1))


def main(args):
    from interpretable import BertTextClassifier
    from interpretable.reproduce.bcos_text import split

    torch.set_num_threads(args.threads)
    X_train, X_test, y_train, y_test = split("rotten-tomatoes", args.train, args.test, 0)
    y_test = np.asarray(y_test).astype(str)
    original = BertTextClassifier.from_pretrained(args.checkpoint, max_length=64, device="cpu")
    bcos, train_seconds = twin(args, X_train, y_train)
    out = {"command": "OMP_NUM_THREADS=1 python " + " ".join(sys.argv),
           "checkpoint": str(args.checkpoint), "n_train": len(X_train),
           "n_test": len(X_test), "n_faithfulness": args.faithfulness,
           "threads": args.threads, "torch": torch.__version__,
           "python": platform.python_version(), "twin_train_seconds": train_seconds,
           "models": {}}
    reference = None
    for name, clf in (("original", original), ("bcos_twin", bcos)):
        predicted, seconds = _timed(clf.predict, X_test)
        predicted = np.asarray(predicted).astype(str)
        reference = predicted if reference is None else reference
        out["models"][name] = {"accuracy": float(np.mean(predicted == y_test)),
                               "agreement_with_original": float(np.mean(predicted == reference)),
                               "predict_seconds_per_text": seconds / len(X_test)}
        print(name, out["models"][name], flush=True)
    path = RESULTS / f"{args.out}.json"
    path.write_text(json.dumps(out, indent=1))
    if args.faithfulness:
        from interpretable.metrics import evaluate_explanations

        texts = X_test[:args.faithfulness]
        frames = []
        for name, clf in (("original", original), ("bcos_twin", bcos)):
            if name not in args.report_models:
                continue
            report = evaluate_explanations(clf, texts, y_test[:args.faithfulness],
                                           methods=args.methods, batch_size=args.batch_size,
                                           random_state=0)
            frame = report.to_frame().assign(model=name)
            frames.append(frame)
            out["models"][name]["report"] = json.loads(frame.to_json(orient="records"))
            path.write_text(json.dumps(out, indent=1))
            print(frame.to_string(), flush=True)
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--twin", required=True, help="folder of the B-cos twin")
    parser.add_argument("--out", default="explain_pretrained")
    parser.add_argument("--faithfulness", type=int, default=300)
    parser.add_argument("--train", type=int, default=None)
    parser.add_argument("--test", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--report-models", nargs="+", default=["original", "bcos_twin"])
    parser.add_argument("--methods", nargs="+", default=None,
                        help="the explanation methods reported (default: every one)")
    parser.add_argument("--merge", nargs="+", metavar="NAME")
    arguments = parser.parse_args()
    merge(arguments) if arguments.merge else main(arguments)
