"""interpretable: inherently interpretable neural models with a scikit-learn interface.

Estimators are imported lazily (``from interpretable import BcosViTClassifier``), so importing
the package does not import torch-heavy modules that are not used.
"""

from importlib import import_module
from typing import TYPE_CHECKING

from interpretable._version import __version__ as __version__  # the installed version

if TYPE_CHECKING:  # type checkers and editors see the objects themselves
    from interpretable.estimators.seat import SEATClassifier
    from interpretable.estimators.sequence import (
        ISANLanguageModel,
        ISANSequenceTagger,
        LSTMLanguageModel,
    )
    from interpretable.estimators.text import (
        AttentionTextClassifier,
        DiversityLSTMClassifier,
        EmbeddingBagClassifier,
    )
    from interpretable.estimators.transformer import (
        BcosTextClassifier,
        BertTextClassifier,
        TransformersTextClassifier,
    )
    from interpretable.estimators.vision import (
        BcosResNetClassifier,
        BcosSimpleViTClassifier,
        BcosViTClassifier,
        ImageClassifier,
        ViTClassifier,
    )
    from interpretable.explanation import (
        ImageExplanation,
        SequenceExplanation,
        TokenExplanation,
        concat_explanations,
    )
    from interpretable.nn.bcos import bcosify

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

__all__ = [
    "AttentionTextClassifier", "BcosResNetClassifier", "BcosSimpleViTClassifier",
    "BcosTextClassifier", "BcosViTClassifier", "BertTextClassifier", "DiversityLSTMClassifier",
    "EmbeddingBagClassifier", "ISANLanguageModel", "ISANSequenceTagger", "ImageClassifier",
    "ImageExplanation", "LSTMLanguageModel", "SEATClassifier", "SequenceExplanation",
    "TokenExplanation", "TransformersTextClassifier", "ViTClassifier", "bcosify",
    "concat_explanations",
]


def __getattr__(name: str) -> object:
    if name in _LAZY:
        value = getattr(import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'interpretable' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
