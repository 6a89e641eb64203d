"""Tabular inputs and outputs a data scientist brings: one-column tables of any
library narwhals reads, ``ColumnTransformer`` outputs, ``set_output`` of the text transformers
and label dtypes kept in the explanation tables."""

import numpy as np
import pandas as pd
import pytest
from conformance.cases import _sentiment
from gensim.models import KeyedVectors
from sklearn import config_context
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline

from interpretable import EmbeddingBagClassifier
from interpretable._validation import check_documents, check_sequences, check_targets, check_texts
from interpretable.explanation import read_frame, write_frame
from interpretable.integrations._pipeline import make_explainable_pipeline
from interpretable.integrations._streaming import explanations_to_frame
from interpretable.preprocessing import TextEncoder
from interpretable.preprocessing._perturbation import SynonymSubstitution

pl = pytest.importorskip("polars")
pa = pytest.importorskip("pyarrow")

TEXTS = ["a great film", "an awful plot", "great acting"]


def _tables(column):
    """The one-column table ``review`` of ``column`` in every library, and its numpy form."""
    return {
        "pandas": pd.DataFrame({"review": column}),
        "polars": pl.DataFrame({"review": column}),
        "pyarrow": pa.table({"review": column}),
        "numpy (n, 1)": np.array(column, dtype=object)[:, None],
        "polars series": pl.Series("review", column),
        "pyarrow column": pa.chunked_array([column]),
    }


@pytest.mark.parametrize("kind", list(_tables(TEXTS)))
def test_every_one_column_table_is_read_as_its_column(kind):
    assert check_texts(_tables(TEXTS)[kind]) == TEXTS
    assert check_documents(_tables(TEXTS)[kind]) == TEXTS
    assert check_sequences(_tables(TEXTS)[kind]) == TEXTS
    labels = _tables([1, 0, 1])[kind]
    np.testing.assert_array_equal(check_targets(labels), [1, 0, 1])
    assert check_targets(labels).dtype.kind == "i"


@pytest.mark.parametrize("table", [
    pd.DataFrame({"review": TEXTS, "stars": [5, 1, 4]}),
    pl.DataFrame({"review": TEXTS, "stars": [5, 1, 4]}),
    pa.table({"review": TEXTS, "stars": [5, 1, 4]}),
], ids=["pandas", "polars", "pyarrow"])
def test_a_wider_table_is_refused_naming_its_columns(table):
    with pytest.raises(ValueError, match=r"columns \['review', 'stars'\].*X\['review'\]"):
        check_texts(table)


def test_a_wider_array_is_refused_with_the_fix():
    with pytest.raises(ValueError, match=r"shape \(3, 2\); pass one column, e.g. X\[:, 0\]"):
        check_texts(np.array([TEXTS, TEXTS], dtype=object).T)


def test_missing_values_in_a_polars_column_are_named():
    with pytest.raises(TypeError, match=r"X\[1\] must be a str, got NoneType.*dropna"):
        check_texts(pl.DataFrame({"review": ["a", None]}))


@pytest.fixture(scope="module")
def data():
    X, y, X_test = _sentiment(n=32)
    return X, (y == "pos").astype(np.int64), X_test


@pytest.fixture(scope="module")
def fitted(data):
    X, y, _ = data
    return EmbeddingBagClassifier(embed_dim=4, max_epochs=2, random_state=0).fit(X, y)


@pytest.mark.parametrize("kind", list(_tables(TEXTS)))
def test_estimators_fit_and_predict_on_any_one_column_table(fitted, data, kind):
    X, y, X_test = data
    clf = clone(fitted).fit(_tables(X)[kind], _tables(list(y))[kind])
    np.testing.assert_array_equal(clf.predict_proba(_tables(X_test)[kind]),
                                  fitted.predict_proba(X_test))
    np.testing.assert_array_equal(clf.explain(_tables(X_test)[kind]).values[0],
                                  fitted.explain(X_test).values[0])


def test_pandas_index_stays_the_sample_ids(fitted, data):
    _, _, X_test = data
    table = pd.DataFrame({"review": X_test}, index=[f"rev_{i}" for i in range(len(X_test))])
    assert fitted.explain(table).to_frame()["sample"].unique().tolist() == list(table.index)


