"""Plain baseline estimators."""

from __future__ import annotations

from ..nn.embedding_bag import MeanEmbeddingClassifier
from .text_base import TextClassifierBase

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
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose,
    callbacks, validation_fraction, early_stopping, n_iter_no_change, warm_start, precision,
    accelerator :
        Training parameters, see :class:`~interpretable.estimators.base.NeuralEstimator`.
    class_weight : None, "balanced" or dict
        See :class:`~interpretable.estimators.classifier.NeuralClassifier`.
    """

    def __init__(self, embeddings=None, embed_dim=50, freeze_embeddings=False, text_encoder=None,
                 *, lr=1e-2, max_epochs=10, batch_size=64, optimizer="adam", weight_decay=0.0,
                 device="auto", random_state=None, verbose=0, class_weight=None,
                 callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.freeze_embeddings = freeze_embeddings
        self.text_encoder = text_encoder
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.class_weight = class_weight
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.accelerator = accelerator

    def _build_module(self, embeddings=None):
        return MeanEmbeddingClassifier(
            vocab_size=len(self.text_encoder_.index_to_token_),
            num_classes=len(self.classes_),
            embed_dim=self.embed_dim_,
            embeddings=embeddings,
            freeze_embeddings=self.freeze_embeddings,
        )
