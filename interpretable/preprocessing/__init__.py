"""Text preprocessing, as scikit-learn transformers: word tokens and their vocabulary
(:class:`TextEncoder`), MiniLM word pieces (:class:`WordPieceEncoder`), synonym substitution
(:class:`SynonymSubstitution`, needs the ``text-data`` extra) and POS tags (:func:`pos_tag`,
likewise)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.preprocessing._encoding import (
    PAD,
    PAD_TOKEN as PAD_TOKEN,
    UNK,
    TextEncoder,
)
from interpretable.preprocessing._perturbation import (
    SynonymSubstitution,
)
from interpretable.preprocessing._pos import (
    pos_tag,
)
from interpretable.preprocessing._tokenize import (
    word_tokenize,
)
from interpretable.preprocessing._wordpiece import (
    WordPieceEncoder,
    WordPieces as WordPieces,
)

__all__ = [
    "TextEncoder", "WordPieceEncoder", "PAD", "UNK", "SynonymSubstitution", "pos_tag",
    "word_tokenize",
]
