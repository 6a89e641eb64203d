"""Cost of the B-cos MiniLM against the conventional MiniLM through the estimators' API.

``python benchmarks/bench_bcos_text.py [--texts 256] [--repeats 5]`` (or ``python -m benchmarks
bcos_text``) converts the bundled MiniLM both ways (B = 1.5, matched gains, mean pooling; one
training step on 32 texts: speed does not depend on the weights) and times on one CPU thread,
in interleaved rounds of one run, medians of ``--repeats``: ``predict_proba`` of both on
``--texts`` movie-review snippets (batch 32, at most 64 word pieces); the exact explanation
(``explain``, piece and word level) against the B-cos predict, rounds of their own. Writes
``benchmarks/results/bcos_text_speed.json``: the throughput ratio (target >= 0.7) and
explain / predict (target <= 3).
"""

import argparse
import json
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402

from interpretable import BcosTextClassifier, BertTextClassifier  # noqa: E402
from interpretable.datasets import load_rotten_tomatoes  # noqa: E402


def main(texts: int = 256, repeats: int = 5, threads: int = 1,
         out: Path = RESULTS / "bcos_text_speed.json") -> dict:
    torch.set_num_threads(threads)
    data = load_rotten_tomatoes()
    options = dict(max_length=64, batch_size=32, lr=1e-12, random_state=0, device="cpu")
    record = run_record()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = {"minilm": BertTextClassifier(**options),
                  "bcos": BcosTextClassifier(b=1.5, **options)}
        for model in models.values():
            model.fit(data.data[:32], data.target[:32])
        X = data.data[-texts:]
        bcos = models["bcos"]
        # each ratio from its own interleaved rounds: an explanation between two predicts slows
        # the next one (allocator and cache state)
        seconds, cpu_seconds = timed({
            "predict_minilm": lambda: models["minilm"].predict_proba(X),
            "predict_bcos": lambda: bcos.predict_proba(X)}, repeats)
        beside, beside_cpu = timed({
            "explain_bcos": lambda: bcos.explain(X),
            "explain_bcos_words": lambda: bcos.explain(X, level="word"),
            "predict_bcos_beside_explain": lambda: bcos.predict_proba(X)}, repeats)
    seconds.update(beside)
    cpu_seconds.update(beside_cpu)
    throughput = seconds["predict_minilm"] / seconds["predict_bcos"]
    explain = seconds["explain_bcos"] / seconds["predict_bcos_beside_explain"]
    record.update({
        "texts": texts, "repeats": repeats, "b": 1.5, "seconds": seconds,
        "cpu_seconds": cpu_seconds, "predict_throughput_ratio": throughput,
        "explain_over_predict": explain,
        "explain_words_over_predict": seconds["explain_bcos_words"]
        / seconds["predict_bcos_beside_explain"],
        "targets": [
            target("B-cos MiniLM predict throughput / conventional MiniLM's", throughput, 0.7),
            target("B-cos MiniLM explain / predict", explain, 3.0, at_most=True)]})
    RESULTS.mkdir(exist_ok=True)
    Path(out).write_text(json.dumps(finish_record(record), indent=2) + "\n")
    return record


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", default=str(RESULTS / "bcos_text_speed.json"))
    args = parser.parse_args()
    print(json.dumps(main(args.texts, args.repeats, args.threads, args.out), indent=2))
