"""Make the ferret reference fixture: a tiny BERT classifier and what ferret 0.4.2 makes of it.

Run from the repository root (it downloads ferret's wheel with pip unless given one)::

    python tests/data/ferret/make_reference.py [--wheel ferret_xai-0.4.2-py3-none-any.whl]

It writes, beside itself:

* ``model/``: a ``BertForSequenceClassification`` (hidden 16, 2 layers, 2 heads,
  intermediate 32, labels ``neg`` / ``pos``, random weights of ``torch.manual_seed(0)``) and
  its ``BertTokenizerFast`` over ``vocab.txt`` (whole lower-case words and the specials), with
  ``save_pretrained``;
* ``reference.json``: per text, the tokens, the scores given to ferret (with ``[CLS]`` /
  ``[SEP]``), the per-word rationale, the target (the predicted class) and the values of
  ferret's six default evaluators as ``Benchmark.evaluate_explanation`` runs them (the
  rationale padded with 0 for ``[CLS]`` / ``[SEP]``), with the internals that ferret computed
  on the way (AOPC unit sets, perturbed texts, probabilities, drops; leave-one-out
  probabilities and drops; top-5 hard rationale), recorded by wrapping ferret's functions.

ferret is not installed: its ``ferret/__init__.py`` imports every explainer and dataset
(shap, lime, captum, datasets, ...). A stub ``ferret`` package (and ``ferret.explainers``)
whose ``__path__`` is the wheel's folder goes into ``sys.modules``, so that
``ferret.evaluators`` (the real package), ``ferret.model_utils`` and
``ferret.explainers.explanation`` are imported from the wheel's files and nothing else is.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path

import numpy as np
import scipy
import sklearn
import torch
import transformers
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

HERE = Path(__file__).resolve().parent
FERRET = "ferret-xai==0.4.2"
SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
WORDS = ["good", "great", "bad", "awful", "movie", "film", "plot", "actors", "story", "acting",
         "music", "scenes", "ending", "the", "a", "was", "is", "and", "but", "not", "very",
         "really", "quite", "boring", "fun", "funny", "dull", "brilliant", "terrible", "wonderful",
         "poor", "best", "worst", "loved", "hated", "liked", "enjoyed", "this", "that", "it", "we",
         "they", "too", "so", "just", "slow", "long", "short", "sad", "happy", "dark", "simple",
         "clever", "script", "director", "cast", "made", "with", "of", "in"]
#: the texts: 1 to 12 words of the vocabulary (decode and re-tokenization give them back)
TEXTS = [
    "brilliant",
    "bad movie",
    "the plot was dull",
    "a wonderful film",
    "we loved the music",
    "the acting was really terrible",
    "this movie is not good but fun",
    "they hated the script and the long ending",
    "quite a clever story and dark scenes",
    "the cast was great and the director was brilliant",
    "it was too slow too long and just boring but the music",
    "we liked the actors the plot and the ending but not the script",
    "the worst film this director made so dull and sad",
    "a simple short story and a happy ending we enjoyed it",
]
#: how the explanation scores of each text are made (per token, [CLS] and [SEP] included)
CASES = {0: "one word", 2: "all negative", 3: "all equal (ties)", 4: "empty rationale",
         11: "two positive scores (repeated sets)", 12: "ties at the bin cuts"}


def load_ferret(wheel: Path | None) -> dict:
    """Import ferret's evaluators from its wheel without its top-level package."""
    if wheel is None:
        tmp = Path(tempfile.mkdtemp())
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                        ":all:", FERRET, "-d", str(tmp)], check=True)
        wheel = next(tmp.glob("ferret_xai-*.whl"))
    root = Path(tempfile.mkdtemp())
    zipfile.ZipFile(wheel).extractall(root)
    for name, folder in (("ferret", "ferret"), ("ferret.explainers", "ferret/explainers")):
        stub = types.ModuleType(name)
        stub.__path__ = [str(root / folder)]  # submodules load from the wheel's files
        sys.modules[name] = stub
    version = next(root.glob("ferret_xai-*.dist-info")).name.split("-")[1].removesuffix(
        ".dist")
    modules = {name: importlib.import_module(f"ferret.{name}") for name in (
        "evaluators", "evaluators.faithfulness_measures", "evaluators.plausibility_measures",
        "evaluators.utils_from_soft_to_discrete", "model_utils", "explainers.explanation")}
    leaked = [m for m in sys.modules if m.startswith(("shap", "lime", "captum", "datasets"))]
    assert not leaked, leaked
    return {"modules": modules, "version": version,
            "wheel_sha256": hashlib.sha256(wheel.read_bytes()).hexdigest()}


