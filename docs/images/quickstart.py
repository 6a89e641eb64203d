"""Redraws quickstart.png with the README's quickstart, run as written in this folder
(``python docs/images/quickstart.py``); tests/test_docs.py checks that the picture has the layout and, up to the
rounding of training on another processor, the pixels of the README's code."""

import os
import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

if __name__ == "__main__":
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = re.search(r"^```python\n(.*?)^```", readme, re.MULTILINE | re.DOTALL).group(1)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    subprocess.run([sys.executable, "-c", quickstart], cwd=HERE, env=env, check=True)
