"""B-cos BERT (B-cos LM) converted from the bundled MiniLM-L6: cost and a fine-tuning check.

Default: CPU times on one thread for ``--texts`` (64) texts × 64 word pieces, in interleaved
rounds of one run (medians): the original ``transformers`` ``BertModel`` forward (its default
SDPA attention and the eager one) against the converted
:class:`~interpretable.nn.bcos.BcosBertClassifier` forward; its exact explanation
(``contributions``: one forward and one backward pass in explanation mode) against its forward,
a pair of its own. Writes ``benchmarks/results/bcos_bert_speed.json``.

``--fine-tune``: a sanity check that the converted model learns (B = 1.5, AdamW lr 2e-5, 10 %
linear warm-up then linear decay, batch 32, at most 64 pieces) on Rotten Tomatoes, split by
movie; accuracy on 500 held-out texts and completeness of their explanations. Writes
``benchmarks/results/bcos_bert_fine_tune.json``.
"""

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.nn import functional as F

sys.path.insert(0, str(Path(__file__).parent))
from ratios import RESULTS, finish_record, run_record, timed  # noqa: E402

from interpretable.datasets import load_minilm, load_rotten_tomatoes  # noqa: E402
from interpretable.nn.bcos import BcosBertClassifier
from interpretable.preprocessing import WordPieceEncoder


def inference(fn):
    """``fn`` called in inference mode."""
    def run():
        with torch.inference_mode():
            return fn()
    return run


def speed(texts=64, rounds=5):
    import transformers

    torch.set_num_threads(1)
    torch.manual_seed(0)
    tokens = torch.randint(1000, 30000, (texts, 64))
    lengths = torch.full((texts,), 64)
    mask = torch.ones_like(tokens)
    path = str(load_minilm())
    bert = {attention: transformers.BertModel.from_pretrained(
        path, local_files_only=True, attn_implementation=attention).eval()
        for attention in ("sdpa", "eager")}
    model = BcosBertClassifier.from_pretrained(path, 2, b=1.5).eval()
    record = run_record(transformers=transformers.__version__)
    forward = inference(lambda: model(tokens, lengths))
    # each ratio from its own interleaved rounds: an explanation between two forwards slows the
    # next forward (allocator and cache state)
    bert_forward = {f"bert_forward_{attention}":
                    inference(lambda m=m: m(input_ids=tokens, attention_mask=mask))
                    for attention, m in bert.items()}
    seconds, cpu_seconds = timed(bert_forward | {"bcos_forward": forward}, rounds)
    beside, beside_cpu = timed({"bcos_explain": lambda: model.contributions(tokens, lengths),
                                "bcos_forward_beside_explain": forward}, rounds)
    seconds.update(beside)
    cpu_seconds.update(beside_cpu)
    ratios = {
        "bcos_forward_over_bert_sdpa": seconds["bcos_forward"] / seconds["bert_forward_sdpa"],
        "bcos_forward_over_bert_eager": seconds["bcos_forward"] / seconds["bert_forward_eager"],
        "bcos_explain_over_bcos_forward":
            seconds["bcos_explain"] / seconds["bcos_forward_beside_explain"],
    }
    record.update({"texts": texts, "pieces": 64, "b": 1.5, "rounds": rounds,
                   "seconds": seconds, "cpu_seconds": cpu_seconds, "ratios": ratios})
    return finish_record(record)


def encode(encoder, texts):
    ids, lengths = encoder.encode_tokens(encoder.tokenize_many(texts))
    return torch.as_tensor(ids), torch.as_tensor(lengths)


def fine_tune(steps=300, batch_size=32, max_len=64, lr=2e-5, b=1.5, n_test=500, seed=0,
              threads=1):
    from sklearn.model_selection import GroupShuffleSplit

    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rt = load_rotten_tomatoes()
    texts, target = np.array(rt.data, dtype=object), rt.target
    train, test = next(GroupShuffleSplit(1, test_size=0.2, random_state=seed)
                       .split(texts, target, rt.movie))
    test = test[:n_test]
    encoder = WordPieceEncoder(max_len=max_len).fit()
    model = BcosBertClassifier.from_pretrained(load_minilm(), 2, b=b)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min((step + 1) / warmup, (steps - step) / (steps - warmup)))

    def accuracy():
        model.eval()
        with torch.inference_mode():
            predicted = torch.cat([model(*encode(encoder, texts[test[i:i + 64]])).argmax(1)
                                   for i in range(0, len(test), 64)])
        return float((predicted.numpy() == target[test]).mean())

    before = accuracy()
    order = np.random.default_rng(seed).permutation(np.tile(train, -(-steps * batch_size
                                                                     // len(train))))
    losses, start = [], time.perf_counter()
    model.train()
    for step in range(steps):
        batch = order[step * batch_size:(step + 1) * batch_size]
        loss = F.cross_entropy(model(*encode(encoder, texts[batch])),
                               torch.as_tensor(target[batch]))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        schedule.step()
        losses.append(loss.item())
    train_seconds = time.perf_counter() - start
    after = accuracy()
    explained = model.contributions(*encode(encoder, texts[test[:64]]))
    logit = explained.logits.gather(1, explained.target[:, None])[:, 0]
    error = (explained.pieces.sum(1) + explained.position_type + explained.bias - logit).abs()
    return {"steps": steps, "batch_size": batch_size, "max_len": max_len, "lr": lr, "b": b,
            "warmup_steps": warmup, "train_texts_seen": steps * batch_size,
            "train_size": len(train), "test_texts": len(test), "threads": threads,
            "seed": seed, "accuracy_before": before, "accuracy_after": after,
            "majority_class_accuracy": float(max(target[test].mean(), 1 - target[test].mean())),
            "loss_first_20": float(np.mean(losses[:20])),
            "loss_last_20": float(np.mean(losses[-20:])),
            "train_seconds": train_seconds,
            "completeness_max_relative_error_float32": float((error / logit.abs()).max()),
            "position_type_share_mean_abs": float((explained.position_type.abs()
                                                   / logit.abs()).mean()),
            "torch": torch.__version__}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fine-tune", dest="fine_tune", action="store_true")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--texts", type=int, default=64, help="speed: texts per batch")
    parser.add_argument("--rounds", type=int, default=5, help="speed: interleaved rounds")
    parser.add_argument("--out", help="the JSON written (default: benchmarks/results/"
                                      "bcos_bert_speed.json or bcos_bert_fine_tune.json)")
    args = parser.parse_args()
    if args.fine_tune:
        result, name = fine_tune(steps=args.steps, threads=args.threads), "bcos_bert_fine_tune"
    else:
        result, name = speed(args.texts, args.rounds), "bcos_bert_speed"
    RESULTS.mkdir(exist_ok=True)
    Path(args.out or RESULTS / f"{name}.json").write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
