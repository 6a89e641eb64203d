"""Parallel grid search: GridSearchCV(n_jobs=2) wall time against n_jobs=1 (goal <= 0.8x).

A DiversityLSTMClassifier on 4,000 Rotten Tomatoes snippets with GloVe-50 initialisation,
3 epochs, a 2 x 2 grid, 3-fold CV (12 fits + refit): fits of a few seconds, as in a real
search (with sub-second fits the workers' start-up — importing torch — dominates). The two
settings run in fresh processes (so both pay for their imports and GloVe loading), in
interleaved rounds (``benchmarks/ratios.py``), medians of ``--repeats`` of the processes' wall
time. Writes benchmarks/results/bench_grid_search.json.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402

GOAL = 0.8  # n_jobs=2 / n_jobs=1
CHILD = """
from sklearn.model_selection import GridSearchCV
from interpretable import DiversityLSTMClassifier
from interpretable.datasets import load_rotten_tomatoes
X, y = load_rotten_tomatoes(return_X_y=True)
X, y = X[:{texts}], y[:{texts}]
grid = GridSearchCV(
    DiversityLSTMClassifier(embeddings="glove-50", hidden_size=32, max_epochs={epochs},
                            batch_size=64, random_state=0),
    {{"cell": ["vanilla", "diversity"], "lr": [1e-3, 3e-3]}}, cv=3, n_jobs={n_jobs})
grid.fit(X, y)
print(grid.best_params_)
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--texts", type=int, default=4000)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--out", default=str(RESULTS / "bench_grid_search.json"))
    args = parser.parse_args()
    record = run_record()
    best = {}

    def search(n_jobs):
        def run():
            best[n_jobs] = subprocess.run(
                [sys.executable, "-c", CHILD.format(texts=args.texts, epochs=args.epochs,
                                                    n_jobs=n_jobs)],
                check=True, capture_output=True, text=True).stdout.strip()
        return run

    # no warm-up: each run is a fresh process; the wall time is the parent's
    seconds = timed({"n_jobs_1": search(1), "n_jobs_2": search(2)}, args.repeats, warmup=0)[0]
    ratio = seconds["n_jobs_2"] / seconds["n_jobs_1"]
    record.update({
        "setting": f"DiversityLSTM, {args.texts} texts, glove-50, {args.epochs} epochs, 2x2 "
                   "grid, cv=3, fresh process per run (imports included), 1 thread per process",
        "repeats": args.repeats,
        "median_n_jobs_1": seconds["n_jobs_1"], "median_n_jobs_2": seconds["n_jobs_2"],
        "ratio_2_over_1": ratio, "best_params": best, "same_best_params": best[1] == best[2],
        "targets": [target("GridSearchCV(n_jobs=2) / n_jobs=1 wall time, DiversityLSTM", ratio,
                           GOAL, at_most=True)]})
    Path(args.out).write_text(json.dumps(finish_record(record), indent=1))
    print(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()
