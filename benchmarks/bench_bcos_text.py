"""Cost of the B-cos MiniLM against the conventional MiniLM through the estimators' API.

``python benchmarks/bench_bcos_text.py`` (or ``python -m benchmarks bcos_text``) converts the
bundled MiniLM both ways (B = 1.5, matched gains, mean pooling; one training step on 32 texts:
speed does not depend on the weights) and times on one CPU thread, alternating the models,
median of ``repeats``: ``predict_proba`` of both on 256 movie-review snippets (batch 32, at
most 64 word pieces) and the exact explanation (``explain``, piece and word level). Writes
``benchmarks/results/bcos_text_speed.json``: the throughput ratio (target >= 0.7) and
explain / predict (target <= 3).
"""

import json
import platform
import statistics
import time
import warnings
from pathlib import Path

import torch

from interpretable import BcosTextClassifier, BertTextClassifier
from interpretable.datasets import load_rotten_tomatoes

RESULTS = Path(__file__).parent / "results"


def main(texts: int = 256, repeats: int = 5, threads: int = 1) -> dict:
    torch.set_num_threads(threads)
    data = load_rotten_tomatoes()
    options = dict(max_length=64, batch_size=32, lr=1e-12, random_state=0, device="cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = {"minilm": BertTextClassifier(**options),
                  "bcos": BcosTextClassifier(b=1.5, **options)}
        for model in models.values():
            model.fit(data.data[:32], data.target[:32])
        X = data.data[-texts:]
        calls = {"predict_minilm": lambda: models["minilm"].predict_proba(X),
                 "predict_bcos": lambda: models["bcos"].predict_proba(X),
                 "explain_bcos": lambda: models["bcos"].explain(X),
                 "explain_bcos_words": lambda: models["bcos"].explain(X, level="word")}
        times = {name: [] for name in calls}
        for call in calls.values():
            call()  # warm-up
        for _ in range(repeats):
            for name, call in calls.items():
                start = time.perf_counter()
                call()
                times[name].append(time.perf_counter() - start)
    seconds = {name: statistics.median(values) for name, values in times.items()}
    result = {"texts": texts, "repeats": repeats, "threads": threads, "b": 1.5,
              "machine": platform.machine(), "torch": torch.__version__, "seconds": seconds,
              "predict_throughput_ratio": seconds["predict_minilm"] / seconds["predict_bcos"],
              "explain_over_predict": seconds["explain_bcos"] / seconds["predict_bcos"],
              "explain_words_over_predict": seconds["explain_bcos_words"]
              / seconds["predict_bcos"]}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bcos_text_speed.json").write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    print(json.dumps(main(), indent=2))
