"""Epoch time of the three DiversityLSTMClassifier cells, side by side in one run.

The orthogonal cell needs a Python-level recurrence (each h_t depends on the sum of the
previous h); it runs as one fused autograd Function with a hand-written backward pass
(``interpretable.nn.recurrent.orthogonal_lstm``). Target: epoch time <= 4x the nn.LSTM cells.

Also times one forward + backward of the bare encoders (nn.LSTM, fused orthogonal cell and the
plain autograd loop it replaces). One torch thread; cells are interleaved over repeats so load
from other processes hits them alike. Writes ``benchmarks/results/bench_diversity_lstm.json``.

    python benchmarks/bench_diversity_lstm.py [--train 3000] [--epochs 2] [--repeats 2]
"""
import argparse
import json
import platform
import statistics
import time
from pathlib import Path

import torch

RESULTS = Path(__file__).parent / "results"


def epoch_times(n_train, epochs, repeats, hidden_size):
    from interpretable import DiversityLSTMClassifier
    from interpretable.datasets import load_rotten_tomatoes

    X, y = load_rotten_tomatoes(return_X_y=True)
    X, y = X[:n_train], y[:n_train]
    times = {cell: [] for cell in ("vanilla", "diversity", "orthogonal")}
    for _ in range(repeats):
        for cell in times:
            clf = DiversityLSTMClassifier(cell=cell, embeddings="glove-50", hidden_size=hidden_size,
                                          max_epochs=epochs, batch_size=64, random_state=0, device="cpu")
            clf.fit(X, y)
            times[cell].extend(float(h["dur"]) for h in clf.history_)
    out = {cell: {"median_epoch_seconds": statistics.median(t), "epoch_seconds": t} for cell, t in times.items()}
    base = min(out["vanilla"]["median_epoch_seconds"], out["diversity"]["median_epoch_seconds"])
    for cell in out:
        out[cell]["ratio_to_fastest_lstm"] = out[cell]["median_epoch_seconds"] / base
    return out


def encoder_step_times(batch=64, length=30, embed=50, hidden=128, n=20):
    from interpretable.nn.recurrent import OrthogonalLSTM, _orthogonal_lstm_reference

    torch.manual_seed(0)
    x = torch.randn(batch, length, embed)
    mask = torch.ones(batch, length, dtype=torch.bool)
    lstm = torch.nn.LSTM(embed, hidden, batch_first=True)
    ortho = OrthogonalLSTM(embed, hidden)
    fns = {
        "nn.LSTM": lambda: lstm(x)[0],
        "orthogonal_fused": lambda: ortho(x, mask),
        "orthogonal_autograd_loop": lambda: _orthogonal_lstm_reference(ortho.input_proj(x), mask, ortho.weight_hh),
    }
    times = {k: [] for k in fns}
    for _ in range(3):
        for k, fn in fns.items():
            fn().sum().backward()
    for _ in range(n):
        for k, fn in fns.items():
            start = time.perf_counter()
            fn().sum().backward()
            times[k].append(time.perf_counter() - start)
    return {k: {"median_ms": 1000 * statistics.median(v)} for k, v in times.items()} | {
        "shape": {"batch": batch, "length": length, "embed": embed, "hidden": hidden}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--hidden-size", type=int, default=128)
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {
        "config": vars(args) | {"torch": torch.__version__, "threads": 1, "machine": platform.machine()},
        "encoder_forward_backward": encoder_step_times(hidden=args.hidden_size),
        "epochs": epoch_times(args.train, args.epochs, args.repeats, args.hidden_size),
    }
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "bench_diversity_lstm.json"
    path.write_text(json.dumps(results, indent=2))
    for cell, r in results["epochs"].items():
        print(f"{cell:>10}: {r['median_epoch_seconds']:.2f} s/epoch ({r['ratio_to_fastest_lstm']:.2f}x)")
    for k, r in results["encoder_forward_backward"].items():
        if k != "shape":
            print(f"{k:>26}: {r['median_ms']:.1f} ms per forward+backward")
    print(f"written {path}")


if __name__ == "__main__":
    main()
