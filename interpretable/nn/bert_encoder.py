"""BERT / MiniLM encoder plug-in for :class:`~interpretable.nn.attention.AttentionTextModule`.

Needs the ``bert`` extra (``transformers``). The word-piece embedding table moves into the
attention module (its ``embed`` step, so embedding perturbations and gradient attributions
work as for the recurrent encoders); this module adds BERT's position / segment embeddings,
LayerNorm and transformer layers::

    hidden = BERT(inputs_embeds=embedded, attention_mask=mask).last_hidden_state   (B, T, H)
"""

from __future__ import annotations

from contextlib import contextmanager
from pathlib import Path

import torch
from torch import nn

__all__ = ["BertEncoder", "quiet_loading"]


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


class BertEncoder(nn.Module):
    """``forward(embedded (B, T, E), mask (B, T) bool) -> hidden (B, T, H)``.

    Build with :meth:`from_pretrained` (a local model directory, ``local_files_only=True``) or
    :meth:`from_config` (random initialisation, e.g. a tiny ``BertConfig`` in tests).
    ``word_embeddings`` holds the ``(vocab, E)`` word-piece table to pass to
    ``AttentionTextModule(embeddings=...)``; the copy inside BERT is dropped.
    """

    def __init__(self, bert):
        super().__init__()
        if not hasattr(bert, "embeddings") or not hasattr(bert.embeddings, "word_embeddings"):
            raise TypeError(f"expected a transformers BertModel, got {type(bert).__name__}")
        table = bert.embeddings.word_embeddings
        self.word_embeddings = None if table is None else table.weight.detach().clone()
        bert.embeddings.word_embeddings = None  # the attention module owns the table
        for module in bert.modules():  # e.g. position_ids: saved with the weights, so that a
            for name, buffer in list(module.named_buffers(recurse=False)):  # structure-only
                module.register_buffer(name, buffer, persistent=True)  # build loads them
        self.bert = bert
        self.output_size = int(bert.config.hidden_size)
        self.pad_token_id = int(bert.config.pad_token_id or 0)

    @classmethod
    def from_pretrained(cls, path) -> "BertEncoder":
        """Load pretrained weights from a local directory (never downloads)."""
        path = Path(path)
        if not (path / "config.json").is_file():
            raise FileNotFoundError(f"{path} is not a transformers model directory")
        with quiet_loading() as tf:
            model = tf.BertModel.from_pretrained(
                str(path), local_files_only=True, add_pooling_layer=False
            )
        return cls(model)

    @classmethod
    def from_config(cls, config) -> "BertEncoder":
        """Randomly initialised BERT from a ``BertConfig`` or a dict of its fields."""
        tf = _transformers()
        if isinstance(config, dict):
            config = tf.BertConfig(**config)
        return cls(tf.BertModel(config, add_pooling_layer=False))

    @property
    def vocab_size(self) -> int:
        return int(self.bert.config.vocab_size)

    def forward(self, embedded: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        out = self.bert(inputs_embeds=embedded, attention_mask=mask.long())
        return out.last_hidden_state

    def final_state(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """The ``[CLS]`` state (position 0), ``(B, H)``."""
        return hidden[:, 0]
