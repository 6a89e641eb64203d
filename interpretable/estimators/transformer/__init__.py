"""Transformer text classifiers over ``transformers`` checkpoints: the fine-tuned BERT-family
ones, B-cos (exact word-piece contributions) and conventional, and any sequence classifier run as
it is (:class:`TransformersTextClassifier`)."""

from interpretable.estimators.transformer._estimators import (
    BcosTextClassifier,
    BertTextClassifier,
)
from interpretable.estimators.transformer._transformers_model import (
    TransformersTextClassifier,
)

__all__ = ["BcosTextClassifier", "BertTextClassifier", "TransformersTextClassifier"]
