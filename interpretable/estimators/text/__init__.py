"""Text classifiers over tokens: the shared base, the mean-embedding baseline, attention
classifiers (RNN / BiLSTM / BERT-like encoders) and the Diversity / Orthogonal LSTM, with the
token-level explanation methods (:mod:`.explainers`)."""
from .attention import AttentionClassifierBase, AttentionTextClassifier
from .base import TextClassifierBase, VocabularyClassifierBase
from .diversity_lstm import DiversityLSTMClassifier
from .embedding_bag import EmbeddingBagClassifier

__all__ = ["AttentionClassifierBase", "AttentionTextClassifier", "DiversityLSTMClassifier",
           "EmbeddingBagClassifier", "TextClassifierBase",
           "VocabularyClassifierBase"]
