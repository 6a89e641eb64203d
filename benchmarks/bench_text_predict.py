"""Text predict and explain speed (texts/s) against TF-IDF + LogisticRegression, in one run.

Targets: EmbeddingBagClassifier's predict takes at most 1.5x the time of TF-IDF +
LogisticRegression on the same texts and reaches 10k texts/s; the recurrent models
(DiversityLSTMClassifier, SEATClassifier with the RNN encoder) predict >= 5k texts/s. The
models predict the first ``--texts`` Rotten Tomatoes snippets after a brief fit on the others
(1 epoch, embeddings learned from scratch, hidden size 64, default cells and explanation
methods: speed does not depend on accuracy). Also times the word tokenizer against nltk's. One
thread; the calls are interleaved over repeats so load from other processes hits them alike;
medians of the process-CPU time (the ratios; wall-clock beside). The repeated predicts find
the tokenizer's memo of word chunks warm; the first predict after fit, in fresh processes
(median of 3), finds only the training texts' chunks there. Writes
``benchmarks/results/bench_text_predict.json``; ``--profile`` also prints where each neural
model's predict spends its time (cProfile).

    python benchmarks/bench_text_predict.py [--texts 10000] [--repeats 5] [--profile]
"""
import argparse
import cProfile
import json
import pstats
import re
import statistics
import subprocess
import sys
import time

import torch
from ratios import RESULTS, finish_record, run_record, target, timed
from threadpoolctl import threadpool_limits

SETTINGS = dict(embed_dim=50, max_epochs=1, batch_size=64, device="cpu", random_state=0)
TARGETS = {"EmbeddingBagClassifier": 10_000, "DiversityLSTMClassifier": 5_000,
           "SEATClassifier(rnn)": 5_000}
MAX_TIME_OVER_ANCHOR = 1.5  # EmbeddingBagClassifier's predict time / TF-IDF + LogReg's


def fitted_models(X, y):
    """The three neural classifiers and the TF-IDF + LogisticRegression anchor, fitted."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from interpretable import DiversityLSTMClassifier, EmbeddingBagClassifier, SEATClassifier

    models = {
        "EmbeddingBagClassifier": EmbeddingBagClassifier(**SETTINGS),
        "DiversityLSTMClassifier": DiversityLSTMClassifier(hidden_size=64, **SETTINGS),
        "SEATClassifier(rnn)": SEATClassifier(encoder="rnn", variant="vanilla", hidden_size=64,
                                              **SETTINGS),
        "tfidf_logreg": make_pipeline(TfidfVectorizer(), LogisticRegression(max_iter=1000)),
    }
    return {name: model.fit(X, y) for name, model in models.items()}


def nltk_tokenize_many(texts):
    """``TextEncoder().tokenize`` as it was before: lower-case, sentence split, nltk."""
    from nltk.tokenize import NLTKWordTokenizer

    tokenizer, sentence_end = NLTKWordTokenizer(), re.compile(r"(?<=[.!?])\s+")
    return [[tok for s in sentence_end.split(t.lower()) for tok in tokenizer.tokenize(s)]
            for t in texts]


def first_predict_seconds(n_texts):
    """In this (fresh) process: fit EmbeddingBagClassifier and the anchor, then the CPU seconds
    of each one's first predict of the test texts (the tokenizer's memo of word chunks then
    holds only what fit saw: the cold case)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from interpretable import EmbeddingBagClassifier
    from interpretable.datasets import load_rotten_tomatoes

    X, y = load_rotten_tomatoes(return_X_y=True)
    X_test, X_train, y_train = X[:n_texts], X[n_texts:], y[n_texts:]
    out = {}
    with threadpool_limits(1):
        for name, model in (("EmbeddingBagClassifier", EmbeddingBagClassifier(**SETTINGS)),
                            ("tfidf_logreg", make_pipeline(TfidfVectorizer(),
                                                           LogisticRegression(max_iter=1000)))):
            model.fit(X_train, y_train)
            start = time.process_time()
            model.predict(X_test)
            out[name] = time.process_time() - start
    return out


def cold_ratio(n_texts, processes=3):
    """Median over fresh processes of the first predict's time ratio, and the runs."""
    runs = [json.loads(subprocess.run([sys.executable, __file__, "--cold", "--texts",
                                       str(n_texts)], check=True, capture_output=True,
                                      text=True).stdout) for _ in range(processes)]
    ratio = statistics.median(r["EmbeddingBagClassifier"] / r["tfidf_logreg"] for r in runs)
    return ratio, runs


