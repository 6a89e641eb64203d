"""Constructor parameters declared once, in the signature, and documented once, where they are
introduced."""

from __future__ import annotations

import functools
import inspect
import re
import textwrap

__all__ = ["stores_params", "document_parameters"]

#: the tokens of version 0.1's docstrings, now filled from ``_parameter_docs`` (removed)
_TOKENS = re.compile(r"^[ \t]*\{(training_parameters|class_weight)\}[ \t]*\n", re.MULTILINE)


def stores_params(init):
    """Make an ``__init__`` store every argument unchanged under its own name.

    Parameters
    ----------
    init : callable
        An ``__init__`` whose signature declares the parameters (its body is not run).

    Returns
    -------
    callable
        The ``__init__``: it stores the arguments and does nothing else (no validation, no
        computation; ``fit`` validates), scikit-learn's convention. ``get_params`` and
        ``clone`` read the same signature (``inspect.signature`` follows the wrapper to it).

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from interpretable.estimators.params import stores_params
    >>> class Model(BaseEstimator):
    ...     @stores_params
    ...     def __init__(self, hidden_size=128, *, lr=1e-3):
    ...         \"\"\"Store the parameters (see the class docstring).\"\"\"
    >>> Model(64).get_params()
    {'hidden_size': 64, 'lr': 0.001}
    """
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    return __init__


def _is_header(lines: list[str], i: int, indent: str) -> bool:
    """Whether ``lines[i]`` starts a numpydoc section (a title underlined with dashes)."""
    return (i + 1 < len(lines) and lines[i].startswith(indent) and lines[i].strip() != ""
            and not lines[i][len(indent)].isspace() and set(lines[i + 1].strip()) == {"-"})


def _entries(lines: list[str], indent: str) -> dict[str, list[str]]:
    """The entries ``name : type`` (with their indented descriptions) of a Parameters list
    written at ``indent``, dedented, by name."""
    entries: dict[str, list[str]] = {}
    for line in lines:
        if line.strip() and not line[len(indent):][:1].isspace():
            current = entries.setdefault(line.strip().split(" :")[0], [])
        elif not entries:
            continue
        current.append(line[len(indent):].rstrip())
    return {name: textwrap.dedent("\n".join(body)).strip("\n").splitlines()
            for name, body in entries.items()}


def _parameters_section(doc: str) -> tuple[list[str], int, int, str]:
    """``(lines, start, end, indent)``: the lines of ``doc`` and the span of its Parameters
    list (after the underline; ``start == end`` where the section is missing: the place a
    new one goes)."""
    lines = doc.expandtabs().split("\n")
    indent = min((line[:len(line) - len(line.lstrip())] for line in lines[1:] if line.strip()),
                 default="", key=len)
    headers = [i for i in range(len(lines)) if _is_header(lines, i, indent)]
    titled = [i for i in headers if lines[i].strip() == "Parameters"]
    if not titled:
        at = headers[0] if headers else len(lines)
        return lines, at, at, indent
    start = titled[0] + 2
    end = next((i for i in headers if i > titled[0]), len(lines))
    while end > start and not lines[end - 1].strip():
        end -= 1
    return lines, start, end, indent


def document_parameters(cls) -> str | None:
    """Document every parameter of a class's ``__init__``, in signature order.

    Parameters
    ----------
    cls : type
        A class whose docstring's Parameters section documents the parameters it introduces.

    Returns
    -------
    str or None
        The docstring with a Parameters section holding, for each parameter of the signature,
        the class's own entry, or else the entry of the nearest class along the MRO that
        documents it: in its ``_parameter_docs`` (a numpydoc parameter list: how the family
        bases document the parameters they introduce) or its docstring. Entries for names
        the signature lacks stay at the end.

    Examples
    --------
    >>> from interpretable.estimators.params import document_parameters, stores_params
    >>> class Base:
    ...     _parameter_docs = "lr : float\\n    Learning rate.\\n"
    >>> class Model(Base):
    ...     \"\"\"A model.
    ...
    ...     Parameters
    ...     ----------
    ...     depth : int
    ...         Number of layers.
    ...     \"\"\"
    ...     @stores_params
    ...     def __init__(self, depth=2, lr=0.1):
    ...         \"\"\"Store the parameters (see the class docstring).\"\"\"
    >>> print(document_parameters(Model))
    A model.
    <BLANKLINE>
        Parameters
        ----------
        depth : int
            Number of layers.
        lr : float
            Learning rate.
    <BLANKLINE>
    """
    doc = vars(cls).get("__doc__")
    if doc is None:
        return None
    lines, start, end, indent = _parameters_section(_TOKENS.sub("", doc))
    own = _entries(lines[start:end], indent)
    inherited: dict[str, list[str]] = {}
    for klass in reversed(cls.__mro__[1:]):
        for source in (vars(klass).get("_parameter_docs"), vars(klass).get("__doc__")):
            if source and source is vars(klass).get("_parameter_docs"):
                inherited.update(_entries(source.split("\n"), ""))
            elif source:
                found, a, b, at = _parameters_section(source)
                inherited.update(_entries(found[a:b], at))
    names = [n for n, p in inspect.signature(cls.__init__).parameters.items()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)][1:]
    chosen = [own.get(n) or inherited.get(n) for n in names] + \
        [entry for n, entry in own.items() if n not in names]
    body = [indent + line if line else line for entry in chosen if entry for line in entry]
    header = [] if start != end or any(lines[start - 1:start]) and lines[start - 1].strip() \
        == "-" * 10 else [indent + "Parameters", indent + "-" * 10]
    gap = [""] if end < len(lines) and start == end and not header == [] else []
    return "\n".join(lines[:start] + header + body + ([""] if end < len(lines) else []) + gap
                     + lines[end:]).rstrip() + ("\n" + indent if doc.endswith(" ") else "\n")