@pytest.mark.parametrize("kind", ["polars", "pyarrow", "numpy (n, 1)"])
def test_chunked_explanations_of_any_table_match_the_list(fitted, data, kind):
    """Chunks of a table are tables: the streamed export is the same as the list's."""
    X, _, _ = data
    pd.testing.assert_frame_equal(explanations_to_frame(fitted, _tables(X)[kind], chunk_size=7),
                                  explanations_to_frame(fitted, X, chunk_size=7))


@pytest.mark.parametrize("output", ["default", "pandas", "polars"])
def test_column_transformer_feeds_the_estimator_in_a_pipeline(fitted, data, output):
    X, y, X_test = data
    frame = pd.DataFrame({"review": X, "stars": np.arange(len(X))},
                         index=[f"r{i}" for i in range(len(X))])
    select = ColumnTransformer([("text", "passthrough", ["review"])])
    pipe = make_explainable_pipeline(select, clone(fitted)).set_output(transform=output)
    pipe.fit(frame, y)
    np.testing.assert_array_equal(pipe.predict_proba(frame.iloc[:6]),
                                  fitted.predict_proba(X[:6]))
    explanation = pipe.explain(frame.iloc[:2])
    assert explanation.to_frame()["sample"].unique().tolist() == ["r0", "r1"]


# ---------------------------------------------------------------------------- set_output
@pytest.fixture(scope="module")
def vectors():
    words = {"film": [1.0, 0.0], "movie": [0.95, 0.1], "great": [0.0, 1.0],
             "superb": [0.1, 0.97]}
    kv = KeyedVectors(vector_size=2)
    kv.add_vectors(list(words), np.array(list(words.values()), dtype=np.float32))
    return kv


def test_text_transformers_take_pipeline_set_output(fitted, data, vectors):
    X, y, X_test = data
    pipe = make_pipeline(SynonymSubstitution(vectors=vectors, random_state=0), clone(fitted))
    pipe.set_output(transform="pandas").fit(X, y)
    assert pipe.predict(X_test).shape == (len(X_test),)
    assert TextEncoder().set_output(transform="polars").fit(X).transform(X_test).dtype == np.int64


@pytest.mark.parametrize("output, kind", [("default", list), ("pandas", pd.DataFrame),
                                          ("polars", pl.DataFrame)])
def test_synonym_substitution_outputs_a_text_column(vectors, output, kind):
    texts = pd.Series(["a great film", "the film"], index=["a", "b"])
    sub = SynonymSubstitution(2, vectors, random_state=0).set_output(transform=output)
    out = clone(sub).fit().transform(texts)
    assert isinstance(out, kind)
    expected = ["a superb movie", "the movie"]
    assert (out if output == "default" else list(out["text"])) == expected
    if output == "pandas":
        assert list(out.index) == ["a", "b"]
    with config_context(transform_output=output):
        assert isinstance(SynonymSubstitution(vectors=vectors).fit().transform(texts), kind)


def test_set_output_refuses_unknown_containers(vectors):
    with pytest.raises(ValueError, match="transform must be one of"):
        SynonymSubstitution(vectors=vectors).set_output(transform="arrow")


# ---------------------------------------------------------------------------- label dtypes
@pytest.mark.parametrize("labels, dtype", [
    (lambda y: y, "int64"), (lambda y: y.astype(bool), "bool"),
    (lambda y: y.astype(np.float64), "float64"), (lambda y: np.where(y, "pos", "neg"), "str"),
], ids=["int", "bool", "float", "str"])
def test_labels_keep_their_dtype_through_frames_and_files(data, labels, dtype, tmp_path):
    X, y, X_test = data
    clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, labels(y))
    frame = clf.explain(X_test[:3]).to_frame()
    samples = clf.explain(X_test[:3]).to_frame(kind="samples")
    for table in (frame, samples):
        assert {str(table[c].dtype) for c in ("target", "prediction")} == {dtype}
    assert set(frame["prediction"]) <= set(clf.classes_.tolist())
    streamed = explanations_to_frame(clf, X_test, chunk_size=2)
    assert str(streamed["target"].dtype) == dtype
    for suffix in (".csv", ".parquet"):
        path = explanations_to_frame(clf, X_test, path=tmp_path / f"e{suffix}", chunk_size=2)
        pd.testing.assert_frame_equal(read_frame(path), streamed)
        pd.testing.assert_frame_equal(read_frame(write_frame(frame, path)), frame)
