#!/usr/bin/env bash
# The declared minimum versions, proven: a fresh venv holds every runtime requirement of
# pyproject.toml ([project].dependencies and the extras of FLOOR_EXTRAS) at its floor (">="
# read as "=="), wheels only; the package goes on top with --no-deps, then the smoke test runs
# alone (tests/test_smoke_min_versions.py: every estimator fits, predicts, explains, saves and
# loads at a tiny size; the README's quick start; the features of those extras).
#
# torch: the only CPU build this CI installs is 2.13.0 (a bare `torch` pulls a multi-GB CUDA
# build), so the floor declared is the one proven here, torch>=2.13; older torches are not tried.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${MIN_VENV:-.venv-min}
start=$(date +%s)
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet --upgrade pip
# the extras whose floors are proven here (the others' floors are declared, not proven)
FLOOR_EXTRAS=${FLOOR_EXTRAS:-bert text-data parquet}
# shellcheck disable=SC2086  # one argument per extra
floors=$("$VENV/bin/python" - $FLOOR_EXTRAS <<'EOF'
import sys
import tomllib

with open("pyproject.toml", "rb") as file:
    project = tomllib.load(file)["project"]
requirements = list(project["dependencies"])
for extra in sys.argv[1:]:
    requirements += project["optional-dependencies"][extra]
floors = dict.fromkeys(r.replace(">=", "==") for r in requirements)  # once each, in order
assert all("==" in r for r in floors), [r for r in floors if "==" not in r]
print(" ".join(floors))
EOF
)
echo ">> installing the declared floors: $floors"
# shellcheck disable=SC2086  # one word per requirement
"$VENV/bin/pip" install --quiet --only-binary=:all: $floors pytest
"$VENV/bin/pip" install --quiet --no-deps .
"$VENV/bin/python" -m interpretable data install
echo ">> installed:"
"$VENV/bin/pip" freeze | grep -iE "^(torch|scikit-learn|transformers|numpy|pandas|skorch|scipy|huggingface.hub|tokenizers|gensim|nltk|pyarrow)=="
OMP_NUM_THREADS=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/test_smoke_min_versions.py
echo ">> minimum versions passed in $(( $(date +%s) - start )) s"
