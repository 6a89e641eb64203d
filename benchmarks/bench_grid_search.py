"""Parallel grid search: GridSearchCV(n_jobs=2) wall time against n_jobs=1 (goal <= 0.8x).

A DiversityLSTMClassifier on 4,000 Rotten Tomatoes snippets with GloVe-50 initialisation,
3 epochs, a 2 x 2 grid, 3-fold CV (12 fits + refit): fits of a few seconds, as in a real
search (with sub-second fits the workers' start-up — importing torch — dominates). The two
settings run alternately in fresh processes (so both pay for their imports and GloVe
loading), medians of ``--repeats``.
Writes benchmarks/results/bench_grid_search.json.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "bench_grid_search.json"

CHILD = """
import time
t0 = time.perf_counter()
from sklearn.model_selection import GridSearchCV
from interpretable import DiversityLSTMClassifier
from interpretable.datasets import load_rotten_tomatoes
X, y = load_rotten_tomatoes(return_X_y=True)
X, y = X[:4000], y[:4000]
grid = GridSearchCV(
    DiversityLSTMClassifier(embeddings="glove-50", hidden_size=32, max_epochs=3, batch_size=64,
                            random_state=0),
    {"cell": ["vanilla", "diversity"], "lr": [1e-3, 3e-3]}, cv=3, n_jobs={n_jobs})
grid.fit(X, y)
print(time.perf_counter() - t0, grid.best_params_)
"""


def run(n_jobs: int) -> tuple[float, dict]:
    out = subprocess.run([sys.executable, "-c", CHILD.replace("{n_jobs}", str(n_jobs))],
                         check=True, capture_output=True, text=True).stdout.split(maxsplit=1)
    return float(out[0]), out[1].strip()


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times = {1: [], 2: []}
    best = {}
    for _ in range(args.repeats):
        for n_jobs in (1, 2):
            seconds, best[n_jobs] = run(n_jobs)
            times[n_jobs].append(seconds)
    result = {"setting": "DiversityLSTM, 4000 texts, glove-50, 3 epochs, 2x2 grid, cv=3, fresh "
                         "process per run (imports included), 1 thread per process",
              "seconds_n_jobs_1": times[1], "seconds_n_jobs_2": times[2],
              "median_n_jobs_1": statistics.median(times[1]),
              "median_n_jobs_2": statistics.median(times[2]),
              "ratio_2_over_1": statistics.median(times[2]) / statistics.median(times[1]),
              "best_params": best, "same_best_params": best[1] == best[2],
              "measured": time.strftime("%Y-%m-%d %H:%M")}
    RESULTS.write_text(json.dumps(result, indent=1))
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
