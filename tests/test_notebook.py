"""Notebook use: the views display in a fresh Jupyter kernel, ``verbose`` reports
through logging or standard output, and progress bars are drawn only when interactive."""

import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import nbclient
import nbformat
import numpy as np
from conformance.cases import _TINY_BERT, _TINY_VIT, _digits, _parentheses, _sentiment
from IPython.core.formatters import DisplayFormatter
from matplotlib.figure import Figure

from interpretable import (
    BcosTextClassifier,
    BcosViTClassifier,
    EmbeddingBagClassifier,
    ISANSequenceTagger,
    _progress as progress,
)
from interpretable.explanation import global_explanation
from interpretable.integrations._streaming import explanations_to_frame

ROOT = Path(__file__).resolve().parents[1]


def _mime_types(obj) -> set:
    """The MIME types IPython's display formatter (a kernel's, minus the inline backend)
    gives ``obj``."""
    return set(DisplayFormatter().format(obj)[0])


def _text_model(**params):
    X, y, _ = _sentiment(32)
    return EmbeddingBagClassifier(**{"embed_dim": 4, "max_epochs": 2, "batch_size": 8,
                                     "random_state": 0, **params}).fit(X, y), X


# ---------------------------------------------------------------------------- display
def test_every_view_displays_as_html_and_every_figure_as_png():
    clf, X = _text_model()
    images, labels, test = _digits(40)
    vit = BcosViTClassifier(**{**_TINY_VIT, "max_epochs": 1}).fit(images, labels)
    sequences, tags, _ = _parentheses()
    tagger = ISANSequenceTagger(hidden_size=4, max_epochs=1, min_count=1,
                                random_state=0).fit(sequences, tags)
    bert = BcosTextClassifier(checkpoint=dict(_TINY_BERT), max_length=16, max_epochs=1,
                              random_state=0).fit(X[:8], ["pos", "neg"] * 4)
    pieces = bert.explain(X[:2])
    assert type(pieces).__name__ == "WordPieceExplanation"
    text, image, sequence = clf.explain(X[:3]), vit.explain(test[:2]), tagger.explain(
        sequences[:2])
    corpus = global_explanation(clf, X)
    for view in (text, image, sequence, corpus, pieces):
        assert "text/html" in _mime_types(view), type(view).__name__
    figures = [image.plot(), image.plot("contributions"), sequence.plot(), corpus.plot()]
    for figure in figures:
        assert isinstance(figure, Figure)
        png = DisplayFormatter().format(figure)[0]["image/png"]
        assert png.startswith(b"\x89PNG")
    assert "image/png" not in _mime_types(Figure())  # what plain matplotlib figures lack


