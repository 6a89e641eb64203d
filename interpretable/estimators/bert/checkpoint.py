"""The pretrained encoder behind the BERT-family text classifiers, read once per fit.

:func:`read_checkpoint` turns the estimators' ``checkpoint`` parameter (None: the bundled
MiniLM; a local ``transformers`` folder of BERT, RoBERTa / XLM-RoBERTa, DistilBERT or ELECTRA;
a config dict: a random encoder) into an :class:`EncoderCheckpoint`: the config fields the
fitted model keeps (:func:`encoder_config`, validated by
:func:`~interpretable.nn.encoder_families.encoder_options`) and the folder of its tokeniser
and weights; the estimators check the tokeniser against the config before the weights are
read (:meth:`EncoderCheckpoint.load_encoder`), once, into the network they build.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from ...nn.encoder_families import FAMILIES, encoder_family, encoder_options

__all__ = ["EncoderCheckpoint", "encoder_config", "read_checkpoint"]


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
