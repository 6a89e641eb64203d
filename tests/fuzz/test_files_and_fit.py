"""Fuzzing of what reaches an estimator from outside: the files of a saved model (truncated,
padded, overwritten bytes, lying safetensors headers) and the training data of fit (labels of
any type, one class, few samples). Each load or fit either succeeds with a consistent model or
raises a ``ValueError`` / ``TypeError`` / ``OSError`` naming the problem."""

import shutil
import struct

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fuzz.conftest import examples, fixed_seed
from fuzz.test_entry_points import DOCUMENTED, TEXTS


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from interpretable import EmbeddingBagClassifier

    X = ["good movie", "great film", "bad movie", "awful film"] * 4
    est = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0)
    est.fit(X, ["pos", "pos", "neg", "neg"] * 4)
    path = tmp_path_factory.mktemp("saved") / "model"
    est.save(path)
    return est, path


EDITS = st.one_of(
    st.tuples(st.just("truncate"), st.floats(0, 1)),
    st.tuples(st.just("pad"), st.binary(min_size=1, max_size=64)),
    st.tuples(st.just("overwrite"), st.floats(0, 1), st.binary(min_size=1, max_size=8)),
    st.tuples(st.just("header length"), st.integers(0, 2**64 - 1)),
)


def _edit(data: bytes, edit) -> bytes:
    kind, *args = edit
    if kind == "truncate":
        return data[:int(args[0] * len(data))]
    if kind == "pad":
        return data + args[0]
    if kind == "overwrite":
        at = int(args[0] * (len(data) - 1))
        return data[:at] + args[1] + data[at + len(args[1]):]
    return struct.pack("<Q", args[0]) + data[8:]  # safetensors' header length


@fixed_seed
@examples(30)
@given(which=st.sampled_from(["config.json", "weights"]), edit=EDITS)
def test_edited_model_files_are_refused_or_load_consistently(saved, tmp_path_factory, which,
                                                            edit):
    est, path = saved
    folder = tmp_path_factory.mktemp("edited") / "model"
    shutil.copytree(path, folder)
    target = folder / "config.json" if which == "config.json" \
        else next(folder.glob("weights-*.safetensors"))
    target.write_bytes(_edit(target.read_bytes(), edit))
    try:
        loaded = type(est).load(folder)
    except DOCUMENTED as exc:
        assert str(exc).strip()
        return
    X = ["good film", "awful movie"]
    proba = loaded.predict_proba(X)
    assert proba.shape == (2, 2) and np.isfinite(proba).all()
    np.testing.assert_allclose(proba.sum(1), 1, atol=1e-6)


LABELS = st.one_of(
    st.lists(st.integers(-3, 3), min_size=1, max_size=6),
    st.lists(st.sampled_from(["pos", "neg", "", "\udce9", "x" * 50]), min_size=1, max_size=6),
    st.lists(st.booleans(), min_size=1, max_size=6),
    st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=6),
    st.lists(st.one_of(st.integers(0, 1), st.text(max_size=2)), min_size=1, max_size=6),
    st.lists(st.none(), min_size=1, max_size=3),
)


@fixed_seed
@examples(20)
@given(y=LABELS, texts=st.lists(TEXTS, min_size=1, max_size=6), data=st.data())
def test_fit_learns_the_labels_it_was_given_or_refuses(y, texts, data):
    from interpretable import EmbeddingBagClassifier

    X = (texts * 6)[:len(y)] if data.draw(st.booleans(), label="same length") else texts
    before_X, before_y = list(X), list(y)
    est = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, batch_size=4, random_state=0)
    try:
        est.fit(X, y)
    except DOCUMENTED as exc:
        assert str(exc).strip()
        assert not hasattr(est, "classes_"), "a failed fit left fitted attributes"
    else:
        assert set(est.classes_.tolist()) == set(np.asarray(y).tolist())
        predicted = est.predict(X)
        assert set(predicted.tolist()) <= set(est.classes_.tolist())
        unseen = data.draw(st.sampled_from(["unseen", 99, None]), label="unseen label")
        try:
            score = est.score(X, [unseen] * len(X))
        except DOCUMENTED:
            pass
        else:
            assert 0 <= score <= 1
    assert before_X == X and y == before_y  # the same objects (NaN labels too)
