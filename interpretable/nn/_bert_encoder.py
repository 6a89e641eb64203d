"""Encoders of the BERT lineage (BERT, RoBERTa / XLM-RoBERTa, DistilBERT, ELECTRA:
:mod:`interpretable.nn`) from ``transformers``, as the conventional text
models use them: :func:`load_encoder` reads a local checkpoint folder once, :class:`BertEncoder`
wraps its base model for :class:`~interpretable.nn._attention.AttentionTextModule` and
:class:`~interpretable.nn._bert_classifier.BertClassifier`.

Needs the ``bert`` extra (``transformers``). The word-piece embedding table moves into the
module that owns the ``embed`` step (so embedding perturbations and gradient attributions
work as for the recurrent encoders); this module adds the position / segment embeddings,
LayerNorm and transformer layers::

    hidden = encoder(inputs_embeds=embedded, attention_mask=mask).last_hidden_state   (B, T, H)
"""

from __future__ import annotations

import math
import pickle
import warnings
from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

from interpretable.nn._encoder_families import FAMILIES, encoder_family, encoder_options
from interpretable.nn._tensors import check_finite, listed_keys

#: the weights files ``transformers`` reads from a folder, in its order of preference
WEIGHTS_FILES = ("model.safetensors", "model.safetensors.index.json", "pytorch_model.bin",
                 "pytorch_model.bin.index.json")


def _transformers():
    try:
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "the BERT encoder needs the optional dependency 'transformers', which is not "
            'installed: pip install "interpretable-models[bert]" (the \'bert\' extra).',
            name=exc.name) from exc
    return transformers


@contextmanager
def quiet_loading():
    """Load pretrained weights without transformers' messages and "Loading weights" progress
    bar (the unused pooler weights, for one, are expected); its previous logging verbosity and
    progress-bar setting are restored afterwards. Yields the ``transformers`` module."""
    tf = _transformers()
    verbosity, bars = tf.logging.get_verbosity(), tf.logging.is_progress_bar_enabled()
    tf.logging.set_verbosity_error()
    tf.logging.disable_progress_bar()
    try:
        yield tf
    finally:
        tf.logging.set_verbosity(verbosity)
        if bars:
            tf.logging.enable_progress_bar()


def read_config(path):
    """The ``transformers`` config of the model in a local folder, of any ``model_type``
    ``transformers`` knows (never downloads, never runs a file's code)."""
    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(f"{path} is not a transformers model directory (no "
                                "config.json)")
    with _reading(path, "config") as tf:
        return tf.AutoConfig.from_pretrained(str(path), local_files_only=True,
                                             trust_remote_code=False)


def read_encoder_config(path):
    """The ``transformers`` config of the encoder in a local folder (never downloads); a
    family that does not convert is refused (ValueError listing the supported ones)."""
    config = read_config(path)
    encoder_family(config.to_dict())
    return config


def config_from_fields(fields: dict, path):
    """The ``transformers`` config of the decoded ``config.json`` of the local folder ``path``,
    built as ``AutoConfig`` builds it from the file (which is not read again); ValueError
    naming the folder for a ``model_type`` that ``transformers`` does not know."""
    with quiet_loading() as tf:
        model_type = fields.get("model_type")
        if model_type not in tf.CONFIG_MAPPING:
            raise ValueError(f"cannot read the config in {str(path)!r}: transformers knows no "
                             f"model_type {model_type!r}.")
        return tf.CONFIG_MAPPING[model_type].from_dict(fields)


def load_encoder(path, *, pooler: bool = False, config=None):
    """The base model of the encoder in a local ``transformers`` folder, in float32: its
    config (unless given, as read by :func:`read_encoder_config`), then its weights, each read
    once and checked (:func:`check_loaded`); never downloads. ``pooler``: keep the pooler of
    the families that have one (the B-cos conversion uses it)."""
    config = read_encoder_config(path) if config is None else config
    with _reading(path, "weights") as tf:
        model, info = tf.AutoModel.from_pretrained(
            str(path), config=config, local_files_only=True, dtype=torch.float32,
            output_loading_info=True, **_pooler_option(config.to_dict(), pooler))
    check_loaded(model, info, path)
    return model


class UntrainedHeadError(ValueError):
    """A checkpoint read as a trained classifier holds no (or not all of its) classification
    head: ``transformers`` would start the missing weights at random."""


