"""Plain baseline estimators."""

from __future__ import annotations

import numpy as np
import torch

from ..nn.embedding_bag import MeanEmbeddingClassifier
from ..nn.losses import OutputCrossEntropy
from .text_base import TextClassifierBase

__all__ = ["EmbeddingBagClassifier"]


class EmbeddingBagClassifier(TextClassifierBase):
    """Attention-free text classifier: a linear layer on the mean token embedding.

    Its inherent explanation is exact: token t contributes ``W_c e(x_t) / T`` to the logit of
    class c, and the contributions plus the bias ``b_c`` reproduce the logit.

    Parameters
    ----------
    embeddings : "glove-50", gensim KeyedVectors or None
        Initial word vectors (None: learned from scratch with ``embed_dim``).
    embed_dim : int
        Embedding size when ``embeddings`` is None.
    freeze_embeddings : bool
    lowercase, min_freq, max_vocab, max_len
        Text encoding, see :class:`~interpretable.text.TextEncoder`.
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose
        See :class:`~interpretable.estimators.base.NeuralEstimator`.
    """

    def __init__(self, embeddings=None, embed_dim=50, freeze_embeddings=False, lowercase=True,
                 min_freq=1, max_vocab=None, max_len=None, *, lr=1e-2, max_epochs=10,
                 batch_size=64, optimizer="adam", weight_decay=0.0, device="auto",
                 random_state=None, verbose=0):
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size, optimizer=optimizer,
                         weight_decay=weight_decay, device=device, random_state=random_state,
                         verbose=verbose)
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.freeze_embeddings = freeze_embeddings
        self.lowercase = lowercase
        self.min_freq = min_freq
        self.max_vocab = max_vocab
        self.max_len = max_len

    def _build_module(self):
        return MeanEmbeddingClassifier(
            vocab_size=len(self.encoder_.index_to_token_),
            num_classes=self.n_classes_,
            embed_dim=self.embed_dim_,
            embeddings=self.embedding_init_,
            freeze_embeddings=self.freeze_embeddings,
        )

    def fit(self, X, y):
        inputs, targets, seed = self._prepare_fit(X, y)
        self._fit_net(self._build_module, OutputCrossEntropy(), inputs, targets, seed=seed)
        return self

    def explain(self, X, target=None, method="inherent"):
        """Exact per-token contributions to the logit of ``target`` (default: predicted class).

        Returns a :class:`~interpretable.explanation.TokenExplanation` whose attributions plus
        ``bias`` reproduce ``logit`` (see ``completeness_error``).
        """
        self._check_fitted()
        self._check_method(method, {"inherent"})
        inputs, tokens = self._encode_with_tokens(X)
        with torch.no_grad():
            contributions = np.concatenate([
                self.module_.token_contributions(**batch).cpu().numpy()
                for _, batch in self._batches(inputs)
            ])  # (n, T, C)
        bias = self.module_.output.bias.detach().cpu().numpy().astype(np.float64)
        logits = contributions.sum(axis=1) + bias
        idx = self._target_indices(target, logits)
        rows = np.arange(len(idx))
        return self._token_explanation(
            tokens, contributions[rows, :, idx], idx, logits, "inherent", bias=bias[idx],
            explained_logit=self.decision_function(X)[rows, idx].astype(np.float64),
        )
