"""One entry per estimator: how to build a tiny instance and tiny data for it.

Each case gives ``make()`` (a small, fast, seeded estimator), ``data()`` returning
``(X_train, y_train, X_test)`` (``y_train`` is None for language models), ``explain_kwargs``
and the input ``kind`` ("text", "pairs", "image", "chars", "sequences"), which selects the
bad-input rows that apply.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


@dataclass
class Case:
    name: str
    make: Callable
    data: Callable
    kind: str
    explain_kwargs: dict = field(default_factory=dict)
    explains: bool = True  # False for plain baselines without an explain method

    def __str__(self):
        return self.name


def _sentiment(n=64, seed=0):
    rng = np.random.RandomState(seed)
    pos, neg = ["great", "superb", "moving"], ["awful", "dull", "boring"]
    filler = ["the", "movie", "was", "a", "plot", "and", "film"]
    X, y = [], []
    for i in range(n):
        words = list(rng.choice(filler, size=rng.randint(2, 6)))
        words.insert(rng.randint(len(words) + 1), rng.choice(pos if i % 2 else neg))
        X.append(" ".join(words))
        y.append("pos" if i % 2 else "neg")
    return X, np.array(y), X[:6]


def _embedding_bag():
    from interpretable import EmbeddingBagClassifier

    return EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)


def _diversity(cell):
    def make():
        from interpretable import DiversityLSTMClassifier

        return DiversityLSTMClassifier(cell=cell, embed_dim=8, hidden_size=8, max_epochs=2,
                                       random_state=0)
    return make


def _babi(n=48):
    from interpretable.datasets import make_babi_task1

    data = make_babi_task1(n, n_sentences=(2, 3), random_state=0)
    return data.data, data.target, data.data[:5]


def _attention_text_pairs():
    from interpretable import AttentionTextClassifier

    return AttentionTextClassifier(encoder="bilstm", embed_dim=8, hidden_size=8, max_epochs=2,
                                   random_state=0)


def _shakespeare_lines():
    text = ("to be or not to be that is the question whether tis nobler in the mind to suffer "
            "the slings and arrows of outrageous fortune ") * 4
    lines = [text[i:i + 60] for i in range(0, len(text) - 60, 30)]
    return lines, None, ["to be or no", "the slings a"]


def _isan():
    from interpretable import ISANLanguageModel

    return ISANLanguageModel(hidden_size=8, max_epochs=2, seq_len=20, random_state=0)


def _lstm_lm():
    from interpretable import LSTMLanguageModel

    return LSTMLanguageModel(hidden_size=8, max_epochs=2, seq_len=20, random_state=0)


def _parentheses():
    from interpretable.datasets import make_parentheses

    X, Y = make_parentheses(48, 12, n_types=2, max_count=3, random_state=0)
    return X, Y, X[:4]


def _isan_tagger():
    from interpretable import ISANSequenceTagger

    return ISANSequenceTagger(hidden_size=8, max_epochs=2, min_count=1, random_state=0)


def _seat(variant):
    def make():
        from interpretable import SEATClassifier
        from interpretable.estimators.seat._variants import VARIANTS

        options = {"epochs": 1, "pgd_steps": 2} if variant == "seat" else {}
        return SEATClassifier(variant=VARIANTS[variant](**options), encoder="rnn", embed_dim=8,
                              hidden_size=8, max_epochs=2, random_state=0)
    return make


def _digits(n=120):
    from interpretable.datasets import load_digits_images

    X, y = load_digits_images(return_X_y=True)
    return X[:n], y[:n], X[n:n + 6]


_TINY_VIT = dict(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                 max_epochs=2, batch_size=32, random_state=0)


def _bcos_vit():
    from interpretable import BcosViTClassifier

    return BcosViTClassifier(**_TINY_VIT)


def _bcos_simple_vit():
    """A tiny B-cos v2 ViT (the released models' design) on grey digits, images as given."""
    from interpretable import BcosSimpleViTClassifier

    return BcosSimpleViTClassifier(dict(dim=8, depth=1, heads=2, mlp_dim=8, patch_size=4),
                                   max_epochs=2, batch_size=32, random_state=0)


def _bcos_resnet():
    """A tiny B-cos v2 ResNet (the released models' design) on grey digits, images as given."""
    from interpretable import BcosResNetClassifier

    return BcosResNetClassifier(dict(block="basic", layers=[1, 1, 1, 1], width=4),
                                max_epochs=2, batch_size=32, random_state=0)


def _vit():
    from interpretable import ViTClassifier

    return ViTClassifier(**{k: v for k, v in _TINY_VIT.items() if k != "stem_channels"})


def _library_models() -> bool:
    """Whether the real timm imports (tests/_real_vision.py): the ImageClassifier case runs
    a timm model."""
    try:
        from _real_vision import real_vision

        real_vision()
    except BaseException:  # noqa: BLE001 - pytest's Skipped: the case is left out
        return False
    return True


def _image_classifier():
    """A tiny timm ViT (one block, 4-pixel patches) trained from scratch on grey digits,
    images as given (the grey channel repeated over RGB)."""
    from interpretable import ImageClassifier

    return ImageClassifier("timm:vit_tiny_patch16_224", architecture_options={
        "img_size": 8, "patch_size": 4, "depth": 1, "embed_dim": 8, "num_heads": 2},
        lr=1e-2, max_epochs=2, batch_size=32, random_state=0)


#: a randomly initialised two-layer BERT with the bundled MiniLM tokenizer
_TINY_BERT = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 2,
              "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 32,
              "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
              "attention_probs_dropout_prob": 0.1}


