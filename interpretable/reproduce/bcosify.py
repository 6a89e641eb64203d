"""B-cosify the model you already have (Arya, Rao, Böhle & Schiele, "B-cosification", NeurIPS
2024) at CPU size: a conventional model B-cosified and fine-tuned, against the original
fine-tuned further and a B-cos model of the same size trained from scratch, each for the same
budget.

``python -m interpretable reproduce bcosify [--quick] [--part {all,vision,text}]``:

* vision: a conventional ViT in timm's layout
  (:class:`~interpretable.nn.ConventionalViT`: class token, learned positions,
  pre-norm blocks with LayerNorm eps 1e-6, GELU MLPs, head on the class token; 8×8 tokens of
  patch 4 at 32 px, width 64, 4 blocks of 4 heads, on ImageNet-normalised images) learns
  digits on black, then textured digits (the phases of :mod:`.bcos_localisation`,
  ``pretrain_epochs`` each; from scratch, textured digits are barely learnt at this size);
  its state dict is saved to a ``.pth`` file. Then, for ``epochs`` more epochs on the textured
  digits each: (a) the original fine-tuned further, (b) the B-cosified model,
  ``BcosSimpleViTClassifier(pretrained=<the file>, architecture=...)`` (no biases, B = 2), (c)
  the same ``BcosSimpleViTClassifier`` from scratch. Test accuracy, training seconds and the
  grid pointing game (:func:`.bcos_localisation.localisation_scores`, on each model's own
  confidently classified test digits: softmax > .5 for the original, trained with
  cross-entropy, the sigmoid of the logit > .5 for the B-cos models, trained with binary
  cross-entropy) of the B-cos models' inherent explanations against the post-hoc methods on
  (a) (GradCAM left out: the head reads the class token only, so its map of the patch tokens
  is 0).
  ``conversion_max_logit_error``: the B-cosified network before fine-tuning's start computes
  the original's logits.
* text (Rotten Tomatoes, :func:`.bcos_text.split`; the fine-tuning of :data:`.bcos_text.BERT`
  for ``text_epochs``): the conventional MiniLM fine-tuned, the B-cosified MiniLM fine-tuned
  and the B-cos MiniLM of the same configuration from random weights (both B-cos ones at
  ``lr`` 1e-4 with ``gate_biases=True``, the text models' default). Test accuracy and seconds.
"""
from __future__ import annotations

import json
import logging
import tempfile
import time
from pathlib import Path

import numpy as np

from interpretable._progress import report
from interpretable.attribution import PIXEL_METHODS
from interpretable.estimators.vision import ViTClassifier
from interpretable.reproduce.bcos_localisation import localisation_scores, setting_split
from interpretable.reproduce.bcos_vit import SIZE, ZOOM_OUT, _fit

logger = logging.getLogger(__name__)

PARTS = ("vision", "text")
#: the network of every vision model (BcosSimpleViT arguments; the conventional ViT's too)
ARCHITECTURE = dict(dim=SIZE["embed_dim"], depth=SIZE["depth"], heads=SIZE["num_heads"],
                    mlp_dim=int(SIZE["embed_dim"] * SIZE["mlp_ratio"]),
                    patch_size=SIZE["patch_size"])
#: post-hoc methods on the conventional ViT (see the module docstring for GradCAM)
POST_HOC = tuple(m for m in PIXEL_METHODS if m not in ("inherent", "gradcam"))
#: ``lr``: training from random weights (the conventional ViT, the B-cos ViT from scratch);
#: ``finetune_lr``: the budget's fine-tuning of the original and of the B-cosified model
FULL = dict(n_train=5000, pretrain_epochs=15, epochs=10, lr=1e-3, finetune_lr=5e-4,
            n_grids=250, text_train=None, text_test=None, text_epochs=1)
QUICK = dict(n_train=5000, pretrain_epochs=8, epochs=4, lr=1e-3, finetune_lr=5e-4,
             n_grids=32, text_train=2000, text_test=500, text_epochs=1)
#: the B-cos MiniLMs' learning rate and option (the defaults measured best at full size)
BCOS_TEXT = dict(lr=1e-4, gate_biases=True)