def load_sequence_classifier(path, *, config=None, tokenizer: bool = True,
                             trained_head: bool = False, **options):
    """The ``transformers`` sequence classifier in a local folder (any architecture that
    ``AutoModelForSequenceClassification`` knows without remote code), in eval mode, its
    weights checked (:func:`check_loaded`; ``trained_head``: a missing head weight raises
    :class:`UntrainedHeadError` instead of a warning), and its tokenizer
    (:func:`load_tokenizer`; ``tokenizer=False``: the model alone). ``config``: its config,
    already read (None: read here); ``config.json`` is read once either way. ``options``:
    further keywords of ``from_pretrained``, e.g. ``ignore_mismatched_sizes`` (without
    ``config``, config fields too, e.g. ``num_labels``). Never downloads, never runs a file's
    code (ValueError naming the folder)."""
    with _reading(path, "sequence classifier") as tf:
        model, info = tf.AutoModelForSequenceClassification.from_pretrained(
            str(path), config=config, local_files_only=True, output_loading_info=True,
            trust_remote_code=False, **options)
    check_loaded(model, info, path, trained_head=trained_head)
    if not tokenizer:
        return model.eval()
    return model.eval(), load_tokenizer(path, config=model.config)


def load_tokenizer(path, *, config=None):
    """The ``transformers`` tokenizer in a local folder (never downloads); ``config``: the
    folder's ``transformers`` config, already read (None: ``AutoTokenizer`` reads it). A folder
    without its files is refused (ValueError naming the folder and the files expected), where
    ``AutoTokenizer`` would build one that knows its special tokens alone."""
    with _reading(path, "tokenizer") as tf:
        tokenizer = tf.AutoTokenizer.from_pretrained(str(path), config=config,
                                                     local_files_only=True)
    files = dict(type(tokenizer).vocab_files_names)
    complete = files.pop("tokenizer_file", None)
    if not (complete and (Path(path) / complete).is_file()) \
            and not all((Path(path) / name).is_file() for name in files.values()):
        expected = " or ".join(filter(None, [complete, " + ".join(files.values())]))
        raise ValueError(f"{str(path)!r} has no tokenizer files: {type(tokenizer).__name__} "
                         f"reads {expected}; save the tokenizer into the folder "
                         "(tokenizer.save_pretrained(folder)).")
    return tokenizer


@contextmanager
def _reading(path, what: str):
    """:func:`quiet_loading`, where a file that cannot be read becomes a ValueError naming
    the folder."""
    with quiet_loading() as tf:
        try:
            yield tf
        except (OSError, RuntimeError, ValueError, pickle.UnpicklingError) as exc:
            reason = str(exc).split(". ")[0].splitlines()[0]
            raise ValueError(f"cannot read the {what} in {str(path)!r} ({type(exc).__name__}: "
                             f"{reason}); only safetensors files and PyTorch files of plain "
                             "tensors are read, a file's code is never run.") from exc


def check_loaded(model, info: dict, path, *, trained_head: bool = False) -> None:
    """Refuse weights that are not the encoder's, before any training: an encoder tensor
    missing from the weights file of ``path`` (``transformers`` would start it at random),
    unexpected there or of another shape, or NaN / infinite values (ValueError naming the
    tensors and the file). A missing pooler or task head starts at random, with one warning
    (a head of another shape, as asked for, without), unless ``trained_head``: then a missing
    head weight raises :class:`UntrainedHeadError` naming them; a checkpoint's
    unused pooler or head, and the position ids older files hold, are ignored. ``info``: the
    ``output_loading_info`` of ``from_pretrained``."""
    folder = Path(path)
    source = next((folder / name for name in WEIGHTS_FILES if (folder / name).is_file()), folder)
    base, prefix = model.base_model, model.base_model_prefix
    parts = {name.split(".")[0] for name in base.state_dict()} - {"pooler"}
    buffers = {name for name, _ in base.named_buffers()}

    def in_encoder(key: str) -> bool:
        key = key.removeprefix(f"{prefix}.")
        return key.split(".")[0] in parts and key not in buffers

    mismatched = {key for key, *_ in info["mismatched_keys"]}
    restarted = set(info["missing_keys"]) | mismatched
    wrong = {kind: [key for key in keys if in_encoder(key)] for kind, keys in (
        ("missing", info["missing_keys"]), ("unexpected", info["unexpected_keys"]),
        ("mis-shaped", mismatched))}
    problems = [f"{kind} encoder tensors: {listed_keys(keys)}" for kind, keys in wrong.items()
                if keys]
    if problems:
        raise ValueError(f"{source} does not hold the encoder its config.json describes: "
                         + "; ".join(problems))
    if trained_head and restarted:
        raise UntrainedHeadError(
            f"{source} holds no trained classification head: {listed_keys(restarted)} "
            f"{'is' if len(restarted) == 1 else 'are'} missing, so transformers would "
            "initialise them at random (a base model, or another task's head)")
    check_finite({k: t for k, t in model.state_dict().items() if k not in restarted}, source)
    if info["missing_keys"]:
        warnings.warn(f"{source} holds no pooler or task head weights for "
                      f"{listed_keys(info['missing_keys'])}: initialised at random.",
                      UserWarning, stacklevel=3)


