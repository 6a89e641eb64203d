"""What B-cos costs over the plain network of the same shape: forward, exact explanation,
training, measured side by side in one run.

* (a) forward, float32, inference mode: the B-cos v2 ``simple_vit_ti_patch16_224``
  (:class:`~interpretable.nn.bcos.BcosSimpleViT`) against the conventional ViT of the
  same sizes in timm's layout (:class:`~interpretable.nn.ConventionalViT`: the same
  matrix products without B-cos), batches of 8 images of 224 px;
* (b) the exact explanation of (a)'s B-cos ViT (``contributions``: one forward and one backward
  pass in explanation mode) against its forward, interleaved with it (a pair of its own);
* (c) forward of the holistic B-cos ViT (:class:`~interpretable.nn.bcos.BcosViT`,
  the default size of ``python -m interpretable reproduce bcos-vit``, MaxOut 2) against the
  conventional ViT with the same stem and sizes (:class:`~interpretable.nn.ViT`),
  batches of 64 images of 28 px; and the same B-cos ViT with ``max_out=1`` (MaxOut doubles
  every B-cos layer's matrix product, so (c) measures the design, (c') the B-cos overhead);
* (d) training: one epoch of ``BcosTextClassifier`` (B-cos MiniLM) against one of
  ``BertTextClassifier`` (the conventional MiniLM) on the same ``--train-texts`` Rotten Tomatoes
  training texts (``max_length`` 64, batch 32, ``random_state`` 0), one fit after the other in
  this process, in interleaved rounds.

The images of (a)-(c) reach each network as its estimator passes them: the B-cos estimators
encode ``(n, H, W, C)`` arrays into channels-last memory (``encode_image`` of the permuted
array), the conventional ones make the images contiguous; (a) also times the B-cos forward on
contiguous encoded images (no target). Random weights for (a)-(c): speed does not depend on
them. Targets: (a) <= 1.05x, (b) <= 2x, (c') <= 1.05x, (d) <= 1.2x. Writes
``benchmarks/results/bench_bcos_overhead.json``.

    OMP_NUM_THREADS=1 python benchmarks/bench_bcos_overhead.py [--threads 1] [--rounds 7]
"""
from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, target, timed  # noqa: E402


