"""Sphinx configuration of the interpretable documentation (``make docs``; see CONTRIBUTING.md).

* Pages are Markdown (MyST), so the guide keeps the README's Markdown and its ``python`` blocks
  are plain fenced blocks that ``tests/test_docs.py`` extracts and runs.
* The API reference is generated from the docstrings (autosummary + numpydoc).
* The gallery (sphinx-gallery) executes ``examples/plot_*.py`` at every build and shows their
  figures and HTML views; the other scripts of ``examples/`` are shown, not run (minutes each).
* The reproduction and performance tables are rendered from ``benchmarks/results/*.json``
  (``_ext/results.py``).

Warnings raised from the package's docstrings count as warnings (so ``-W`` fails on them).
With ``DOCS_DOCSTRING_WARNINGS=report`` (while rewriting docstrings) they are collected in
``<build dir>/docstring-warnings.txt`` instead and printed once at the end of the build,
without failing it.
"""

from __future__ import annotations

import logging
import os
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(DOCS / "_ext"))
os.environ.setdefault("MPLBACKEND", "Agg")

import interpretable  # noqa: E402

PACKAGE = Path(interpretable.__file__).resolve().parent  # also when docs/ is a copy

project = "interpretable"
author = "the interpretable developers"
copyright = "the interpretable developers, MIT licence"
version = release = interpretable.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
    "results",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "README.md", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "auto_examples/*.json"]
templates_path = ["_templates"]

# Markdown: ```{directive}``` and ::: fences, header anchors for [links](#a-section)
myst_enable_extensions = ["colon_fence", "deflist"]
myst_heading_anchors = 3

# API reference: one page per public object, written by autosummary into api/generated/
autosummary_generate = True
autosummary_imported_members = False
# (no "inherited-members" default: with Sphinx 9 a default of False overrides the class
# template's ``:inherited-members:``, and the estimators' pages then list none of the methods
# they inherit: fit, predict, explain, ...; scikit-learn's docstrings that cite its
# ``metadata_routing`` label link to the note in api.rst)
autodoc_default_options = {"members": True, "show-inheritance": True}
autodoc_typehints = "none"          # the numpydoc Parameters sections document the types
autodoc_member_order = "bysource"
numpydoc_show_class_members = False  # members are listed by the class template
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# The gallery: every examples/plot_*.py runs at each build (tiny settings: seconds each); the
# other scripts of examples/ are rendered without being run.
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "capture_repr": ("_repr_html_", "__repr__"),
    "ignore_repr_types": r"matplotlib\.(figure|text|axes|lines|legend)",
    "image_scrapers": ("gallery.figures",),
    "download_all_examples": False,
    "remove_config_comments": True,
    "reset_modules": ("matplotlib", "gallery.one_torch_thread"),
    "min_reported_time": 1,
    "show_memory": False,
    "show_signature": False,
    "line_numbers": False,
    "plot_gallery": "True",
}


html_theme = "pydata_sphinx_theme"
html_title = f"interpretable {version}"
html_static_path: list[str] = []
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_sidebars = {"index": [], "install": [], "reproductions": [], "performance": []}

# Docstring warnings: errors (default) or set aside in a report (DOCS_DOCSTRING_WARNINGS=report).
DOCSTRING_WARNINGS = os.environ.get("DOCS_DOCSTRING_WARNINGS", "error")
_docstring_warnings: list[str] = []


class _DocstringWarnings(logging.Filter):
    """Sets aside the warnings whose location is a docstring of the package (or an
    autosummary table's line taken from one)."""

    def __init__(self, app):
        super().__init__()
        from sphinx.util.logging import WarningLogRecordTranslator

        self.translate = WarningLogRecordTranslator(app)

    def filter(self, record):
        self.translate.filter(record)
        location = str(getattr(record, "location", "") or "")
        if ("docstring of" in location or "<autosummary>" in location
                or str(PACKAGE) in location):
            message = record.getMessage()
            _docstring_warnings.append(message if location in message
                                       else f"{location}: {message}")
            return False
        return True


def _write_docstring_warnings(app, exception):
    unique = list(dict.fromkeys(_docstring_warnings))
    path = Path(app.outdir).parent / "docstring-warnings.txt"
    path.write_text("".join(f"{w}\n" for w in unique), encoding="utf-8")
    if unique:
        logging.getLogger("sphinx.conf").info(
            "%d docstring warning(s) of the package set aside (DOCS_DOCSTRING_WARNINGS=report): "
            "%s", len(unique), path)


def _skip_member(app, what, name, obj, skip, options):
    """scikit-learn's metadata-routing methods (``set_fit_request``, ...,
    ``get_metadata_routing``) are documented by scikit-learn; their docstrings cite its
    glossary."""
    if re.fullmatch(r"set_\w+_request|get_metadata_routing", name):
        return True
    return None


def setup(app):
    app.connect("autodoc-skip-member", _skip_member)
    if DOCSTRING_WARNINGS != "error":
        from sphinx.util.logging import NAMESPACE, WarningStreamHandler

        for handler in logging.getLogger(NAMESPACE).handlers:
            if isinstance(handler, WarningStreamHandler):
                handler.filters.insert(0, _DocstringWarnings(app))
        app.connect("build-finished", _write_docstring_warnings)
