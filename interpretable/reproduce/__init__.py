"""One module per paper: ``run(quick: bool, **options) -> dict``, optional
``add_arguments(parser)`` and ``demo()``. Used by ``python -m interpretable``."""

from __future__ import annotations

import json
import pkgutil
from importlib import import_module
from pathlib import Path

__all__ = ["available", "load", "write_results"]


def available() -> list[str]:
    """Names usable with ``python -m interpretable reproduce NAME`` (``_`` shown as ``-``)."""
    return sorted(
        m.name.replace("_", "-") for m in pkgutil.iter_modules(__path__) if not m.name.startswith("_")
    )


def load(name: str):
    """The module of reproduction ``name`` (one of :func:`available`)."""
    if name not in available():
        raise ValueError(f"unknown reproduction {name!r}; choose one of {available()}")
    return import_module(f"{__name__}.{name.replace('-', '_')}")


def write_results(name: str, results: dict, directory: str | Path = "benchmarks/results") -> Path:
    """Write ``results`` as indented JSON to ``directory/<name>.json`` and return the path."""
    path = Path(directory) / f"{name.replace('-', '_')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=float))
    return path