def estimator_inputs(arrays: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Images (n, H, W, C) in [0, 1] -> (the B-cos estimators' encoded batch (n, 2C, H, W),
    channels-last; the conventional estimators' batch (n, C, H, W), contiguous)."""
    from interpretable.nn.bcos import encode_image

    images = arrays.permute(0, 3, 1, 2)
    return encode_image(images), images.contiguous()


def vit_models():
    """(a)-(b): the B-cos v2 ViT-Ti, its plain twin and their inputs (8, 3, 224, 224)."""
    from interpretable.nn import ConventionalViT
    from interpretable.nn.bcos import PRETRAINED, BcosSimpleViT

    arch = PRETRAINED["simple_vit_ti_patch16_224"].architecture
    bcos = BcosSimpleViT(**arch, num_classes=1000, in_channels=6, image_size=(224, 224)).eval()
    plain = ConventionalViT("timm", 224, arch["patch_size"], arch["depth"], arch["heads"],
                            arch["dim"], arch["mlp_dim"], 1000).eval()
    encoded, images = estimator_inputs(torch.rand(8, 224, 224, 3))
    return bcos, plain, encoded, images


def holistic_models():
    """(c): the holistic B-cos ViT (MaxOut 2 and 1), the stem ViT of its sizes, inputs."""
    from interpretable.nn import ViT
    from interpretable.nn.bcos import BcosViT
    from interpretable.reproduce.bcos_vit import SIZE

    sizes = (SIZE["patch_size"], SIZE["embed_dim"], SIZE["depth"], SIZE["num_heads"],
             SIZE["mlp_ratio"], tuple(SIZE["stem_channels"]))
    bcos = {max_out: BcosViT(2, (28, 28), 10, *sizes, max_out=max_out).eval()
            for max_out in (2, 1)}
    plain = ViT(1, (28, 28), 10, *sizes).eval()
    encoded, images = estimator_inputs(torch.rand(64, 28, 28, 1))
    return bcos, plain, encoded, images


def forward(model, inputs):
    with torch.inference_mode():
        return model(inputs)


def training_epochs(n_texts: int):
    """(d): callables fitting one epoch of each MiniLM on the same texts."""
    from interpretable import BcosTextClassifier, BertTextClassifier
    from interpretable.reproduce.bcos_text import split

    X_train, _, y_train, _ = split("rotten-tomatoes", n_texts, 1, 0)
    common = dict(max_epochs=1, batch_size=32, max_length=64, device="cpu", random_state=0)

    def fit(cls):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cls(**common).fit(X_train, y_train)

    return {"bcos_minilm_epoch": lambda: fit(BcosTextClassifier),
            "conventional_minilm_epoch": lambda: fit(BertTextClassifier)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--train-texts", type=int, default=512)
    parser.add_argument("--train-rounds", type=int, default=3)
    parser.add_argument("--parts", nargs="+", default=["vit", "holistic", "training"],
                        choices=("vit", "holistic", "training"))
    parser.add_argument("--out", default=str(RESULTS / "bench_bcos_overhead.json"))
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    from interpretable.nn.bcos import vit_contributions

    record = run_record()
    seconds, cpu_seconds, targets = {}, {}, []

    def measure(fns, rounds):
        wall, cpu = timed(fns, rounds)
        seconds.update(wall)
        cpu_seconds.update(cpu)
        return wall

    if "vit" in args.parts:
        bcos, plain, encoded, images = vit_models()
        # each ratio from its own interleaved pair: an explanation between the forwards slows
        # the next B-cos forward more than the plain one (allocator and cache state)
        contiguous = encoded.contiguous()
        wall = measure({"bcos_v2_vit_ti_forward": lambda: forward(bcos, encoded),
                        "bcos_v2_vit_ti_forward_contiguous_input":
                            lambda: forward(bcos, contiguous),
                        "plain_vit_ti_forward": lambda: forward(plain, images)}, args.rounds)
        beside = measure({"bcos_v2_vit_ti_explanation": lambda: vit_contributions(bcos, encoded),
                          "bcos_v2_vit_ti_forward_beside_explanation":
                              lambda: forward(bcos, encoded)}, args.rounds)
        record["bcos_v2_vit_ti_forward_contiguous_input_over_plain"] = round(
            wall["bcos_v2_vit_ti_forward_contiguous_input"] / wall["plain_vit_ti_forward"], 3)
        targets += [
            target("B-cos v2 ViT-Ti forward / plain ViT-Ti forward",
                   wall["bcos_v2_vit_ti_forward"] / wall["plain_vit_ti_forward"], 1.05,
                   at_most=True),
            target("exact explanation / forward (B-cos v2 ViT-Ti)",
                   beside["bcos_v2_vit_ti_explanation"]
                   / beside["bcos_v2_vit_ti_forward_beside_explanation"], 2.0, at_most=True)]
    if "holistic" in args.parts:
        bcos, plain, encoded, images = holistic_models()
        wall = measure({"holistic_bcos_vit_forward": lambda: forward(bcos[2], encoded),
                        "holistic_bcos_vit_max_out_1_forward": lambda: forward(bcos[1], encoded),
                        "stem_vit_forward": lambda: forward(plain, images)}, args.rounds)
        targets += [
            target("holistic B-cos ViT (MaxOut 1) forward / plain ViT forward",
                   wall["holistic_bcos_vit_max_out_1_forward"] / wall["stem_vit_forward"],
                   1.05, at_most=True),
            target("holistic B-cos ViT (MaxOut 2, the paper) forward / plain ViT forward",
                   wall["holistic_bcos_vit_forward"] / wall["stem_vit_forward"], 1.05,
                   at_most=True)]
    if "training" in args.parts:
        wall = measure(training_epochs(args.train_texts), args.train_rounds)
        targets.append(target("B-cos MiniLM epoch / conventional MiniLM epoch",
                              wall["bcos_minilm_epoch"] / wall["conventional_minilm_epoch"],
                              1.2, at_most=True))
    record.update({"rounds": args.rounds, "train_texts": args.train_texts,
                   "train_rounds": args.train_rounds, "seconds": seconds,
                   "cpu_seconds": cpu_seconds, "targets": targets})
    Path(args.out).write_text(json.dumps(finish_record(record), indent=1))
    for row in targets:
        print(row)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
