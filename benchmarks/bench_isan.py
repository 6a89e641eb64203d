"""ISAN performance, side by side in one run (writes benchmarks/results/bench_isan.json).

1. Training throughput (characters / second) of the ISAN vs the equal-parameter ``nn.LSTM``,
   same loop, same data, one thread.
2. ``explain`` of all positions of a 500-character text: the single reverse pass vs a naive
   per-target recomputation (one backward sweep per explained position); time and peak memory.
3. Text transition with the precomputed word cache vs character by character.
4. ``ISAN.decompose`` of one long text (H=128 random stable ISAN, predicted next symbol, K=1),
   each measurement in a fresh process (time, peak-RSS increase): all positions of 20k
   characters as one dense float32 matrix and streamed block by block (float32 and float64),
   a 1000-symbol window over 100k characters, and the original single reverse pass at 10k next
   to the new one at 10k (under the same load: the ratio is the robust number).

1-3 time the compared calls in ``--rounds`` interleaved rounds (``benchmarks/ratios.py``;
medians) after untimed first calls (for 1: one ISAN fit).

Usage: ``python benchmarks/bench_isan.py [--quick] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from ratios import finish_record, run_record, timed

from interpretable import ISANLanguageModel, LSTMLanguageModel
from interpretable.datasets import load_shakespeare
from interpretable.estimators.sequence import split_words
from interpretable.nn import ISAN
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


@torch.no_grad()
def reverse_pass_decomposition(module, x: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """κ (B, T, K, T) by the original ``decompose``: one reverse pass over all positions at once,
    O(T²·K·H²) time and the (T, T) matrix plus (T, K, H) row vectors in memory (the baseline)."""
    T = x.shape[1]
    U = module.readout.weight[targets].clone()
    kappa = U.new_zeros(*targets.shape, T)
    for s in range(T - 1, -1, -1):
        kappa[:, s:, :, s] = torch.einsum("btkh,bh->btk", U[:, s:], module.b[x[:, s]])
        U[:, s:] = torch.einsum("btkh,bhj->btkj", U[:, s:], module.W[x[:, s]])
    return kappa


def relative_error(parts) -> tuple[float, float]:
    """(max |κ sum + rest + bias - logit|, max |logit|) of an ISANDecomposition."""
    return (float((parts.reconstruction - parts["logits"]).abs().max()),
            float(parts["logits"].abs().max()))


def decompose_dense(net, ids, targets, dtype, **options):
    d = net.decompose(ids, targets, dtype=dtype, **options)
    error, scale = relative_error(d)
    return {"output_mb": d["kappa"].nbytes / 2**20, "completeness_error": error / scale}


def decompose_streamed(net, ids, targets, dtype):
    errors = [relative_error(part) for part in net.decompose_blocks(ids, targets, dtype=dtype)]
    return {"output_mb": 0.0,
            "completeness_error": max(e for e, _ in errors) / max(s for _, s in errors)}


def decompose_original(net, ids, targets, dtype):
    kappa = reverse_pass_decomposition(net.to(dtype), ids, targets.unsqueeze(-1))
    return {"output_mb": kappa.nbytes / 2**20}


DECOMPOSE_PATHS = {"dense": decompose_dense, "streamed": decompose_streamed,
                   "original": decompose_original}


def stable_random_isan(n_symbols: int, hidden: int, seed: int = 0) -> ISAN:
    """Default-initialised ISAN with every ``W_c`` scaled to spectral norm 0.99, so that states
    stay finite over 100k symbols (the default ``I + noise`` grows without bound)."""
    torch.manual_seed(seed)
    net = ISAN(n_symbols, hidden)
    with torch.no_grad():
        net.W.mul_(0.99 / torch.linalg.matrix_norm(net.W, ord=2)[:, None, None])
    return net


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MB (``VmHWM``: ``ru_maxrss`` is no use in a
    child process, after fork + exec it starts at the parent's size)."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmHWM:")) / 1024


def explain_task(config: dict):
    """``explain(text[:chars], target="actual")`` of a saved :class:`ISANLanguageModel`."""
    model = ISANLanguageModel.load(config["model"], device="cpu")
    text = Path(config["text"]).read_text()

    def run(chars: int) -> dict:
        model.explain(text[:chars], target="actual")
        return {}
    return run


def decompose_task(config: dict):
    """One of ``DECOMPOSE_PATHS`` on the first ``chars`` symbols of a saved ISAN's text."""
    saved = torch.load(config["data"], weights_only=True)
    net = ISAN(*saved["state"]["W"].shape[:2])
    net.load_state_dict(saved["state"])
    path = DECOMPOSE_PATHS[config["path"]]
    kwargs = {"dtype": getattr(torch, config["dtype"]), **config["kwargs"]}
    return lambda chars: path(net, saved["ids"][:, :chars], saved["targets"][:, :chars], **kwargs)


