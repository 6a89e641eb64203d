"""Text utilities: encoding (word tokens or MiniLM word pieces), POS tagging, perturbations."""

from .encoding import PAD, UNK, TextEncoder
from .perturbation import SynonymSubstitution
from .pos import pos_tag
from .wordpiece import WordPieceEncoder

__all__ = ["PAD", "UNK", "TextEncoder", "WordPieceEncoder", "pos_tag", "SynonymSubstitution"]
