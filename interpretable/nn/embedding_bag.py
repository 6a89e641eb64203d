"""Mean-of-embeddings linear text classifier: an attention-free, exactly decomposable baseline."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["MeanEmbeddingClassifier"]


class MeanEmbeddingClassifier(nn.Module):
    """``logits = W · mean_t e(x_t) + b``.

    Linear in the token embeddings, so ``W e(x_t) / T`` is the exact contribution of token t to
    the logits and the contributions plus ``b`` sum to the logits.
    """

    def __init__(self, vocab_size: int, num_classes: int, embed_dim: int = 50, embeddings=None,
                 freeze_embeddings: bool = False, padding_idx: int = 0):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=padding_idx)
        if embeddings is not None:
            self.embedding.weight.data.copy_(torch.as_tensor(embeddings))
        self.embedding.weight.requires_grad_(not freeze_embeddings)
        self.output = nn.Linear(embed_dim, num_classes)

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, T)`` ids -> ``(B, T, E)`` embeddings."""
        return self.embedding(tokens)

    def token_contributions(self, tokens: torch.Tensor, lengths: torch.Tensor,
                            embedded: torch.Tensor | None = None) -> torch.Tensor:
        """Per-token logit contributions ``(B, T, C)``, zero on padding; ``embedded (B, T, E)``
        replaces ``embed(tokens)``."""
        if embedded is None:
            embedded = self.embed(tokens)
        mask = torch.arange(tokens.shape[1], device=tokens.device)[None, :] < lengths[:, None]
        per_token = embedded @ self.output.weight.T  # (B, T, C)
        return per_token * (mask / lengths.clamp(min=1)[:, None]).unsqueeze(-1)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                embedded: torch.Tensor | None = None) -> torch.Tensor:
        """tokens ``(B, T)`` int, lengths ``(B,)`` → logits ``(B, C)``."""
        return self.token_contributions(tokens, lengths, embedded).sum(dim=1) + self.output.bias
