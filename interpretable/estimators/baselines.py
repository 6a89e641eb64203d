"""Plain baseline estimators."""

from __future__ import annotations

from ..nn.embedding_bag import MeanEmbeddingClassifier
from .text_base import TextClassifierBase
from .params import stores_params

__all__ = ["EmbeddingBagClassifier"]


class EmbeddingBagClassifier(TextClassifierBase):
    """Attention-free text classifier: a linear layer on the mean token embedding.

    Its inherent explanation (``explain(method="inherent")``, the default) is exact: token t
    contributes ``W_c e(x_t) / T`` to the logit of class c, and the contributions plus the
    bias ``b_c`` reproduce the logit.

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
    {class_weight}
    {training_parameters}
    """

    @stores_params
    def __init__(self, embeddings=None, embed_dim=50, freeze_embeddings=False, text_encoder=None,
                 *, lr=1e-2, max_epochs=10, batch_size=64, optimizer="adam", weight_decay=0.0,
                 device="auto", random_state=None, verbose=0, class_weight=None,
                 callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        """Store the parameters unchanged (see the class docstring)."""

    def _build_module(self, embeddings=None):
        return MeanEmbeddingClassifier(
            vocab_size=len(self.text_encoder_.index_to_token_),
            num_classes=len(self.classes_),
            embed_dim=self.embed_dim_,
            embeddings=embeddings,
            freeze_embeddings=self.freeze_embeddings,
        )
