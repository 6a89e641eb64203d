"""Text utilities: encoding, POS tagging and perturbations."""

from .encoding import PAD, UNK, TextEncoder
from .perturbation import SynonymSubstitution
from .pos import pos_tag

__all__ = ["PAD", "UNK", "TextEncoder", "pos_tag", "SynonymSubstitution"]
