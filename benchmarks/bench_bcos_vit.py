"""Cost of the inherent B-cos ViT explanation vs prediction and integrated gradients.

Times, side by side in one run on a batch of 64 MNIST images (default model size of
``python -m interpretable reproduce bcos-vit``): ``predict``, inherent ``explain`` (one backward
pass for the whole batch in explanation mode), ``explain(by="head")`` and
``explain(method="integrated_gradients")`` (32 steps). Targets: explain ≤ 3× predict and
≥ 10× cheaper than integrated gradients. The comparison with the ``bcos`` PyPI package is
``bench_bcos_package.py`` (its own venv: ``make bench-bcos-package``). Writes
``benchmarks/results/bcos_vit_speed.json``.
"""

import json
import platform
import statistics
import time
from pathlib import Path

import torch

from interpretable import BcosViTClassifier
from interpretable.reproduce.bcos_vit import SIZE, split

RESULTS = Path(__file__).parent / "results"


def timed(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    torch.set_num_threads(1)
    X_train, X_test, y_train, _ = split()
    clf = BcosViTClassifier(**SIZE, max_epochs=1, batch_size=64, random_state=0)
    clf.fit(X_train[:256], y_train[:256])
    batch = X_test[:64]
    seconds = {
        "predict": timed(lambda: clf.predict(batch), 5),
        "explain_inherent": timed(lambda: clf.explain(batch), 5),
        "explain_by_head": timed(lambda: clf.explain(batch, by="head"), 2),
        "explain_integrated_gradients_32": timed(
            lambda: clf.explain(batch, method="integrated_gradients"), 2),
    }
    ratios = {
        "explain_over_predict": seconds["explain_inherent"] / seconds["predict"],
        "integrated_gradients_over_explain":
            seconds["explain_integrated_gradients_32"] / seconds["explain_inherent"],
    }
    result = {
        "batch_size": 64, "model": SIZE, "threads": 1, "device": "cpu",
        "machine": platform.machine(), "torch": torch.__version__,
        "seconds": seconds, "ratios": ratios,
        "targets": {"explain_at_most_3x_predict": ratios["explain_over_predict"] <= 3,
                    "integrated_gradients_at_least_10x_explain":
                        ratios["integrated_gradients_over_explain"] >= 10},
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_vit_speed.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
