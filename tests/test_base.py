"""The shared estimator machinery, exercised through the attention-free baseline."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer

from interpretable import EmbeddingBagClassifier
from interpretable._validation import check_images
from interpretable.estimators.core._base import NeuralEstimator, TrainingDivergedError
from interpretable.nn._tensors import resolve_device


def _fit(data, **kw):
    X, y = data
    params = dict(max_epochs=5, lr=0.05, random_state=0, embed_dim=16)
    params.update(kw)
    return EmbeddingBagClassifier(**params).fit(X, y)


def test_fit_predict_and_exact_explanation(sentiment_data):
    X, y = sentiment_data
    clf = _fit(sentiment_data)
    assert list(clf.classes_) == ["neg", "pos"]
    assert clf.score(X, y) > 0.9
    proba = clf.predict_proba(X[:5])
    np.testing.assert_allclose(proba.sum(1), 1.0)
    exp = clf.explain(X[:6])
    assert exp.completeness_error.max() < 1e-5
    assert list(exp.prediction) == list(clf.predict(X[:6]))
    # the sentiment word carries the explanation
    for tokens, att in zip(exp.units, exp.values, strict=True):
        assert tokens[int(np.argmax(att))] in {"great", "wonderful", "superb", "moving",
                                                 "brilliant", "awful", "boring", "dull",
                                                 "terrible", "lifeless"}
    other = clf.explain(X[:6], target="neg")
    assert set(other.target) == {"neg"} and other.completeness_error.max() < 1e-5
    with pytest.raises(ValueError, match="not seen in fit"):
        clf.explain(X[:2], target="maybe")
    with pytest.raises(ValueError, match="method"):
        clf.explain(X[:2], method="magic")


def test_random_state_reproducible_and_input_not_mutated(sentiment_data):
    X, y = sentiment_data
    X_copy, y_copy = list(X), y.copy()
    a, b = _fit(sentiment_data), _fit(sentiment_data)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    c = _fit(sentiment_data, random_state=1)
    assert not np.array_equal(a.predict_proba(X), c.predict_proba(X))
    assert X_copy == X and np.array_equal(y, y_copy)
    state = torch.random.get_rng_state()
    _fit(sentiment_data)
    assert torch.equal(state, torch.random.get_rng_state())  # global RNG untouched


def test_sklearn_contracts(sentiment_data):
    X, y = sentiment_data
    est = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    assert clone(est).get_params() == est.get_params()
    est.set_params(embed_dim=12)
    assert est.embed_dim == 12
    with pytest.raises(NotFittedError):
        est.predict(X)
    with pytest.raises(NotFittedError):
        est.explain(X)
    fitted = _fit(sentiment_data)
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict_proba(X), fitted.predict_proba(X))
    assert not hasattr(clone(fitted), "module_")


def test_grid_search_and_pipeline(sentiment_data):
    X, y = sentiment_data
    search = GridSearchCV(
        EmbeddingBagClassifier(embed_dim=8, max_epochs=3, lr=0.05, random_state=0),
        {"embed_dim": [4, 8]}, cv=2,
    ).fit(X, y)
    assert search.best_score_ > 0.6
    pipe = Pipeline([("strip", FunctionTransformer(lambda xs: [x.strip() for x in xs])),
                     ("clf", EmbeddingBagClassifier(embed_dim=8, max_epochs=6, lr=0.05,
                                                    random_state=0))])
    assert pipe.fit(X, y).score(X, y) > 0.8


def test_save_load_round_trip(tmp_path, sentiment_data):
    X, _ = sentiment_data
    clf = _fit(sentiment_data, embeddings=None)
    clf.save(tmp_path / "model")
    again = EmbeddingBagClassifier.load(tmp_path / "model")
    np.testing.assert_array_equal(again.predict_proba(X), clf.predict_proba(X))
    np.testing.assert_array_equal(
        np.concatenate(again.explain(X[:3]).values), np.concatenate(clf.explain(X[:3]).values)
    )
    assert NeuralEstimator.load(tmp_path / "model").get_params() == again.get_params()


def test_load_rejects_tampered_files(tmp_path, sentiment_data):
    clf = _fit(sentiment_data)
    path = clf.save(tmp_path / "m")
    weights = next(path.glob("weights*.safetensors"))  # the file config.json names
    weights.write_bytes(weights.read_bytes()[:100])
    with pytest.raises(ValueError, match="corrupt"):
        EmbeddingBagClassifier.load(path)
    path = clf.save(tmp_path / "m2")
    (path / "config.json").write_text("{not json")
    with pytest.raises(ValueError, match="corrupt"):
        EmbeddingBagClassifier.load(path)
    with pytest.raises(FileNotFoundError):
        EmbeddingBagClassifier.load(tmp_path / "nothing")


@pytest.mark.parametrize(
    "X, y, error, match",
    [
        ([], [], ValueError, "empty"),
        (["good", ""], [0, 1], ValueError, "empty or whitespace"),
        (["good", 5], [0, 1], TypeError, r"X\[1\] must be a str"),
        (["good", "bad"], [0], ValueError, "2 samples but y has 1"),
        (["good", "bad"], [1, 1], ValueError, "single class"),
        (["good", "bad"], [0.0, np.nan], ValueError, "NaN"),
        ([("good", "q"), ("bad", "q")], [0, 1], ValueError, "does not take"),
    ],
)
def test_bad_fit_input(X, y, error, match):
    with pytest.raises(error, match=match):
        EmbeddingBagClassifier(max_epochs=1).fit(X, y)


def test_bad_params_and_score_labels(sentiment_data):
    X, y = sentiment_data
    with pytest.raises(ValueError, match="max_epochs"):
        EmbeddingBagClassifier(max_epochs=0).fit(X, y)
    with pytest.raises(ValueError, match="optimizer"):
        EmbeddingBagClassifier(optimizer="lbfgs").fit(X, y)
    with pytest.raises(ValueError, match="embeddings"):
        EmbeddingBagClassifier(embeddings="word2vec").fit(X, y)
    clf = _fit(sentiment_data, max_epochs=1)
    unseen = ["meh", clf.predict(X[1:2])[0]]  # a label not seen in fit counts as wrong
    assert clf.score(X[:2], unseen) == 0.5


def test_diverging_refit_raises_and_keeps_the_previous_model(sentiment_data):
    X, y = sentiment_data
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=3, lr=1e38, optimizer="sgd",
                                 random_state=0)
    with pytest.raises(TrainingDivergedError, match="diverged"):
        clf.fit(X, y)
    with pytest.raises(NotFittedError):  # a failed first fit leaves the estimator unfitted
        clf.predict(X[:3])
    clf.set_params(lr=1e-2, optimizer="adam").fit(X, y)
    before = clf.predict_proba(X[:3])
    with pytest.raises(TrainingDivergedError, match="previous state"):
        clf.set_params(lr=1e38, optimizer="sgd").fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X[:3]), before)


def test_device_and_image_validation():
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="not a valid torch device"):
        resolve_device("gpu0")
    ok = check_images(np.zeros((2, 4, 4), dtype=np.uint8))
    assert ok.shape == (2, 4, 4, 1) and ok.dtype == np.float32
    cases = [
        (np.zeros((4, 4)), ValueError, "dimensions"),
        (np.full((1, 4, 4), np.nan), ValueError, "NaN"),
        (np.full((1, 4, 4), 2.0), ValueError, r"\[0, 1\]"),
        (np.zeros((1, 4, 4), dtype=np.int32), TypeError, "uint8"),
        ([], ValueError, "empty"),
    ]
    for X, error, match in cases:
        with pytest.raises(error, match=match):
            check_images(X)
    with pytest.raises(ValueError, match="fitted on 3"):
        check_images(np.zeros((1, 4, 4, 1)), channels=3)


def test_float64_copies_are_made_once_and_follow_weight_changes():
    """``explain(dtype="float64")`` explains a float64 copy of the module made once per fitted
    module (not per call), shared by threads, remade when a weight changed in place."""
    import threading

    import torch

    from interpretable import EmbeddingBagClassifier

    X = ["good movie", "great film", "bad movie", "awful film"]
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(
        X, ["pos", "pos", "neg", "neg"])
    first = clf.astype("float64").module_
    assert clf.astype("float64").module_ is first
    assert next(clf.module_.parameters()).dtype == torch.float32  # the fitted one untouched
    results = []
    threads = [threading.Thread(target=lambda: results.append(
        clf.explain(X, dtype="float64").values)) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(all(np.array_equal(a, b) for a, b in zip(r, results[0], strict=True))
               for r in results)
    with torch.no_grad():
        next(clf.module_.parameters()).mul_(2.0)
    again = clf.astype("float64").module_
    assert again is not first
    assert torch.equal(next(again.parameters()), next(clf.module_.parameters()).double())
    assert clf.astype(torch.float64).module_ is again  # a dtype, or its name
    for bad in ("float65", "int64", "__name__", torch.int64, 64):
        with pytest.raises(ValueError, match="floating-point torch dtype or its name"):
            clf.astype(bad)


def test_explain_and_predict_check_fittedness_once_per_call(monkeypatch):
    """The public call checks; encode, the batches and the float64 copy it runs do not check
    again (explain checked 3 times, 4 with dtype, predict 2). Unfitted, the NotFittedError
    still comes first; each thread's call is checked on its own."""
    import threading

    from interpretable import ISANSequenceTagger
    from interpretable.estimators.core import _inference as inference

    checks, check_is_fitted = [], inference.check_is_fitted

    def counting_check(estimator, *args, **kwargs):
        checks.append(threading.get_ident())
        return check_is_fitted(estimator, *args, **kwargs)

    monkeypatch.setattr(inference, "check_is_fitted", counting_check)
    X, y = ["good movie", "great film", "bad movie", "awful film"], ["pos", "pos", "neg", "neg"]
    with pytest.raises(NotFittedError):
        EmbeddingBagClassifier().explain(X, method="no such method")
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
    tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0).fit(
        ["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    for call in (lambda: clf.explain(X), lambda: clf.explain(X, target="pos", contrast="neg"),
                 lambda: clf.predict_proba(X), lambda: tagger.explain(["ab"], dtype="float64")):
        checks.clear()
        call()
        assert len(checks) == 1
    checks.clear()
    threads = [threading.Thread(target=clf.explain, args=(X,)) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(checks) == sorted(thread.ident for thread in threads)
