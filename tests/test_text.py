import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from interpretable.datasets import load_glove
from interpretable.preprocessing import PAD, UNK, TextEncoder, pos_tag


def test_pos_tag_universal():
    assert pos_tag(["The", "movie", "was", "great", "."]) == ["DET", "NOUN", "VERB", "ADJ", "."]
    assert pos_tag([]) == []
    with pytest.raises(TypeError, match="list of tokens"):
        pos_tag("The movie")


def test_encoder_round_trip_and_padding():
    enc = TextEncoder().fit(["The movie was great!", "A dull, boring film."])
    ids, lengths = enc.encode(["the movie was dull", "great"])
    assert ids.shape == (2, 4) and lengths.tolist() == [4, 1]
    assert ids[1, 1:].tolist() == [PAD] * 3
    assert enc.inverse_transform(ids) == [["the", "movie", "was", "dull"], ["great"]]
    assert enc.transform(["unseenword movie"])[0, 0] == UNK
    assert np.array_equal((enc.transform(["a b c", "d"]) != PAD).sum(1), [3, 1])


def test_encode_tokens_pads_ragged_lists_and_maps_unknown_tokens():
    enc = TextEncoder().fit(["a b c", "d"])
    v = enc.vocabulary_
    ids, lengths = enc.encode_tokens([["c", "zzz", "a"], [], ["d", "d"]])
    assert ids.dtype == lengths.dtype == np.int64
    assert lengths.tolist() == [3, 0, 2]
    assert ids.tolist() == [[v["c"], UNK, v["a"]], [PAD, PAD, PAD], [v["d"], v["d"], PAD]]
    ids, lengths = enc.encode_tokens([[]])
    assert ids.tolist() == [[PAD]] and lengths.tolist() == [0]


def test_tokenize_splits_sentences():
    enc = TextEncoder()
    assert enc.tokenize("Mary went to the garden. John moved to the kitchen.") == [
        "mary", "went", "to", "the", "garden", ".", "john", "moved", "to", "the", "kitchen", "."]
    assert enc.tokenize("Wow! Really? yes.") == ["wow", "!", "really", "?", "yes", "."]


def test_encoder_options():
    texts = ["a a a b b c", "a b d"]
    enc = TextEncoder(min_freq=2).fit(texts)
    assert set(enc.vocabulary_) == {"<pad>", "<unk>", "a", "b"}
    assert enc.vocabulary_["a"] == 2  # most frequent first
    short = TextEncoder(max_len=3).fit(texts)
    assert short.tokenize("c d e f g") == ["c", "d", "e"]  # documented truncation
    assert "c" not in TextEncoder(max_len=2).fit(["a b c"]).vocabulary_  # fit sees truncated text
    assert len(TextEncoder(max_vocab=1).fit(texts).vocabulary_) == 3
    assert TextEncoder(lowercase=False).fit(["Hello"]).vocabulary_.get("Hello") == 2


@pytest.mark.parametrize(
    "bad, error, match",
    [
        ([], ValueError, "empty"),
        (["ok", ""], ValueError, r"X\[1\] is an empty"),
        (["ok", "   "], ValueError, "whitespace"),
        (["ok", 3], TypeError, r"X\[1\] must be a str"),
        ([b"bytes"], TypeError, "decode"),
        ("a single string", TypeError, "wrap it in a list"),
    ],
)
def test_encoder_bad_input(bad, error, match):
    with pytest.raises(error, match=match):
        TextEncoder().fit(bad)


def test_encoder_param_validation_and_not_fitted():
    from sklearn.exceptions import NotFittedError

    with pytest.raises(ValueError, match="min_freq"):
        TextEncoder(min_freq=0).fit(["a"])
    with pytest.raises(NotFittedError):
        TextEncoder().transform(["a"])


def test_embedding_matrix_from_glove():
    kv = load_glove()
    enc = TextEncoder().fit(["good movie", "zzzunknownzzz"])
    m = enc.embedding_matrix(kv)
    assert m.shape == (len(enc.vocabulary_), 50) and m.dtype == np.float32
    np.testing.assert_allclose(m[enc.vocabulary_["good"]], kv["good"])
    assert not m[PAD].any()
    np.testing.assert_array_equal(m, enc.embedding_matrix(kv))  # seeded
    with pytest.raises(TypeError, match="KeyedVectors"):
        enc.embedding_matrix({"good": [1.0]})


def test_encoder_state_round_trip():
    enc = TextEncoder(max_len=5).fit(["one two three", "four"])
    again = TextEncoder.from_state(enc.get_state())
    assert again.vocabulary_ == enc.vocabulary_ and again.max_len == 5


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="abc xyz,.!", min_size=1).filter(
    lambda s: s.strip() and any(c.isalpha() for c in s)), min_size=1, max_size=8))
def test_encoder_property_round_trip(texts):
    enc = TextEncoder().fit(texts)
    ids, lengths = enc.encode(texts)
    tokens = enc.inverse_transform(ids)
    assert [len(t) for t in tokens] == lengths.tolist()
    assert tokens == [enc.tokenize(t) for t in texts]