def test_views_leave_pyplot_alone():
    """Building, displaying and embedding a figure never imports pyplot (no global figure
    registry outside notebooks, nothing shown twice by the inline backend)."""
    code = ("import sys; from IPython.core.formatters import DisplayFormatter\n"
            "from interpretable import EmbeddingBagClassifier\n"
            "from interpretable.explanation import global_explanation\n"
            "X, y = ['a great film', 'an awful plot'] * 4, ['pos', 'neg'] * 4\n"
            "clf = EmbeddingBagClassifier(max_epochs=1).fit(X, y)\n"
            "corpus = global_explanation(clf, X)\n"
            "DisplayFormatter().format(corpus.plot(min_count=1)); corpus.to_html(min_count=1)\n"
            "assert 'matplotlib.pyplot' not in sys.modules, 'pyplot imported'\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


# ---------------------------------------------------------------------------- logging
def test_the_epoch_table_is_logged_when_logging_takes_info(caplog, capsys):
    caplog.set_level(logging.INFO, logger="interpretable")
    _text_model(verbose=1)
    table = [r for r in caplog.records if r.name == "interpretable.estimators.core._nets"]
    assert table and "train_loss" in table[0].getMessage()
    assert all(r.levelno == logging.INFO and "\x1b" not in r.getMessage() for r in table)
    assert capsys.readouterr().out == ""


def test_early_stopping_reports_through_logging_too(caplog, capsys):
    caplog.set_level(logging.INFO, logger="interpretable")
    clf, _ = _text_model(verbose=1, lr=1e-9, max_epochs=6, early_stopping=True,
                         n_iter_no_change=1)
    assert len(clf.history_) < 6  # stopped: no improvement beyond skorch's threshold
    assert "Stopping since train_loss has not improved" in caplog.text
    assert capsys.readouterr().out == ""


def test_the_epoch_table_is_printed_without_logging_and_verbose_0_reports_nothing(
        caplog, capsys):
    _text_model(verbose=1)
    assert "train_loss" in capsys.readouterr().out  # as before: logging takes no INFO
    assert not caplog.records
    caplog.set_level(logging.INFO, logger="interpretable")
    _text_model()[0].explain(["a great film"] * 20, batch_size=4)
    assert not caplog.records
    captured = capsys.readouterr()
    assert captured.out == "" and captured.err == ""


# ---------------------------------------------------------------------------- progress
def _force_jupyter(monkeypatch):
    """``interactive()`` True as in a Jupyter kernel, with tqdm's text bar on standard error
    (the bar drawn there when ipywidgets is not installed)."""
    monkeypatch.setattr(progress, "_in_jupyter", lambda: True)
    monkeypatch.setattr(progress, "_notebook_widgets", lambda: False)
    assert progress.interactive()


def test_no_progress_bar_when_not_interactive(capsys):
    clf, X = _text_model(verbose=1)
    clf.explain(X, batch_size=4)
    explanations_to_frame(clf, X, chunk_size=8)
    assert capsys.readouterr().err == ""


def test_no_progress_bar_with_verbose_0_even_when_interactive(monkeypatch, capsys):
    _force_jupyter(monkeypatch)
    clf, X = _text_model()
    clf.explain(X, batch_size=4)
    explanations_to_frame(clf, X, chunk_size=8)
    assert capsys.readouterr().err == ""


def test_progress_bars_over_fit_explain_and_chunked_exports_when_interactive(monkeypatch,
                                                                             capsys):
    _force_jupyter(monkeypatch)
    clf, X = _text_model(verbose=1)
    err = capsys.readouterr().err
    assert "epoch 1" in err and "/4 [" in err  # 32 samples, batches of 8
    quiet = _text_model()[0].explain(X, batch_size=4)
    shown = clf.explain(X, batch_size=4)
    assert "EmbeddingBagClassifier.explain" in capsys.readouterr().err
    assert progress.SHOW_PROGRESS.get() is False  # set for the call only
    for a, b in zip(quiet.values, shown.values, strict=True):
        np.testing.assert_array_equal(a, b)
    frame = explanations_to_frame(clf, X, chunk_size=8)
    assert "explained" in capsys.readouterr().err and frame["sample"].nunique() == len(X)


# ---------------------------------------------------------------------------- the notebook
def _execute(notebook, path: Path = ROOT):
    """Run ``notebook`` in a fresh ipykernel kernel importing this checkout; any error in a
    cell raises ``CellExecutionError``."""
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT),
                                                        os.environ.get("PYTHONPATH")])),
           "OMP_NUM_THREADS": "1"}
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3",
                                     resources={"metadata": {"path": str(path)}})
    client.execute(env={**os.environ, **env})
    return notebook


def test_the_quickstart_notebook_runs_in_a_fresh_kernel():
    notebook = _execute(nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4),
                        ROOT / "examples")
    outputs = {tag: cell.outputs for cell in notebook.cells
               for tag in cell.get("metadata", {}).get("tags", [])}
    results = {tag: [o for o in cell if o.output_type == "execute_result"]
               for tag, cell in outputs.items()}
    assert "image/png" in results["plot"][0].data
    assert "text/html" in results["explanation"][0].data
    assert "<table" in results["export"][0].data["text/html"]  # the DataFrame
    streams = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs
               if o.output_type == "stream"]
    assert streams == []  # verbose=0: no epoch table, no progress bar, no warnings


def test_figures_are_shown_once_under_the_inline_backend():
    """With pyplot's inline backend active, a returned view is one image, and a view that is
    not returned is not shown at the end of the cell (it is not registered with pyplot)."""
    from nbformat.v4 import new_code_cell, new_notebook

    notebook = _execute(new_notebook(cells=[new_code_cell(
        "%matplotlib inline\n"
        "import matplotlib.pyplot as plt\n"
        "from interpretable import EmbeddingBagClassifier\n"
        "from interpretable.explanation import global_explanation\n"
        "X, y = ['a great film', 'an awful plot'] * 4, ['pos', 'neg'] * 4\n"
        "corpus = global_explanation(EmbeddingBagClassifier(max_epochs=1).fit(X, y), X)\n"
        "corpus.plot(min_count=1)"), new_code_cell(
        "kept = corpus.plot(min_count=1)\n"
        "plt.plot([0, 1]);")]))
    images = [[o.output_type for o in cell.outputs if "image/png" in o.get("data", {})]
              for cell in notebook.cells]
    assert images == [["execute_result"], ["display_data"]]  # the view; pyplot's own figure


def test_the_notebooks_guide_runs_as_written(tmp_path):
    page = (ROOT / "docs" / "guide" / "notebooks.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```", page, re.MULTILINE | re.DOTALL)
    assert len(blocks) == 1
    script = tmp_path / "guide.py"
    script.write_text(blocks[0], encoding="utf-8")
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False,
                          env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "interpretable.estimators.core._nets:   epoch    train_loss" in done.stderr  # logged
    assert "train_loss" not in done.stdout and "superb" in done.stdout
    assert (tmp_path / "corpus.png").read_bytes().startswith(b"\x89PNG")
