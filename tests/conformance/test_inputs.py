"""Real-world inputs: DataFrames, generators, label types, image layouts, and the
scikit-learn tools that rely on the binary ``decision_function`` convention."""

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import cross_val_score

from conformance.cases import CASES

TEXT = [c for c in CASES if c.kind == "text"]
IMAGE = [c for c in CASES if c.kind == "image"]


@pytest.fixture(scope="module", params=TEXT + IMAGE, ids=str)
def fitted(request):
    case = request.param
    X, y, X_test = case.data()
    return case, clone(case.make()).fit(X, y), X, y, X_test


# ---------------------------------------------------------------------------- DataFrames
@pytest.mark.parametrize("case", TEXT, ids=str)
def test_one_column_dataframe_is_read_as_its_column(case):
    X, y, X_test = case.data()
    frame = pd.DataFrame({"text": X}, index=[f"rev_{i}" for i in range(len(X))])
    est = clone(case.make()).fit(frame, pd.Series(y, index=frame.index))
    reference = clone(case.make()).fit(X, y)
    test_frame = pd.DataFrame({"text": X_test})
    assert est.predict(test_frame).shape == (len(X_test),)
    np.testing.assert_array_equal(est.predict_proba(test_frame), reference.predict_proba(X_test))
    np.testing.assert_array_equal(est.predict_proba(test_frame["text"]),
                                  reference.predict_proba(X_test))


@pytest.mark.parametrize("case", TEXT, ids=str)
def test_multi_column_dataframe_is_refused_naming_the_columns(case):
    X, y, X_test = case.data()
    frame = pd.DataFrame({"text": X, "source": ["web"] * len(X)})
    with pytest.raises(ValueError, match=r"columns \['text', 'source'\].*X\['text'\]"):
        clone(case.make()).fit(frame, y)


# ---------------------------------------------------------------------------- generators
@pytest.mark.parametrize("case", TEXT, ids=str)
def test_generators_are_read_once(case):
    X, y, X_test = case.data()
    est = clone(case.make()).fit((t for t in X), (label for label in y))
    reference = clone(case.make()).fit(X, y)
    np.testing.assert_array_equal(est.predict_proba(iter(X_test)),
                                  reference.predict_proba(X_test))


# ---------------------------------------------------------------------------- labels
@pytest.mark.parametrize("labels", [
    lambda y: [1 if v == y[0] else "b" for v in y],
    lambda y: pd.Series([1 if v == y[0] else "b" for v in y], dtype=object),
], ids=["list", "series"])
def test_mixed_label_types_are_refused(labels):
    case = TEXT[0]
    X, y, _ = case.data()
    with pytest.raises(ValueError, match="mixes label types"):
        clone(case.make()).fit(X, labels(list(y)))


def test_int_labels_stay_ints():
    case = TEXT[0]
    X, y, X_test = case.data()
    ints = (np.asarray(y) == y[0]).astype(int)
    est = clone(case.make()).fit(X, list(ints))
    assert est.classes_.dtype.kind == "i" and set(est.predict(X_test)) <= {0, 1}


# ---------------------------------------------------------------------------- images
@pytest.mark.parametrize("case", IMAGE, ids=str)
def test_image_layout_rule(case):
    X, y, X_test = case.data()
    est = clone(case.make())
    rgb = np.repeat(X[..., None], 3, axis=-1)
    est.fit(rgb, y)
    with pytest.raises(ValueError, match=r"channels-first.*np.moveaxis"):
        est.predict(np.moveaxis(rgb[:4], -1, 1))
    with pytest.raises(ValueError, match=r"one \(H, W, C\) image.*\[None\]"):
        est.predict(rgb[0])
    with pytest.raises(ValueError, match=r"2 dimensions.*single image.*\[None\]"):
        clone(case.make()).fit(X[0], y[:1])
    almost = rgb[:4].astype(np.float64)
    almost[0, 0, 0, 0] = 1.0000001
    np.testing.assert_array_equal(est.predict_proba(almost),
                                  est.predict_proba(np.clip(almost, 0, 1)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        est.predict(almost * 1.01)


# ---------------------------------------------------------------------------- binary tools
def _binary(case):
    X, y, X_test = case.data()
    if len(np.unique(y)) > 2:  # keep two classes
        keep = np.isin(y, np.unique(y)[:2])
        if case.kind == "image":
            X = np.asarray(X)[keep]
        else:
            X = [x for x, k in zip(X, keep, strict=True) if k]
        y = np.asarray(y)[keep]
    return X, np.asarray(y)


@pytest.mark.parametrize("case", TEXT + IMAGE, ids=str)
def test_binary_decision_function_follows_sklearn(case):
    X, y = _binary(case)
    est = clone(case.make()).fit(X, y)
    margin = est.decision_function(X[:5])
    assert margin.shape == (5,)
    proba = est.predict_proba(X[:5])
    np.testing.assert_allclose(margin, np.log(proba[:, 1] / proba[:, 0]), rtol=1e-4, atol=1e-4)
    np.testing.assert_array_equal(est.predict(X[:5]), est.classes_[(margin > 0).astype(int)])


@pytest.mark.parametrize("case", [TEXT[0], IMAGE[0]], ids=str)
@pytest.mark.parametrize("scoring", ["roc_auc", "average_precision"])
def test_ranking_scorers(case, scoring):
    X, y = _binary(case)
    y = (y == np.unique(y)[1]).astype(int)  # string labels would need pos_label=
    scores = cross_val_score(clone(case.make()), X, y, cv=2, scoring=scoring,
                             error_score="raise")
    assert np.isfinite(scores).all() and ((scores >= 0) & (scores <= 1)).all()


@pytest.mark.parametrize("case", [TEXT[0], IMAGE[0]], ids=str)
def test_calibration_of_a_frozen_model(case):
    X, y = _binary(case)
    est = clone(case.make()).fit(X, y)
    calibrated = CalibratedClassifierCV(FrozenEstimator(est)).fit(X, y)
    proba = calibrated.predict_proba(X[:5])
    assert proba.shape == (5, 2)
    np.testing.assert_allclose(proba.sum(1), 1.0)


# ---------------------------------------------------------------------------- exports
def test_any_string_that_reached_the_model_can_be_exported(tmp_path):
    from interpretable.integrations._streaming import explanations_to_frame

    case = TEXT[0]
    X, y, _ = case.data()
    est = clone(case.make()).fit(X, y)
    texts = ["great film \udcff here", "dull \ud800 plot"]
    frame = est.explain(texts).to_frame()
    assert "\ufffd" in set(frame.token) and not any("\udcff" in t for t in frame.token)
    frame.to_csv(tmp_path / "e.csv")
    frame.to_parquet(tmp_path / "e.parquet")
    for suffix in (".csv", ".parquet"):
        path = explanations_to_frame(est, texts, path=tmp_path / f"s{suffix}")
        assert path.exists()
    with pytest.raises(ValueError, match="empty"):
        explanations_to_frame(est, [], path=tmp_path / "none.csv")
    assert not (tmp_path / "none.csv").exists()
