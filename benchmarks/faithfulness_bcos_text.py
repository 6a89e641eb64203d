"""Faithfulness of the B-cos MiniLM's exact explanation against the post-hoc methods on the
conventional MiniLM, on fitted models saved by :mod:`benchmarks.parity_bcos_text`.

``OMP_NUM_THREADS=1 python benchmarks/faithfulness_bcos_text.py --models DIR --seed 0
--bcos NAME --out NAME [--eval 300] [--post-hoc-from RESULTS]``

Loads ``DIR/minilm_seed<seed>`` and ``DIR/<bcos>_seed<seed>`` and, on the first ``--eval``
texts of the reproduction's Rotten Tomatoes test split (``--dataset trec``: of TREC's),
scores with ERASER comprehensiveness (↑) and sufficiency (↓) (AOPC over
:data:`~interpretable.metrics._faithfulness.ERASER_FRACTIONS`, the curve per fraction kept):

* the B-cos model's exact explanation (``"inherent"``) and, on the conventional model,
  integrated gradients (32 steps), input × gradient, attention and rollout; each method that
  takes ``contrast`` also with ``contrast="mean"`` (the target's logit minus the mean logit:
  with two classes, half the logit difference that the predicted probability follows);
* at word-piece level (the explanation as it is) and at word level (every piece scored by
  its word's total, so that a word's pieces are removed or kept together; ``[CLS]`` and
  ``[SEP]`` keep their own score);
* what the perturbation removes: the share of the top 10 % of pieces that are ``[CLS]`` /
  ``[SEP]``, and, for the B-cos model, the position / token-type share of the logit.

``--post-hoc-from RESULTS`` takes the conventional model's records from an earlier run on
the same texts and seed (``benchmarks/results/<RESULTS>.json``) instead of recomputing them
(integrated gradients take minutes). Writes ``benchmarks/results/<out>.json``.
"""
import argparse
import dataclasses
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
import torch

RESULTS = Path(__file__).parent / "results"
POST_HOC = ("integrated_gradients", "input_x_gradient", "attention", "rollout")


def word_level(explanation, pieces):
    """The explanation with every word piece scored by its word's total."""
    values = []
    for scores, aligned in zip(explanation.values, pieces, strict=True):
        scores, words = np.asarray(scores, dtype=np.float64), aligned.words
        totals = np.zeros(words.max() + 1 if words.max() >= 0 else 0)
        np.add.at(totals, words[words >= 0], scores[words >= 0])
        values.append(np.where(words >= 0, totals[np.maximum(words, 0)], scores))
    return dataclasses.replace(explanation, values=values)


def special_share(explanation, pieces, top=0.1):
    """Share of the top ``top`` fraction of pieces (at least one) that are special tokens."""
    special = total = 0
    for scores, aligned in zip(explanation.values, pieces, strict=True):
        k = max(1, int(np.ceil(top * len(scores))))
        chosen = np.argsort(-np.asarray(scores), kind="stable")[:k]
        special += int((aligned.words[chosen] < 0).sum())
        total += k
    return special / total


def scores(clf, X, explanation):
    from interpretable.metrics import comprehensiveness, sufficiency

    out = {}
    for name, metric in (("comprehensiveness", comprehensiveness),
                         ("sufficiency", sufficiency)):
        result = metric(clf, X, explanation=explanation)
        out[name] = result.summary["aopc"]
        out[f"{name}_by_fraction"] = result.summary["by_fraction"]
    return out


