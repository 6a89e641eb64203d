"""SynonymSubstitution: exact number of content words changed, reproducible, clear errors."""

import numpy as np
import pytest
from gensim.models import KeyedVectors
from nltk.tokenize import NLTKWordTokenizer
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

from interpretable.preprocessing._perturbation import SynonymSubstitution

WORDS = {
    # word: vector; pairs are nearest neighbours of each other
    "film": [1.0, 0.0, 0.0, 0.0], "movie": [0.95, 0.1, 0.0, 0.0],
    "horrible": [0.0, 1.0, 0.0, 0.0], "terrible": [0.0, 0.97, 0.1, 0.0],
    "plain": [0.0, 0.0, 1.0, 0.0], "simple": [0.0, 0.1, 0.95, 0.0],
    "actors": [0.0, 0.0, 0.0, 1.0], "actor's": [0.0, 0.0, 0.05, 1.0], "cast": [0.1, 0.0, 0.1, 0.9],
    "is": [0.5, 0.0, 0.5, 0.0], "this": [0.4, 0.0, 0.5, 0.1],
    "3": [0.0, 0.5, 0.5, 0.0], "three": [0.0, 0.5, 0.52, 0.0],
}


@pytest.fixture(scope="module")
def vectors():
    kv = KeyedVectors(vector_size=4)
    kv.add_vectors(list(WORDS), np.array(list(WORDS.values()), dtype=np.float32))
    return kv


TEXTS = [
    "This film is just plain horrible, 3 actors.",
    "The actors are horrible !",
    "Film film film.",
]
TOK = NLTKWordTokenizer()


@pytest.mark.parametrize("n_words", [1, 2, 3])
def test_changes_exactly_n_content_words(vectors, n_words):
    sub = SynonymSubstitution(n_words=n_words, vectors=vectors, random_state=0).fit()
    out, positions = sub.substitute(TEXTS)
    for text, new, pos in zip(TEXTS, out, positions, strict=True):
        before, after = TOK.tokenize(text), TOK.tokenize(new)
        assert len(before) == len(after)
        changed = [i for i, (a, b) in enumerate(zip(before, after, strict=True)) if a != b]
        n_content = sum(t.lower() in {"film", "horrible", "plain", "actors"} for t in before)
        assert changed == list(pos)
        assert len(changed) == min(n_words, n_content)
        for i in changed:  # never stop words, punctuation or numbers
            assert before[i].lower() in {"film", "horrible", "plain", "actors"}
            assert after[i].isalpha()
    # "just" has no vector: never a candidate; "is", "3", "," are never candidates
    assert "3" in out[0] and " is " in out[0]


def test_neighbours_and_case(vectors):
    sub = SynonymSubstitution(n_words=5, vectors=vectors, random_state=0).fit()
    out = sub.transform(TEXTS)
    assert out[0] == "This movie is just simple terrible, 3 cast."  # "actor's" is skipped
    assert out[2] == "Movie movie movie."


def test_reproducible_and_clonable(vectors):
    sub = SynonymSubstitution(n_words=1, vectors=vectors, random_state=3).fit()
    texts = TEXTS * 5
    assert sub.transform(texts) == sub.transform(texts)
    assert clone(sub).fit().transform(texts) == sub.transform(texts)
    others = [SynonymSubstitution(1, vectors, random_state=s).fit().transform(texts)
              for s in range(5)]
    assert any(o != others[0] for o in others)  # the seed matters
    assert make_pipeline(SynonymSubstitution(1, vectors, random_state=3)).fit(texts).transform(
        texts) == sub.transform(texts)


def test_text_without_content_words_is_unchanged(vectors):
    sub = SynonymSubstitution(n_words=2, vectors=vectors, random_state=0).fit()
    out, pos = sub.substitute(["this is just 3 !"])
    assert out == ["this is just 3 !"] and len(pos[0]) == 0


def test_bad_input(vectors):
    with pytest.raises(ValueError, match="n_words"):
        SynonymSubstitution(n_words=0, vectors=vectors).fit()
    with pytest.raises(ValueError, match="vectors"):
        SynonymSubstitution(vectors="word2vec").fit()
    with pytest.raises(TypeError, match="KeyedVectors"):
        SynonymSubstitution(vectors=np.zeros((3, 3))).fit()
    sub = SynonymSubstitution(vectors=vectors).fit()
    with pytest.raises(ValueError, match="empty"):
        sub.transform([])
    with pytest.raises(TypeError, match="str"):
        sub.transform(["fine", 3])
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        SynonymSubstitution(vectors=vectors).transform(["a film"])
