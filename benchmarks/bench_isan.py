"""ISAN performance, side by side in one run (writes benchmarks/results/bench_isan.json).

1. Training throughput (characters / second) of the ISAN vs the equal-parameter ``nn.LSTM``,
   same loop, same data, one thread.
2. ``explain`` of all positions of a 500-character text: the single reverse pass vs a naive
   per-target recomputation (one backward sweep per explained position); time and peak memory.
3. Text transition with the precomputed word cache vs character by character.

Usage: ``python benchmarks/bench_isan.py [--quick]``.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from interpretable import ISANLanguageModel, LSTMLanguageModel
from interpretable.datasets import load_shakespeare
from interpretable.estimators.language_model import split_words
from interpretable.reproduce.isan import equal_budget_lstm_hidden


def naive_decomposition(module, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """κ[t, s] recomputed separately for every position t (the baseline): (T, T)."""
    T = ids.shape[1]
    kappa = torch.zeros(T, T, dtype=module.W.dtype)
    with torch.no_grad():
        for t in range(T):
            u = module.readout.weight[targets[t]]
            for s in range(t, -1, -1):
                kappa[t, s] = u @ module.b[ids[0, s]]
                u = u @ module.W[ids[0, s]]
    return kappa


def bench_training(train: str, hidden: int, epochs: int) -> list[dict]:
    rows = []
    for cls, kwargs in ((ISANLanguageModel, {"hidden_size": hidden}), (LSTMLanguageModel, None)):
        if kwargs is None:
            kwargs = {"hidden_size": equal_budget_lstm_hidden(len(rows[0]["alphabet"]), hidden)}
        model = cls(max_epochs=epochs, random_state=0, **kwargs)
        start = time.perf_counter()
        model.fit(train)
        seconds = time.perf_counter() - start
        rows.append({"model": cls.__name__, "hidden_size": kwargs["hidden_size"],
                     "parameters": int(sum(p.numel() for p in model.module_.parameters())),
                     "chars": len(train) * epochs, "seconds": seconds,
                     "chars_per_second": len(train) * epochs / seconds,
                     "alphabet": list(map(str, model.classes_)), "model_obj": model})
    return rows


_MEMORY_PROBE = """
import json, resource, sys, time, torch
torch.set_num_threads(1)
from interpretable import ISANLanguageModel
model = ISANLanguageModel.load(sys.argv[1], device="cpu")
text = open(sys.argv[2]).read()
model.explain(text[:20], target="actual")  # warm-up
peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
before = peak()
start = time.perf_counter()
model.explain(text, target="actual")
print(json.dumps({"seconds": time.perf_counter() - start, "peak_rss_increase_mb": peak() - before}))
"""


def explain_memory(model, text: str) -> dict:
    """Time and peak-RSS increase of ``explain`` in a fresh process (nothing else allocated)."""
    with tempfile.TemporaryDirectory() as tmp:
        model.save(Path(tmp) / "model")
        (Path(tmp) / "text.txt").write_text(text)
        out = subprocess.run([sys.executable, "-c", _MEMORY_PROBE, str(Path(tmp) / "model"),
                              str(Path(tmp) / "text.txt")], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_explain(model, text: str, naive_chars: int) -> dict:
    start = time.perf_counter()
    exp = model.explain(text, target="actual")
    one_pass = time.perf_counter() - start
    probe = explain_memory(model, text)
    ids = torch.as_tensor(model._encode(text[:naive_chars]))[None]
    targets = torch.as_tensor(model._encode(text[1: naive_chars + 1]))
    start = time.perf_counter()
    naive = naive_decomposition(model.module_, ids, targets)
    naive_s = time.perf_counter() - start
    agree = float(np.abs(naive.numpy() - exp.contributions[0][:naive_chars, :naive_chars]).max())
    return {"chars": len(text), "one_pass_seconds": one_pass,
            "fresh_process_seconds": probe["seconds"],
            "peak_rss_increase_mb": probe["peak_rss_increase_mb"],
            "kappa_matrix_mb": exp.contributions[0].nbytes / 2**20,
            "completeness_error": float(exp.completeness_error.max()),
            "naive_chars": naive_chars, "naive_seconds": naive_s,
            "naive_seconds_extrapolated_to_full_text": naive_s * (len(text) / naive_chars) ** 2,
            "max_abs_difference_vs_naive": agree}


def bench_transition(model, corpus: str, text: str, n_words: int) -> dict:
    """Cache the ``n_words`` most frequent words of ``corpus``; read the unseen ``text``."""
    start = time.perf_counter()
    cache = model.word_cache([corpus], n_words=n_words)
    build = time.perf_counter() - start
    start = time.perf_counter()
    h_char = model.transition(text)
    char_s = time.perf_counter() - start
    start = time.perf_counter()
    h_cache = model.transition(text, cache=cache)
    cache_s = time.perf_counter() - start
    hit = sum(len(w) for w in split_words(text) if w in cache) / len(text)
    return {"chars": len(text), "cached_words": len(cache), "cache_build_seconds": build,
            "char_by_char_seconds": char_s, "with_cache_seconds": cache_s,
            "speedup": char_s / cache_s, "share_of_chars_in_cached_words": hit,
            "max_abs_state_difference": float(np.abs(h_char - h_cache).max())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", default="benchmarks/results/bench_isan.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    train_chars, hiddens = (100_000, (32,)) if args.quick else (300_000, (32, 96))
    text = load_shakespeare("train")
    test = load_shakespeare("test")
    rows = []
    for hidden in hiddens:
        pair = bench_training(text[:train_chars], hidden, epochs=1)
        isan = pair[0].pop("model_obj")  # the largest ISAN is used below
        pair[1].pop("model_obj")
        rows += pair
    for r in rows:
        r.pop("alphabet")
        print(f"train {r['model']:18s} H={r['hidden_size']:<4d} params={r['parameters']:>8d} "
              f"{r['chars_per_second']:>8.0f} chars/s")
    explain = bench_explain(isan, test[:500], naive_chars=100 if args.quick else 200)
    print(f"explain 500 chars, one reverse pass: {explain['one_pass_seconds']:.3f} s "
          f"(naive per-target: {explain['naive_seconds']:.2f} s for {explain['naive_chars']} chars, "
          f"~{explain['naive_seconds_extrapolated_to_full_text']:.1f} s for 500); "
          f"peak RSS +{explain['peak_rss_increase_mb']:.1f} MB")
    transition = bench_transition(isan, text[:train_chars], test[:5_000 if args.quick else 20_000],
                                  n_words=2000)
    print(f"transition {transition['chars']} chars: char by char {transition['char_by_char_seconds']:.2f} s, "
          f"word cache {transition['with_cache_seconds']:.2f} s ({transition['speedup']:.1f}x)")
    results = {"quick": args.quick, "torch": torch.__version__, "machine": platform.machine(),
               "threads": torch.get_num_threads(), "training": rows, "explain": explain,
               "transition": transition}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2))
    print(f"written {path}")
    return results


if __name__ == "__main__":
    main()