def print_profile(name, call, top=15):
    """cProfile of ``call``: the functions with the most own time, then the package's functions
    by cumulative time."""
    profile = cProfile.Profile()
    profile.runcall(call)
    stats = pstats.Stats(profile)
    print(f"\n== cProfile of {name}")
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats("interpretable/", top)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--texts", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--cold", action="store_true",
                        help="print the first predict's seconds in this process (internal)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.cold:
        print(json.dumps(first_predict_seconds(args.texts)))
        return

    from interpretable.datasets import load_rotten_tomatoes
    from interpretable.preprocessing import TextEncoder

    record = run_record()
    X, y = load_rotten_tomatoes(return_X_y=True)
    X_test, X_train, y_train = X[: args.texts], X[args.texts:], y[args.texts:]
    with threadpool_limits(1):
        models = fitted_models(X_train, y_train)
        neural = [name for name in models if name != "tfidf_logreg"]
        calls = {f"predict/{name}": (lambda m=model: m.predict(X_test))
                 for name, model in models.items()}
        calls |= {f"explain/{name}": (lambda m=models[name]: m.explain(X_test)) for name in neural}
        calls |= {"tokenize/TextEncoder": lambda: TextEncoder().tokenize_many(X_test),
                  "tokenize/nltk": lambda: nltk_tokenize_many(X_test)}
        wall, seconds = timed(calls, args.repeats)
        if args.profile:
            for name in neural:
                print_profile(f"{name}.predict", calls[f"predict/{name}"])

    cold, cold_runs = cold_ratio(args.texts)
    rate = {name: args.texts / s for name, s in seconds.items()}
    anchor = rate["predict/tfidf_logreg"]
    time_over_anchor = seconds["predict/EmbeddingBagClassifier"] / seconds["predict/tfidf_logreg"]
    results = {
        **finish_record(record),
        "settings": vars(args) | {"train_texts": len(X_train), "hidden_size": 64,
                                  "embeddings": "learned from scratch", **SETTINGS},
        "statistic": "median over interleaved repeats of process-CPU seconds (wall beside)",
        "texts_per_second": rate,
        "texts_per_second_wall": {name: args.texts / s for name, s in wall.items()},
        "tokenizer_speedup_over_nltk": rate["tokenize/TextEncoder"] / rate["tokenize/nltk"],
        "models": {
            name: {
                "predict_texts_per_second": rate[f"predict/{name}"],
                "predict_over_anchor": rate[f"predict/{name}"] / anchor,
                "explain_texts_per_second": rate[f"explain/{name}"],
                "explain_seconds_over_predict_seconds":
                    seconds[f"explain/{name}"] / seconds[f"predict/{name}"],
                "target_texts_per_second": TARGETS[name],
                "meets_target": rate[f"predict/{name}"] >= TARGETS[name],
            }
            for name in neural
        },
    }
    results["models"]["EmbeddingBagClassifier"].update(
        predict_time_over_anchor=time_over_anchor,
        predict_time_over_anchor_wall=(wall["predict/EmbeddingBagClassifier"]
                                       / wall["predict/tfidf_logreg"]),
        first_predict_time_over_anchor=cold, first_predict_cpu_seconds=cold_runs,
        meets_anchor_target=time_over_anchor <= MAX_TIME_OVER_ANCHOR)
    results["targets"] = [
        target("EmbeddingBag predict time / TF-IDF + LogReg", time_over_anchor,
               MAX_TIME_OVER_ANCHOR, at_most=True),
        target("EmbeddingBag first predict after fit / TF-IDF + LogReg", cold,
               MAX_TIME_OVER_ANCHOR, at_most=True),
        *(target(f"{name} predict texts/s", rate[f"predict/{name}"], goal, unit="")
          for name, goal in TARGETS.items())]
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "bench_text_predict.json"
    path.write_text(json.dumps(results, indent=2))

    print(f"\n{'':>24} {'predict/s':>10} {'ours/anchor':>11} {'explain/s':>10} "
          f"{'explain/predict':>15} {'target':>7}")
    for name, r in results["models"].items():
        met = r["meets_target"] and r.get("meets_anchor_target", True)
        print(f"{name:>24} {r['predict_texts_per_second']:>10.0f} "
              f"{r['predict_over_anchor']:>11.2f} {r['explain_texts_per_second']:>10.0f} "
              f"{r['explain_seconds_over_predict_seconds']:>15.2f} {'met' if met else 'MISSED':>7}")
    print(f"{'TF-IDF + LogReg':>24} {anchor:>10.0f} {1:>11.2f}")
    print(f"EmbeddingBag predict time / TF-IDF + LogReg: {time_over_anchor:.2f} repeated, "
          f"{cold:.2f} first predict after fit (goal <= {MAX_TIME_OVER_ANCHOR})")
    print(f"tokenize: TextEncoder {rate['tokenize/TextEncoder']:.0f} texts/s, nltk "
          f"{rate['tokenize/nltk']:.0f} texts/s ({results['tokenizer_speedup_over_nltk']:.1f}x)")
    print(f"written {path}")


if __name__ == "__main__":
    main()
