"""Run every benchmark script (or those named), then print the summary table of every speed
target: ``python -m benchmarks [NAME ...]``; ``python -m benchmarks --summary`` prints the table
from the JSON files already in ``benchmarks/results`` (e.g. ``bcos_package.json``, written by
``make bench-bcos-package`` in the ``bcos`` venv)."""

import json
import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent


def summary() -> None:
    """One row per target of every result file that records targets: the measured ratio, its
    goal, met / MISSED, and the file with the machine load and command it came from."""
    rows = []
    for path in sorted((here / "results").glob("*.json")):
        result = json.loads(path.read_text())
        targets = result.get("targets") if isinstance(result, dict) else None
        if isinstance(targets, list):  # rows of benchmarks/ratios.py's target()
            load = result.get("load_average_1_5_15_min_at_start", [None])[0]
            rows += [(row, path.name, load) for row in targets]
    if not rows:
        print("no result file records targets yet")
        return
    width = max(len(row["name"]) for row, _, _ in rows)
    print(f"\n{'target':<{width}}  {'value':>8}  {'goal':>9}  {'':6}  result file (load avg)")
    for row, name, load in rows:
        value = f"{row['value']:.3g}" if abs(row["value"]) < 1000 else f"{row['value']:.0f}"
        load = "?" if load is None else f"{load:.1f}"
        print(f"{row['name']:<{width}}  {value:>8}  {row['goal']:>9}  "
              f"{'met' if row['met'] else 'MISSED':6}  {name} ({load})")


def main() -> None:
    args = sys.argv[1:]
    if args != ["--summary"]:
        scripts = sorted(here.glob("bench_*.py"))
        if args:
            scripts = [s for s in scripts if any(w in s.stem for w in args)]
        failed = []
        for script in scripts:
            print(f"== {script.name}", flush=True)
            if subprocess.call([sys.executable, str(script)]) != 0:
                failed.append(script.name)
        if failed:
            summary()
            sys.exit(f"failed: {', '.join(failed)}")
    summary()


main()
