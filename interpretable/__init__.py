"""interpretable: inherently interpretable neural models with a scikit-learn interface.

Estimators are imported lazily (``from interpretable import BcosViTClassifier``), so importing
the package does not import torch-heavy modules that are not used.
"""

from importlib import import_module

__version__ = "0.1.0"

# public name -> module that defines it
_LAZY = {
    "EmbeddingBagClassifier": "interpretable.estimators.text.embedding_bag",
    "BcosViTClassifier": "interpretable.estimators.vision.bcos_vit",
    "BcosSimpleViTClassifier": "interpretable.estimators.vision.bcos_simple_vit",
    "BcosResNetClassifier": "interpretable.estimators.vision.bcos_resnet",
    "ViTClassifier": "interpretable.estimators.vision.vit",
    "ImageClassifier": "interpretable.estimators.vision.library_model",
    "AttentionTextClassifier": "interpretable.estimators.text.attention",
    "DiversityLSTMClassifier": "interpretable.estimators.text.diversity_lstm",
    "SEATClassifier": "interpretable.estimators.seat.estimator",
    "BcosTextClassifier": "interpretable.estimators.bert.estimators",
    "BertTextClassifier": "interpretable.estimators.bert.estimators",
    "TransformersTextClassifier": "interpretable.estimators.bert.transformers_model",
    "ISANLanguageModel": "interpretable.estimators.sequence.language_model",
    "LSTMLanguageModel": "interpretable.estimators.sequence.language_model",
    "ISANSequenceTagger": "interpretable.estimators.sequence.tagger",
    "TokenExplanation": "interpretable.explanation",
    "ImageExplanation": "interpretable.explanation",
    "SequenceExplanation": "interpretable.explanation",
    "concat_explanations": "interpretable.explanation",
    "bcosify": "interpretable.nn.bcos.bcosify",
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
