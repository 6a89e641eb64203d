"""Model tracking with mlflow, against a local file tracking store: the package's
flavour (the safe save format, loaded without unpickling anything) and mlflow's sklearn flavour
on its default skops format with the package's trusted types."""

import numpy as np
import pandas as pd
import pytest
from conformance.cases import _sentiment

from interpretable import EmbeddingBagClassifier
from interpretable.estimators.core._state import trusted_types
from interpretable.integrations import _tracking as tracking

mlflow = pytest.importorskip("mlflow")


@pytest.fixture
def store(tmp_path, monkeypatch):
    """A file tracking store in ``tmp_path`` (mlflow 3 wants it acknowledged); loading
    pickles or skops files through mlflow stays disallowed unless a test allows it."""
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", (tmp_path / "mlruns").as_uri())
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "false")
    yield tmp_path
    if mlflow.active_run():
        mlflow.end_run()


@pytest.fixture(scope="module")
def fitted():
    X, y, X_test = _sentiment(n=32)
    clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=2, random_state=0)
    return clf.fit(X, (y == "pos").astype(np.int64)), X_test


@pytest.mark.parametrize("example", [list, lambda texts: pd.DataFrame({"review": texts})],
                         ids=["list", "DataFrame"])
def test_flavour_logs_loads_and_predicts_without_unpickling(store, fitted, example):
    clf, X_test = fitted
    with mlflow.start_run():
        info = tracking.log_model(clf, name="model", input_example=example(X_test[:2]))
    files = {p.name for p in store.rglob("*") if p.is_file()}
    assert "config.json" in files and not {".pkl", ".skops"} & {f[-4:] for f in files}
    loaded = tracking.load_model(info.model_uri)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), clf.predict_proba(X_test))
    pyfunc = mlflow.pyfunc.load_model(info.model_uri)
    predictions = pyfunc.predict(example(X_test))
    np.testing.assert_array_equal(predictions, clf.predict(X_test))
    assert np.asarray(predictions).dtype == np.int64


def test_sklearn_flavour_on_skops_with_the_trusted_types(store, fitted, monkeypatch):
    clf, X_test = fitted
    with mlflow.start_run():
        info = mlflow.sklearn.log_model(clf, name="model", input_example=X_test[:2],
                                        skops_trusted_types=trusted_types())
    with pytest.raises(mlflow.exceptions.MlflowException, match="DESERIALIZATION"):
        mlflow.sklearn.load_model(info.model_uri)  # mlflow's own gate for skops files
    monkeypatch.setenv("MLFLOW_ALLOW_PICKLE_DESERIALIZATION", "true")
    np.testing.assert_array_equal(mlflow.pyfunc.load_model(info.model_uri).predict(X_test),
                                  clf.predict(X_test))
    with pytest.raises(ValueError, match="not an interpretable model"):
        tracking.load_model(info.model_uri)


def test_save_model_writes_a_local_mlflow_model(tmp_path, fitted):
    clf, X_test = fitted
    path = tracking.save_model(clf, tmp_path / "model", input_example=X_test[:2])
    assert "interpretable-models==" in (path / "requirements.txt").read_text()
    np.testing.assert_array_equal(tracking.load_model(str(path)).predict(X_test),
                                  clf.predict(X_test))
