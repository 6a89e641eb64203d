"""Integrated gradients on a fine-tuned MiniLM: this package against Captum, in one run.

``OMP_NUM_THREADS=1 python benchmarks/bench_explain_ig.py --checkpoint DIR [--texts 1000]
[--n-steps 50]``

Explains the first ``--texts`` Rotten Tomatoes test texts (the reproductions' split) of the
predicted class of a fine-tuned ``transformers`` classifier (``--checkpoint``, e.g. written by
``benchmarks/finetune_transformers.py``) with integrated gradients, ``--n-steps`` steps of
Captum's default quadrature (Gauss-Legendre) from the same baseline (the ``[PAD]`` embedding at
every word piece, ``[CLS]`` and ``[SEP]`` kept), three ways:

* ``package``: ``BertTextClassifier.from_pretrained(DIR).explain(texts,
  method="integrated_gradients", baseline="pad")``, its default batching;
* ``captum_per_text``: Captum's ``LayerIntegratedGradients`` over the word-embedding layer,
  one text per call, as ferret and transformers-interpret call it;
* ``captum_batched``: the same over batches of 32 texts (padded by the tokenizer) with the
  fastest ``internal_batch_size`` of a grid, chosen on the first 64 texts.

Each runs in a fresh process (its peak resident memory is its own), one thread; records wall
and process-CPU seconds (the ratios use CPU time: on a shared machine it is what the runs
compete for least), texts/s,
the completeness error (``|sum of attributions - (f(x) - f(baseline))|``: Captum's convergence
delta, the package's ``completeness_error``) and the ratios. Targets: the package at least 5x
the per-text loop and 1.5x Captum batched, at an equal or smaller completeness error. Writes
``benchmarks/results/bench_explain_ig.json``.
"""
import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np
import torch
from ratios import RESULTS, finish_record, run_record, target

INTERNAL_BATCH_GRID = (None, 800, 200, 50)


def _texts(n):
    from interpretable.reproduce.bcos_text import split

    return split("rotten-tomatoes", None, n, 0)[1]


def _timed(function, *args, **kwargs):
    """``function(*args, **kwargs)`` and its (wall, process-CPU) seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = function(*args, **kwargs)
    return result, (time.perf_counter() - wall, time.process_time() - cpu)


def run_package(args, texts):
    from interpretable import BertTextClassifier

    clf = BertTextClassifier.from_pretrained(args.checkpoint, max_length=64, device="cpu")
    explanation, seconds = _timed(clf.explain, texts, method="integrated_gradients",
                                  n_steps=args.n_steps, baseline="pad")
    return seconds, np.abs(np.asarray(explanation.completeness_error, dtype=np.float64))


def captum_explainer(checkpoint, n_steps: int = 50):
    """Captum's ``LayerIntegratedGradients`` over the word embeddings of the classifier in
    ``checkpoint``: ``explain(texts, internal_batch_size) -> (token attributions, |delta|)``,
    ``n_steps`` Gauss-Legendre steps from ``[PAD]`` at every piece (specials kept)."""
    import transformers
    from captum.attr import LayerIntegratedGradients

    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        checkpoint, local_files_only=True).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(checkpoint, local_files_only=True)

    def forward(ids, mask):
        return model(input_ids=ids, attention_mask=mask).logits

    def explain(batch_texts, internal_batch_size):
        batch = tokenizer(batch_texts, padding=True, truncation=True, max_length=64,
                          return_tensors="pt")
        ids, mask = batch["input_ids"], batch["attention_mask"]
        special = (ids == tokenizer.cls_token_id) | (ids == tokenizer.sep_token_id) | (mask == 0)
        reference = torch.where(special, ids, torch.full_like(ids, tokenizer.pad_token_id))
        with torch.no_grad():
            predicted = forward(ids, mask).argmax(-1)
        lig = LayerIntegratedGradients(forward, model.get_input_embeddings())
        attributions, delta = lig.attribute(
            ids, baselines=reference, target=predicted, additional_forward_args=(mask,),
            n_steps=n_steps, internal_batch_size=internal_batch_size,
            return_convergence_delta=True)
        return attributions.sum(-1), delta.abs()

    return explain


def run_captum_per_text(args, texts):
    explain = captum_explainer(args.checkpoint, args.n_steps)
    errors, seconds = _timed(lambda: [explain([text], None)[1] for text in texts])
    return seconds, torch.cat(errors).numpy()


def run_captum_batched(args, texts):
    explain = captum_explainer(args.checkpoint, args.n_steps)
    choice = {}
    for internal in INTERNAL_BATCH_GRID:  # the fastest internal batch on the first 64 texts
        choice[internal] = _timed(lambda internal=internal: [
            explain(texts[i:i + 32], internal) for i in range(0, min(64, len(texts)), 32)])[1][1]
    best = min(choice, key=choice.get)
    errors, seconds = _timed(lambda: [explain(texts[i:i + 32], best)[1]
                                      for i in range(0, len(texts), 32)])
    return seconds, torch.cat(errors).numpy(), {"internal_batch_size": best,
                                                "grid_cpu_seconds_64_texts": {
                                                    str(k): v for k, v in choice.items()}}


RUNS = {"package": run_package, "captum_per_text": run_captum_per_text,
        "captum_batched": run_captum_batched}


def child(args):
    torch.set_num_threads(args.threads)
    texts = _texts(args.texts)
    result = RUNS[args.child](args, texts)
    (wall, cpu), errors = result[:2]
    out = {"seconds": wall, "cpu_seconds": cpu, "texts_per_cpu_second": len(texts) / cpu,
           "completeness_error_mean": float(np.mean(errors)),
           "completeness_error_median": float(np.median(errors)),
           "completeness_error_max": float(np.max(errors)),
           "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}
    if len(result) > 2:
        out.update(result[2])
    print("RESULT " + json.dumps(out), flush=True)


def main(args):
    import captum

    record = run_record(captum=captum.__version__)
    record.update(texts=args.texts, n_steps=args.n_steps, checkpoint=str(args.checkpoint),
                  quadrature="gausslegendre", baseline="[PAD] at every piece, specials kept",
                  runs={})
    for name in args.runs:
        command = [sys.executable, __file__, "--child", name, "--checkpoint", args.checkpoint,
                   "--texts", str(args.texts), "--n-steps", str(args.n_steps),
                   "--threads", str(args.threads)]
        output = subprocess.run(command, capture_output=True, text=True, check=True).stdout
        record["runs"][name] = json.loads(output.split("RESULT ", 1)[1])
        print(name, record["runs"][name], flush=True)
    runs = record["runs"]
    if {"package", "captum_per_text", "captum_batched"} <= runs.keys():
        ours = runs["package"]["cpu_seconds"]
        record["targets"] = [
            target("IG, package over Captum one text per call (CPU time)",
                   runs["captum_per_text"]["cpu_seconds"] / ours, 5),
            target("IG, package over Captum batched at its best internal_batch_size (CPU time)",
                   runs["captum_batched"]["cpu_seconds"] / ours, 1.5),
            target("IG completeness error, package over Captum batched (mean)",
                   runs["package"]["completeness_error_mean"]
                   / runs["captum_batched"]["completeness_error_mean"], 1.0, at_most=True)]
    path = RESULTS / "bench_explain_ig.json"
    path.write_text(json.dumps(finish_record(record), indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--checkpoint", required=True)
    parser.add_argument("--texts", type=int, default=1000)
    parser.add_argument("--n-steps", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", nargs="+", default=list(RUNS))
    parser.add_argument("--child", choices=list(RUNS), help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    child(arguments) if arguments.child else main(arguments)
