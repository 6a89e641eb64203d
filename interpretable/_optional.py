"""Optional dependencies, imported where they are used: a missing one raises an ImportError
(:class:`ModuleNotFoundError`) that names the extra which installs it."""

from __future__ import annotations

import importlib

#: the extra of ``interpretable-models`` that installs each optional top-level module (the
#: extras themselves are declared in pyproject.toml)
EXTRAS = {"transformers": "bert", "polars": "polars", "skops": "tracking", "mlflow": "tracking",
          "accelerate": "scale", "dask": "scale", "distributed": "scale",
          "ipywidgets": "notebook", "gensim": "text-data", "nltk": "text-data",
          "pyarrow": "parquet"}


def import_optional(name: str, purpose: str = "", extra: str | None = None):
    """Import an optional dependency, or say which extra installs it.

    Parameters
    ----------
    name : str
        The module, e.g. ``"transformers"`` or ``"dask.bag"``; its top-level package must be
        one of :data:`EXTRAS` (unless ``extra`` is given).
    purpose : str, default=""
        What needs it (e.g. ``"the MiniLM tokenizer"``), for the message.
    extra : str or None, default=None
        The extra to name when it is not the module's own in :data:`EXTRAS` (e.g.
        ``"text-data"`` for the pyarrow that :func:`~interpretable.datasets.load_glove` reads
        with).

    Returns
    -------
    module
        The imported module.

    Raises
    ------
    ModuleNotFoundError
        If the package is not installed (an ImportError naming the extra:
        ``pip install "interpretable-models[bert]"``). An error raised inside the package
        itself (e.g. one of its own dependencies missing) propagates unchanged.

    Examples
    --------
    >>> from interpretable._optional import EXTRAS, import_optional
    >>> EXTRAS["transformers"]  # what installs it: pip install "interpretable-models[bert]"
    'bert'
    """
    top = name.partition(".")[0]
    extra = extra or EXTRAS[top]
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.partition(".")[0] != top:
            raise
        needs = f"{purpose} needs" if purpose else "this needs"
        raise ModuleNotFoundError(
            f"{needs} the optional dependency {top!r}, which is not installed: "
            f'pip install "interpretable-models[{extra}]" (the {extra!r} extra).',
            name=exc.name) from exc
