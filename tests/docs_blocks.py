"""Runs the ``python`` blocks of Markdown files (used by ``tests/test_docs.py``).

    python tests/docs_blocks.py RESULTS.json WORKDIR FILE.md ...

Each file's blocks run in order in one namespace (a fresh ``__main__`` module), in their own
process with its own working directory in WORKDIR. The processes are forked from this
one after it has imported torch, scikit-learn, pandas, matplotlib and the package, so that the
import (about 5 s here) is paid once; three files run at a time (on 2 cores: the blocks also
wait, on worker processes and files). A block whose first line starts
with ``# not run by the docs tests:`` (followed by the reason: a download, a GPU) is skipped.
A file with a block that imports torchvision or timm runs with the real packages
(``tests/_real_vision.py``).
RESULTS.json gets, per file: ``returncode``, ``seconds``, ``blocks_run``, ``not_run`` (the
reasons), ``output`` (the end of its stdout and stderr) and ``workdir``.
"""

from __future__ import annotations

import builtins
import json
import os
import re
import sys
import textwrap
import time
import traceback
import types
from pathlib import Path

FENCE = re.compile(r"^( *)```python[ \t]*\n(.*?)^\1```", re.MULTILINE | re.DOTALL)
NOT_RUN = "# not run by the docs tests:"
#: a block that imports torchvision or timm: its file's process gets the real packages first
#: (``tests/_real_vision.py``; they live outside the venv's packages)
LIBRARY_IMPORT = re.compile(r"^\s*(import|from)\s+(torchvision|timm)\b", re.MULTILINE)
PARALLEL = 3


def python_blocks(text: str) -> list[tuple[int, str]]:
    """``(line number of the fence, code)`` for every ```python block, indented ones included."""
    return [(text.count("\n", 0, match.start()) + 1, textwrap.dedent(match.group(2)))
            for match in FENCE.finditer(text)]


def _run_file(path: Path, workdir: Path) -> int:
    """In the child: run the blocks, report to ``workdir/.result.json``; the exit status."""
    os.chdir(workdir)
    main = types.ModuleType("__main__")       # no __file__: spawned workers re-run nothing
    main.__builtins__ = builtins
    sys.modules["__main__"] = main
    run, skipped, status = 0, [], 0
    blocks = python_blocks(path.read_text(encoding="utf-8"))
    if any(LIBRARY_IMPORT.search(code) for _, code in blocks if not code.startswith(NOT_RUN)):
        from _real_vision import real_vision  # the real torchvision and timm (test-only)

        real_vision()
    for line, code in blocks:
        if code.startswith(NOT_RUN):
            skipped.append(f"{path.name}:{line}: {code.splitlines()[0][len(NOT_RUN):].strip()}")
            continue
        try:
            exec(compile(code, f"{path.name}, block at line {line}", "exec"), main.__dict__)
            run += 1
        except BaseException:  # noqa: BLE001 -- report whatever the block raised
            traceback.print_exc()
            status = 1
            break
    (workdir / ".result.json").write_text(json.dumps({"blocks_run": run, "not_run": skipped}))
    return status


def _child(path: Path, workdir: Path) -> None:
    log = os.open(workdir / ".output.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    os.dup2(log, 1)
    os.dup2(log, 2)
    try:
        status = _run_file(path, workdir)
    except BaseException:  # noqa: BLE001
        traceback.print_exc()
        status = 2
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)


def _preload() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot  # noqa: F401
    import pandas  # noqa: F401
    import sklearn.pipeline  # noqa: F401
    import torch

    torch.set_num_threads(1)
    import interpretable
    import interpretable.estimators.core._nets  # noqa: F401 -- skorch, imported at the first fit
    import interpretable.estimators.methods  # noqa: F401
    import interpretable.metrics  # noqa: F401

    for name in interpretable.__all__:
        getattr(interpretable, name)


def main(results_path: str, workdir: str, *files: str) -> None:
    _preload()
    pending = [(i, Path(f).resolve()) for i, f in enumerate(files)]
    running: dict[int, tuple[Path, Path, float]] = {}
    results = {}
    while pending or running:
        while pending and len(running) < PARALLEL:
            i, path = pending.pop(0)
            folder = Path(workdir).resolve() / f"{i:02d}-{path.stem}"
            folder.mkdir(parents=True, exist_ok=True)
            sys.stdout.flush()
            sys.stderr.flush()
            pid = os.fork()
            if pid == 0:
                _child(path, folder)
            running[pid] = (path, folder, time.perf_counter())
        pid, status = os.wait()
        path, folder, start = running.pop(pid)
        report_file = folder / ".result.json"
        report = json.loads(report_file.read_text()) if report_file.exists() else {}
        output = (folder / ".output.txt").read_text(errors="replace")
        results[str(path)] = {"returncode": os.waitstatus_to_exitcode(status),
                              "seconds": round(time.perf_counter() - start, 2),
                              "blocks_run": report.get("blocks_run", 0),
                              "not_run": report.get("not_run", []),
                              "output": output[-6000:], "workdir": str(folder)}
    Path(results_path).write_text(json.dumps(results, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main(*sys.argv[1:])
