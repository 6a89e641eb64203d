"""Plain baseline estimators."""

from __future__ import annotations

from ...nn.embedding_bag import MeanEmbeddingClassifier
from ..core.params import stores_params
from .base import TextClassifierBase
from .explainers import MeanEmbeddingContributions

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
        Keep the initial word vectors fixed during training.
    text_encoder : TextEncoder or None
        Tokenisation and vocabulary (cloned and fitted in ``fit``; None: ``TextEncoder()``).
        Grid-searchable as ``text_encoder__min_freq`` etc.
    {class_weight}
    {training_parameters}

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    text_encoder_ : TextEncoder
        The fitted tokeniser and vocabulary.
    module_ : MeanEmbeddingClassifier
        The fitted network.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    AttentionTextClassifier : Attention over a recurrent encoder.
    BcosTextClassifier : B-cos BERT-family classifier, exact contributions.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
    >>> clf.predict(["good film"]).shape
    (1,)
    >>> explanation = clf.explain(["good film"])
    >>> explanation.units, bool(explanation.completeness_error.max() < 1e-5)
    ([['good', 'film']], True)
    """

    saved_as = "EmbeddingBagClassifier"

    #: the explanation methods it offers, its default first
    explainers = (MeanEmbeddingContributions(), *TextClassifierBase.explainers)

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
