"""The public API is exactly the documented one.

* Public names: ``interpretable.__all__`` and the ``__all__`` of every module of the package
  whose dotted path has no component starting with ``_`` (a module without ``__all__`` exports
  nothing). An object re-exported by a package (``interpretable.explanation.TokenExplanation``,
  defined in ``interpretable.explanation._base``) is one API entry, whichever public path
  documents it.
* Documented names: the entries of docs/api.rst's ``autosummary`` tables and ``auto*``
  directives, qualified by the ``currentmodule`` they appear under.
* ``test_documented_names_are_public``: every documented name imports, under a path without
  a ``_`` component, and is a public name.
* ``test_public_names_are_documented``: every public object is documented, under one of its
  public paths.
* ``test_the_check_catches_both_directions``: the same checks on a made-up package and page
  report an undocumented name, a documented name that is not public and one under a private
  path.
"""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
import re
import sys
import types
from pathlib import Path

import interpretable

API_PAGE = Path(__file__).parents[1] / "docs" / "api.rst"



def public_modules(package: types.ModuleType = interpretable) -> list[types.ModuleType]:
    """The package and each of its modules whose dotted path has no ``_`` component."""
    names = [package.__name__] + [
        info.name for info in pkgutil.walk_packages(package.__path__, package.__name__ + ".")]
    return [importlib.import_module(name) for name in names
            if not any(part.startswith("_") for part in name.split("."))]


def api_key(obj: object, name: str) -> tuple:
    """One API entry per object: a class, function or module by identity, any other value
    (a constant) by identity and name (two constants that happen to be one interned string
    or small int are two entries)."""
    if isinstance(obj, (type, types.FunctionType, types.ModuleType)):
        return (id(obj),)
    return (id(obj), name)


def public_names(modules: list[types.ModuleType]) -> dict[tuple, list[str]]:
    """API entry -> the public paths it is exported under (sorted, shortest first)."""
    entries: dict[tuple, list[str]] = {}
    for module in modules:
        for name in getattr(module, "__all__", ()):
            path = f"{module.__name__}.{name}"
            entries.setdefault(api_key(getattr(module, name), name), []).append(path)
    return {key: sorted(paths, key=lambda p: (p.count("."), p)) for key, paths in entries.items()}


def documented_names(rst: str) -> list[str]:
    """The fully qualified names an API page documents: the entries of its ``autosummary``
    tables and the targets of its ``autofunction`` / ``autoclass`` / ``automodule`` /
    ... directives, each under the ``currentmodule`` before it."""
    names: list[str] = []
    current = ""
    in_table = False
    for line in rst.splitlines():
        stripped = line.strip()
        if in_table:
            if line[:1] in (" ", "\t") or not stripped:
                if stripped and not stripped.startswith(":"):
                    names.append(f"{current}.{stripped}" if current else stripped)
                continue
            in_table = False
        if match := re.fullmatch(r"\.\. currentmodule::\s*(\S+)", stripped):
            current = "" if match[1] == "None" else match[1]
        elif match := re.fullmatch(r"\.\. auto(?!summary)\w+::\s*(\S+)", stripped):
            target = match[1]
            names.append(target if "." in target or not current else f"{current}.{target}")
        elif stripped == ".. autosummary::":
            in_table = True
    return names


def resolve(path: str) -> object:
    """The object at a dotted import path, found as autosummary finds it: an attribute of the
    module before the last dot (``interpretable.metrics._plausibility`` is the function the
    package exports, not its module), else attribute by attribute from the package,
    importing a submodule where no attribute has its name yet."""
    module_name, _, name = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError):
        pass
    parts = path.split(".")
    obj = importlib.import_module(parts[0])
    for depth, part in enumerate(parts[1:], start=2):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            if not isinstance(obj, types.ModuleType):
                raise
            obj = importlib.import_module(".".join(parts[:depth]))
    return obj


def undocumented(public: dict[tuple, list[str]], documented: list[str]) -> list[str]:
    """The public entries no documented name resolves to, each by its first public path."""
    found = set()
    for path in documented:
        with contextlib.suppress(ImportError, AttributeError):
            found.add(api_key(resolve(path), path.rpartition(".")[2]))
    return sorted(paths[0] for key, paths in public.items() if key not in found)


