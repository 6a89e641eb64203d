"""The public API is typed: every public callable is fully annotated, and code using it passes
``mypy --strict``.

* ``test_public_callables_are_fully_annotated``: every function a public package exports, and
  ``__init__`` and every public method the package defines on a class it exports, annotates
  each parameter and its return (``__init__`` excepted), as ``mypy --strict``
  (``disallow_untyped_defs``, ``disallow_incomplete_defs``) asks of the modules users import.
* ``test_strict_type_check_of_code_using_the_api``: ``tests/typing/api_usage.py``, code as a
  strictly typed user writes it, passes ``mypy --strict``: no call reaches an unannotated
  public callable and every annotated result fits its use.
"""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
from test_public_api import public_modules

ROOT = Path(__file__).parents[1]


def public_callables() -> dict[str, object]:
    """Import path -> function of the public API (methods under the class that defines them)."""
    found: dict[str, object] = {}
    for module in public_modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                found[f"{obj.__module__}.{obj.__qualname__}"] = obj
            elif inspect.isclass(obj) and obj.__module__.startswith("interpretable"):
                for klass in obj.__mro__:
                    if not klass.__module__.startswith("interpretable"):
                        continue
                    for attr, value in vars(klass).items():
                        if isinstance(value, (staticmethod, classmethod)):
                            value = value.__func__
                        if inspect.isfunction(value) and (attr == "__init__"
                                                          or not attr.startswith("_")):
                            found[f"{klass.__module__}.{klass.__qualname__}.{attr}"] = value
    return found


def missing_annotations(function) -> list[str]:
    """The parameters (and ``return``) of ``function`` without an annotation."""
    signature = inspect.signature(function)
    missing = [name for name, parameter in signature.parameters.items()
               if name not in ("self", "cls")
               and parameter.annotation is inspect.Parameter.empty]
    if function.__name__ != "__init__" \
            and signature.return_annotation is inspect.Signature.empty:
        missing.append("return")
    return missing


def test_public_callables_are_fully_annotated():
    callables = public_callables()
    assert len(callables) > 350, "the public API was not found"
    incomplete = {path: missing for path, function in callables.items()
                  if (missing := missing_annotations(function))}
    assert not incomplete, f"{len(incomplete)} public callables miss annotations:\n" + \
        "\n".join(f"{path}: {', '.join(names)}" for path, names in sorted(incomplete.items()))


def test_the_annotation_check_has_teeth():
    def untyped(x, y: int = 1):
        return x

    def typed(x: int, *args: str, **kwargs: float) -> int:
        return x

    class Thing:
        def __init__(self, n: int):
            self.n = n

    assert missing_annotations(untyped) == ["x", "return"]
    assert missing_annotations(typed) == []
    assert missing_annotations(Thing.__init__) == []


def test_strict_type_check_of_code_using_the_api(tmp_path):
    pytest.importorskip("mypy")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent",
         "--cache-dir", str(tmp_path / "mypy-cache"), "tests/typing/api_usage.py"],
        cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-2000:]
