"""Run every benchmark script (or those named): ``python -m benchmarks [NAME ...]``."""

import subprocess
import sys
from pathlib import Path

here = Path(__file__).parent
scripts = sorted(here.glob("bench_*.py"))
wanted = sys.argv[1:]
if wanted:
    scripts = [s for s in scripts if any(w in s.stem for w in wanted)]
failed = []
for script in scripts:
    print(f"== {script.name}", flush=True)
    if subprocess.call([sys.executable, str(script)]) != 0:
        failed.append(script.name)
if failed:
    sys.exit(f"failed: {', '.join(failed)}")
