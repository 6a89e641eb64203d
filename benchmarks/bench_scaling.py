"""Cost curves of ``explain``: time and peak memory against batch size, text length, image size
and sequence length, for every estimator family (untrained-size models fitted for one epoch on
synthetic data; what is measured is the explanation, not the accuracy).

Peak memory is the growth of the process's peak RSS during the call (Linux ``VmHWM``, reset
before each measurement through ``/proc/self/clear_refs``): memory the allocator already holds
from earlier calls is reused, so small calls show ~0 — read it as the extra footprint. One
thread; medians of 3 calls.
Writes benchmarks/results/bench_scaling.json and prints one table per estimator.
"""
from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).parent / "results" / "bench_scaling.json"
WORDS = ["the", "movie", "was", "a", "great", "dull", "film", "with", "superb", "acting", "and",
         "boring", "plot", "that", "I", "loved", "hated"]


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


def measure(call, repeats: int = 3) -> dict:
    """Median seconds and peak-RSS growth (MiB) of ``call()``."""
    seconds, peaks = [], []
    for _ in range(repeats):
        Path("/proc/self/clear_refs").write_text("5")  # reset VmHWM to the current RSS
        base = _status("VmRSS")
        start = time.perf_counter()
        call()
        seconds.append(time.perf_counter() - start)
        peaks.append(max(_status("VmHWM") - base, 0.0))
    return {"seconds": statistics.median(seconds), "peak_mib": statistics.median(peaks)}


def texts(n: int, n_words: int, seed: int = 0) -> list[str]:
    rng = np.random.RandomState(seed)
    return [" ".join(rng.choice(WORDS, n_words)) for _ in range(n)]


def text_curves(estimator) -> list[dict]:
    X = texts(256, 12)
    y = np.array(["pos", "neg"] * 128)
    estimator.fit(X, y)
    rows = []
    for batch_size in (16, 64, 256):
        rows.append({"vary": "batch_size", "batch_size": batch_size, "n_words": 20, "n": 256,
                     **measure(lambda batch_size=batch_size: estimator.explain(
                         texts(256, 20), batch_size=batch_size))})
    for n_words in (10, 50, 200):
        rows.append({"vary": "text_length", "batch_size": 64, "n_words": n_words, "n": 256,
                     **measure(lambda n_words=n_words: estimator.explain(texts(256, n_words),
                                                                         batch_size=64))})
    return rows


def image_curves() -> list[dict]:
    from interpretable import BcosViTClassifier

    rng = np.random.RandomState(0)
    rows = []
    for size in (28, 56):
        X = rng.rand(64, size, size).astype(np.float32)
        y = np.arange(64) % 4
        clf = BcosViTClassifier(patch_size=4, embed_dim=32, depth=2, num_heads=4,
                                stem_channels=(16,), max_epochs=1, random_state=0).fit(X, y)
        for batch_size in (16, 64):
            rows.append({"vary": "image_size/batch_size", "image": size,
                         "batch_size": batch_size, "n": 64,
                         **measure(lambda clf=clf, X=X, batch_size=batch_size:
                                   clf.explain(X, batch_size=batch_size))})
    return rows


def sequence_curves() -> list[dict]:
    from interpretable import ISANLanguageModel

    rng = np.random.RandomState(0)
    text = "".join(rng.choice(list("abcdefgh ijklmnop"), 20000))
    lm = ISANLanguageModel(hidden_size=64, max_epochs=1, random_state=0).fit([text[:5000]])
    rows = []
    for length in (1000, 4000, 16000):  # windowed first: the dense calls grow the heap
        rows.append({"vary": "length (window=256)", "chars": length, "window": 256,
                     **measure(lambda length=length: lm.explain(text[:length], window=256),
                               repeats=1)})
    for length in (1000, 4000, 16000):
        rows.append({"vary": "length (all steps)", "chars": length, "window": None,
                     **measure(lambda length=length: lm.explain(text[:length]), repeats=1)})
    return rows


def main():
    from interpretable import DiversityLSTMClassifier, EmbeddingBagClassifier, SEATClassifier
    from interpretable.estimators.seat import SEAT

    torch.set_num_threads(1)
    small = dict(embed_dim=32, max_epochs=1, random_state=0)
    curves = {
        "EmbeddingBagClassifier (inherent)": text_curves(EmbeddingBagClassifier(**small)),
        "DiversityLSTMClassifier (attention)": text_curves(
            DiversityLSTMClassifier(hidden_size=64, **small)),
        "SEATClassifier rnn (attention)": text_curves(
            SEATClassifier(encoder="rnn", hidden_size=64, variant=SEAT(epochs=1, pgd_steps=2),
                           **small)),
        "BcosViTClassifier (inherent)": image_curves(),
        "ISANLanguageModel (inherent)": sequence_curves(),
    }
    RESULTS.write_text(json.dumps({"threads": 1, "statistic": "median of 3 (ISAN: 1)",
                                   "measured": time.strftime("%Y-%m-%d %H:%M"),
                                   "curves": curves}, indent=1))
    for name, rows in curves.items():
        print(f"\n{name}")
        for row in rows:
            settings = {k: v for k, v in row.items() if k not in ("seconds", "peak_mib")}
            print(f"  {settings}: {row['seconds']:.3f} s, +{row['peak_mib']:.0f} MiB")


if __name__ == "__main__":
    main()
