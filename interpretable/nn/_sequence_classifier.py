"""A ``transformers`` sequence classifier of the BERT lineage as it was fine-tuned: its encoder
and its own classification head (BERT's pooler and linear layer, RoBERTa's and ELECTRA's dense
head on the first token, DistilBERT's pre-classifier), unchanged, behind the interface of the
package's text networks::

    forward(tokens (B, T), lengths (B,), embedded=None) -> logits (B, C)

``embedded`` (B, T, E) replaces the word-piece embeddings (gradient attributions, embedding
perturbations); the logits are those of ``AutoModelForSequenceClassification`` on the same
word pieces. Needs the ``bert`` extra (``transformers``).
"""
from __future__ import annotations

import torch
from torch import nn

from interpretable.nn._bert_encoder import (
    attention_probabilities,
    load_sequence_classifier,
    quiet_loading,
)
from interpretable.nn._encoder_families import encoder_family


def check_single_label(config) -> None:
    """Refuse a ``transformers`` config that is not a single-label classifier of two or more
    classes (ValueError): a multi-label head scores each class with its own sigmoid, which a
    softmax over the classes would silently misread, and a regression head has no classes."""
    problem = getattr(config, "problem_type", None)
    if problem == "multi_label_classification":
        raise ValueError(f"the checkpoint is a multi-label classifier (problem_type="
                         f"'multi_label_classification', {config.num_labels} labels): each "
                         "label has its own sigmoid, while these estimators predict one class "
                         "per text (a softmax); only single-label classifiers are supported.")
    if problem == "regression" or config.num_labels < 2:
        raise ValueError(f"the checkpoint is a regression model (num_labels="
                         f"{config.num_labels}); only single-label classifiers of two or more "
                         "classes are supported.")


class PretrainedSequenceClassifier(nn.Module):
    """Build with :meth:`from_pretrained` (a local folder) or :meth:`from_config` (the
    structure alone, for a saved model's weights).

    Args:
        model: a ``transformers`` ``...ForSequenceClassification`` of a supported family
            (:mod:`interpretable.nn`), single-label.
    """

    #: the position the head reads (every family's head reads the first token's state)
    pooling = "cls"

    def __init__(self, model):
        super().__init__()
        encoder_family(model.config.to_dict())  # refuses other families, naming them
        check_single_label(model.config)
        for module in model.modules():  # e.g. position_ids: saved with the weights, so that a
            for name, buffer in list(module.named_buffers(recurse=False)):  # structure-only
                module.register_buffer(name, buffer, persistent=True)  # build loads them
        self.model = model

    @classmethod
    def from_pretrained(cls, folder, *, config=None, **options) -> PretrainedSequenceClassifier:
        """The fine-tuned classifier in a local folder (never downloads, never runs code from
        a file); ``config``: its ``transformers`` config, already read (None: read here);
        ``options``: of :func:`~interpretable.nn._bert_encoder.load_sequence_classifier`, e.g.
        ``num_labels`` with ``ignore_mismatched_sizes=True`` (a new output layer)."""
        return cls(load_sequence_classifier(folder, config=config, tokenizer=False, **options))

    @classmethod
    def from_config(cls, config: dict, n_classes: int) -> PretrainedSequenceClassifier:
        """Randomly initialised, with the structure of a config dict (its ``model_type`` and
        fields) and ``n_classes`` outputs."""
        with quiet_loading() as tf:
            fields = {k: v for k, v in config.items() if k != "model_type"}
            structure = tf.AutoConfig.for_model(config.get("model_type", "bert"),
                                                **{**fields, "num_labels": n_classes})
            return cls(tf.AutoModelForSequenceClassification.from_config(structure))

    @property
    def output_layer(self) -> nn.Linear:
        """The last linear layer of the head, one row per class."""
        layers = [m for m in self.model.classifier.modules() if isinstance(m, nn.Linear)]
        return layers[-1]

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Word-piece embeddings: (B, T) ids -> (B, T, E)."""
        return self.model.base_model.embeddings.word_embeddings(tokens)

    def _run(self, tokens, lengths, embedded, hidden_states: bool):
        mask = torch.arange(tokens.shape[1], device=tokens.device)[None] < lengths[:, None]
        words = self.embed(tokens) if embedded is None else embedded
        out = self.model(inputs_embeds=words, attention_mask=mask.long(),
                         output_hidden_states=hidden_states)
        return out.logits, mask, out.hidden_states

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                embedded: torch.Tensor | None = None) -> torch.Tensor:
        return self._run(tokens, lengths, embedded, False)[0]

    def forward_with_attention(self, tokens: torch.Tensor, lengths: torch.Tensor,
                               embedded: torch.Tensor | None = None):
        """As :meth:`forward` -> (logits (B, C), [attention probabilities (B, heads, T, T)]
        per layer)."""
        logits, mask, states = self._run(tokens, lengths, embedded, True)
        return logits, attention_probabilities(self.model.base_model, states, mask)
