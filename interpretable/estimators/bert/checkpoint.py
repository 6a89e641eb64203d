"""The pretrained encoder behind the BERT-family text classifiers, read once per fit.

:func:`read_checkpoint` turns the estimators' ``checkpoint`` parameter (None: the bundled
MiniLM; a local ``transformers`` folder of BERT, RoBERTa / XLM-RoBERTa, DistilBERT or ELECTRA;
a config dict: a random encoder) into an :class:`EncoderCheckpoint`: the config fields the
fitted model keeps (:func:`encoder_config`, validated by
:func:`~interpretable.nn.encoder_families.encoder_options`) and the folder of its tokeniser
and weights; the estimators check the tokeniser against the config before the weights are
read (:meth:`EncoderCheckpoint.load_encoder`), once, into the network they build.

:class:`ClassifierCheckpoint` is the other kind of folder the B-cos model reads: a fine-tuned
``transformers`` sequence classifier given as its distillation ``teacher``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from ...nn.encoder_families import FAMILIES, encoder_family, encoder_options

__all__ = ["ClassifierCheckpoint", "EncoderCheckpoint", "encoder_config",
           "is_classifier_checkpoint", "read_checkpoint"]


class EncoderCheckpoint(NamedTuple):
    """A ``checkpoint`` as read by :func:`read_checkpoint`.

    config: the encoder config fields a fitted model keeps (``config_``);
    folder: the local folder of the encoder and its tokeniser (None: a random encoder with
    the bundled tokeniser);
    source_config: the ``transformers`` config read from ``folder`` (None for a dict).
    """
    config: dict
    folder: Path | None
    source_config: Any

    def load_encoder(self, *, pooler: bool = False):
        """The ``transformers`` base model in ``folder``: its weights, read now (``pooler``:
        with the pretrained pooler)."""
        from ...nn.bert_encoder import load_encoder

        return load_encoder(self.folder, pooler=pooler, config=self.source_config)


def encoder_config(config: dict) -> dict:
    """The fields of an encoder config (a ``config.json`` dict) that rebuild the encoder's
    structure: its ``model_type`` and the fields its family reads, validated (ValueError
    naming the problem; no ``model_type``: BERT, as in models saved before 0.3)."""
    family = FAMILIES[encoder_family(config)]
    encoder_options(config)
    read = {"model_type", *family.fields.values(), *family.defaults, *family.required}
    return {"model_type": config.get("model_type", "bert"),
            **{k: v for k, v in config.items() if k in read}}


def read_checkpoint(checkpoint) -> EncoderCheckpoint:
    """Read the config of ``checkpoint`` (None, a folder or a config dict), checked; the
    weights are read later, once, by :meth:`EncoderCheckpoint.load_encoder`. Never
    downloads."""
    if isinstance(checkpoint, dict):
        return EncoderCheckpoint(encoder_config(checkpoint), None, None)
    if checkpoint is None:
        from ...datasets import load_minilm

        folder = load_minilm()
    else:
        folder = Path(os.fspath(checkpoint))
    if not (folder / "config.json").is_file():
        raise ValueError(f"checkpoint {str(folder)!r} is not a local transformers model folder "
                         "(no config.json).")
    from ...nn.bert_encoder import read_encoder_config

    source = read_encoder_config(folder)
    return EncoderCheckpoint(encoder_config(source.to_dict()), folder, source)


def is_classifier_checkpoint(path) -> bool:
    """Whether ``path`` is a folder of a ``transformers`` sequence classifier (its
    ``config.json`` names a ``...ForSequenceClassification`` architecture), as opposed to a
    model saved by this package (whose ``config.json`` names its ``estimator``)."""
    config = Path(os.fspath(path)) / "config.json"
    try:
        fields = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(fields, dict) and "estimator" not in fields and any(
        isinstance(name, str) and name.endswith("ForSequenceClassification")
        for name in fields.get("architectures") or ())


class ClassifierCheckpoint:
    """A fine-tuned ``transformers`` sequence classifier in a local folder, as a teacher:
    ``predict_proba(texts)`` with the columns in the order of ``classes`` (the student's).

    Its labels (``id2label`` of its config) must name the student's classes, compared as
    strings (``"pos"``, or ``"1"`` for the class 1): a checkpoint whose labels are
    ``LABEL_0``, ``LABEL_1``... is refused rather than guessed. Texts are tokenised by its
    own tokeniser, cut at its own maximum length, ``batch_size`` at a time on ``device``.
    Never downloads; a file's code is never run.
    """

    def __init__(self, folder, classes, *, batch_size: int = 32, device="cpu"):
        from ...nn.bert_encoder import load_sequence_classifier

        self.folder = Path(os.fspath(folder))
        self.model, self.tokenizer = load_sequence_classifier(self.folder)
        config = self.model.config
        if getattr(config, "problem_type", None) == "multi_label_classification":
            raise ValueError(f"the teacher {str(self.folder)!r} is a multi-label classifier; "
                             "distillation needs one class per text.")
        labels = [str(config.id2label[i]) for i in range(config.num_labels)]
        names = [str(c) for c in classes]
        if sorted(labels) != sorted(names):
            raise ValueError(f"the teacher {str(self.folder)!r} predicts the labels {labels} "
                             f"(id2label of its config.json), the student is fitted on "
                             f"{names}: they must be the same.")
        self.classes_ = np.asarray(classes)
        self.columns_ = [labels.index(name) for name in names]
        self.batch_size = batch_size
        self.device = torch.device(device)
        self.model.to(self.device)

    def __sklearn_is_fitted__(self) -> bool:
        return True

    def predict_proba(self, texts) -> np.ndarray:
        """Class probabilities ``(n_texts, n_classes)`` of ``texts``, columns as ``classes_``."""
        limit = min(int(self.tokenizer.model_max_length),
                    int(getattr(self.model.config, "max_position_embeddings", 512)), 512)
        rows = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = self.tokenizer(list(texts[start:start + self.batch_size]),
                                       padding=True, truncation=True, max_length=limit,
                                       return_tensors="pt").to(self.device)
                logits = self.model(**batch).logits.double()
                rows.append(torch.softmax(logits, -1)[:, self.columns_].cpu().numpy())
        return np.concatenate(rows) if rows else np.zeros((0, len(self.classes_)))
