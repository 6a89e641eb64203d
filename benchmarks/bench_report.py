"""How long "which explanation to trust" takes: ``evaluate_explanations`` on a fine-tuned MiniLM.

``OMP_NUM_THREADS=1 python benchmarks/bench_report.py --checkpoint DIR [--texts 300]
[--compare 20 --before REV] [--out NAME]``

On the reproductions' Rotten Tomatoes test split (stratified 80/20, seed 0), with
``BertTextClassifier.from_pretrained(checkpoint, max_length=64)`` (e.g. the folder written by
``benchmarks/finetune_transformers.py``), every explanation method, one thread:

1. the report of the first ``--texts`` test texts: the seconds of the explanations and of the
   metrics that score them (the report's ``seconds``), target: metrics / explanations <= 1;
2. with ``--compare N``: the whole report of the first N texts by this tree and by the package
   at git revision ``--before`` (checked out into a temporary worktree, run in a subprocess
   with the same settings), one after the other in this run; target: before / now >= 5.

Writes ``benchmarks/results/<out>.json`` (default ``bench_report``) after each part.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from ratios import RESULTS, finish_record, run_record, target

#: the report of N texts by the package on sys.path, printed as JSON (run in a subprocess)
REPORT_SCRIPT = """
import json, sys, time, torch
torch.set_num_threads(1)
from interpretable import BertTextClassifier
from interpretable.metrics import evaluate_explanations
from interpretable.reproduce.bcos_text import split
checkpoint, n = sys.argv[1], int(sys.argv[2])
texts = list(split("rotten-tomatoes", None, None, 0)[1][:n])
clf = BertTextClassifier.from_pretrained(checkpoint, max_length=64, device="cpu")
start = time.perf_counter()
report = evaluate_explanations(clf, texts, random_state=0)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "rows": len(report.to_frame())}))
"""


def _report_seconds(python_path: str, checkpoint: str, n: int) -> dict:
    """One report of ``n`` texts by the package found at ``python_path``, in a subprocess."""
    done = subprocess.run([sys.executable, "-c", REPORT_SCRIPT, checkpoint, str(n)],
                          env={**os.environ, "PYTHONPATH": python_path,
                               "OMP_NUM_THREADS": "1"},
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(args):
    from interpretable import BertTextClassifier
    from interpretable.metrics import evaluate_explanations
    from interpretable.reproduce.bcos_text import split

    torch.set_num_threads(1)
    out = run_record()
    out.update({"checkpoint": Path(args.checkpoint).name, "targets": []})
    path = RESULTS / f"{args.out}.json"
    _, X_test, _, y_test = split("rotten-tomatoes", None, None, 0)
    clf = BertTextClassifier.from_pretrained(args.checkpoint, max_length=64, device="cpu")
    out["accuracy_on_test_split"] = float(np.mean(
        np.asarray(clf.predict(X_test)).astype(str) == np.asarray(y_test).astype(str)))
    if args.texts:
        start = time.perf_counter()
        report = evaluate_explanations(clf, list(X_test[: args.texts]), random_state=0,
                                       verbose=1)
        total = time.perf_counter() - start
        explanations = sum(report.seconds["explanations"].values())
        ratio = report.seconds["metrics"] / explanations
        ranking = report.summary()
        out["report"] = {
            "n_texts": args.texts, "seconds_total": total,
            "seconds_explanations": report.seconds["explanations"],
            "seconds_explanations_total": explanations,
            "seconds_metrics": report.seconds["metrics"],
            "metrics_over_explanations": ratio,
            "verdict": ranking.attrs["verdict"],
            "ranking": json.loads(ranking.to_json(orient="records")),
            "rows": json.loads(report.to_frame().to_json(orient="records")),
            "skipped": json.loads(report.skipped.to_json(orient="records"))}
        out["targets"].append(target("metrics seconds / explanation seconds", ratio, 1,
                                     at_most=True))
        print(str(report), flush=True)
        path.write_text(json.dumps(finish_record(out), indent=1))
    if args.compare:
        root = Path(__file__).resolve().parent.parent
        with tempfile.TemporaryDirectory() as folder:
            subprocess.run(["git", "worktree", "add", "--detach", folder, args.before],
                           cwd=root, check=True, capture_output=True)
            try:
                before = _report_seconds(folder, args.checkpoint, args.compare)
            finally:
                subprocess.run(["git", "worktree", "remove", "--force", folder], cwd=root,
                               check=True, capture_output=True)
        now = _report_seconds(str(root), args.checkpoint, args.compare)
        out["compare"] = {"n_texts": args.compare, "before_revision": args.before,
                          "seconds_before": before["seconds"], "seconds_now": now["seconds"],
                          "speed_up": before["seconds"] / now["seconds"]}
        out["targets"].append(target("whole report, before / now", before["seconds"] /
                                     now["seconds"], 5))
        path.write_text(json.dumps(finish_record(out), indent=1))
    print(json.dumps(out["targets"], indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--texts", type=int, default=300)
    parser.add_argument("--compare", type=int, default=0,
                        help="texts of the before / now comparison (0: none)")
    parser.add_argument("--before", default="161b4ac",
                        help="the git revision of the package before this work")
    parser.add_argument("--out", default="bench_report")
    main(parser.parse_args())
