"""Offline part-of-speech tagging with universal tags.

The averaged-perceptron weights ship in ``textblob-aptagger`` as a pickle of plain dicts and a
set. They are read once with a restricted unpickler (only ``dict``/``set`` allowed), converted to
JSON in the user cache directory, and loaded from there into nltk's ``PerceptronTagger``.
Nothing is written into site-packages.
"""

from __future__ import annotations

import functools
import json
import os
import pickle
from pathlib import Path
from typing import TYPE_CHECKING

from interpretable._optional import import_optional
from interpretable.datasets import package_file

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["pos_tag"]

PTB_TO_UNIVERSAL = {
    "!": ".", "#": ".", "$": ".", "''": ".", "(": ".", ")": ".", ",": ".", "-LRB-": ".",
    "-RRB-": ".", ".": ".", ":": ".", "?": ".", "``": ".", "CC": "CONJ", "CD": "NUM",
    "DT": "DET", "EX": "DET", "FW": "X", "IN": "ADP", "JJ": "ADJ", "JJR": "ADJ", "JJS": "ADJ",
    "LS": "X", "MD": "VERB", "NN": "NOUN", "NNP": "NOUN", "NNPS": "NOUN", "NNS": "NOUN",
    "NP": "NOUN", "PDT": "DET", "POS": "PRT", "PRP": "PRON", "PRP$": "PRON", "RB": "ADV",
    "RBR": "ADV", "RBS": "ADV", "RP": "PRT", "SYM": "X", "TO": "PRT", "UH": "X", "VB": "VERB",
    "VBD": "VERB", "VBG": "VERB", "VBN": "VERB", "VBP": "VERB", "VBZ": "VERB", "WDT": "DET",
    "WP": "PRON", "WP$": "PRON", "WRB": "ADV",
}


class _PlainDataUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module in ("builtins", "__builtin__") and name in ("set", "dict", "frozenset"):
            return getattr(__import__("builtins"), name)
        raise pickle.UnpicklingError(f"refusing to load {module}.{name} from the tagger pickle")


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(root) / "interpretable" / "pos"


def _converted_params() -> list:
    target = _cache_dir() / "averaged_perceptron_tagger_eng.json"
    if target.is_file():
        try:
            return json.loads(target.read_text())
        except (json.JSONDecodeError, OSError):
            pass  # corrupt cache: convert again
    with open(package_file("textblob_aptagger", "trontagger-0.1.0.pickle"), "rb") as f:
        weights, tagdict, classes = _PlainDataUnpickler(f).load()
    params = [weights, tagdict, sorted(classes)]
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(params))
        tmp.replace(target)
    except OSError:
        pass  # read-only home: work from memory
    return params


@functools.lru_cache(maxsize=1)
def _tagger():
    PerceptronTagger = import_optional("nltk.tag.perceptron", "pos_tag").PerceptronTagger

    tagger = PerceptronTagger(load=False)
    tagger.decode_json_params(_converted_params())
    return tagger


def pos_tag(tokens: Sequence[str], tagset: str = "universal") -> list[str]:
    """Tag a list of tokens with their parts of speech (offline perceptron tagger).

    Parameters
    ----------
    tokens : list of str
        The tokens.
    tagset : {"universal", "ptb"}, default="universal"
        Universal tags or Penn Treebank tags.

    Returns
    -------
    list of str
        One tag per token.

    Raises
    ------
    TypeError
        If ``tokens`` is a str.
    ValueError
        If ``tagset`` is unknown.

    Examples
    --------
    >>> from interpretable.preprocessing import pos_tag
    >>> pos_tag(["A", "great", "movie", "."])
    ['DET', 'ADJ', 'NOUN', '.']
    >>> pos_tag(["A", "great", "movie", "."], tagset="ptb")
    ['DT', 'JJ', 'NN', '.']
    """
    if isinstance(tokens, str):
        raise TypeError("pos_tag takes a list of tokens, not a str; split or tokenize it first.")
    tokens = list(tokens)
    if tagset not in ("universal", "ptb"):
        raise ValueError(f"tagset must be 'universal' or 'ptb', got {tagset!r}.")
    if not tokens:
        return []
    tags = [tag for _, tag in _tagger().tag(tokens)]
    if tagset == "ptb":
        return tags
    return [PTB_TO_UNIVERSAL.get(tag, "X") for tag in tags]
