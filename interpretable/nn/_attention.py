"""Attention text classifier backbone: embedding -> encoder -> additive attention -> decoder.

The model of Jain & Wallace (2019) / Mohankumar et al. (2020, sec. 2.1), reused by SEAT:

    h_t = Encoder(e(w_t))                                  (B, T, H)
    α̃_t = vᵀ tanh(W1 h_t + W2 q + b)                       q: query's final state (pairs only)
    α = softmax(α̃) over real tokens (exactly 0 on padding)
    c = Σ_t α_t h_t
    logits = W_o c                                         (single text)
    logits = W_o tanh(W_c c + W_q q)                       (text, query) pairs

Everything is batched; ``forward`` takes overrides for the attention weights (SEAT, permutation
and erasure analyses) and for the embeddings (gradient attributions, embedding perturbation).
"""
from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from interpretable.nn._recurrent import RECURRENT_KINDS, RecurrentEncoder

#: conicity forms: mean ``|cos|`` (the Diversity LSTM authors' code) or mean signed ``cos``
CONICITY_KINDS = ("absolute", "signed")


def check_conicity_kind(kind) -> bool:
    """Validate a conicity ``kind`` (one of :data:`CONICITY_KINDS`); True for ``"absolute"``."""
    if kind not in CONICITY_KINDS:
        raise ValueError(f"kind must be one of {list(CONICITY_KINDS)}, got {kind!r}")
    return kind == "absolute"


class AttentionOutput(NamedTuple):
    """``logits (B, C)``, ``attention (B, T)``, ``hidden (B, T, H)``, ``mask (B, T)`` bool and,
    for pair models, ``query_state (B, H)`` (what :meth:`AttentionTextModule.decode` needs to
    re-decode the same hidden states under other attention weights)."""
    logits: torch.Tensor
    attention: torch.Tensor
    hidden: torch.Tensor
    mask: torch.Tensor
    query_state: torch.Tensor | None = None


