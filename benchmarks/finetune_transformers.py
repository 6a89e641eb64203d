"""The model a practitioner already has: MiniLM fine-tuned with ``transformers`` alone.

``OMP_NUM_THREADS=1 python benchmarks/finetune_transformers.py --out DIR [--seed 0]
[--train N]``

Fine-tunes ``BertForSequenceClassification`` from the bundled all-MiniLM-L6-v2 on the
Rotten Tomatoes training split of the reproductions (stratified 80/20, seed 0; 10,246
snippets) with the recipe of a ``transformers`` tutorial: one epoch, batch 32, AdamW at
5e-5, 10 % linear warm-up then linear decay, at most 64 word pieces, and writes it with
``save_pretrained`` (model and tokenizer, ``id2label`` = rotten / fresh). Nothing of this
package is in the training loop: the folder stands for a checkpoint trained elsewhere, which
``benchmarks/explain_pretrained.py`` then explains, B-cosifies and compares.
"""
import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch


def main(args):
    import transformers

    from interpretable.datasets import load_minilm
    from interpretable.reproduce.bcos_text import split

    torch.manual_seed(args.seed)
    X_train, X_test, y_train, y_test = split("rotten-tomatoes", args.train, None, 0)
    labels = ["rotten", "fresh"]
    folder = load_minilm()
    tokenizer = transformers.AutoTokenizer.from_pretrained(folder, local_files_only=True)
    model = transformers.AutoModelForSequenceClassification.from_pretrained(
        folder, local_files_only=True, num_labels=2,
        id2label=dict(enumerate(labels)), label2id={n: i for i, n in enumerate(labels)})
    targets = torch.tensor([labels.index(str(label)) for label in y_train])
    order = torch.randperm(len(X_train), generator=torch.Generator().manual_seed(args.seed))
    steps = -(-len(X_train) // args.batch_size)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    schedule = transformers.get_linear_schedule_with_warmup(optimizer, int(0.1 * steps), steps)
    model.train()
    start = time.perf_counter()
    for step in range(steps):
        index = order[step * args.batch_size:(step + 1) * args.batch_size]
        batch = tokenizer([X_train[i] for i in index], padding=True, truncation=True,
                          max_length=64, return_tensors="pt")
        loss = model(**batch, labels=targets[index]).loss
        loss.backward()
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            print(f"step {step}/{steps} loss {loss.item():.4f}", flush=True)
    seconds = time.perf_counter() - start
    model.eval()
    correct = 0
    with torch.inference_mode():
        for i in range(0, len(X_test), 128):
            batch = tokenizer(X_test[i:i + 128], padding=True, truncation=True, max_length=64,
                              return_tensors="pt")
            predicted = model(**batch).logits.argmax(-1).numpy()
            correct += int((np.asarray(labels)[predicted] == np.asarray(y_test[i:i + 128],
                                                                        dtype=str)).sum())
    out = Path(args.out)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    record = {"train_seconds": seconds, "test_accuracy": correct / len(X_test),
              "n_train": len(X_train), "n_test": len(X_test), "seed": args.seed,
              "lr": args.lr, "batch_size": args.batch_size}
    (out / "training.json").write_text(json.dumps(record, indent=1))
    print(json.dumps(record))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="the folder save_pretrained writes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--train", type=int, default=None, help="first N training texts")
    parser.add_argument("--lr", type=float, default=5e-5)
    parser.add_argument("--batch-size", type=int, default=32)
    main(parser.parse_args())
