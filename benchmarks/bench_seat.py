"""SEAT fit time per epoch against the vanilla attention model, side by side in one run.

Target: SEAT epoch time <= (pgd_steps + 2) x the vanilla epoch time. A SEAT epoch runs
the frozen encoder forward once, ``pgd_steps`` batched PGD steps on the attention (decoder
only) and one backward pass into the attention layer. Also times the batched metrics on the
test texts. One torch thread; after one vanilla fit (SEAT's frozen base), vanilla and SEAT fits
run in interleaved rounds (``benchmarks/ratios.py``) so load from other processes hits them
alike; the ratio is of the median epoch times (skorch's ``dur``) over the rounds' fits. Writes
``benchmarks/results/bench_seat.json``.

    python benchmarks/bench_seat.py [--train 3000] [--epochs 2] [--repeats 2] [--pgd-steps 5]
"""
import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402


def epoch_times(encoder, n_train, epochs, repeats, pgd_steps, hidden_size):
    """Epoch times of the vanilla and the SEAT fits, their ratio, and the last SEAT model."""
    from sklearn.frozen import FrozenEstimator

    from interpretable import SEATClassifier
    from interpretable.datasets import load_rotten_tomatoes
    from interpretable.estimators.seat import SEAT, Vanilla

    X, y = load_rotten_tomatoes(return_X_y=True)
    X, y = X[:n_train], y[:n_train]
    common = dict(encoder=encoder, embeddings="glove-50", hidden_size=hidden_size,
                  max_epochs=epochs, batch_size=64, device="cpu", random_state=0)
    base = FrozenEstimator(SEATClassifier(variant=Vanilla(), **common).fit(X, y))
    times, fitted = {"vanilla": [], "seat": []}, {}

    def fit(name, **params):
        def run():
            fitted[name] = SEATClassifier(**params, **common).fit(X, y)
            times[name].extend(float(h["dur"]) for h in fitted[name].history_)
        return run

    # no warm-up: the base's fit warmed the process, and epoch times leave out fit's set-up
    fit_seconds = timed({"vanilla": fit("vanilla", variant=Vanilla()),
                         "seat": fit("seat", variant=SEAT(pgd_steps=pgd_steps),
                                     base_estimator=base)}, repeats, warmup=0)[0]
    out = {m: {"median_epoch_seconds": statistics.median(t), "epoch_seconds": t,
               "median_fit_seconds": fit_seconds[m]}
           for m, t in times.items()}
    ratio = out["seat"]["median_epoch_seconds"] / out["vanilla"]["median_epoch_seconds"]
    out["seat_over_vanilla"] = ratio
    out["target_ratio"] = pgd_steps + 2
    out["meets_target"] = ratio <= pgd_steps + 2
    return out, fitted["seat"]


def metric_times(clf, n_texts):
    from interpretable.datasets import load_rotten_tomatoes
    from interpretable.metrics import (
        comprehensiveness,
        embedding_stability,
        sensitivity,
        sufficiency,
    )

    X = load_rotten_tomatoes(return_X_y=True)[0][-n_texts:]
    calls = {
        "embedding_stability_random": lambda: embedding_stability(clf, X, radius=1e-3),
        "embedding_stability_adversarial": lambda: embedding_stability(clf, X, kind="adversarial"),
        "comprehensiveness": lambda: comprehensiveness(clf, X),
        "sufficiency": lambda: sufficiency(clf, X),
        "sensitivity": lambda: sensitivity(clf, X, n_search=5),
    }
    out = {}
    for name, call in calls.items():
        start = time.perf_counter()
        call()
        out[name] = time.perf_counter() - start
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", type=int, default=3000)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--pgd-steps", dest="pgd_steps", type=int, default=5)
    parser.add_argument("--hidden-size", dest="hidden_size", type=int, default=128)
    parser.add_argument("--metric-texts", dest="metric_texts", type=int, default=200)
    parser.add_argument("--out", default=str(RESULTS / "bench_seat.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    settings = {k: v for k, v in vars(args).items() if k != "out"}
    results = {**run_record(), "settings": settings, "encoders": {}, "targets": []}
    for encoder in ("rnn", "bilstm"):
        res, seat = epoch_times(encoder, args.train, args.epochs, args.repeats, args.pgd_steps,
                                args.hidden_size)
        res["metric_seconds"] = metric_times(seat, args.metric_texts)
        results["encoders"][encoder] = res
        results["targets"].append(target(f"SEAT ({encoder}) epoch / vanilla epoch",
                                         res["seat_over_vanilla"], res["target_ratio"],
                                         at_most=True))
        print(f"{encoder}: vanilla epoch {res['vanilla']['median_epoch_seconds']:.2f} s, "
              f"SEAT epoch {res['seat']['median_epoch_seconds']:.2f} s "
              f"(ratio {res['seat_over_vanilla']:.2f}, target <= {res['target_ratio']}); "
              f"metrics on {args.metric_texts} texts: "
              + ", ".join(f"{k} {v:.1f} s" for k, v in res["metric_seconds"].items()), flush=True)
    path = Path(args.out)
    path.write_text(json.dumps(finish_record(results), indent=2))
    print(f"written {path}")


if __name__ == "__main__":
    main()
