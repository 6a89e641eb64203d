"""A decoder classifier, as a practitioner would have it: every explanation method and the report.

``OMP_NUM_THREADS=1 python benchmarks/explain_decoder.py --folder DIR [--texts 100]
[--epochs 2] [--out NAME]``

Writes a small GPT-2 sequence classifier (2 layers, 128 hidden, 4 heads; the bundled MiniLM's
WordPiece tokenizer) with ``transformers`` into ``--folder``, trains it on the reproductions'
Rotten Tomatoes training split (stratified 80/20, seed 0) with
``TransformersTextClassifier(checkpoint=folder).fit`` (the ``transformers`` module itself,
pooled at the last real token as ``transformers`` does), then reports its test accuracy,
the seconds per text of every explanation method and
:func:`interpretable.metrics.evaluate_explanations` on the first ``--texts`` test texts.
Writes ``benchmarks/results/<out>.json`` (default ``explain_decoder``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from ratios import RESULTS, finish_record, run_record


def write_decoder(folder: Path) -> Path:
    """A randomly initialised GPT-2 sequence classifier and its tokenizer in ``folder``."""
    import transformers

    from interpretable.datasets import load_minilm

    tokenizer = transformers.AutoTokenizer.from_pretrained(load_minilm(),
                                                           local_files_only=True)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=64, n_embd=128, n_layer=2, n_head=4,
        pad_token_id=tokenizer.pad_token_id, bos_token_id=tokenizer.cls_token_id,
        eos_token_id=tokenizer.sep_token_id, num_labels=2,
        id2label={0: "rotten", 1: "fresh"}, label2id={"rotten": 0, "fresh": 1})
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = transformers.GPT2ForSequenceClassification(config)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def main(args):
    from interpretable import TransformersTextClassifier
    from interpretable.metrics import evaluate_explanations
    from interpretable.reproduce.bcos_text import split

    torch.set_num_threads(1)
    out = run_record()
    X_train, X_test, y_train, y_test = split("rotten-tomatoes", None, None, 0)
    folder = write_decoder(Path(args.folder))
    clf = TransformersTextClassifier(checkpoint=str(folder), max_length=64, lr=1e-3,
                                     max_epochs=args.epochs, random_state=0, device="cpu")
    start = time.perf_counter()
    clf.fit(X_train, np.asarray(y_train).astype(str))
    out.update({"model": "GPT-2, 2 layers, 128 hidden, 4 heads, MiniLM's WordPiece tokenizer",
                "n_train": len(X_train), "n_test": len(X_test), "epochs": args.epochs,
                "train_seconds": time.perf_counter() - start, "pooling": clf.pooling_,
                "padding_side": clf.padding_side_,
                "accuracy": float(clf.score(X_test, np.asarray(y_test).astype(str)))})
    print(out, flush=True)
    texts = list(X_test[: args.texts])
    report = evaluate_explanations(clf, texts, random_state=0, verbose=1)
    ranking = report.summary()
    n = len(texts)
    out.update({"n_texts": n, "seconds_per_text": {
        m: s / n for m, s in report.seconds["explanations"].items()},
        "metric_seconds": report.seconds["metrics"], "verdict": ranking.attrs["verdict"],
        "ranking": json.loads(ranking.to_json(orient="records")),
        "report": json.loads(report.to_frame().to_json(orient="records")),
        "skipped": json.loads(report.skipped.to_json(orient="records"))})
    print(str(report), flush=True)
    path = RESULTS / f"{args.out}.json"
    path.write_text(json.dumps(finish_record(out), indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folder", required=True, help="where the decoder checkpoint goes")
    parser.add_argument("--texts", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--out", default="explain_decoder")
    main(parser.parse_args())