def add_arguments(parser) -> None:
    parser.add_argument("--part", choices=("all", *PARTS), default="all")
    parser.add_argument("--n-train", dest="n_train", type=int, help="training images")
    parser.add_argument("--pretrain-epochs", dest="pretrain_epochs", type=int,
                        help="epochs of each phase (black, textured) of the "
                             "conventional ViT before B-cosification")
    parser.add_argument("--epochs", type=int, help="the budget: epochs of each vision model")
    parser.add_argument("--n-grids", dest="n_grids", type=int, help="pointing-game grids")
    parser.add_argument("--text-train", dest="text_train", type=int, help="training texts")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads (0 keeps torch's default)")


def results_suffix(options) -> str:
    """``-vision`` / ``-text`` for one part."""
    part = options.get("part", "all")
    return "" if part == "all" else f"-{part}"


def command(quick: bool, options: dict) -> str:
    """The command line of a run with these ``run`` options (defaults left out)."""
    defaults = dict(part="all", seed=0, threads=1)
    flags = ["--quick"] * quick + [f"--{k.replace('_', '-')} {v}" for k, v in options.items()
                                   if v is not None and v != defaults.get(k)]
    return " ".join(["python -m interpretable reproduce bcosify", *flags])


def run(quick: bool = False, part: str = "all", n_train=None, pretrain_epochs=None,
        epochs=None, n_grids=None, text_train=None, n_test=None, text_test=None,
        seed: int = 0, threads=1) -> dict:
    """Run the parts; ``n_test`` / ``text_test`` cut the test images / texts (tests)."""
    import torch

    if threads:
        torch.set_num_threads(threads)
    started = time.perf_counter()
    cfg = dict(QUICK if quick else FULL)
    cfg.update({k: v for k, v in dict(n_train=n_train, pretrain_epochs=pretrain_epochs,
                                      epochs=epochs, n_grids=n_grids, text_train=text_train,
                                      text_test=text_test).items() if v is not None})
    flags = dict(part=part, n_train=n_train, pretrain_epochs=pretrain_epochs, epochs=epochs,
                 n_grids=n_grids, text_train=text_train, seed=seed, threads=threads)
    results = {"command": command(quick, flags), "quick": quick,
               "config": {**cfg, "seed": seed, "architecture": ARCHITECTURE,
                          "bcos_text": BCOS_TEXT, "torch_threads": torch.get_num_threads()}}
    if part in ("all", "vision"):
        results["vision"] = vision(cfg, seed, n_test)
    if part in ("all", "text"):
        results["text"] = text(cfg, seed)
    results["total_seconds"] = round(time.perf_counter() - started, 1)
    report(logger, table(results))
    return results


def vision(cfg: dict, seed: int, n_test=None) -> dict:
    """The vision comparison: ``{"conversion_max_logit_error", "models": {name: row}}``."""
    import torch

    from interpretable.estimators.vision import BcosSimpleViTClassifier
    from interpretable.nn.bcos import bcosify_vit, encode_image

    black = setting_split("mnist_black", cfg["n_train"], seed)
    X_train, X_test, y_train, y_test = setting_split("textured", cfg["n_train"], seed)
    X_test, y_test = X_test[:n_test], y_test[:n_test]
    size = dict(patch_size=ARCHITECTURE["patch_size"], embed_dim=ARCHITECTURE["dim"],
                depth=ARCHITECTURE["depth"], num_heads=ARCHITECTURE["heads"],
                mlp_ratio=SIZE["mlp_ratio"], stem_channels=())
    common = dict(image_size=None, batch_size=32, random_state=seed, device="cpu")
    original, black_seconds = _fit(ViTClassifier(
        **size, **common, layout="timm", lr=cfg["lr"], max_epochs=cfg["pretrain_epochs"],
        zoom_out=ZOOM_OUT),
        black[0][:cfg["n_train"]], black[2][:cfg["n_train"]])
    original, textured_seconds = _fit(original.set_params(warm_start=True, zoom_out=None),
                                      X_train, y_train)
    pretrain_seconds = black_seconds + textured_seconds
    out = {"pretrained": {"accuracy": float(original.score(X_test, y_test)),
                          "train_seconds": round(pretrain_seconds, 1)}, "models": {}}
    report(logger, f"conventional ViT: accuracy {out['pretrained']['accuracy']:.3f} "
                   f"({pretrain_seconds:.0f} s)")
    finetune = dict(common, lr=cfg["finetune_lr"], max_epochs=cfg["epochs"])
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "conventional_vit.pth"
        torch.save(original.module_.state_dict(), path)
        converted = bcosify_vit(torch.load(path, weights_only=True),
                                architecture=dict(ARCHITECTURE,
                                                  image_size=X_train.shape[1:3]))
        x = torch.as_tensor(X_test[:64]).permute(0, 3, 1, 2)
        with torch.no_grad():
            error = (converted(encode_image(x)) - original.module_(original.encode(
                X_test[:64]).inputs["x"])).abs().max().item()
        out["conversion_max_logit_error"] = error
        models = {
            "original_finetuned": original.set_params(warm_start=True, lr=cfg["finetune_lr"],
                                                      max_epochs=cfg["epochs"]),
            "bcosified": BcosSimpleViTClassifier(pretrained=path, architecture=ARCHITECTURE,
                                                 **finetune),
            "bcos_from_scratch": BcosSimpleViTClassifier(architecture=ARCHITECTURE, **common,
                                                         lr=cfg["lr"],
                                                         max_epochs=cfg["epochs"]),
        }
        for name, clf in models.items():
            clf, seconds = _fit(clf, X_train, y_train)
            conventional = name == "original_finetuned"
            row = localisation_scores(clf, X_test, y_test, cfg["n_grids"],
                                      POST_HOC if conventional else ("inherent",),
                                      "softmax" if conventional else "sigmoid")
            out["models"][name] = {**row, "train_seconds": round(seconds, 1)}
            scores = ", ".join(f"{m} {v['mean']:.3f}" for m, v in row["localisation"].items())
            report(logger, f"{name}: accuracy {row['accuracy']:.3f} ({seconds:.0f} s), "
                           f"{row['grids']} grids: {scores}")
    return out


def minilm_config() -> dict:
    """The bundled MiniLM's encoder configuration (the B-cos MiniLM from scratch)."""
    from interpretable.datasets import load_minilm

    return json.loads((load_minilm() / "config.json").read_text())


def text(cfg: dict, seed: int) -> dict:
    """The text comparison: ``{"models": {name: {accuracy, train_seconds}}}``."""
    from interpretable.estimators.transformer import BcosTextClassifier, BertTextClassifier
    from interpretable.reproduce.bcos_text import BERT, split

    X_train, X_test, y_train, y_test = split("rotten-tomatoes", cfg["text_train"],
                                             cfg["text_test"], seed)
    bert = dict(BERT, max_epochs=cfg["text_epochs"], random_state=seed, device="cpu")
    models = {"original_finetuned": BertTextClassifier(**bert),
              "bcosified": BcosTextClassifier(**{**bert, **BCOS_TEXT}),
              "bcos_from_scratch": BcosTextClassifier(**{**bert, **BCOS_TEXT,
                                                         "checkpoint": minilm_config()})}
    out = {"n_train": len(X_train), "n_test": len(X_test), "models": {}}
    for name, clf in models.items():
        clf, seconds = _fit(clf, X_train, y_train)
        out["models"][name] = {"accuracy": float(np.mean(clf.predict(X_test) == y_test)),
                               "train_seconds": round(seconds, 1)}
        report(logger, f"text {name}: {out['models'][name]}")
    return out


def table(results: dict) -> str:
    """Accuracy, training seconds and pointing-game scores, one row per model."""
    import pandas as pd

    rows = {}
    for part in PARTS:
        for name, row in results.get(part, {}).get("models", {}).items():
            rows[f"{part}/{name}"] = {"accuracy": row["accuracy"],
                                      "train_seconds": row["train_seconds"],
                                      **{m: v["mean"] for m, v in
                                         row.get("localisation", {}).items()}}
    return pd.DataFrame(rows).T.to_string(float_format="%.3f", na_rep="")
