"""Epoch time of the three DiversityLSTMClassifier cells, side by side in one run.

The orthogonal cell needs a Python-level recurrence (each h_t depends on the sum of the
previous h); it runs as one autograd Function over packed sequences with a hand-written backward
pass (``interpretable.nn.orthogonal_lstm``). Target: an orthogonal epoch
takes <= 1.3x a ``"vanilla"`` (torch.nn.LSTM, fused) epoch.

Each epoch is timed in wall-clock seconds (skorch's ``dur``) and in CPU seconds of this process
(robust to other processes sharing the machine). One torch thread; the cells' fits run in
interleaved rounds whose order rotates (``benchmarks/ratios.py``), so load from other processes
hits them alike; medians. Also times one forward + backward of the bare encoders
(torch.nn.LSTM, the orthogonal cell, and the plain autograd loop it replaces) the same way.
Writes ``benchmarks/results/bench_diversity_lstm.json``.

    python benchmarks/bench_diversity_lstm.py [--train 3000] [--epochs 2] [--repeats 3]
"""
import argparse
import contextlib
import json
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import torch
from skorch.callbacks import EpochTimer

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402

#: the tests' helpers: the plain autograd loop the orthogonal cell is timed against
TESTS = Path(__file__).parents[1] / "tests"
CELLS = ("vanilla", "diversity", "orthogonal")


@contextlib.contextmanager
def epoch_cpu_time():
    """Make skorch's ``EpochTimer`` also record each epoch's process CPU time (``cpu``)."""
    begin, end = EpochTimer.on_epoch_begin, EpochTimer.on_epoch_end

    def on_epoch_begin(self, net, **kwargs):
        self.cpu_start_ = time.process_time()
        begin(self, net, **kwargs)

    def on_epoch_end(self, net, **kwargs):
        net.history.record("cpu", time.process_time() - self.cpu_start_)
        end(self, net, **kwargs)

    with mock.patch.object(EpochTimer, "on_epoch_begin", on_epoch_begin), \
            mock.patch.object(EpochTimer, "on_epoch_end", on_epoch_end):
        yield


def epoch_times(n_train, epochs, repeats, hidden_size):
    from interpretable import DiversityLSTMClassifier
    from interpretable.datasets import load_rotten_tomatoes

    X, y = load_rotten_tomatoes(return_X_y=True)
    X, y = X[:n_train], y[:n_train]
    wall = {cell: [] for cell in CELLS}
    cpu = {cell: [] for cell in CELLS}

    def fit(cell):
        def run():
            clf = DiversityLSTMClassifier(cell=cell, embeddings="glove-50",
                                          hidden_size=hidden_size, max_epochs=epochs,
                                          batch_size=64, random_state=0, device="cpu").fit(X, y)
            wall[cell].extend(float(h["dur"]) for h in clf.history_)
            cpu[cell].extend(float(h["cpu"]) for h in clf.history_)
        return run

    with epoch_cpu_time():  # no warm-up: epoch times leave out fit's set-up
        timed({cell: fit(cell) for cell in CELLS}, repeats, warmup=0)
    out = {cell: {"median_epoch_seconds": statistics.median(wall[cell]),
                  "epoch_seconds": wall[cell],
                  "median_epoch_cpu_seconds": statistics.median(cpu[cell]),
                  "epoch_cpu_seconds": cpu[cell]}
           for cell in CELLS}
    base = min(out["vanilla"]["median_epoch_seconds"], out["diversity"]["median_epoch_seconds"])
    for cell in out:
        out[cell]["ratio_to_fastest_lstm"] = out[cell]["median_epoch_seconds"] / base
    out["orthogonal_to_nn_lstm"] = {
        key: out["orthogonal"][f"median_epoch_{key}"] / out["vanilla"][f"median_epoch_{key}"]
        for key in ("seconds", "cpu_seconds")}
    return out


def encoder_step_times(batch=64, length=30, embed=50, hidden=128, n=20):
    sys.path.insert(0, str(TESTS))
    from orthogonal_lstm_reference import orthogonal_lstm_reference

    from interpretable.nn import OrthogonalLSTM

    torch.manual_seed(0)
    x = torch.randn(batch, length, embed)
    mask = torch.ones(batch, length, dtype=torch.bool)
    lstm = torch.nn.LSTM(embed, hidden, batch_first=True)
    ortho = OrthogonalLSTM(embed, hidden)
    fns = {
        "nn.LSTM": lambda: lstm(x)[0],
        "orthogonal_fused": lambda: ortho(x, mask),
        "orthogonal_autograd_loop": lambda: orthogonal_lstm_reference(
            x, mask, ortho.weight_ih, ortho.weight_hh, ortho.bias),
    }
    wall, cpu = timed({k: lambda fn=fn: fn().sum().backward() for k, fn in fns.items()}, n,
                      warmup=3)
    return {k: {"median_ms": 1000 * wall[k], "median_cpu_ms": 1000 * cpu[k]} for k in fns} | {
        "shape": {"batch": batch, "length": length, "embed": embed, "hidden": hidden}}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--hidden-size", type=int, default=128)
    parser.add_argument("--out", default=str(RESULTS / "bench_diversity_lstm.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    results = {
        **run_record(),
        "config": {k: v for k, v in vars(args).items() if k != "out"},
        "encoder_forward_backward": encoder_step_times(hidden=args.hidden_size),
        "epochs": epoch_times(args.train, args.epochs, args.repeats, args.hidden_size),
    }
    epochs = results["epochs"]
    results["targets"] = [target("orthogonal-LSTM epoch / nn.LSTM epoch (CPU time)",
                                 epochs["orthogonal_to_nn_lstm"]["cpu_seconds"], 1.3,
                                 at_most=True)]
    path = Path(args.out)
    path.write_text(json.dumps(finish_record(results), indent=2))
    for cell in CELLS:
        r = epochs[cell]
        print(f"{cell:>10}: {r['median_epoch_seconds']:.2f} s/epoch "
              f"({r['ratio_to_fastest_lstm']:.2f}x), "
              f"{r['median_epoch_cpu_seconds']:.2f} CPU s/epoch")
    ratio = epochs["orthogonal_to_nn_lstm"]
    print(f"orthogonal / nn.LSTM per epoch: {ratio['seconds']:.2f}x wall, "
          f"{ratio['cpu_seconds']:.2f}x CPU")
    for k, r in results["encoder_forward_backward"].items():
        if k != "shape":
            print(f"{k:>26}: {r['median_ms']:.1f} ms per forward+backward")
    print(f"written {path}")


if __name__ == "__main__":
    main()
