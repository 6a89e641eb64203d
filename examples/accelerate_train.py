"""
Train an estimator on several processes with Hugging Face Accelerate, save it once
==================================================================================

Start it with a distributed launcher (not run when the documentation is built)::

    # two CPU processes (gloo), as in the tests
    torchrun --nproc_per_node 2 examples/accelerate_train.py --cpu --out model
    # eight GPUs of one machine
    accelerate launch --multi_gpu --num_processes 8 examples/accelerate_train.py --out model
    # two nodes of eight GPUs: run on each node, with its --machine_rank (0 and 1)
    accelerate launch --multi_gpu --num_machines 2 --num_processes 16 --machine_rank 0 \\
        --main_process_ip 10.0.0.1 --main_process_port 29500 examples/accelerate_train.py

Every process trains on its share of each batch (``--batch-size`` samples per process, so
``num_processes * batch_size`` per optimizer step), gradients are averaged, and all processes end
with the same weights; only the main process writes ``--out``. Each process prints one JSON
line: its rank, whether it saved, and the final training loss.
"""

import argparse
import json

from accelerate import Accelerator

from interpretable import BcosViTClassifier, DiversityLSTMClassifier
from interpretable.datasets import load_digits_images, load_rotten_tomatoes
from interpretable.integrations import save_on_main_process


def load_data(model: str, n: int):
    """The first ``n`` samples: digit images for the B-cos ViT, review snippets otherwise."""
    if model == "bcos-vit":
        X, y = load_digits_images(return_X_y=True)
    else:
        X, y = load_rotten_tomatoes(return_X_y=True)
    return X[:n], y[:n]


def make_estimator(model: str, **params):
    """A small estimator of kind ``model`` (``params``: max_epochs, batch_size, ...)."""
    if model == "bcos-vit":
        return BcosViTClassifier(patch_size=4, embed_dim=16, depth=1, num_heads=2,
                                 stem_channels=(8,), random_state=0, **params)
    return DiversityLSTMClassifier(embed_dim=16, hidden_size=16, random_state=0, **params)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().split("\n")[0])
    parser.add_argument("--model", choices=["diversity-lstm", "bcos-vit"],
                        default="diversity-lstm")
    parser.add_argument("--samples", type=int, default=2000, help="training samples")
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="per process")
    parser.add_argument("--out", default="model", help="folder of the saved model")
    parser.add_argument("--cpu", action="store_true", help="train on CPU processes (gloo)")
    args = parser.parse_args(argv)

    accelerator = Accelerator(cpu=args.cpu)
    clf = make_estimator(args.model, max_epochs=args.epochs, batch_size=args.batch_size,
                         accelerator=accelerator)
    clf.fit(*load_data(args.model, args.samples))
    saved = save_on_main_process(clf, args.out)
    report = {"rank": accelerator.process_index, "saved": saved,
              "train_loss": clf.history_[-1]["train_loss"]}
    print(json.dumps(report) + "\n", end="", flush=True)  # one write: lines never interleave


if __name__ == "__main__":
    main()