def make_model(folder: Path):
    """Write the tiny classifier and tokenizer, and load them back as ferret would."""
    folder.mkdir(parents=True, exist_ok=True)
    vocab = folder / "vocab.txt"
    vocab.write_text("\n".join(SPECIALS + WORDS) + "\n")
    tokenizer = BertTokenizerFast(vocab=str(vocab))  # transformers 5: vocab=, not vocab_file=
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(SPECIALS) + len(WORDS), hidden_size=16,
                        num_hidden_layers=2, num_attention_heads=2, intermediate_size=32,
                        max_position_embeddings=32, initializer_range=0.5, num_labels=2,
                        id2label={0: "neg", 1: "pos"}, label2id={"neg": 0, "pos": 1})
    BertForSequenceClassification(config).eval().save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    model = BertForSequenceClassification.from_pretrained(folder).eval()
    return model, BertTokenizerFast.from_pretrained(folder)


def make_scores(i: int, n_tokens: int, rng: np.random.Generator) -> np.ndarray:
    """Scores of one text's tokens: quarters in [-1, 2] (ties, zeros, negatives), or a case."""
    scores = rng.integers(-4, 9, n_tokens) / 4
    words = slice(1, n_tokens - 1)
    if CASES.get(i) == "all negative":
        scores[words] = -rng.integers(1, 5, n_tokens - 2) / 4
    elif CASES.get(i) == "all equal (ties)":
        scores[words] = 0.5
    elif CASES.get(i) == "ties at the bin cuts":
        scores[words] = [0.5, 1.0, 0.5, 0.5, 1.0, 0.0, 0.5, 0.25, 0.0, 0.25]
    elif CASES.get(i) == "two positive scores (repeated sets)":
        scores[words] = -rng.integers(0, 4, n_tokens - 2) / 4
        scores[[3, 7]] = [1.5, 0.75]
    return scores


def make_rationale(i: int, n_words: int, rng: np.random.Generator) -> list:
    if CASES.get(i) == "empty rationale":
        return [0] * n_words
    rationale = (rng.random(n_words) < 0.4).astype(int)
    rationale[rng.integers(n_words)] = 1
    return rationale.tolist()


def add_rationale(module, explanation, rationale: list):
    """``Benchmark._add_rationale(explanation, rationale, add_first_last=True)``."""
    rationale = [0] + rationale + [0]
    if len(explanation.tokens) != len(rationale):
        raise ValueError()
    return module.ExplanationWithRationale(explanation.text, explanation.tokens,
                                           explanation.scores, explanation.explainer,
                                           explanation.target, rationale)


class Tape:
    """Wraps ferret's functions to record what they computed, in call order."""

    def __init__(self):
        self.events = []

    def wrap(self, name, fn):
        def wrapped(*args, **kwargs):
            out = fn(*args, **kwargs)
            self.events.append((name, args, out))
            return out
        return wrapped

    def take(self) -> list:
        events, self.events = self.events, []
        return events


class TapedTokenizer:
    """The tokenizer, recording what ``decode`` gives."""

    def __init__(self, tokenizer, tape):
        self._tokenizer, self._tape = tokenizer, tape

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)

    def __call__(self, *args, **kwargs):
        return self._tokenizer(*args, **kwargs)

    def decode(self, ids, *args, **kwargs):
        out = self._tokenizer.decode(ids, *args, **kwargs)
        self._tape.events.append(("decode", ([int(i) for i in ids],), out))
        return out


