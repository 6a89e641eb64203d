"""One module per paper: ``run(quick: bool, **options) -> dict``, optional
``add_arguments(parser)`` and ``demo()``. Used by ``python -m interpretable``."""

from __future__ import annotations

import json
import os
import pkgutil
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from types import ModuleType

__all__ = ["available", "default_results_dir", "load", "write_results"]


def available() -> list[str]:
    """Return the names usable with ``python -m interpretable reproduce NAME``.

    Returns
    -------
    list of str
        The reproductions (``_`` shown as ``-``), sorted.

    Examples
    --------
    >>> from interpretable.reproduce import available
    >>> "isan" in available(), "diversity-lstm" in available()
    (True, True)
    """
    return sorted(
        m.name.replace("_", "-")
        for m in pkgutil.iter_modules(__path__)
        if not m.name.startswith("_")
    )


def load(name: str) -> ModuleType:
    """Return the module of a reproduction.

    Parameters
    ----------
    name : str
        One of :func:`available`.

    Returns
    -------
    module
        The module (``run(quick, **options) -> dict``, optional ``add_arguments(parser)`` and
        ``demo()``).

    Raises
    ------
    ValueError
        If ``name`` is unknown.

    Examples
    --------
    >>> from interpretable.reproduce import load
    >>> load("isan").__name__
    'interpretable.reproduce.isan'
    """
    if name not in available():
        raise ValueError(f"unknown reproduction {name!r}; choose one of {available()}")
    return import_module(f"{__name__}.{name.replace('-', '_')}")


def default_results_dir() -> Path:
    """Return the folder reproductions write to unless told otherwise (``--out``).

    ``interpretable/results`` in the user's data folder (``$XDG_DATA_HOME``, else
    ``~/.local/share``): never the working directory or the package.

    Returns
    -------
    pathlib.Path
        The folder (not created here).

    Examples
    --------
    >>> from interpretable.reproduce import default_results_dir
    >>> default_results_dir().parts[-2:]
    ('interpretable', 'results')
    """
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data) / "interpretable" / "results"


def write_results(name: str, results: dict, directory: str | Path | None = None) -> Path:
    """Write results as indented JSON to ``directory/<name>.json``.

    Parameters
    ----------
    name : str
        The reproduction.
    results : dict
        JSON-compatible results (numbers that JSON lacks are written as floats).
    directory : str, Path or None, default=None
        The folder (created if needed); None: :func:`default_results_dir`.

    Returns
    -------
    pathlib.Path
        The file.

    Examples
    --------
    >>> from interpretable.reproduce import write_results
    >>> write_results("isan", {"bits_per_char": 2.5}, directory="results")
    PosixPath('results/isan.json')
    """
    folder = default_results_dir() if directory is None else Path(directory)
    path = folder / f"{name.replace('-', '_')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, default=float))
    return path
