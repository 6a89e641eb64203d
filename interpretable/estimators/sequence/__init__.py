"""Sequence models over symbols: the shared bases (:class:`SequenceEstimator`, ISAN's exact
decomposition in :class:`ISANBase`), the language models and the sequence tagger."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.estimators.sequence._base import (
    ISANBase,
    SequenceEstimator,
)
from interpretable.estimators.sequence._language_model import (
    ISANLanguageModel,
    LSTMLanguageModel,
)
from interpretable.estimators.sequence._language_model_base import (
    split_words as split_words,
)
from interpretable.estimators.sequence._tagger import (
    ISANSequenceTagger,
)

__all__ = [
    "ISANBase", "ISANLanguageModel", "ISANSequenceTagger", "LSTMLanguageModel",
    "SequenceEstimator",
]
