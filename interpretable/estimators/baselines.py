"""Plain baseline estimators."""

from __future__ import annotations

import numpy as np
import torch

from ..attribution.text import GRADIENT_METHODS
from ..nn.embedding_bag import MeanEmbeddingClassifier
from .base import Batch
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
    text_encoder : TextEncoder or None
        Tokenisation and vocabulary (cloned and fitted in ``fit``; None: ``TextEncoder()``).
        Grid-searchable as ``text_encoder__min_freq`` etc.
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose
        See :class:`~interpretable.estimators.base.NeuralEstimator`.
    """

    explain_methods = ("inherent", *GRADIENT_METHODS)

    def __init__(self, embeddings=None, embed_dim=50, freeze_embeddings=False, text_encoder=None,
                 *, lr=1e-2, max_epochs=10, batch_size=64, optimizer="adam", weight_decay=0.0,
                 device="auto", random_state=None, verbose=0, class_weight=None,
                 callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size, optimizer=optimizer,
                         weight_decay=weight_decay, device=device, random_state=random_state,
                         verbose=verbose, class_weight=class_weight,
                         callbacks=callbacks, validation_fraction=validation_fraction,
                         early_stopping=early_stopping, n_iter_no_change=n_iter_no_change,
                         warm_start=warm_start, precision=precision, accelerator=accelerator)
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.freeze_embeddings = freeze_embeddings
        self.text_encoder = text_encoder

    def _build_module(self, embeddings=None):
        return MeanEmbeddingClassifier(
            vocab_size=len(self.text_encoder_.index_to_token_),
            num_classes=len(self.classes_),
            embed_dim=self.embed_dim_,
            embeddings=embeddings,
            freeze_embeddings=self.freeze_embeddings,
        )

    def _explain_inherent(self, batch: Batch, target, *, batch_size):
        """Exact per-token contributions to the ``target`` logit; attributions plus ``bias``
        reproduce ``logit`` (see ``completeness_error``)."""
        n, T = batch.inputs["tokens"].shape
        contributions = np.zeros((n, T, len(self.classes_)))  # (n, T, C)
        with torch.no_grad():
            for rows, b in self.iter_batches(batch.inputs, batch_size):
                c = self.module_.token_contributions(b["tokens"], b["lengths"])
                contributions[rows, : c.shape[1]] = c.cpu().numpy()
        bias = self.module_.output.bias.detach().cpu().numpy().astype(np.float64)
        logits = self.logits(batch.inputs, batch_size=batch_size).numpy().astype(np.float64)
        idx = self.target_indices(target, logits)
        rows = np.arange(len(idx))
        return self._token_explanation(batch, contributions[rows, :, idx], idx, logits,
                                       "inherent", bias=bias[idx], logit=logits[rows, idx])

    def _explainer(self, method: str):
        if method == "inherent":
            return self._explain_inherent
        return super()._explainer(method)
