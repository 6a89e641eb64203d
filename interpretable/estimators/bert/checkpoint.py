"""The checkpoint side of the BERT-family text classifiers
(:mod:`interpretable.estimators.bert.estimators`): the BERT config fields a fitted model keeps
(:data:`BERT_FIELDS`, checked by :func:`check_bert_config`) and :class:`BertCheckpoint`, their
hooks that read the checkpoint (folder and config), build the module from it, check the
tokeniser against the config and keep the config in the fitted state.
"""
from __future__ import annotations

import json
from pathlib import Path

import torch

__all__ = ["BERT_FIELDS", "BertCheckpoint", "check_bert_config"]

#: the BERT config fields a fitted model keeps (``config_``): what rebuilds its structure
BERT_FIELDS = {"vocab_size": int, "hidden_size": int, "num_hidden_layers": int,
               "num_attention_heads": int, "intermediate_size": int,
               "max_position_embeddings": int, "type_vocab_size": int,
               "layer_norm_eps": float, "pad_token_id": int, "hidden_dropout_prob": float,
               "attention_probs_dropout_prob": float, "hidden_act": str,
               "position_embedding_type": str}
_OPTIONAL = {"pad_token_id": 0, "hidden_act": "gelu", "position_embedding_type": "absolute"}


def check_bert_config(config) -> dict:
    """The fields of :data:`BERT_FIELDS` of a BERT config dict, type-checked (ValueError)."""
    if not isinstance(config, dict):
        raise ValueError(f"a BERT config must be a dict, got {type(config).__name__}.")
    fields = {**_OPTIONAL, **{k: v for k, v in config.items() if k in BERT_FIELDS}}
    missing = sorted(BERT_FIELDS.keys() - fields.keys())
    if missing:
        raise ValueError(f"the BERT config lacks {missing}.")
    for name, kind in BERT_FIELDS.items():
        value = fields[name]
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float
                                                     else kind):
            raise ValueError(f"BERT config field {name!r} must be {kind.__name__}, got "
                             f"{value!r}.")
        if kind is int and value < (0 if name == "pad_token_id" else 1):
            raise ValueError(f"BERT config field {name!r} must be positive, got {value}.")
    return fields


class BertCheckpoint:
    """The checkpoint and config hooks of the BERT-family text classifiers.

    The mixin of :class:`~interpretable.estimators.bert.estimators.BertTextClassifier`, placed
    before :class:`~interpretable.estimators.text.base.TextClassifierBase` in its bases: it
    reads the ``checkpoint`` parameter and the fitted ``config_``, and builds the
    estimator's ``_module_class`` with its ``_module_options()``.

    See Also
    --------
    check_bert_config : The config fields a fitted model keeps, type-checked.
    """

    # ------------------------------------------------------------------ module
    def _build_module(self) -> torch.nn.Module:
        """The structure, from the fitted attributes alone (saved weights are loaded into
        it)."""
        return self._module_class.from_config(self.config_, len(self.classes_),
                                              **self._module_options())

    def _initial_module(self) -> torch.nn.Module:
        """The module training starts from: the converted / pretrained checkpoint."""
        if isinstance(self.checkpoint, dict):
            return self._build_module()
        return self._module_class.from_pretrained(self._checkpoint_folder(),
                                                  len(self.classes_), **self._module_options())

    def _checkpoint_folder(self) -> Path:
        if self.checkpoint is not None:
            return Path(self.checkpoint)
        from ...datasets import load_minilm

        return load_minilm()

    def _checkpoint_config(self) -> dict:
        if isinstance(self.checkpoint, dict):
            return check_bert_config(self.checkpoint)
        path = self._checkpoint_folder() / "config.json"
        if not path.is_file():
            raise ValueError(f"checkpoint {str(self._checkpoint_folder())!r} is not a local "
                             "BERT model folder (no config.json).")
        return check_bert_config(json.loads(path.read_text()))

    def _check_vocabulary(self) -> None:
        pieces, vocab = len(self.text_encoder_.index_to_token_), self.config_["vocab_size"]
        if pieces != vocab:
            raise ValueError(f"the BERT config has vocab_size={vocab} but the tokeniser "
                             f"{pieces} word pieces.")
        if self.max_length > self.config_["max_position_embeddings"]:
            raise ValueError(f"max_length={self.max_length} exceeds the model's "
                             f"{self.config_['max_position_embeddings']} positions.")

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        state = {**super()._get_fitted_state(), "config": self.config_}
        del state["embed_dim"]  # the config's hidden_size: stored once
        return state

    def _set_fitted_state(self, state: dict) -> None:
        self.config_ = check_bert_config(state["config"])
        super()._set_fitted_state({**state, "embed_dim": self.config_["hidden_size"]})
        self._check_vocabulary()
