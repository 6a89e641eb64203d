"""Text classifiers over word tokens: the base of every text classifier
(:class:`TextClassifierBase`), of those that learn their vocabulary
(:class:`VocabularyClassifierBase`) and of the attention classifiers
(:class:`AttentionClassifierBase`); the mean-embedding baseline, attention classifiers (RNN /
BiLSTM / BERT-like encoders) and the Diversity / Orthogonal LSTM."""

from interpretable.estimators.text._attention import (
    AttentionClassifierBase,
    AttentionTextClassifier,
)
from interpretable.estimators.text._base import (
    TextClassifierBase,
    VocabularyClassifierBase,
)
from interpretable.estimators.text._diversity_lstm import (
    DiversityLSTMClassifier,
)
from interpretable.estimators.text._embedding_bag import (
    EmbeddingBagClassifier,
)

__all__ = [
    "AttentionClassifierBase", "AttentionTextClassifier", "DiversityLSTMClassifier",
    "EmbeddingBagClassifier", "TextClassifierBase", "VocabularyClassifierBase",
]
