"""Text utilities: encoding (word tokens or MiniLM word pieces), POS tagging, perturbations.

``pos_tag`` and ``SynonymSubstitution`` are imported on first use (they need nltk / gensim).
"""

from importlib import import_module

from interpretable.text.encoding import PAD, UNK, TextEncoder
from interpretable.text.wordpiece import WordPieceEncoder

__all__ = ["PAD", "UNK", "TextEncoder", "WordPieceEncoder", "pos_tag", "SynonymSubstitution"]

_LAZY = {"pos_tag": ".pos", "SynonymSubstitution": ".perturbation"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