def tape_ferret(ferret: dict, tape: Tape) -> None:
    faith = ferret["modules"]["evaluators.faithfulness_measures"]
    plaus = ferret["modules"]["evaluators.plausibility_measures"]
    utils = ferret["modules"]["evaluators.utils_from_soft_to_discrete"]
    choose = faith._check_and_define_get_id_discrete_rationale_function
    faith._check_and_define_get_id_discrete_rationale_function = \
        lambda based_on: tape.wrap("select", choose(based_on))
    utils._get_id_tokens_top_k = tape.wrap("top_k", utils._get_id_tokens_top_k)
    faith._compute_aopc = tape.wrap("aopc", faith._compute_aopc)
    faith.kendalltau = tape.wrap("kendalltau", faith.kendalltau)
    plaus.get_discrete_explanation_topK = tape.wrap("hard", plaus.get_discrete_explanation_topK)


def tape_evaluator(evaluator, tape: Tape):
    evaluator.helper.tokenizer = TapedTokenizer(evaluator.helper.tokenizer, tape)
    forward = evaluator.helper._forward

    def taped_forward(text, *args, **kwargs):
        outputs, logits = forward(text, *args, **kwargs)
        tape.events.append(("forward", (text,), logits.softmax(-1)))
        return outputs, logits
    evaluator.helper._forward = taped_forward
    return evaluator


def erasure_record(events: list, fractions, target: int) -> dict:
    """Bins of an AOPC evaluation from its tape: a bin is kept when ferret decoded its text."""
    bins, v = [], 0
    for name, args, out in events:
        if name == "top_k":  # taped inside (before) the selection of its bin
            v = int(args[1])
        elif name == "select":
            bins.append({"fraction": float(args[1]), "v": v, "kept": False, "text": None,
                         "id_top": None if out is None else [int(i) for i in out]})
            v = 0
        elif name == "decode" and bins:
            bins[-1].update(kept=True, text=out)
    assert [b["fraction"] for b in bins] == [float(f) for f in fractions]
    forwards = [out for name, _, out in events if name == "forward"]
    drops = [args[0] for name, args, _ in events if name == "aopc"]
    kept = any(b["kept"] for b in bins)
    return {
        "bins": bins,
        "sets": [sorted(b["id_top"]) if b["kept"] else None for b in bins],
        "baseline": float(forwards[0][0, target]),
        "probabilities": [float(p) for p in forwards[1][:, target]] if kept else [],
        "drops": [float(d) for d in drops[0]] if kept else [],
    }


def loo_record(events: list, target: int) -> dict:
    forwards = [out for name, _, out in events if name == "forward"]
    (drops, _), = [args for name, args, _ in events if name == "kendalltau"]
    return {"texts": [out for name, _, out in events if name == "decode"],
            "baseline": float(forwards[0][0, target]),
            "probabilities": [float(p) for p in forwards[1][:, target]],
            "drops": [float(d) for d in drops], "drops_dtype": str(drops.dtype)}


def simd_found() -> list:
    """numpy's SIMD extensions on this machine (its argsort kernel, hence ferret's ties)."""
    try:
        from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__
    except ImportError:
        return []
    return [name for name in __cpu_dispatch__ if __cpu_features__.get(name)]


def value(evaluation):
    score = float(evaluation.score)
    return None if np.isnan(score) else score


