"""How long operations report on themselves: log messages and progress bars.

The package reports through :mod:`logging`, each module under its own logger
(``interpretable.estimators.core._nets`` for the epoch table, ``interpretable.reproduce.seat`` for
a reproduction's progress, ...), and adds no handler, not even a ``NullHandler``: whether a
handler is configured decides where a message goes. What ``verbose`` asks for is shown
without any set-up, as scikit-learn users expect:

* messages (the epoch table of ``fit``, early stopping, the phases of a two-phase fit, the
  progress lines of the reproductions) go to the logging handlers when logging is configured
  to take them (a handler on the logger's way and INFO enabled, e.g.
  ``logging.basicConfig(level=logging.INFO)``), else they are printed to standard output (in
  color only on a terminal), as skorch prints them;
* progress bars (tqdm: a widget in Jupyter, text on a terminal) over the batches of every
  epoch of ``fit`` and of ``explain``, and over the samples of chunked exports, are drawn on
  standard error when it is a terminal or in a Jupyter kernel (never into log files or
  captured output).

``verbose=0`` (the default) shows neither.

Examples
--------
>>> from interpretable import EmbeddingBagClassifier
>>> X, y = ["a great film", "an awful plot"] * 4, ["pos", "neg"] * 4
>>> clf = EmbeddingBagClassifier(max_epochs=2, random_state=0, verbose=1).fit(X, y)
... # doctest: +ELLIPSIS
  epoch    train_loss     dur
-------  ------------  ------
      1        ...
      2        ...
"""

from __future__ import annotations

import contextvars
import importlib.util
import logging
import re
import sys

#: whether the batching loop of the estimators draws a progress bar (set per ``explain`` call
#: and thread from the estimator's ``verbose``; the bar is drawn only when :func:`interactive`)
SHOW_PROGRESS = contextvars.ContextVar("interpretable_explain_progress", default=False)
_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def report(logger: logging.Logger, message: str) -> None:
    """Show a message that ``verbose`` asked for.

    Parameters
    ----------
    logger : logging.Logger
        The logger of the reporting module.
    message : str
        One line or several, possibly with ANSI color codes (skorch's epoch table).

    See Also
    --------
    interactive : Whether progress bars are drawn.

    Notes
    -----
    The message is logged at INFO by ``logger`` when logging takes it (INFO enabled and a
    handler on the logger's way), else printed to standard output; color codes are kept
    only when printing to a terminal.

    Examples
    --------
    >>> import logging
    >>> from interpretable._progress import report
    >>> report(logging.getLogger("interpretable.example"), "phase 1/2")
    phase 1/2
    """
    if logger.isEnabledFor(logging.INFO) and logger.hasHandlers():
        logger.info(_ANSI_ESCAPE.sub("", message))
    else:
        print(message if sys.stdout.isatty() else _ANSI_ESCAPE.sub("", message), flush=True)


def _in_jupyter() -> bool:
    """Whether this runs in a Jupyter (IPython) kernel, as tqdm.autonotebook decides."""
    ipython = sys.modules.get("IPython")
    shell = None if ipython is None else ipython.get_ipython()
    return shell is not None and "IPKernelApp" in shell.config


def interactive() -> bool:
    """Tell whether progress bars can be drawn.

    Returns
    -------
    bool
        True when standard error is a terminal or the code runs in a Jupyter kernel.

    Examples
    --------
    >>> from interpretable._progress import interactive
    >>> interactive()  # under the test runner: neither
    False
    """
    return sys.stderr.isatty() or _in_jupyter()


def _notebook_widgets() -> bool:
    """Whether tqdm can draw its widget: a Jupyter kernel with ipywidgets installed."""
    return _in_jupyter() and importlib.util.find_spec("ipywidgets") is not None


def progress_bar(iterable=None, **options):
    """Make a progress bar that disappears when done.

    Parameters
    ----------
    iterable : iterable or None, default=None
        What the bar iterates over (None: call ``update`` on the bar).
    **options
        Options of ``tqdm`` (``total``, ``desc``, ``unit``, ...).

    Returns
    -------
    tqdm.tqdm
        A widget in a Jupyter kernel (tqdm.notebook, when ipywidgets is installed), else
        tqdm's text bar on standard error.

    Examples
    --------
    >>> from interpretable._progress import progress_bar
    >>> sum(progress_bar(range(3), desc="counting", disable=True))
    3
    """
    if _notebook_widgets():
        from tqdm.notebook import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm(iterable, leave=False, **options)