def main(args):
    from interpretable import BcosTextClassifier, BertTextClassifier
    from interpretable.estimators.methods import get_explainer
    from interpretable.reproduce.bcos_text import split

    torch.set_num_threads(args.threads)
    _, X_test, _, _ = split(args.dataset, None, None, 0)
    X = list(X_test[: args.eval])
    folder = Path(args.models)
    models = {"minilm": BertTextClassifier.load(folder / f"minilm_seed{args.seed}", "cpu"),
              args.bcos: BcosTextClassifier.load(folder / f"{args.bcos}_seed{args.seed}", "cpu")}
    out = {"command": "OMP_NUM_THREADS=1 python " + " ".join(sys.argv), "texts": len(X),
           "dataset": args.dataset, "seed": args.seed, "torch": torch.__version__,
           "python": platform.python_version(), "methods": {}}
    path = RESULTS / f"{args.out}.json"
    measured = [("minilm", POST_HOC), (args.bcos, ("inherent",))]
    if args.post_hoc_from:
        earlier = json.loads((RESULTS / f"{args.post_hoc_from}.json").read_text())
        scored = (earlier.get("dataset", "rotten-tomatoes"), earlier["texts"], earlier["seed"])
        if scored != (args.dataset, len(X), args.seed):
            raise SystemExit(f"{args.post_hoc_from} scored {scored[1]} {scored[0]} texts of "
                             f"seed {scored[2]}, not {len(X)} {args.dataset} texts of seed "
                             f"{args.seed}")
        out["post_hoc_from"] = args.post_hoc_from
        out["methods"] = {k: v for k, v in earlier["methods"].items()
                          if k.startswith("minilm/")}
        measured = measured[1:]
    for model_name, methods in measured:
        clf = models[model_name]
        pieces = clf.word_pieces(X)
        for method, contrast in [(m, c) for m in methods for c in (None, "mean")]:
            if contrast is not None and "contrast" not in \
                    get_explainer(clf, method).options():
                continue
            options = {"n_steps": 32, "batch_size": 4} if method == "integrated_gradients" \
                else {}
            start = time.perf_counter()
            explanation = clf.explain(X, method=method, contrast=contrast, **options)
            seconds = time.perf_counter() - start
            record = {"model": model_name, "contrast": contrast, "seconds": seconds,
                      "special_share_of_top_10_percent": special_share(explanation, pieces),
                      "piece": scores(clf, X, explanation),
                      "word": scores(clf, X, word_level(explanation, pieces))}
            if method == "inherent":
                logit = np.abs(explanation.logit) + 1e-12
                record["position_type_share_of_logit"] = float(
                    np.mean(np.abs(explanation.bias) / logit))
            name = f"{model_name}/{method}" + ("" if contrast is None else "/contrast=mean")
            out["methods"][name] = record
            path.write_text(json.dumps(out, indent=1) + "\n")
            print(f"{name}: piece {record['piece']['comprehensiveness']:.3f} / "
                  f"{record['piece']['sufficiency']:.3f}, word "
                  f"{record['word']['comprehensiveness']:.3f} / "
                  f"{record['word']['sufficiency']:.3f} ({seconds:.0f} s)", flush=True)
    post_hoc = [record for name, record in out["methods"].items()
                if name.startswith("minilm/")]
    out["targets"] = {}
    for name in [n for n in out["methods"] if n.startswith(f"{args.bcos}/")]:
        bcos = out["methods"][name]
        out["targets"][name] = {
            level: {"comprehensiveness_above_every_post_hoc": all(
                        bcos[level]["comprehensiveness"] > m[level]["comprehensiveness"]
                        for m in post_hoc),
                    "sufficiency_below_every_post_hoc": all(
                        bcos[level]["sufficiency"] < m[level]["sufficiency"]
                        for m in post_hoc)}
            for level in ("piece", "word")}
    path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out["targets"]))
    return out


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", required=True)
    parser.add_argument("--bcos", required=True, help="the B-cos variant's name")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--dataset", default="rotten-tomatoes",
                        choices=("rotten-tomatoes", "convention", "trec"))
    parser.add_argument("--eval", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", required=True)
    parser.add_argument("--post-hoc-from", default=None, metavar="RESULTS",
                        help="reuse the conventional model's records of this results file")
    main(parser.parse_args())
