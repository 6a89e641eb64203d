"""bf16 inference (``inference_precision="bf16"``) against float32: predict throughput and top-1
agreement, measured side by side in one run.

* (a) the B-cos ViT (``BcosSimpleViTClassifier``, the B-cos v2 ``simple_vit_ti_patch16_224``
  architecture at 224 px, random weights: speed does not depend on them; fitted for one epoch on
  ``--batch-vit`` random images so that it is a fitted estimator), predict on batches of 8;
* (b) the B-cos MiniLM (``BcosTextClassifier``, the trained twin at ``--text-model``,
  ``max_length`` 64), predict on batches of 32 texts of 64 word pieces (Rotten Tomatoes test
  snippets joined until they fill 64 pieces; the model truncates at 64);
* top-1 agreement of bf16 with float32 predictions of (b) on the Rotten Tomatoes test split
  (``reproduce.bcos_text.split("rotten-tomatoes", None, None, 0)``);
* (c) top-1 agreement of bf16 with float32 predictions of two B-cos ViTs trained here on
  textured digits (``BcosViTClassifier`` and ``BcosSimpleViTClassifier`` by the recipe of
  ``python -m interpretable reproduce bcos-localisation``: ``--digit-epochs`` epochs on black
  digits, as many on textured ones; default 20, the reproduction's full size) on its 1,500
  textured test images.

Both precisions are twins of one fitted estimator (the same module), timed in interleaved rounds
(:func:`ratios.timed`, medians of wall-clock). Targets: bf16 predicts >= 1.8x as many samples/s
as float32 on both models, and agrees with float32 on >= 99.5 % of each test split. bf16 is used
only where the device computes it natively (``native_bf16``: AVX512-BF16 or AMX on CPU, compute
capability >= 8.0 on CUDA); elsewhere the estimator predicts in float32 with a warning, and the
record says so. Writes ``benchmarks/results/bench_inference_precision.json``.

    python benchmarks/bench_inference_precision.py [--rounds 5] [--device cpu] [--threads N]
    python benchmarks/bench_inference_precision.py --tiny   # a check that it runs (seconds)
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402

SPEEDUP = 1.8
AGREEMENT = 0.995
TEXT_MODEL = "/work/runs/bcos_twin"
PIECES = 64


def twins(clf) -> dict:
    """float32 and bf16 copies of the fitted ``clf``, sharing its module."""
    return {precision: copy.copy(clf).set_params(inference_precision=precision)
            for precision in ("float32", "bf16")}


def vit(tiny: bool, device: str, batch: int):
    """The fitted B-cos ViT and a batch of images."""
    from interpretable import BcosSimpleViTClassifier

    if tiny:
        architecture, size = dict(dim=16, depth=1, heads=2, mlp_dim=16, patch_size=8), 32
    else:
        architecture, size = "simple_vit_ti_patch16_224", 224
    rng = np.random.default_rng(0)
    images = rng.random((batch, size, size, 3), dtype=np.float32)
    clf = BcosSimpleViTClassifier(architecture=architecture, max_epochs=1, batch_size=batch,
                                  device=device, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(images, np.arange(batch) % 2)
    return clf, images, {"architecture": architecture, "image_size": size}


def textured_digit_models(tiny: bool, device: str, epochs: int):
    """(c): the holistic and v2 B-cos ViTs of the localisation reproduction, trained by its
    recipe (its sizes; ``epochs`` epochs on 3,500 black-background digits with zoom-out, then
    ``epochs`` more on 3,500 textured digits, 32 px); returns ({name: fitted estimator},
    textured test images, their labels)."""
    from interpretable import BcosSimpleViTClassifier, BcosViTClassifier
    from interpretable.reproduce.bcos_localisation import MODELS, ZOOM_OUT, setting_split

    n_train = 64 if tiny else 3500
    fitted = {}
    for name, cls in (("holistic", BcosViTClassifier), ("v2", BcosSimpleViTClassifier)):
        clf = cls(**MODELS[name], max_epochs=1 if tiny else epochs, lr=2e-3, zoom_out=ZOOM_OUT,
                  image_size=None, batch_size=32, device=device, random_state=0)
        for setting in ("mnist_black", "textured"):
            X_train, X_test, y_train, y_test = setting_split(setting, n_train, 0)
            clf.fit(X_train[:n_train], y_train[:n_train])
            clf.set_params(warm_start=True, zoom_out=None)
        fitted[name] = clf
    if tiny:
        X_test, y_test = X_test[:64], y_test[:64]
    return fitted, X_test, y_test


def pieces_of(clf, texts) -> list[int]:
    """The number of word pieces the model sees of each text (after truncation)."""
    inputs = clf.encode(texts).inputs
    if "lengths" in inputs:
        return [int(v) for v in inputs["lengths"]]
    return [int(v) for v in inputs["attention_mask"].sum(1)]


def long_texts(snippets, clf, n: int) -> list[str]:
    """``n`` texts that fill :data:`PIECES` word pieces: snippets joined in order."""
    texts, current = [], []
    for snippet in snippets:
        current.append(snippet)
        if pieces_of(clf, [" ".join(current)])[0] >= PIECES:
            texts.append(" ".join(current))
            current = []
            if len(texts) == n:
                break
    return texts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--batches", type=int, default=4,
                        help="batches per timed predict call")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--text-model", default=TEXT_MODEL)
    parser.add_argument("--agreement-texts", type=int, default=None,
                        help="the first N test texts only (default: the whole test split)")
    parser.add_argument("--tiny", action="store_true",
                        help="a tiny ViT, 1 round, 64 agreement texts: checks that it runs")
    parser.add_argument("--digit-epochs", type=int, default=20,
                        help="training epochs of the textured-digit ViTs")
    parser.add_argument("--models", nargs="+", choices=("vit", "text", "digits"),
                        default=["vit", "text", "digits"])
    parser.add_argument("--out", default=str(RESULTS / "bench_inference_precision.json"))
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    rounds = 1 if args.tiny else args.rounds
    agreement_texts = 64 if args.tiny and args.agreement_texts is None else args.agreement_texts

    from interpretable import BcosTextClassifier
    from interpretable.estimators.core import native_bf16
    from interpretable.reproduce.bcos_text import split

    record = run_record()
    device = torch.device(args.device)
    record["device"] = str(device) if device.type != "cuda" \
        else f"{device} ({torch.cuda.get_device_name(device)})"
    record["native_bf16"] = native_bf16(device)
    record["bf16_support_check"] = (
        "torch.cuda.is_bf16_supported(including_emulation=False)" if device.type == "cuda"
        else "torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported()")
    if device.type == "cpu":
        record["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    record["tiny"] = args.tiny
    results, targets = {}, []

    # (a) the B-cos ViT
    if "vit" in args.models:
        vit_batch = 8
        clf, images, about = vit(args.tiny, args.device, vit_batch)
        batch = np.concatenate([images] * args.batches)
        models = twins(clf)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            agree = (models["bf16"].predict(batch) == models["float32"].predict(batch)).mean()
            wall, cpu = timed({p: (lambda m=m: m.predict(batch)) for p, m in models.items()},
                              rounds)
        throughput = {p: len(batch) / s for p, s in wall.items()}
        results["bcos_vit"] = {**about, "batch_size": vit_batch, "images_per_call": len(batch),
                               "seconds_per_call": wall, "cpu_seconds_per_call": cpu,
                               "images_per_second": throughput,
                               "speedup": throughput["bf16"] / throughput["float32"],
                               "top1_agreement_random_images": float(agree)}
        targets.append(target("B-cos ViT (simple_vit_ti_patch16_224, 224 px, batch 8): bf16 "
                              "/ float32 predict throughput", results["bcos_vit"]["speedup"],
                              SPEEDUP))

    # (c) agreement of B-cos ViTs trained on textured digits
    if "digits" in args.models:
        fitted, X_test, y_test = textured_digit_models(args.tiny, args.device, args.digit_epochs)
        for name, clf in fitted.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                predicted = {p: m.predict(X_test) for p, m in twins(clf).items()}
            agreement = float((predicted["bf16"] == predicted["float32"]).mean())
            results[f"bcos_vit_textured_digits_{name}"] = {
                "estimator": type(clf).__name__, "epochs": clf.max_epochs,
                "test_images": len(X_test), "top1_agreement": agreement,
                "accuracy": {p: float((v == y_test).mean()) for p, v in predicted.items()}}
            targets.append(target(f"{type(clf).__name__} ({name}, textured digits, 32 px): "
                                  f"top-1 agreement bf16 vs float32 ({len(X_test)} test images)",
                                  100 * agreement, 100 * AGREEMENT, unit="%"))

    # (b) the B-cos MiniLM
    if "text" in args.models:
        text_batch = 32
        clf = BcosTextClassifier.load(args.text_model, device=args.device)
        clf.set_params(batch_size=text_batch)
        _, X_test, _, y_test = split("rotten-tomatoes", None, None, 0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # truncated texts
            texts = long_texts(X_test, clf, text_batch * args.batches)
            pieces = pieces_of(clf, texts)
            models = twins(clf)
            wall, cpu = timed({p: (lambda m=m: m.predict(texts)) for p, m in models.items()},
                              rounds)
            X_agree = X_test[:agreement_texts] if agreement_texts else X_test
            predicted = {p: m.predict(X_agree) for p, m in models.items()}
        throughput = {p: len(texts) / s for p, s in wall.items()}
        agreement = float((predicted["bf16"] == predicted["float32"]).mean())
        results["bcos_minilm"] = {
            "model": args.text_model, "max_length": clf.max_length, "batch_size": text_batch,
            "texts_per_call": len(texts), "word_pieces_mean": float(np.mean(pieces)),
            "word_pieces_min": int(min(pieces)), "seconds_per_call": wall,
            "cpu_seconds_per_call": cpu, "texts_per_second": throughput,
            "speedup": throughput["bf16"] / throughput["float32"],
            "agreement_texts": len(X_agree), "top1_agreement": agreement,
            "accuracy": {p: float((v == np.asarray(y_test[:len(X_agree)])).mean())
                         for p, v in predicted.items()},
        }
        targets.append(target(f"B-cos MiniLM ({PIECES} word pieces, batch 32): bf16 / float32 "
                              "predict throughput", results["bcos_minilm"]["speedup"], SPEEDUP))
        targets.append(target("B-cos MiniLM: top-1 agreement bf16 vs float32, Rotten Tomatoes test"
                              f" ({len(X_agree)} texts)", 100 * agreement, 100 * AGREEMENT,
                              unit="%"))

    out = {**finish_record(record), "rounds": rounds, "results": results, "targets": targets}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({"results": results, "targets": targets}, indent=2))


if __name__ == "__main__":
    main()
