"""The shipped datasets and a worked exact explanation with the attention-free baseline."""

from __future__ import annotations

import time

import numpy as np

from interpretable.datasets import (
    load_digits_images,
    load_mnist_5k,
    load_rotten_tomatoes,
    load_shakespeare,
    make_babi_task1,
    make_parentheses,
)


def _datasets_table():
    import pandas as pd

    rt = load_rotten_tomatoes()
    mnist = load_mnist_5k()
    digits = load_digits_images()
    splits = {s: len(load_shakespeare(split=s)) for s in ("train", "valid", "test")}
    return pd.DataFrame(
        [
            ("rotten tomatoes", f"{len(rt.data)} texts",
             f"{int(rt.target.sum())} fresh / {int((rt.target == 0).sum())} rotten"),
            ("mnist 5k", str(mnist.data.shape), f"{len(np.unique(mnist.target))} classes"),
            ("digits 8x8", str(digits.data.shape), f"{len(np.unique(digits.target))} classes"),
            ("shakespeare", f"{sum(splits.values())} chars",
             " / ".join(f"{k} {v}" for k, v in splits.items())),
            ("parentheses (synthetic)", "100 x 100 symbols", "2 bracket types, max count 5"),
            ("bAbI-1 style (synthetic)", "pairs (story, question)", "answer = place"),
        ],
        columns=["dataset", "size", "notes"],
    )


def demo():
    from interpretable.estimators.text import EmbeddingBagClassifier

    print(_datasets_table().to_string(index=False))
    make_parentheses(100, 100, random_state=0), make_babi_task1(10, random_state=0)
    rt = load_rotten_tomatoes()
    X, y = rt.data, rt.target_names[rt.target]
    rng = np.random.RandomState(0)
    order = rng.permutation(len(X))
    train, test = order[:4000], order[-500:]
    start = time.perf_counter()
    clf = EmbeddingBagClassifier(embeddings="glove-50", max_epochs=5, random_state=0)
    clf.fit([X[i] for i in train], y[train])
    acc = clf.score([X[i] for i in test], y[test])
    print("\nEmbeddingBagClassifier (GloVe-50, 4,000 snippets, "
          f"{time.perf_counter() - start:.1f} s): "
          f"held-out accuracy {acc:.3f}")
    exp = clf.explain(["a gorgeous, witty and heartfelt film", "dull, lifeless and far too long"])
    frame = exp.to_frame()
    print(frame[["sample", "token", "target", "attribution", "prediction"]].to_string(index=False))
    print(f"completeness error (relative): {exp.completeness_error.max():.2e}")