def dumps(obj, indent: int = 0) -> str:
    """JSON, one line per dict entry and per dict in a list, other lists on one line."""
    pad = " " * indent
    if isinstance(obj, dict):
        items = [f"{pad} {json.dumps(key)}: {dumps(value, indent + 1).lstrip()}"
                 for key, value in obj.items()]
        return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(obj, list) and any(isinstance(item, dict) for item in obj):
        return pad + "[\n" + ",\n".join(dumps(item, indent + 1) for item in obj) + "\n" + \
            pad + "]"
    return pad + json.dumps(obj)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--wheel", type=Path, help=f"{FERRET}'s wheel (default: pip download)")
    args = parser.parse_args(argv)
    ferret = load_ferret(args.wheel)
    mods = ferret["modules"]
    faith = mods["evaluators.faithfulness_measures"]
    plaus = mods["evaluators.plausibility_measures"]
    explanation_module = mods["explainers.explanation"]
    fractions = mods["evaluators.utils_from_soft_to_discrete"].parse_evaluator_args({})[2][
        "thresholds"]
    model, tokenizer = make_model(HERE / "model")
    tape = Tape()
    tape_ferret(ferret, tape)
    evaluators = {cls.SHORT_NAME: tape_evaluator(cls(model, tokenizer), tape) for cls in (
        faith.AOPC_Comprehensiveness_Evaluation, faith.AOPC_Sufficiency_Evaluation,
        faith.TauLOO_Evaluation, plaus.AUPRC_PlausibilityEvaluation,
        plaus.Tokenf1_PlausibilityEvaluation, plaus.TokenIOU_PlausibilityEvaluation)}
    helper = mods["model_utils"].ModelHelper(model, tokenizer)
    rng = np.random.default_rng(0)
    samples = []
    for i, text in enumerate(TEXTS):
        tokens = helper.get_tokens(text)
        assert set(text.split()) <= set(WORDS), text
        assert tokens[1:-1] == text.split() and tokenizer.decode(
            tokenizer(text)["input_ids"][1:-1]) == text, text  # the decode round trip
        probabilities = helper._forward(text, output_hidden_states=False)[1].softmax(-1)[0]
        target = int(probabilities.argmax())
        scores = make_scores(i, len(tokens), rng)
        rationale = make_rationale(i, len(tokens) - 2, rng)
        explanation = add_rationale(
            explanation_module, explanation_module.Explanation(text, tokens, scores,
                                                               "fixture", target), rationale)
        metrics, tapes = {}, {}
        for short_name, evaluator in evaluators.items():
            tape.take()
            metrics[short_name] = value(evaluator.compute_evaluation(explanation, target))
            tapes[short_name] = tape.take()
        hard = [out for name, _, out in tapes["token_f1_plau"] if name == "hard"]
        samples.append({
            "case": CASES.get(i, "random"), "text": text, "tokens": tokens,
            "scores": scores.tolist(), "rationale": rationale, "target": target,
            "probabilities": probabilities.tolist(), "metrics": metrics,
            "argsort": np.asarray(scores[1:-1]).argsort().tolist(),
            "aopc_compr": erasure_record(tapes["aopc_compr"], fractions, target),
            "aopc_suff": erasure_record(tapes["aopc_suff"], fractions, target),
            "loo": loo_record(tapes["taucorr_loo"], target),
            "hard_rationale": hard[0],
        })
    command = "python tests/data/ferret/make_reference.py" + (
        "" if args.wheel is None else f" --wheel {args.wheel.name}")
    reference = {
        "about": "ferret 0.4.2's Benchmark default evaluators on a tiny BERT (model/); "
                 "'scores' and 'tokens' include [CLS] and [SEP] (ferret drops the first and "
                 "last), 'rationale' is per word; unit indices count words from 0; "
                 "'argsort' is numpy's default argsort of the word scores on the machine that "
                 "made this file (ferret's tie order); null is NaN; AOPC 'sets' hold the "
                 "sorted unit indices of each bin ferret kept (null: skipped), 'probabilities'"
                 " and 'drops' one per kept bin (float32 values, as ferret computes them); "
                 "'bins' what ferret chose per fraction (v = int(f·n), id_top in its order); "
                 "'loo' the texts with each word left out, their probabilities and ferret's "
                 "drops -(p_loo - p0); 'hard_rationale' ferret's top-5 mask (null: no "
                 "positive score).",
        "command": command,
        "versions": {"ferret": ferret["version"], "transformers": transformers.__version__,
                     "torch": torch.__version__, "numpy": np.__version__,
                     "scipy": scipy.__version__, "scikit-learn": sklearn.__version__},
        "ferret_wheel_sha256": ferret["wheel_sha256"],
        "numpy_simd": simd_found(),
        "fractions": [float(f) for f in fractions],
        "top_k_rationale": 5,
        "samples": samples,
    }
    (HERE / "reference.json").write_text(dumps(reference) + "\n")
    print(f"wrote {HERE / 'reference.json'} ({len(samples)} samples)")


if __name__ == "__main__":
    main()