def lengths_to_mask(lengths: torch.Tensor, max_len: int) -> torch.Tensor:
    """``(B,)`` lengths -> ``(B, max_len)`` bool mask, True on the first ``length`` positions."""
    return torch.arange(max_len, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def conicity(hidden: torch.Tensor, mask: torch.Tensor | None = None, eps: float = 1e-8,
             absolute: bool = False) -> torch.Tensor:
    """Conicity of each sample's hidden states (mean cosine to their mean), differentiable.

    Args:
        hidden: ``(B, T, H)`` (or ``(T, H)`` for one set of vectors).
        mask: ``(B, T)`` bool, True on real positions (default: all real).
        absolute: average ``|cos|`` instead of ``cos`` (the Diversity LSTM authors' code).

    Returns:
        ``(B,)`` conicity in [-1, 1] ([0, 1] when ``absolute``; a 0-dim tensor for 2-D input);
        0 for an empty row.
    """
    squeeze = hidden.dim() == 2
    if squeeze:
        hidden = hidden.unsqueeze(0)
        mask = None if mask is None else mask.reshape(1, -1)
    if mask is None:
        mask = torch.ones(hidden.shape[:2], dtype=torch.bool, device=hidden.device)
    m = mask.to(hidden.dtype)
    n = m.sum(1).clamp_min(1.0)
    hidden = hidden * m.unsqueeze(-1)
    mean = hidden.sum(1) / n.unsqueeze(-1)                                    # (B, H)
    dots = (hidden * mean.unsqueeze(1)).sum(-1)                               # (B, T)
    norms = hidden.norm(dim=-1) * mean.norm(dim=-1, keepdim=True)             # (B, T)
    atm = dots / norms.clamp_min(eps)
    if absolute:
        atm = atm.abs()
    out = (atm * m).sum(1) / n
    return out[0] if squeeze else out


class AdditiveAttention(nn.Module):
    """Additive (Bahdanau) attention ``α = softmax_t(vᵀ tanh(W1 h_t + W2 q + b))``.

    ``forward(hidden (B, T, H), mask (B, T), query (B, Q) | None) -> (B, T)``; rows sum to 1 over
    real tokens and are exactly 0 on padding.
    """

    def __init__(self, hidden_size: int, attention_size: int, query_size: int | None = None):
        super().__init__()
        self.hidden_proj = nn.Linear(hidden_size, attention_size)
        self.query_proj = (None if query_size is None
                           else nn.Linear(query_size, attention_size, bias=False))
        self.v = nn.Linear(attention_size, 1, bias=False)

    def scores(self, hidden, query=None):
        """Unnormalised scores ``(B, T)``."""
        proj = self.hidden_proj(hidden)
        if self.query_proj is not None:
            if query is None:
                raise ValueError("this attention needs a query state (pair=True) but got None")
            proj = proj + self.query_proj(query).unsqueeze(1)
        return self.v(torch.tanh(proj)).squeeze(-1)

    def forward(self, hidden, mask, query=None):
        scores = self.scores(hidden, query)
        scores = scores.masked_fill(~mask, torch.finfo(scores.dtype).min)
        return torch.softmax(scores, dim=-1) * mask.to(scores.dtype)


class AttentionTextModule(nn.Module):
    """Embedding + encoder + additive attention + linear decoder (optionally with a query).

    Args:
        vocab_size, num_classes: sizes of the vocabulary (with pad/unk) and the output.
        embed_dim: embedding size E (taken from ``embeddings`` when given).
        hidden_size: encoder hidden size (per direction for ``"bilstm"``).
        encoder: ``"rnn" | "lstm" | "bilstm" | "orthogonal"``, or an ``nn.Module`` with
            ``forward(embedded (B, T, E), mask (B, T)) -> (B, T, H)`` and ``output_size = H``
            (shared by text and query when ``pair=True``; may define ``final_state(hidden, mask)``).
        embeddings: optional ``(vocab_size, E)`` float tensor to initialise the embedding.
        freeze_embeddings: keep the embedding fixed.
        pair: inputs are (text, query) pairs; the query's final state enters attention and decoder.
        dropout: dropout on the encoder input and on the context vector.
        padding_idx: id of the padding token.
        attention_size: size of the attention layer (default: the encoder output size).
    """

    def __init__(self, vocab_size: int, num_classes: int, embed_dim: int = 50,
                 hidden_size: int = 128,
                 encoder: str | nn.Module = "lstm", embeddings: torch.Tensor | None = None,
                 freeze_embeddings: bool = False, pair: bool = False, dropout: float = 0.0,
                 padding_idx: int = 0, attention_size: int | None = None):
        super().__init__()
        if embeddings is not None:
            embeddings = torch.as_tensor(embeddings, dtype=torch.float32)
            if embeddings.dim() != 2 or embeddings.shape[0] != vocab_size:
                raise ValueError(f"embeddings must have shape ({vocab_size}, E), "
                                 f"got {tuple(embeddings.shape)}")
            embed_dim = embeddings.shape[1]
        self.pair = pair
        self.padding_idx = padding_idx
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        if embeddings is not None:
            with torch.no_grad():
                self.embedding.weight.copy_(embeddings)
        self.embedding.weight.requires_grad_(not freeze_embeddings)
        self.encoder = self._make_encoder(encoder, embed_dim, hidden_size)
        H = self.encoder.output_size
        self.query_encoder = None
        if pair:
            self.query_encoder = (self._make_encoder(encoder, embed_dim, hidden_size)
                                  if isinstance(encoder, str) else self.encoder)
        A = attention_size or H
        self.attention = AdditiveAttention(H, A, H if pair else None)
        self.dropout = nn.Dropout(dropout)
        if pair:
            self.combine_context = nn.Linear(H, H)
            self.combine_query = nn.Linear(H, H, bias=False)
        self.output = nn.Linear(H, num_classes)

    @staticmethod
    def _make_encoder(encoder, embed_dim, hidden_size):
        if isinstance(encoder, str):
            return RecurrentEncoder(encoder, embed_dim, hidden_size)
        if isinstance(encoder, nn.Module):
            if not isinstance(getattr(encoder, "output_size", None), int):
                raise TypeError("a custom encoder module needs an int attribute `output_size`")
            return encoder
        raise TypeError(f"encoder must be one of {RECURRENT_KINDS} or an nn.Module, "
                        f"got {type(encoder).__name__}")

    # -- steps --------------------------------------------------------------------------------
    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids -> ``(B, T, E)`` embeddings."""
        return self.embedding(tokens)

    def hidden_states(self, embedded: torch.Tensor, mask: torch.Tensor,
                      encoder: nn.Module | None = None) -> torch.Tensor:
        """``(B, T, E)``, ``(B, T)`` -> hidden ``(B, T, H)``, zero on padding."""
        encoder = self.encoder if encoder is None else encoder
        hidden = encoder(self.dropout(embedded), mask)
        return hidden * mask.unsqueeze(-1).to(hidden.dtype)

    def final_state(self, hidden: torch.Tensor, mask: torch.Tensor,
                    encoder: nn.Module | None = None) -> torch.Tensor:
        """``(B, H)`` summary of a sequence (last real hidden state unless the encoder says)."""
        encoder = self.encoder if encoder is None else encoder
        if hasattr(encoder, "final_state"):
            return encoder.final_state(hidden, mask)
        last = (mask.sum(1) - 1).clamp_min(0)
        return hidden[torch.arange(hidden.shape[0], device=hidden.device), last]

    def query_state(self, query: torch.Tensor, query_lengths: torch.Tensor) -> torch.Tensor:
        """Query ids ``(B, Tq)`` and lengths ``(B,)`` -> final query state ``(B, H)``."""
        qmask = lengths_to_mask(query_lengths, query.shape[1])
        qhidden = self.hidden_states(self.embed(query), qmask, self.query_encoder)
        return self.final_state(qhidden, qmask, self.query_encoder)

    def attention_weights(self, hidden: torch.Tensor, mask: torch.Tensor,
                          query_state: torch.Tensor | None = None,
                          attention_layer: nn.Module | None = None) -> torch.Tensor:
        """Additive tanh attention ``(B, T)``: softmax over real tokens, exactly 0 on padding.
        ``attention_layer`` replaces ``self.attention`` for this call (e.g. a sibling layer)."""
        layer = self.attention if attention_layer is None else attention_layer
        return layer(hidden, mask, query_state)

    def decode(self, hidden: torch.Tensor, attention: torch.Tensor,
               query_state: torch.Tensor | None = None) -> torch.Tensor:
        """Context ``c = attention @ hidden`` -> logits.

        ``attention`` is ``(B, T)`` -> logits ``(B, C)``, or ``(B, K, T)`` (K alternative weightings
        of the same hidden states, e.g. permutations or erasures) -> logits ``(B, K, C)``.
        """
        batched = attention.dim() == 3
        att = attention if batched else attention.unsqueeze(1)
        context = self.dropout(torch.bmm(att.to(hidden.dtype), hidden))        # (B, K, H)
        if self.pair:
            if query_state is None:
                raise ValueError("pair=True model needs query_state to decode")
            context = torch.tanh(self.combine_context(context)
                                 + self.combine_query(query_state).unsqueeze(1))
        logits = self.output(context)
        return logits if batched else logits.squeeze(1)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                query: torch.Tensor | None = None,
                query_lengths: torch.Tensor | None = None,
                attention: torch.Tensor | None = None,
                embedded: torch.Tensor | None = None,
                attention_layer: nn.Module | None = None) -> AttentionOutput:
        """Run the model.

        Args:
            tokens: ``(B, T)`` ids (right padded); lengths: ``(B,)`` real lengths.
            query, query_lengths: ``(B, Tq)``, ``(B,)`` for pair models.
            attention: optional ``(B, T)`` weights replacing the computed attention.
            embedded: optional ``(B, T, E)`` replacing ``embed(tokens)``.
            attention_layer: optional attention module used instead of ``self.attention``
                (chosen per call; the module is not changed).
        """
        if self.pair and (query is None or query_lengths is None):
            raise ValueError("pair=True model needs `query` and `query_lengths`")
        mask = lengths_to_mask(lengths.to(tokens.device), tokens.shape[1])
        if embedded is None:
            embedded = self.embed(tokens)
        hidden = self.hidden_states(embedded, mask)
        query_state = (self.query_state(query, query_lengths.to(query.device)) if self.pair
                       else None)
        if attention is None:
            attention = self.attention_weights(hidden, mask, query_state, attention_layer)
        logits = self.decode(hidden, attention, query_state)
        return AttentionOutput(logits, attention, hidden, mask, query_state)
