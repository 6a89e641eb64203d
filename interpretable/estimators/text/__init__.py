"""Text classifiers over tokens: the shared base, the mean-embedding baseline, attention
classifiers (RNN / BiLSTM / BERT-like encoders) and the Diversity / Orthogonal LSTM, with the
token-level explanation methods (:mod:`.explainers`)."""
from interpretable.estimators.text.attention import AttentionClassifierBase, AttentionTextClassifier
from interpretable.estimators.text.base import TextClassifierBase, VocabularyClassifierBase
from interpretable.estimators.text.diversity_lstm import DiversityLSTMClassifier
from interpretable.estimators.text.embedding_bag import EmbeddingBagClassifier

__all__ = ["AttentionClassifierBase", "AttentionTextClassifier", "DiversityLSTMClassifier",
           "EmbeddingBagClassifier", "TextClassifierBase",
           "VocabularyClassifierBase"]
