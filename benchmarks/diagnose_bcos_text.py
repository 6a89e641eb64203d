"""Where does the B-cos MiniLM lose accuracy before fine-tuning?

``OMP_NUM_THREADS=1 python benchmarks/diagnose_bcos_text.py [--train 2000] [--test 500]``

Converts the bundled all-MiniLM-L6-v2 in several ways and, on Rotten Tomatoes texts (the
reproduction's split, seed 0), compares each encoder's mean-pooled final states with those
of the original (biases kept) and of the bias-free original:

* ``cosine_to_original`` / ``cosine_to_bias_free``: mean cosine of the sentence vectors over
  the test texts (``centred_``: after subtracting each encoder's mean vector, the component
  common to all texts);
* ``probe_accuracy``: a logistic regression (standardised features) on the frozen sentence
  vectors of ``train`` texts, accuracy on ``test`` texts; ``probe_accuracy_pooler``: the same
  on the B-cos pooler's output (the vector the B-cos classifier reads);
* ``initial_logit_std``: the spread of the logits of the new classifier at initialisation (the
  conventional model's ``nn.Linear`` against the B-cos layer, with and without a logit scale).

The variants separate the biases (original vs bias-free), the unit-norm rows (``unit`` vs
``row_gains``, the pretrained row norms kept as fixed gains), the exponent ``b`` (1, 1.25,
1.5, 2, per layer), the gains (``matched`` vs the authors' γ = 1) and ``gate_biases`` (the
query / key biases and the intermediate bias kept inside the dynamic weights). Writes
``benchmarks/results/<out>.json`` (default ``bcos_text_diagnosis``).
"""
import argparse
import copy
import json
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).parent / "results"

VARIANTS = {  # name -> BcosBertClassifier options
    "bcos_b1_unit_rows": dict(b=1.0),
    "bcos_b1_row_gains": dict(b=1.0, row_gains=True),
    "bcos_b1.25_matched_unit_rows": dict(b=1.25, matched=True),
    "bcos_b1.25_matched_row_gains": dict(b=1.25, matched=True, row_gains=True),
    "bcos_b1.5_unit_gain_unit_rows": dict(b=1.5),
    "bcos_b1.5_matched_unit_rows": dict(b=1.5, matched=True),
    "bcos_b1.5_matched_row_gains": dict(b=1.5, matched=True, row_gains=True),
    "bcos_b2_matched_row_gains": dict(b=2.0, matched=True, row_gains=True),
    "bcos_b1-1-1.25-1.25-1.5-1.5_matched_row_gains": dict(
        b=[1.0, 1.0, 1.25, 1.25, 1.5, 1.5], matched=True, row_gains=True),
    "bcos_b1_unit_rows_gate_biases": dict(b=1.0, gate_biases=True),
    "bcos_b1_row_gains_gate_biases": dict(b=1.0, row_gains=True, gate_biases=True),
    "bcos_b1.5_matched_unit_rows_gate_biases": dict(b=1.5, matched=True, gate_biases=True),
    "bcos_b1.5_matched_row_gains_gate_biases": dict(b=1.5, matched=True, row_gains=True,
                                                    gate_biases=True),
}


def batches(encoder, texts, size=64):
    for start in range(0, len(texts), size):
        pieces = [encoder.align(t).pieces for t in texts[start:start + size]]
        ids, lengths = encoder.encode_tokens(pieces)
        yield torch.from_numpy(ids), torch.from_numpy(lengths)


def mean_pool(hidden, lengths):
    mask = (torch.arange(hidden.shape[1])[None] < lengths[:, None]).to(hidden.dtype)[..., None]
    return (hidden * mask).sum(1) / mask.sum(1)


@torch.no_grad()
def hf_vectors(bert, encoder, texts):
    out = []
    for ids, lengths in batches(encoder, texts):
        mask = (torch.arange(ids.shape[1])[None] < lengths[:, None]).long()
        out.append(mean_pool(bert(input_ids=ids, attention_mask=mask).last_hidden_state, lengths))
    return torch.cat(out).numpy()


@torch.no_grad()
def bcos_vectors(model, encoder, texts):
    pooled, pooler = [], []
    for ids, lengths in batches(encoder, texts):
        mask = model.padding_mask(ids, lengths)
        summed = model.embed(ids) + model.position_type_embeddings(ids)
        vector = mean_pool(model.hidden_states(summed, mask, need_probs=False)[0], lengths)
        pooled.append(vector)
        pooler.append(model.pooler(vector) if model.pooler is not None else vector)
    return torch.cat(pooled).numpy(), torch.cat(pooler).numpy()


