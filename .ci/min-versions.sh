#!/usr/bin/env bash
# The declared minimum versions, proven: a fresh venv holds every runtime requirement of
# setup.cfg (install_requires and the `bert` extra) at its floor (">=" read as "=="), wheels
# only; the package goes on top with --no-deps, then the smoke test runs alone
# (tests/test_smoke_min_versions.py: every estimator fits, predicts, explains, saves and loads
# at a tiny size; the README's quick start).
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
floors=$("$VENV/bin/python" - <<'EOF'
import configparser

setup = configparser.ConfigParser()
setup.read("setup.cfg")
text = setup["options"]["install_requires"] + "\n" + setup["options.extras_require"]["bert"]
lines = [line.strip() for line in text.splitlines()]
print(" ".join(line.replace(">=", "==") for line in lines if line and line[0] != "#"))
EOF
)
echo ">> installing the declared floors: $floors"
# shellcheck disable=SC2086  # one word per requirement
"$VENV/bin/pip" install --quiet --only-binary=:all: $floors pytest
"$VENV/bin/pip" install --quiet --no-deps .
"$VENV/bin/python" -m interpretable data install
echo ">> installed:"
"$VENV/bin/pip" freeze | grep -iE "^(torch|scikit-learn|transformers|numpy|pandas|skorch|scipy|huggingface.hub|tokenizers)=="
OMP_NUM_THREADS=1 "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/test_smoke_min_versions.py
echo ">> minimum versions passed in $(( $(date +%s) - start )) s"
