"""The pretrained encoder behind the BERT-family text classifiers, read once per fit.

:func:`resolve_model_folder` finds the folder a checkpoint names: a local ``transformers``
folder, or a Hugging Face Hub id through ``huggingface_hub``'s cache, as ``transformers``
does (downloaded when online, read from the cache offline or with ``HF_HUB_OFFLINE=1``; only
configs, tokenizer files and weights are fetched, never code).

:func:`read_checkpoint` turns the estimators' ``checkpoint`` parameter (None: the bundled
MiniLM; a folder or Hub id of BERT, RoBERTa / XLM-RoBERTa, DistilBERT or ELECTRA;
a config dict: a random encoder) into an :class:`EncoderCheckpoint`: the config fields the
fitted model keeps (:func:`encoder_config`, validated by
:func:`~interpretable.nn.encoder_options`) and the folder of its tokenizer
and weights (:func:`read_any_checkpoint`: of any model ``transformers`` loads as a sequence
classifier, its config fields those of
:func:`~interpretable.nn._generic_classifier.structure_config`); the estimators read its
tokenizer with that config (:meth:`EncoderCheckpoint.load_tokenizer`) and check it against the
config before the weights are read (:meth:`EncoderCheckpoint.load_encoder`), once, into the
network they build: a fit resolves the checkpoint and reads its ``config.json`` once. A Hub
snapshot without weights or tokenizer files (an interrupted download) is refused naming the
id.

:class:`ClassifierCheckpoint` is the other kind of folder the B-cos model reads: a fine-tuned
``transformers`` sequence classifier given as its distillation ``teacher``, recognised by
:func:`read_classifier_config` from the one read of its ``config.json``.
"""
from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from interpretable.nn import FAMILIES, encoder_family, encoder_options, structure_config

__all__: list[str] = []  # the checkpoint reading of the BERT-family estimators

#: the files a checkpoint folder is made of, as fetched from the Hub (weights, config,
#: tokenizer); code files (``*.py``) are never fetched
_HUB_FILES = ("config.json", "*.safetensors", "*.safetensors.index.json", "tokenizer.json",
              "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
              "vocab.txt", "vocab.json", "merges.txt", "*.model")
#: PyTorch weight files, fetched only for repositories without safetensors weights (read as
#: plain tensors, ``weights_only``)
_HUB_TORCH_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json",
                      "pytorch_model-*.bin")
#: what a complete snapshot holds beside config.json: (what, file name patterns)
_SNAPSHOT_PARTS = (("weights", ("*.safetensors", "pytorch_model*.bin")),
                   ("tokenizer files", ("tokenizer.json", "tokenizer_config.json", "vocab.*",
                                        "*.model", "merges.txt")))
#: config fields of a sequence classifier's head (beside its encoder's)
_HEAD_FIELDS = ("classifier_dropout", "seq_classif_dropout")


class EncoderCheckpoint(NamedTuple):
    """A ``checkpoint`` as read by :func:`read_checkpoint`.

    config: the encoder config fields a fitted model keeps (``config_``);
    folder: the local folder of the encoder and its tokenizer (None: a random encoder with
    the bundled tokenizer);
    source_config: the ``transformers`` config read from ``folder`` (None for a dict).
    """
    config: dict
    folder: Path | None
    source_config: Any

    def load_encoder(self, *, pooler: bool = False):
        """The ``transformers`` base model in ``folder``: its weights, read now (``pooler``:
        with the pretrained pooler)."""
        from interpretable.nn import load_encoder

        return load_encoder(self.folder, pooler=pooler, config=self.source_config)

    def load_classifier(self, n_outputs: int | None = None, *, trained_head: bool = False):
        """The sequence classifier in ``folder``
        (:class:`~interpretable.nn._sequence_classifier.PretrainedSequenceClassifier`), read
        with ``source_config``: its weights, read now. ``n_outputs``: a new output layer of
        that size (None: the checkpoint's head; ``trained_head``: refused when it has none,
        :class:`~interpretable.nn._bert_encoder.UntrainedHeadError`)."""
        from interpretable.nn import PretrainedSequenceClassifier

        if n_outputs is None:
            return PretrainedSequenceClassifier.from_pretrained(
                self.folder, config=self.source_config, trained_head=trained_head)
        config = copy.deepcopy(self.source_config)
        config.num_labels = n_outputs
        return PretrainedSequenceClassifier.from_pretrained(self.folder, config=config,
                                                            ignore_mismatched_sizes=True)

    def load_tokenizer(self):
        """The ``transformers`` tokenizer in ``folder``, read with ``source_config`` (not read
        again); the bundled MiniLM's for a random encoder."""
        from interpretable.nn import load_tokenizer

        if self.folder is None:
            from interpretable.datasets import load_minilm

            return load_tokenizer(load_minilm())
        return load_tokenizer(self.folder, config=self.source_config)


