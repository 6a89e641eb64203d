"""Peak memory of explaining many texts chunk by chunk (bounded-memory explain).

Explains 10k and 100k texts with ``explanations_to_frame(..., path=*.parquet)`` in fresh
subprocesses and records each one's peak resident memory (``ru_maxrss``): bounded memory means
the peak does not grow with the number of texts. Writes ``benchmarks/results/streaming.json``.
"""

import json
import subprocess
import sys
from pathlib import Path

RESULTS = Path(__file__).parent / "results"

CHILD = r"""
import resource, sys, tempfile, time, torch
torch.set_num_threads(1)
import numpy as np
from interpretable import {estimator}
from interpretable.integrations import explanations_to_frame
from interpretable.datasets import load_rotten_tomatoes
X, y = load_rotten_tomatoes(return_X_y=True)
clf = {estimator}(max_epochs=1, random_state=0{extra}).fit(X[:2000], y[:2000])
n = int(sys.argv[1])
texts = (X[i % len(X)] for i in range(n))  # a generator: the corpus is never materialised
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
with tempfile.TemporaryDirectory() as d:
    explanations_to_frame(clf, texts, path=d + "/e.parquet", chunk_size=2000)
print(base, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter() - start)
"""

ESTIMATORS = {
    "EmbeddingBagClassifier": ", embed_dim=50",
    "DiversityLSTMClassifier": ", hidden_size=64",
}


def main():
    results = {}
    for estimator, extra in ESTIMATORS.items():
        for n in (10_000, 100_000):
            code = CHILD.format(estimator=estimator, extra=extra)
            out = subprocess.run([sys.executable, "-c", code, str(n)], capture_output=True,
                                 text=True, check=True).stdout.split()
            base_kib, peak_kib, seconds = int(out[0]), int(out[1]), float(out[2])
            results[f"{estimator}/{n}"] = {
                "n_texts": n,
                "peak_rss_mib": peak_kib / 1024,
                "peak_growth_during_explain_mib": (peak_kib - base_kib) / 1024,
                "seconds": seconds,
            }
            print(estimator, n, results[f"{estimator}/{n}"], flush=True)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "streaming.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
