"""What the speed benchmarks share: interleaved timing, the run's record (machine, load,
versions, command) and speed targets.

Every speed claim is a ratio of two timings taken side by side in one run: the callables run in
interleaved rounds, so load from other processes hits them alike, and each time is a median
over the rounds. A benchmark's JSON holds ``"targets"``, rows of :func:`target`, which
``python -m benchmarks`` gathers into its summary table.
"""
from __future__ import annotations

import os
import platform
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).parent / "results"


def timed(fns: dict[str, Callable[[], object]], rounds: int, warmup: int = 1
          ) -> tuple[dict[str, float], dict[str, float]]:
    """Median wall-clock and process-CPU seconds of each callable over interleaved rounds
    (after ``warmup`` untimed calls of each). Each round starts one callable further along, so
    that no callable always runs after the same one (a call that frees much memory or evicts
    the caches slows the next)."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    wall = {name: [] for name in fns}
    cpu = {name: [] for name in fns}
    items = list(fns.items())
    for round_ in range(rounds):
        shift = round_ % len(items)
        for name, fn in items[shift:] + items[:shift]:
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            fn()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start_wall)
    return ({name: statistics.median(t) for name, t in wall.items()},
            {name: statistics.median(t) for name, t in cpu.items()})


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def git_commit() -> str | None:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, cwd=Path(__file__).parent, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def run_record(**versions) -> dict:
    """Machine, device, load, versions and the exact command of this run (the load average is
    the one at the start; call :func:`finish_record` at the end)."""
    import torch

    pythonpath = os.environ.get("PYTHONPATH")
    return {
        "command": " ".join(shlex.quote(a) for a in [
            *([f"PYTHONPATH={pythonpath}"] if pythonpath else []), sys.executable, *sys.argv]),
        "git_commit": git_commit(),
        "machine": {"platform": platform.platform(), "cpu": cpu_model(),
                    "logical_cpus": os.cpu_count()},
        "device": "cpu (no GPU measured)",
        "threads": torch.get_num_threads(),
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     **versions},
        "load_average_1_5_15_min_at_start": list(os.getloadavg()),
    }


def finish_record(record: dict) -> dict:
    record["load_average_1_5_15_min_at_end"] = list(os.getloadavg())
    return record


def target(name: str, value: float, goal: float, *, at_most: bool = False,
           unit: str = "x") -> dict:
    """One summary row: ``value`` against ``goal`` (``value >= goal``, or ``<=`` with
    ``at_most``)."""
    met = value <= goal if at_most else value >= goal
    return {"name": name, "value": round(value, 3), "goal": f"{'<=' if at_most else '>='} "
            f"{goal:g}{unit}", "met": bool(met)}
