"""The code blocks of CONTRIBUTING.md run as written (each file's blocks in one fresh process,
so that the explainer they register does not leak into the other tests)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.MULTILINE | re.DOTALL)


def python_blocks(path: Path) -> list[str]:
    return BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", ["CONTRIBUTING.md"])
def test_code_blocks_run(name, tmp_path):
    blocks = python_blocks(ROOT / name)
    assert blocks, f"{name} has no python blocks"
    for i, block in enumerate(blocks):
        script = tmp_path / f"block{i}.py"
        script.write_text(block, encoding="utf-8")
        result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, text=True,
                                capture_output=True, timeout=300,
                                env={"PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1",
                                     "PATH": "/usr/bin:/bin"})
        assert result.returncode == 0, f"{name} block {i} failed:\n{result.stderr[-3000:]}"