def cosine(a, b, centred=False):
    if centred:  # without the component common to all texts
        a, b = a - a.mean(0), b - b.mean(0)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return float((a * b).sum(1).mean())


def probe(train, test, y_train, y_test):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=3000))
    return float(clf.fit(train, y_train).score(test, y_test))


def main(n_train=2000, n_test=500, seed=0, variants=None, out="bcos_text_diagnosis"):
    import transformers

    from interpretable.datasets import load_minilm
    from interpretable.nn.bcos import BcosBertClassifier
    from interpretable.preprocessing import WordPieceEncoder
    from interpretable.reproduce.bcos_text import split

    torch.set_num_threads(1)
    torch.manual_seed(seed)
    start = time.perf_counter()
    X_train, X_test, y_train, y_test = split("rotten-tomatoes", n_train, n_test, seed)
    texts = X_train + X_test
    folder = load_minilm()
    encoder = WordPieceEncoder(max_len=64, checkpoint=folder).fit()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bert = transformers.BertModel.from_pretrained(str(folder), local_files_only=True).eval()
    bias_free = copy.deepcopy(bert)
    with torch.no_grad():
        for name, param in bias_free.named_parameters():
            if name.endswith(".bias"):
                param.zero_()
    vectors = {"original": hf_vectors(bert, encoder, texts),
               "bias_free_original": hf_vectors(bias_free, encoder, texts)}
    pooler_vectors = {}
    for name, options in VARIANTS.items():
        if variants and name not in variants:
            continue
        torch.manual_seed(seed)
        model = BcosBertClassifier.from_bert(bert, None, 2, pooling="mean", **options).eval()
        vectors[name], pooler_vectors[name] = bcos_vectors(model, encoder, texts)
    n = len(X_train)
    results = {}
    for name, v in vectors.items():
        row = {"cosine_to_original": cosine(v[n:], vectors["original"][n:]),
               "cosine_to_bias_free": cosine(v[n:], vectors["bias_free_original"][n:]),
               "centred_cosine_to_original": cosine(v[n:], vectors["original"][n:], True),
               "centred_cosine_to_bias_free": cosine(v[n:], vectors["bias_free_original"][n:],
                                                     True),
               "mean_norm": float(np.linalg.norm(v, axis=1).mean()),
               "probe_accuracy": probe(v[:n], v[n:], y_train, y_test)}
        if name in pooler_vectors:
            p = pooler_vectors[name]
            row["probe_accuracy_pooler"] = probe(p[:n], p[n:], y_train, y_test)
            row["pooler_mean_norm"] = float(np.linalg.norm(p, axis=1).mean())
        results[name] = row
        print(name, {k: round(x, 4) for k, x in row.items()}, flush=True)
    # the new classifiers' logits at initialisation, on the vectors they read
    logits = {}
    conventional = torch.nn.Linear(384, 2)
    logits["conventional_linear"] = float(
        conventional(torch.from_numpy(vectors["original"][n:])).detach().std())
    for name in ("bcos_b1.5_matched_unit_rows", "bcos_b1.5_matched_row_gains"):
        if name not in pooler_vectors:
            continue
        torch.manual_seed(seed)
        model = BcosBertClassifier.from_bert(bert, None, 2, pooling="mean",
                                             **VARIANTS[name]).eval()
        with torch.no_grad():
            for pooler, key in ((True, name), (False, name + "_no_pooler")):
                vec = pooler_vectors[name] if pooler else vectors[name]
                logits[key] = float(model.classifier(torch.from_numpy(vec[n:])).std())
    out = {"command": "OMP_NUM_THREADS=1 python " + " ".join(sys.argv),
           "n_train": n, "n_test": len(X_test), "seed": seed, "max_length": 64,
           "pooling": "mean", "variants": results, "initial_logit_std": logits,
           "seconds": time.perf_counter() - start, "torch": torch.__version__,
           "python": platform.python_version()}
    (RESULTS / f"{out}.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", type=int, default=2000)
    parser.add_argument("--test", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=None, help="default: all")
    parser.add_argument("--out", default="bcos_text_diagnosis")
    args = parser.parse_args()
    main(args.train, args.test, args.seed, args.variants, args.out)
