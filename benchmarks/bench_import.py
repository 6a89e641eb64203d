"""Cold import time of every estimator against its floor (issue 13).

Each statement runs in a fresh interpreter (``python -c STATEMENT``), the statements in
interleaved rounds so that load changes hit all alike; the time is the median wall-clock
seconds of the whole process (interpreter start included). Floors: ``import torch`` and
``import torch, sklearn.base, skorch`` (what the estimators are built on; scikit-learn itself
imports scipy and pandas). Writes ``benchmarks/results/bench_import.json``.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import interpretable

RESULTS = Path(__file__).parent / "results"
FLOORS = {"torch": "import torch",
          "torch + sklearn + skorch": "import torch, sklearn.base, skorch"}


def wall_seconds(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    statements = dict(FLOORS)
    statements.update({name: f"from interpretable import {name}"
                       for name in interpretable.__all__ if name.endswith(("Classifier", "Model",
                                                                           "Tagger"))})
    times = {name: [] for name in statements}
    wall_seconds("pass")  # warm the file cache for the interpreter itself
    for _ in range(args.rounds):
        for name, statement in statements.items():
            times[name].append(wall_seconds(statement))
    medians = {name: statistics.median(t) for name, t in times.items()}
    estimators = [name for name in statements if name not in FLOORS]
    result = {
        "rounds": args.rounds, "statistic": "median wall-clock seconds of a fresh process",
        "load_average_1_5_15_min": list(os.getloadavg()),
        "seconds": medians,
        "over_torch": {name: medians[name] / medians["torch"] for name in estimators},
        "over_torch_sklearn_skorch": {name: medians[name] / medians["torch + sklearn + skorch"]
                                      for name in estimators},
        "goal_seconds": 3.0,
        "meets_goal": {name: medians[name] <= 3.0 for name in estimators},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_import.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
