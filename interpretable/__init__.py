"""interpretable: inherently interpretable neural models with a scikit-learn interface.

Estimators are imported lazily (``from interpretable import BcosViTClassifier``), so importing
the package does not import torch-heavy modules that are not used.
"""

from importlib import import_module

__version__ = "0.1.0"

# public name -> the package that exports it
_LAZY = {
    "EmbeddingBagClassifier": "interpretable.estimators.text",
    "BcosViTClassifier": "interpretable.estimators.vision",
    "BcosSimpleViTClassifier": "interpretable.estimators.vision",
    "BcosResNetClassifier": "interpretable.estimators.vision",
    "ViTClassifier": "interpretable.estimators.vision",
    "ImageClassifier": "interpretable.estimators.vision",
    "AttentionTextClassifier": "interpretable.estimators.text",
    "DiversityLSTMClassifier": "interpretable.estimators.text",
    "SEATClassifier": "interpretable.estimators.seat",
    "BcosTextClassifier": "interpretable.estimators.transformer",
    "BertTextClassifier": "interpretable.estimators.transformer",
    "TransformersTextClassifier": "interpretable.estimators.transformer",
    "ISANLanguageModel": "interpretable.estimators.sequence",
    "LSTMLanguageModel": "interpretable.estimators.sequence",
    "ISANSequenceTagger": "interpretable.estimators.sequence",
    "TokenExplanation": "interpretable.explanation",
    "ImageExplanation": "interpretable.explanation",
    "SequenceExplanation": "interpretable.explanation",
    "concat_explanations": "interpretable.explanation",
    "bcosify": "interpretable.nn.bcos",
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
