"""Cost of the inherent B-cos ViT explanation vs prediction and integrated gradients.

Times, in interleaved rounds of one run on a batch of 64 MNIST images (default model size of
``python -m interpretable reproduce bcos-vit``): ``predict``, inherent ``explain`` (one backward
pass for the whole batch in explanation mode), ``explain(by="head")`` and
``explain(method="integrated_gradients")`` (32 steps). Targets: explain ≤ 3× predict and
≥ 10× cheaper than integrated gradients. The comparison with the ``bcos`` PyPI package is
``bench_bcos_package.py`` (its own venv: ``make bench-bcos-package``). Writes
``benchmarks/results/bcos_vit_speed.json``.
"""

import argparse
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402

from interpretable import BcosViTClassifier  # noqa: E402
from interpretable.reproduce.bcos_vit import SIZE, split  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--slow-rounds", type=int, default=2,
                        help="rounds of the per-head and integrated-gradients explanations")
    parser.add_argument("--out", default=str(RESULTS / "bcos_vit_speed.json"))
    args = parser.parse_args()
    torch.set_num_threads(1)
    X_train, X_test, y_train, _ = split()
    clf = BcosViTClassifier(**SIZE, max_epochs=1, batch_size=64, random_state=0)
    clf.fit(X_train[:256], y_train[:256])
    batch = X_test[:64]
    record = run_record()
    # each ratio's anchor in the same interleaved rounds
    seconds, cpu_seconds = timed({"predict": lambda: clf.predict(batch),
                                  "explain_inherent": lambda: clf.explain(batch)}, args.rounds)
    slow, slow_cpu = timed({
        "explain_by_head": lambda: clf.explain(batch, by="head"),
        "explain_integrated_gradients_32":
            lambda: clf.explain(batch, method="integrated_gradients"),
        "explain_inherent_beside_slow": lambda: clf.explain(batch)}, args.slow_rounds)
    seconds.update(slow)
    cpu_seconds.update(slow_cpu)
    record.update({
        "batch_size": 64, "model": SIZE, "rounds": args.rounds,
        "slow_rounds": args.slow_rounds, "seconds": seconds, "cpu_seconds": cpu_seconds,
        "targets": [
            target("holistic B-cos ViT inherent explain / predict (batch 64)",
                   seconds["explain_inherent"] / seconds["predict"], 3.0, at_most=True),
            target("integrated gradients (32 steps) / inherent explain",
                   seconds["explain_integrated_gradients_32"]
                   / seconds["explain_inherent_beside_slow"], 10.0)]})
    Path(args.out).write_text(json.dumps(finish_record(record), indent=1))
    for row in record["targets"]:
        print(row)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
