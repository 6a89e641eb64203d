"""Conventional BERT-family sequence classifier, the comparison model of the B-cos one
(:mod:`interpretable.nn.bcos`): a pretrained encoder (``transformers`` ``BertModel``,
fused attention), mean (or ``[CLS]``) pooling, dropout and a linear layer, fine-tuned as a
whole. ``forward(tokens (B, T), lengths (B,), embedded=None) -> logits (B, C)``; ``embedded``
replaces the word-piece embeddings (gradient attributions, embedding perturbations)."""
from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.nn._bert_encoder import BertEncoder


class BertClassifier(nn.Module):
    """Build with :meth:`from_pretrained` (a local checkpoint folder) or :meth:`from_config`
    (randomly initialised structure: tests, or a saved model's weights loaded afterwards).

    Args:
        encoder: a :class:`~interpretable.nn._bert_encoder.BertEncoder` (its word-piece table
            moves into this module, the trainable ``word_embeddings``).
        n_classes: size of the output.
        pooling: ``"mean"`` (over real tokens, as sentence-transformers' MiniLM was trained)
            or ``"cls"`` (the ``[CLS]`` state).
        dropout: dropout on the pooled vector while training.
    """

    def __init__(self, encoder: BertEncoder, n_classes: int, *, pooling: str = "mean",
                 dropout: float = 0.1):
        super().__init__()
        if pooling not in ("mean", "cls"):
            raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
        table, encoder.word_embeddings = encoder.word_embeddings, None
        self.word_embeddings = nn.Embedding(*table.shape, padding_idx=encoder.pad_token_id)
        with torch.no_grad():
            self.word_embeddings.weight.copy_(table)
        self.encoder = encoder
        self.pooling = pooling
        self.dropout = float(dropout)
        self.classifier = nn.Linear(encoder.output_size, n_classes)

    @classmethod
    def from_pretrained(cls, path, n_classes: int, **options) -> BertClassifier:
        """The BERT model in a local folder (never downloads) with a new classifier."""
        return cls(BertEncoder.from_pretrained(path), n_classes, **options)

    @classmethod
    def from_bert(cls, bert, config, n_classes: int, **options) -> BertClassifier:
        """A ``transformers`` base model of a supported family (``config``: None, its own)
        with a new classifier; the model becomes this module's encoder."""
        if config is not None:
            raise ValueError("the encoder brings its own config")
        return cls(BertEncoder(bert), n_classes, **options)

    @classmethod
    def from_config(cls, config: dict, n_classes: int, **options) -> BertClassifier:
        """Randomly initialised, with the structure of a BERT config (dict of its fields)."""
        return cls(BertEncoder.from_config(dict(config)), n_classes, **options)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Word-piece embeddings: (B, T) ids -> (B, T, H)."""
        return self.word_embeddings(tokens)

    def _run(self, tokens, lengths, embedded, hidden_states: bool):
        mask = torch.arange(tokens.shape[1], device=tokens.device)[None] < lengths[:, None]
        words = self.embed(tokens) if embedded is None else embedded
        out = self.encoder.bert(inputs_embeds=words, attention_mask=mask.long(),
                                output_hidden_states=hidden_states)
        hidden = out.last_hidden_state
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask.to(hidden.dtype).unsqueeze(-1)
            pooled = (hidden * weights).sum(1) / weights.sum(1)
        logits = self.classifier(F.dropout(pooled, self.dropout, self.training))
        return logits, mask, out.hidden_states

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                embedded: torch.Tensor | None = None) -> torch.Tensor:
        return self._run(tokens, lengths, embedded, False)[0]

    def forward_with_attention(self, tokens: torch.Tensor, lengths: torch.Tensor,
                               embedded: torch.Tensor | None = None):
        """As :meth:`forward` -> (logits (B, C), [attention probabilities (B, heads, T, T)]
        per layer), the probabilities recomputed from each layer's input (the fused
        attention of the forward pass does not return them)."""
        logits, mask, states = self._run(tokens, lengths, embedded, True)
        return logits, self.encoder.attention_probabilities(states, mask)