def not_public(public: dict[tuple, list[str]], documented: list[str]) -> list[str]:
    """The documented names that do not import, sit under a ``_`` path or are no public
    name."""
    wrong = []
    for path in documented:
        try:
            key = api_key(resolve(path), path.rpartition(".")[2])
        except (ImportError, AttributeError) as error:
            wrong.append(f"{path} (does not import: {error})")
            continue
        if any(part.startswith("_") for part in path.split(".")):
            wrong.append(f"{path} (a private path)")
        elif key not in public:
            wrong.append(f"{path} (in no public module's __all__)")
    return wrong


def offenders() -> tuple[list[str], list[str]]:
    """(documented names that are not public, public names that are not documented) of the
    package and docs/api.rst."""
    public = public_names(public_modules())
    documented = documented_names(API_PAGE.read_text(encoding="utf-8"))
    assert len(documented) > 150, "the API page's tables were not found"
    return not_public(public, documented), undocumented(public, documented)


def test_documented_names_are_public():
    wrong = offenders()[0]
    assert not wrong, "documented in docs/api.rst but not public:\n" + "\n".join(wrong)


def test_public_names_are_documented():
    missing = offenders()[1]
    assert not missing, ("public but not in docs/api.rst (document them, or take them out of "
                         "__all__):\n" + "\n".join(missing))


def _made_up_package(monkeypatch) -> types.ModuleType:
    """``made_up`` exporting ``documented``, ``undocumented`` and ``Thing`` (defined in its
    private module ``made_up._impl``, beside ``helper``)."""
    impl = types.ModuleType("made_up._impl")
    impl.Thing, impl.helper = type("Thing", (), {}), lambda: None
    package = types.ModuleType("made_up")
    package.documented, package.undocumented = (lambda: None), (lambda: None)
    package.Thing, package._impl = impl.Thing, impl
    package.__all__ = ["Thing", "documented", "undocumented"]
    monkeypatch.setitem(sys.modules, "made_up", package)
    monkeypatch.setitem(sys.modules, "made_up._impl", impl)
    return package


PAGE = """
.. currentmodule:: made_up

.. autosummary::
   :toctree: generated
   :nosignatures:

   documented
   Thing
   _impl.helper

.. autofunction:: made_up.missing
"""


def test_the_check_catches_both_directions(monkeypatch):
    public = public_names([_made_up_package(monkeypatch)])
    documented = documented_names(PAGE)
    assert documented == ["made_up.documented", "made_up.Thing", "made_up._impl.helper",
                          "made_up.missing"]
    assert undocumented(public, documented) == ["made_up.undocumented"]
    assert [entry.split(" (")[0] for entry in not_public(public, documented)] == [
        "made_up._impl.helper", "made_up.missing"]
    # a re-export is one entry, documented under any of its public paths
    assert undocumented(public, ["made_up.Thing", "made_up.documented",
                                 "made_up.undocumented"]) == []
    assert not_public(public, ["made_up._impl.Thing"]) == ["made_up._impl.Thing (a private path)"]


def test_every_public_module_is_a_package_or_a_reproduction():
    """Implementation modules are private: the public import paths are the packages (whose
    ``__init__`` is their face) and the reproductions ``reproduce.load(name)`` returns; a new
    module is ``_name.py`` unless it is one of those."""
    modules = public_modules()
    loose = sorted(module.__name__ for module in modules
                   if not hasattr(module, "__path__")
                   and not module.__name__.startswith("interpretable.reproduce."))
    assert loose == [], f"public modules that are not packages: {loose}"
    reproductions = sorted(module.__name__.rpartition(".")[2].replace("_", "-")
                           for module in modules
                           if module.__name__.startswith("interpretable.reproduce."))
    assert reproductions == interpretable.reproduce.available()
    assert len(modules) == 27


def test_no_package_exports_a_name_twice():
    """No two objects share a public name across the packages users import names from
    (a name means one thing wherever it is imported)."""
    seen: dict[str, object] = {}
    clashes = []
    for module in public_modules():
        if module.__name__.startswith("interpretable.reproduce"):
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if name in seen and seen[name] is not obj:
                clashes.append(f"{module.__name__}.{name}")
            seen.setdefault(name, obj)
    assert not clashes, clashes


def test_every_all_lists_each_name_once():
    repeated = {module.__name__: [name for name in set(module.__all__)
                                  if module.__all__.count(name) > 1]
                for module in public_modules() if hasattr(module, "__all__")}
    assert not any(repeated.values()), repeated
