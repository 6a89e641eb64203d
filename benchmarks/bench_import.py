"""Cold import time of every estimator against ``import torch``.

Each statement runs in a fresh interpreter (``python -c STATEMENT``), the statements in
interleaved rounds so that load changes hit all alike; the time is the median wall-clock
seconds of the whole process (interpreter start included). Target: every estimator within
1.5x ``import torch``. Beside it the floors ``import torch, sklearn.base`` (every estimator is a
scikit-learn ``BaseEstimator``, and ``sklearn.base`` itself imports scipy.stats and pandas,
with pyarrow) and ``import torch, sklearn.base, skorch`` (the training machinery, imported at
the first fit), and the modules each estimator imports beyond
``torch, sklearn.base`` (``-X importtime``). Writes ``benchmarks/results/bench_import.json``.
"""

import argparse
import json
import re
import statistics
import subprocess
import sys
import time

from ratios import RESULTS, finish_record, run_record, target

import interpretable

GOAL = 1.5
FLOORS = {"torch": "import torch", "torch + sklearn.base": "import torch, sklearn.base",
          "torch + sklearn + skorch": "import torch, sklearn.base, skorch"}


def wall_seconds(statement: str) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", statement], check=True)
    return time.perf_counter() - start


def imported(statement: str) -> dict[str, float]:
    """Top-level packages ``statement`` imports beyond ``import torch, sklearn.base``, with
    their own import seconds (``-X importtime``, one run)."""
    def modules(stmt):
        err = subprocess.run([sys.executable, "-X", "importtime", "-c", stmt], check=True,
                             capture_output=True, text=True).stderr
        return {m[2]: int(m[1]) for m in re.finditer(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)",
                                                     err)}
    floor = modules(FLOORS["torch + sklearn.base"])
    extra: dict[str, float] = {}
    for name, micros in modules(statement).items():
        if name not in floor:
            top = name.split(".")[0]
            extra[top] = round(extra.get(top, 0.0) + micros / 1e6, 4)
    return dict(sorted(extra.items(), key=lambda kv: -kv[1]))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    record = run_record()
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
        **finish_record(record),
        "rounds": args.rounds, "statistic": "median wall-clock seconds of a fresh process",
        "seconds": medians,
        "over_torch": {name: medians[name] / medians["torch"] for name in estimators},
        "floors_over_torch": {name: medians[name] / medians["torch"] for name in FLOORS},
        "over_torch_sklearn": {name: medians[name] / medians["torch + sklearn.base"]
                               for name in estimators},
        "imported_beyond_torch_sklearn_seconds": {name: imported(statements[name])
                                                  for name in estimators},
        "targets": [target(f"import {name} / import torch", medians[name] / medians["torch"],
                           GOAL, at_most=True) for name in estimators],
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bench_import.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("seconds", "over_torch", "floors_over_torch",
                                            "over_torch_sklearn")}, indent=2))


if __name__ == "__main__":
    main()