def probe(path: str) -> dict:
    """One measurement in this fresh process: seconds and peak-RSS increase of one task run on
    ``chars`` symbols, after a warm-up on 50. ``path``: JSON config (see
    :func:`in_fresh_process`)."""
    torch.set_num_threads(1)
    config = json.loads(Path(path).read_text())
    run = {"explain": explain_task, "decompose": decompose_task}[config["task"]](config)
    run(50)
    before = peak_rss_mb()
    start = time.perf_counter()
    out = run(config["chars"])
    seconds = time.perf_counter() - start
    return {"seconds": seconds, "peak_rss_increase_mb": peak_rss_mb() - before, **out}


def in_fresh_process(tmp: str, config: dict) -> dict:
    """:func:`probe` of ``config`` in a new Python process (nothing else allocated there)."""
    path = Path(tmp) / "probe.json"
    path.write_text(json.dumps(config))
    out = subprocess.run([sys.executable, __file__, "--probe", str(path)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bench_decompose(text: str, measurements: list[tuple], hidden: int = 128) -> dict:
    """``ISAN.decompose`` of one text, each measurement in a fresh process.

    measurements: (name, path in ``DECOMPOSE_PATHS``, characters, dtype, path kwargs, goals)."""
    alphabet = {c: i for i, c in enumerate(sorted(set(text)))}
    net = stable_random_isan(len(alphabet), hidden)
    ids = torch.tensor([[alphabet[c] for c in text]])
    with torch.no_grad():
        targets = net(ids).argmax(-1)  # the predicted next symbol at every position
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "isan.pt"
        torch.save({"state": net.state_dict(), "ids": ids, "targets": targets}, data)
        for name, path, chars, dtype, kwargs, goal in measurements:
            row = {"name": name, "path": path, "chars": chars, "dtype": dtype, **kwargs,
                   **in_fresh_process(tmp, {"task": "decompose", "data": str(data), "path": path,
                                            "chars": chars, "dtype": dtype, "kwargs": kwargs}),
                   **goal}
            print(f"decompose {name:22s} {chars:>7d} chars {row['seconds']:7.1f} s "
                  f"peak RSS +{row['peak_rss_increase_mb']:7.0f} MB "
                  f"(output {row['output_mb']:6.0f} MB)"
                  + (f" goal {goal['goal_seconds']} s / {goal['goal_peak_mb']} MB" if goal else ""))
            rows.append(row)
    return {"hidden_size": hidden, "symbols": len(alphabet), "target": "predicted", "rows": rows}


def bench_training(train: str, hidden: int, epochs: int, rounds: int
                   ) -> tuple[list[dict], ISANLanguageModel]:
    """Fits of the ISAN and of the LSTM with as many parameters in interleaved rounds, after an
    untimed ISAN fit (which gives the alphabet): their rows and that ISAN."""
    isan = ISANLanguageModel(max_epochs=epochs, random_state=0, hidden_size=hidden).fit(train)
    hiddens = {ISANLanguageModel: hidden,
               LSTMLanguageModel: equal_budget_lstm_hidden(len(isan.classes_), hidden)}
    fitted = {}

    def fit(cls):
        def run():
            fitted[cls] = cls(max_epochs=epochs, random_state=0,
                              hidden_size=hiddens[cls]).fit(train)
        return run

    wall, cpu = timed({cls.__name__: fit(cls) for cls in hiddens}, rounds, warmup=0)
    chars = len(train) * epochs
    rows = [{"model": cls.__name__, "hidden_size": size,
             "parameters": int(sum(p.numel() for p in fitted[cls].module_.parameters())),
             "chars": chars, "seconds": wall[cls.__name__], "cpu_seconds": cpu[cls.__name__],
             "chars_per_second": chars / wall[cls.__name__]}
            for cls, size in hiddens.items()]
    return rows, isan


def explain_memory(model, text: str) -> dict:
    """Time and peak-RSS increase of ``explain`` in a fresh process (nothing else allocated)."""
    with tempfile.TemporaryDirectory() as tmp:
        model.save(Path(tmp) / "model")
        (Path(tmp) / "text.txt").write_text(text)
        return in_fresh_process(tmp, {"task": "explain", "model": str(Path(tmp) / "model"),
                                      "text": str(Path(tmp) / "text.txt"), "chars": len(text)})


def bench_explain(model, text: str, naive_chars: int, rounds: int) -> dict:
    probe = explain_memory(model, text)
    ids = torch.as_tensor(model.encode_symbols(text[:naive_chars]))[None]
    targets = torch.as_tensor(model.encode_symbols(text[1: naive_chars + 1]))
    exp = model.explain(text, target="actual")
    naive = naive_decomposition(model.module_, ids, targets)
    agree = float(np.abs(naive.numpy() - exp.values[0][:naive_chars, :naive_chars]).max())
    seconds = timed({"one_pass": lambda: model.explain(text, target="actual"),
                     "naive": lambda: naive_decomposition(model.module_, ids, targets)},
                    rounds, warmup=0)[0]  # the calls above were the warm-up
    one_pass, naive_s = seconds["one_pass"], seconds["naive"]
    return {"chars": len(text), "one_pass_seconds": one_pass,
            "fresh_process_seconds": probe["seconds"],
            "peak_rss_increase_mb": probe["peak_rss_increase_mb"],
            "kappa_matrix_mb": exp.values[0].nbytes / 2**20,
            "completeness_error": float(exp.completeness_error.max()),
            "naive_chars": naive_chars, "naive_seconds": naive_s,
            "naive_seconds_extrapolated_to_full_text": naive_s * (len(text) / naive_chars) ** 2,
            "max_abs_difference_vs_naive": agree}


def bench_transition(model, corpus: str, text: str, n_words: int, rounds: int) -> dict:
    """Cache the ``n_words`` most frequent words of ``corpus``; read the unseen ``text``."""
    start = time.perf_counter()
    cache = model.word_cache([corpus], n_words=n_words)
    build = time.perf_counter() - start
    h_char, h_cache = model.transition(text), model.transition(text, cache=cache)
    seconds = timed({"char": lambda: model.transition(text),
                     "cache": lambda: model.transition(text, cache=cache)},
                    rounds, warmup=0)[0]  # the calls above were the warm-up
    char_s, cache_s = seconds["char"], seconds["cache"]
    hit = sum(len(w) for w in split_words(text) if w in cache) / len(text)
    return {"chars": len(text), "cached_words": len(cache), "cache_build_seconds": build,
            "char_by_char_seconds": char_s, "with_cache_seconds": cache_s,
            "speedup": char_s / cache_s, "share_of_chars_in_cached_words": hit,
            "max_abs_state_difference": float(np.abs(h_char - h_cache).max())}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds of the compared calls (1-3 above)")
    parser.add_argument("--out", default="benchmarks/results/bench_isan.json")
    parser.add_argument("--probe", help=argparse.SUPPRESS)  # one fresh-process measurement
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(probe(args.probe)))
        return None
    torch.set_num_threads(1)
    record = run_record()
    train_chars, hiddens = (100_000, (32,)) if args.quick else (300_000, (32, 96))
    text = load_shakespeare("train")
    test = load_shakespeare("test")
    rows = []
    for hidden in hiddens:
        pair, isan = bench_training(text[:train_chars], hidden, 1, args.rounds)
        rows += pair  # the largest ISAN is used below
    for r in rows:
        print(f"train {r['model']:18s} H={r['hidden_size']:<4d} params={r['parameters']:>8d} "
              f"{r['chars_per_second']:>8.0f} chars/s")
    explain = bench_explain(isan, test[:500], 100 if args.quick else 200, args.rounds)
    print(f"explain 500 chars, one reverse pass: {explain['one_pass_seconds']:.3f} s "
          f"(naive per-target: {explain['naive_seconds']:.2f} s for "
          f"{explain['naive_chars']} chars, "
          f"~{explain['naive_seconds_extrapolated_to_full_text']:.1f} s for 500); "
          f"peak RSS +{explain['peak_rss_increase_mb']:.1f} MB")
    transition = bench_transition(isan, text[:train_chars], test[:5_000 if args.quick else 20_000],
                                  2000, args.rounds)
    print(f"transition {transition['chars']} chars: char by char "
          f"{transition['char_by_char_seconds']:.2f} s, "
          f"word cache {transition['with_cache_seconds']:.2f} s ({transition['speedup']:.1f}x)")
    full, window, original = (4_000, 20_000, 2_000) if args.quick else (20_000, 100_000, 10_000)
    decompose = bench_decompose(test[:window], [
        ("full_dense", "dense", full, "float32", {}, {"goal_seconds": 30, "goal_peak_mb": 1500}),
        ("full_streamed", "streamed", full, "float32", {}, {}),
        ("full_streamed_float64", "streamed", full, "float64", {}, {}),
        ("window_1000", "dense", window, "float32", {"window": 1000},
         {"goal_seconds": 60, "goal_peak_mb": 1000}),
        ("full_dense_same_size", "dense", original, "float32", {}, {}),
        ("original_reverse_pass", "original", original, "float32", {}, {}),
    ])
    results = {**record, "quick": args.quick, "rounds": args.rounds, "training": rows,
               "explain": explain, "transition": transition, "decompose": decompose}
    path = Path(args.out)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(finish_record(results), indent=2))
    print(f"written {path}")
    return results


if __name__ == "__main__":
    main()