def encoder_config(config: dict) -> dict:
    """The fields of an encoder config (a ``config.json`` dict) that rebuild the encoder's
    structure: its ``model_type`` and the fields its family reads, validated (ValueError
    naming the problem; no ``model_type``: BERT, as in models saved by the development
    snapshots)."""
    family = FAMILIES[encoder_family(config)]
    encoder_options(config)
    read = {"model_type", *family.fields.values(), *family.defaults, *family.required}
    return {"model_type": config.get("model_type", "bert"),
            **{k: v for k, v in config.items() if k in read}}


def classifier_config(config: dict) -> dict:
    """:func:`encoder_config` plus the fields of a sequence classifier's head (its dropout)
    that rebuild a ``...ForSequenceClassification`` of the same structure."""
    head = {k: config[k] for k in _HEAD_FIELDS
            if isinstance(config.get(k), (int, float)) and not isinstance(config[k], bool)}
    return {**encoder_config(config), **head}


def checkpoint_labels(config) -> list:
    """The class names of a sequence classifier's ``transformers`` config, output by output
    (its ``id2label``, as strings)."""
    return [str(config.id2label[i]) for i in range(config.num_labels)]


def _offline() -> bool:
    """Whether ``HF_HUB_OFFLINE`` forbids downloads (read at each call, as the variable may
    be set after ``huggingface_hub`` was imported)."""
    from huggingface_hub import constants

    value = os.environ.get("HF_HUB_OFFLINE")
    return constants.HF_HUB_OFFLINE if value is None else value.upper() in {"1", "ON", "YES",
                                                                              "TRUE"}


def _looks_like_hub_id(name: str) -> bool:
    """``name`` or ``namespace/name`` of letters, digits, ``-``, ``_`` and ``.``."""
    parts = name.split("/")
    return 1 <= len(parts) <= 2 and all(
        part and part[0] not in ".-" and all(c.isalnum() or c in "-_." for c in part)
        for part in parts)


