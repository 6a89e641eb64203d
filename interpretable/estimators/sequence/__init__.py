"""Sequence models over symbols: the shared base and ISAN's exact decomposition
(:mod:`.base`, :mod:`.isan_maps`, :mod:`.alphabet`), the language models and the sequence
tagger, with the per-step explanation methods (:mod:`.explainers`)."""
from interpretable.estimators.sequence.base import ISANBase, SequenceEstimator
from interpretable.estimators.sequence.language_model import ISANLanguageModel, LSTMLanguageModel
from interpretable.estimators.sequence.tagger import ISANSequenceTagger

__all__ = ["ISANBase", "ISANLanguageModel", "ISANSequenceTagger", "LSTMLanguageModel",
           "SequenceEstimator"]
