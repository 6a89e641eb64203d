"""The twin side by side for images: a small CNN trained here and its B-cos twin.

``OMP_NUM_THREADS=1 python benchmarks/twin_images.py [--samples 3500] [--test 500] [--size 32]
[--epochs 10] [--twin-epochs 6] [--images 64] [--out NAME]``

On :func:`interpretable.datasets.make_textured_digits` (``--size`` px RGB, seed 0; the last
``--test`` images are the test split, the masks of the digits' pixels their known positions):

1. the original: a torchvision ResNet-18 (``torchvision.models.resnet18``, ten classes, random
   initialisation) trained from scratch as ``ImageClassifier("torchvision:resnet18",
   image_size=None)`` (the images as they are, ImageNet normalisation, ``--epochs`` epochs);
2. its B-cos twin: ``BcosResNetClassifier(pretrained=<the original's state dict>,
   teacher=original)``, the same ResNet B-cosified and distilled from the original on the same
   training images (``--twin-epochs`` epochs, the estimator's defaults otherwise);
3. one table of both on the same images: accuracy and agreement with the original's predictions
   on the whole test split, and :func:`interpretable.metrics.evaluate_explanations` (every
   explanation method of each model; faithfulness by deletion and insertion of 4 × 4 patches,
   stability, localisation against the digit masks, seconds per image) on the first
   ``--images`` test images, with its ranking and verdict.

Writes ``benchmarks/results/<out>.json`` (default ``twin_images``).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from ratios import RESULTS, finish_record, run_record

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def _timed(function, *args, **kwargs):
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return result, time.perf_counter() - start


def main(args):
    from _real_vision import real_vision

    torchvision, _ = real_vision()  # the real torchvision, which builds the ResNet

    from interpretable import BcosResNetClassifier, ImageClassifier
    from interpretable.datasets import make_textured_digits
    from interpretable.metrics import evaluate_explanations

    torch.set_num_threads(1)
    out = run_record(torchvision=torchvision.__version__)
    digits = make_textured_digits(n_samples=args.samples, size=args.size, random_state=0)
    X, y, masks = digits.data, np.asarray(digits.target), digits.mask
    n_train = len(X) - args.test
    X_train, y_train, X_test, y_test = X[:n_train], y[:n_train], X[n_train:], y[n_train:]
    masks_test = masks[n_train:]
    out.update({"data": f"make_textured_digits(n_samples={args.samples}, size={args.size}, "
                        "random_state=0)", "n_train": n_train, "n_test": len(X_test),
                "n_images_explained": args.images, "patch_size": 4, "models": {}})

    original = ImageClassifier("torchvision:resnet18", image_size=None, lr=1e-3,
                               max_epochs=args.epochs, batch_size=64, lr_decay_at=0.7,
                               random_state=0, device="cpu")
    original, original_seconds = _timed(original.fit, X_train, y_train)
    print(f"original trained in {original_seconds:.0f} s", flush=True)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "resnet18.pth"
        torch.save(original.module_.model.state_dict(), path)  # torchvision's layout
        twin = BcosResNetClassifier(pretrained=str(path), teacher=original, image_size=None,
                                    max_epochs=args.twin_epochs, batch_size=64,
                                    random_state=0, device="cpu")
        twin, twin_seconds = _timed(twin.fit, X_train, y_train)
    print(f"twin trained in {twin_seconds:.0f} s", flush=True)

    result_path = RESULTS / f"{args.out}.json"
    reference = None
    models = (("original", original, original_seconds, {"epochs": args.epochs, "lr": 1e-3}),
              ("bcos_twin", twin, twin_seconds, {"epochs": args.twin_epochs, "lr": twin.lr}))
    for name, clf, seconds, training in models:
        predicted, predict_seconds = _timed(clf.predict, X_test)
        predicted = np.asarray(predicted)
        reference = predicted if reference is None else reference
        out["models"][name] = {
            "estimator": type(clf).__name__, "training": training, "train_seconds": seconds,
            "accuracy": float(np.mean(predicted == y_test)),
            "agreement_with_original": float(np.mean(predicted == reference)),
            "predict_seconds_per_image": predict_seconds / len(X_test)}
        print(name, out["models"][name], flush=True)
    out["models"]["original"]["gradcam_layer"] = original.gradcam_layer_
    out["models"]["original"]["feature_grid"] = list(original.feature_grid_ or ())
    result_path.write_text(json.dumps(out, indent=1))

    images, rationales = X_test[:args.images], masks_test[:args.images]
    n = len(images)
    for name, clf, _, _ in models:
        report = evaluate_explanations(clf, images, rationales=rationales, random_state=0,
                                       patch_size=4)
        ranking = report.summary()
        out["models"][name].update({
            "seconds_per_image": {m: s / n for m, s in report.seconds["explanations"].items()},
            "metric_seconds": report.seconds["metrics"], "verdict": ranking.attrs["verdict"],
            "ranking": json.loads(ranking.to_json(orient="records")),
            "report": json.loads(report.to_frame().to_json(orient="records")),
            "skipped": json.loads(report.skipped.to_json(orient="records"))})
        print(name, str(report), sep="\n", flush=True)
        result_path.write_text(json.dumps(out, indent=1))
    result_path.write_text(json.dumps(finish_record(out), indent=1))
    print(f"wrote {result_path}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=3500, help="images, train and test")
    parser.add_argument("--test", type=int, default=500, help="the last images: the test split")
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--epochs", type=int, default=10, help="the original's")
    parser.add_argument("--twin-epochs", type=int, default=6)
    parser.add_argument("--images", type=int, default=64, help="images explained and scored")
    parser.add_argument("--out", default="twin_images")
    main(parser.parse_args())