def _bcos_text():
    from interpretable import BcosTextClassifier

    return BcosTextClassifier(checkpoint=dict(_TINY_BERT), max_length=24, lr=1e-2, max_epochs=2,
                              batch_size=16, random_state=0)


@functools.cache
def _tiny_gpt2() -> str:
    """A tiny fine-tuned GPT-2 classifier folder (written once per process, removed at
    exit)."""
    import atexit
    import shutil
    import tempfile

    from architectures import tiny_classifier

    root = tempfile.mkdtemp(prefix="interpretable-gpt2-")
    atexit.register(shutil.rmtree, root, ignore_errors=True)
    return str(tiny_classifier(Path(root) / "gpt2", "gpt2"))


def _transformers_text():
    from interpretable import TransformersTextClassifier

    return TransformersTextClassifier(checkpoint=_tiny_gpt2(), max_length=24, lr=1e-2,
                                      max_epochs=2, batch_size=16, random_state=0)


CASES = [
    Case("EmbeddingBagClassifier", _embedding_bag, _sentiment, "text"),
    Case("DiversityLSTMClassifier-vanilla", _diversity("vanilla"), _sentiment, "text"),
    Case("DiversityLSTMClassifier-diversity", _diversity("diversity"), _sentiment, "text",
         {"method": "integrated_gradients", "n_steps": 8}),
    Case("DiversityLSTMClassifier-orthogonal", _diversity("orthogonal"), _sentiment, "text"),
    Case("AttentionTextClassifier-pairs", _attention_text_pairs, _babi, "pairs"),
    Case("SEATClassifier-seat", _seat("seat"), _sentiment, "text"),
    Case("SEATClassifier-word-at", _seat("word-at"), _sentiment, "text"),
    Case("BcosTextClassifier", _bcos_text, _sentiment, "text"),
    Case("TransformersTextClassifier", _transformers_text, _sentiment, "text",
         {"method": "integrated_gradients", "n_steps": 8}),
    Case("BcosViTClassifier", _bcos_vit, _digits, "image"),
    Case("BcosSimpleViTClassifier", _bcos_simple_vit, _digits, "image"),
    Case("BcosResNetClassifier", _bcos_resnet, _digits, "image"),
    Case("ViTClassifier", _vit, _digits, "image", {"method": "input_x_gradient"}),
    *([Case("ImageClassifier", _image_classifier, _digits, "image")]
      if _library_models() else []),
    Case("ISANLanguageModel", _isan, _shakespeare_lines, "chars"),
    Case("LSTMLanguageModel", _lstm_lm, _shakespeare_lines, "chars"),
    Case("ISANSequenceTagger", _isan_tagger, _parentheses, "sequences"),
]