def resolve_model_folder(checkpoint, *, what: str = "checkpoint") -> Path:
    """The local folder of a ``transformers`` model: ``checkpoint`` itself when it is a
    folder, else the Hub id's snapshot in ``huggingface_hub``'s cache (downloaded when
    online and allowed). Never runs code: only configs, tokenizer files and weights are
    fetched.

    Raises ValueError naming ``checkpoint``, the cache folder and what to do when neither
    exists (``what``: the parameter's name in the message).
    """
    path = Path(os.fspath(checkpoint)).expanduser()
    if path.is_dir():
        if not (path / "config.json").is_file():
            raise ValueError(f"{what} {str(path)!r} is a folder without config.json: not a "
                             "transformers model folder.")
        return path
    name = os.fspath(checkpoint)
    if not isinstance(checkpoint, str) or not _looks_like_hub_id(name):
        raise ValueError(f"{what} {name!r} is no folder (nothing at {str(path.absolute())!r}) "
                         "and no Hugging Face Hub id.")
    from huggingface_hub import constants, snapshot_download
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    offline = _offline()
    try:
        folder = Path(snapshot_download(name, allow_patterns=list(_HUB_FILES),
                                        local_files_only=offline))
        if not any(folder.glob("*.safetensors")):
            folder = Path(snapshot_download(name, allow_patterns=list(_HUB_TORCH_WEIGHTS),
                                            local_files_only=offline))
    except (LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as exc:
        how = ("HF_HUB_OFFLINE is set: unset it to download" if offline else
               "the Hub could not be reached: download it where it can (e.g. `hf download "
               f"{name}`) into this cache")
        raise ValueError(
            f"{what} {name!r} is no local folder (nothing at {str(path.absolute())!r}) and "
            f"the Hugging Face model {name!r} is not in the cache {constants.HF_HUB_CACHE!r}: "
            f"{how}, or pass the folder of a saved model ({type(exc).__name__}).") from None
    if not (folder / "config.json").is_file():
        raise ValueError(f"the Hugging Face model {name!r} (cached in {str(folder)!r}) has no "
                         "config.json: not a transformers model.")
    for part, patterns in _SNAPSHOT_PARTS:
        if not any(any(folder.glob(pattern)) for pattern in patterns):
            how = ("HF_HUB_OFFLINE is set: unset it to download them" if offline else
                   f"download it again (e.g. `hf download {name}`)")
            raise ValueError(f"the Hugging Face model {name!r} is only partly in the cache "
                             f"({str(folder)!r}): it has no {part} ({' or '.join(patterns)}), "
                             f"as after an interrupted download; {how}.")
    return folder


def read_checkpoint(checkpoint) -> EncoderCheckpoint:
    """Read the config of ``checkpoint`` (None, a folder, a Hub id or a config dict),
    checked; the weights are read later, once, by :meth:`EncoderCheckpoint.load_encoder`. A
    Hub id resolves through :func:`resolve_model_folder`."""
    if isinstance(checkpoint, dict):
        return EncoderCheckpoint(encoder_config(checkpoint), None, None)
    return as_encoder(read_any_checkpoint(checkpoint, sequence_classifier=False))


def read_any_checkpoint(checkpoint, *, sequence_classifier: bool = True) -> EncoderCheckpoint:
    """Read the config of the ``transformers`` model ``checkpoint`` names (None: the bundled
    MiniLM; a folder or a Hub id, resolved by :func:`resolve_model_folder`), of any
    ``model_type`` (``sequence_classifier``: one ``AutoModelForSequenceClassification``
    builds, else a ValueError naming it); ``config``: its
    :func:`~interpretable.nn._generic_classifier.structure_config`."""
    if checkpoint is None:
        from interpretable.datasets import load_minilm

        folder = load_minilm()
    else:
        folder = resolve_model_folder(checkpoint)
    from interpretable.nn import read_config

    source = read_config(folder)
    if sequence_classifier:
        from transformers.models.auto.modeling_auto import (
            MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES,
        )

        if source.model_type not in MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
            raise ValueError(f"transformers has no sequence classifier of model_type "
                             f"{source.model_type!r} (the model in {str(folder)!r}).")
    return EncoderCheckpoint(structure_config(source), folder, source)


def converts(checkpoint: EncoderCheckpoint) -> bool:
    """Whether a read checkpoint is of a family the package converts to its own encoder
    (:data:`~interpretable.nn._encoder_families.FAMILIES`)."""
    return any(checkpoint.source_config.model_type in family.model_types
               for family in FAMILIES.values())


def as_encoder(checkpoint: EncoderCheckpoint) -> EncoderCheckpoint:
    """A read checkpoint with the config fields of its encoder (:func:`encoder_config`);
    ValueError listing the supported families for another model type (and naming the
    estimator that runs it as it is)."""
    try:
        config = encoder_config(checkpoint.source_config.to_dict())
    except ValueError as error:
        if converts(checkpoint):
            raise
        raise ValueError(f"{error} TransformersTextClassifier runs (and fine-tunes) any other "
                         "architecture as it is.") from None
    return checkpoint._replace(config=config)


def names_sequence_classifier(fields) -> bool:
    """Whether decoded ``config.json`` fields describe a ``transformers`` sequence classifier
    (a ``...ForSequenceClassification`` architecture), as opposed to a base model or a model
    saved by this package (whose ``config.json`` names its ``estimator``)."""
    return isinstance(fields, dict) and "estimator" not in fields and any(
        isinstance(name, str) and name.endswith("ForSequenceClassification")
        for name in fields.get("architectures") or ())


def read_classifier_config(folder):
    """The ``transformers`` config of the sequence classifier in ``folder``, built from one
    read of its ``config.json``; None when the folder holds another model (e.g. one saved by
    this package)."""
    folder = Path(os.fspath(folder))
    try:
        fields = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not names_sequence_classifier(fields):
        return None
    from interpretable.nn import config_from_fields

    return config_from_fields(fields, folder)


class ClassifierCheckpoint:
    """A fine-tuned ``transformers`` sequence classifier in a local folder, as a teacher:
    ``predict_proba(texts)`` with the columns in the order of ``classes`` (the student's).

    Its labels (``id2label`` of its config) must name the student's classes, compared as
    strings (``"pos"``, or ``"1"`` for the class 1): a checkpoint whose labels are
    ``LABEL_0``, ``LABEL_1``... is refused rather than guessed. Texts are tokenized by its
    own tokenizer, cut at its own maximum length, ``batch_size`` at a time on ``device``.
    ``config``: its config, already read (:func:`read_classifier_config`; None: read here).
    Never downloads; a file's code is never run.
    """

    def __init__(self, folder, classes, *, config=None, batch_size: int = 32, device="cpu"):
        from interpretable.nn import load_sequence_classifier

        self.folder = Path(os.fspath(folder))
        self.model, self.tokenizer = load_sequence_classifier(self.folder, config=config)
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
