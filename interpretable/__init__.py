"""interpretable: inherently interpretable neural models with a scikit-learn interface.

Estimators are imported lazily (``from interpretable import BcosViTClassifier``), so importing
the package does not import torch-heavy modules that are not used.
"""

from importlib import import_module

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "EmbeddingBagClassifier": "interpretable.estimators.baselines",
    "BcosViTClassifier": "interpretable.estimators.vision",
    "ViTClassifier": "interpretable.estimators.vision",
    "AttentionTextClassifier": "interpretable.estimators.attention_text",
    "DiversityLSTMClassifier": "interpretable.estimators.diversity_lstm",
    "SEATClassifier": "interpretable.estimators.seat",
    "BcosTextClassifier": "interpretable.estimators.bcos_text",
    "BertTextClassifier": "interpretable.estimators.bcos_text",
    "ISANLanguageModel": "interpretable.estimators.language_model",
    "LSTMLanguageModel": "interpretable.estimators.language_model",
    "ISANSequenceTagger": "interpretable.estimators.tagger",
    "TokenExplanation": "interpretable.explanation",
    "ImageExplanation": "interpretable.explanation",
    "SequenceExplanation": "interpretable.explanation",
    "concat_explanations": "interpretable.explanation",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'interpretable' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