def _pooler_option(config: dict, pooler: bool) -> dict:
    """``add_pooling_layer`` for the families whose base model takes it."""
    return {} if not FAMILIES[encoder_family(config)].pooler else {"add_pooling_layer": pooler}


class BertEncoder(nn.Module):
    """``forward(embedded (B, T, E), mask (B, T) bool) -> hidden (B, T, H)``.

    Build with :meth:`from_pretrained` (a local model directory, ``local_files_only=True``),
    :meth:`from_config` (random initialisation, e.g. a tiny config in tests) or from a base
    model of a supported family (:func:`load_encoder`). ``word_embeddings`` holds the
    ``(vocab, E)`` word-piece table to pass to ``AttentionTextModule(embeddings=...)``; the
    copy inside the model is dropped. The model is kept as ``bert`` whatever its family.
    """

    def __init__(self, bert):
        super().__init__()
        if not hasattr(bert, "embeddings") or not hasattr(bert.embeddings, "word_embeddings") \
                or not hasattr(bert, "config"):
            raise TypeError("expected a transformers base model of the BERT lineage, got "
                            f"{type(bert).__name__}")
        config = bert.config.to_dict()
        self.family = encoder_family(config)
        options = encoder_options(config)
        table = bert.embeddings.word_embeddings
        self.word_embeddings = None if table is None else table.weight.detach().clone()
        bert.embeddings.word_embeddings = None  # the attention module owns the table
        if getattr(bert, "pooler", None) is not None:
            bert.pooler = None  # unused: the classifiers pool the hidden states themselves
        for module in bert.modules():  # e.g. position_ids: saved with the weights, so that a
            for name, buffer in list(module.named_buffers(recurse=False)):  # structure-only
                module.register_buffer(name, buffer, persistent=True)  # build loads them
        self.bert = bert
        self.output_size = options["hidden_size"]
        self.pad_token_id = options["pad_token_id"]

    @classmethod
    def from_pretrained(cls, path) -> BertEncoder:
        """Load pretrained weights from a local directory (never downloads)."""
        return cls(load_encoder(path))

    @classmethod
    def from_config(cls, config) -> BertEncoder:
        """Randomly initialised encoder of a supported family from a ``transformers``
        config or the dict of its fields (no ``model_type``: BERT; missing fields take the
        family's ``transformers`` defaults)."""
        tf = _transformers()
        if isinstance(config, dict):
            encoder_family(config)  # refuses other model types, naming the supported ones
            fields = {k: v for k, v in config.items() if k != "model_type"}
            config = tf.AutoConfig.for_model(config.get("model_type", "bert"), **fields)
        return cls(tf.AutoModel.from_config(config,
                                            **_pooler_option(config.to_dict(), False)))

    @property
    def vocab_size(self) -> int:
        return int(self.bert.config.vocab_size)

    def forward(self, embedded: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = self.bert(inputs_embeds=embedded, attention_mask=mask.long())
        return out.last_hidden_state

    def final_state(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The ``[CLS]`` state (position 0), ``(B, H)``."""
        return hidden[:, 0]

    def attention_probabilities(self, states, mask: torch.Tensor) -> list:
        """The attention probabilities (B, heads, T, T) of every layer (see
        :func:`attention_probabilities`)."""
        return attention_probabilities(self.bert, states, mask)


def attention_probabilities(base_model, states, mask: torch.Tensor) -> list:
    """The attention probabilities (B, heads, T, T) of every layer of a ``transformers`` base
    model of a supported family, recomputed from each layer's input ``states[i]`` (B, T, H)
    (the fused attention of the forward pass does not return them) and the mask (B, T) of
    real tokens."""
    family = FAMILIES[encoder_family(base_model.config.to_dict())]
    options = encoder_options(base_model.config.to_dict())
    head_size = options["hidden_size"] // options["num_heads"]
    layers = base_model.get_submodule(family.layers.format("").rstrip("."))
    query_name = family.layer_keys["attention.query.weight"].removesuffix(".weight")
    key_name = family.layer_keys["attention.key.weight"].removesuffix(".weight")
    bias = torch.zeros(mask.shape, dtype=states[0].dtype, device=mask.device)
    bias = bias.masked_fill_(~mask, torch.finfo(bias.dtype).min)[:, None, None]
    probabilities = []
    # the hidden states are the embeddings' output and then every layer's: one more than the
    # layers, the last one no layer's input
    for layer, hidden in zip(layers, states[:len(layers)], strict=True):
        heads = (*hidden.shape[:-1], -1, head_size)
        query = layer.get_submodule(query_name)(hidden).view(heads).transpose(1, 2)
        key = layer.get_submodule(key_name)(hidden).view(heads).transpose(1, 2)
        scores = query @ key.transpose(-1, -2) / math.sqrt(head_size)
        probabilities.append((scores + bias).softmax(-1))
    return probabilities
