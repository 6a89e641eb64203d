"""Mean-of-embeddings linear text classifier: an attention-free, exactly decomposable baseline."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class MeanEmbeddingClassifier(nn.Module):
    """``logits = W · mean_t e(x_t) + b``.

    Linear in the token embeddings, so ``W e(x_t) / T`` is the exact contribution of token t to
    the logits and the contributions plus ``b`` sum to the logits.
    """

    #: its forward is linear in the embeddings (masked means and matrix products only), so
    #: captum's DeepLift is exact on it (:mod:`interpretable.attribution`)
    deeplift_linear = True

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

    @staticmethod
    def _token_weights(tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """``1/T`` at the real positions of each row, 0 on padding: (B, T)."""
        real = torch.arange(tokens.shape[1], device=tokens.device)[None, :] < lengths[:, None]
        return real / lengths.clamp(min=1)[:, None]

    def token_contributions(self, tokens: torch.Tensor, lengths: torch.Tensor,
                            embedded: torch.Tensor | None = None) -> torch.Tensor:
        """Per-token logit contributions ``(B, T, C)``, zero on padding; ``embedded (B, T, E)``
        replaces ``embed(tokens)``."""
        if embedded is None:
            embedded = self.embed(tokens)
        per_token = embedded @ self.output.weight.T  # (B, T, C)
        return per_token * self._token_weights(tokens, lengths).unsqueeze(-1)

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                embedded: torch.Tensor | None = None) -> torch.Tensor:
        """tokens ``(B, T)`` int, lengths ``(B,)`` → logits ``(B, C)``. From the ids, the mean
        embedding comes from one ``embedding_bag`` (no (B, T, E) or (B, T, C) tensors)."""
        if embedded is not None:
            return self.token_contributions(tokens, lengths, embedded).sum(dim=1) \
                + self.output.bias
        weights = self._token_weights(tokens, lengths).to(self.embedding.weight.dtype)
        mean = F.embedding_bag(tokens, self.embedding.weight, mode="sum",
                               per_sample_weights=weights)
        return self.output(mean)
