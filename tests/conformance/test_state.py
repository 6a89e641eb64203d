"""Every estimator through skops and pickle as plain data: ``skops.io`` stores and
loads it trusting only the package's own types, a pickle holds no torch object, and a state
that does not describe a valid model is refused before its weights are used."""

import copy
import io
import pickle

import numpy as np
import pytest
import torch

from conformance.test_contracts import _explain_arrays
from interpretable.estimators.core._state import estimator_state, set_estimator_state, trusted_types

sio = pytest.importorskip("skops.io")


def _same_model(restored, est, case, X_test):
    np.testing.assert_array_equal(restored.predict_proba(X_test), est.predict_proba(X_test))
    if case.explains:
        np.testing.assert_array_equal(
            _explain_arrays(restored.explain(X_test, **case.explain_kwargs)),
            _explain_arrays(est.explain(X_test, **case.explain_kwargs)))
    assert restored.history_ == est.history_
    assert restored.get_params(deep=False).keys() == est.get_params(deep=False).keys()


def test_skops_round_trip_trusting_only_the_package_types(fitted_case, tmp_path):
    case, est, X, y, X_test = fitted_case
    path = tmp_path / "model.skops"
    sio.dump(est, path)
    untrusted = sio.get_untrusted_types(file=path)
    assert f"{type(est).__module__}.{type(est).__name__}" in untrusted
    assert set(untrusted) <= set(trusted_types())
    _same_model(sio.load(path, trusted=trusted_types()), est, case, X_test)


class _RecordingUnpickler(pickle.Unpickler):
    """Unpickles and records the module of every class or function the pickle imports."""

    def __init__(self, file):
        super().__init__(file)
        self.modules = set()

    def find_class(self, module, name):
        self.modules.add(module)
        return super().find_class(module, name)


def test_pickle_holds_no_torch_object_and_round_trips(fitted_case):
    case, est, X, y, X_test = fitted_case
    unpickler = _RecordingUnpickler(io.BytesIO(pickle.dumps(est)))
    restored = unpickler.load()
    # numpy weights: no device, no torch unpickler (a vocabulary may hold the word "torch")
    assert not {m for m in unpickler.modules if m.split(".")[0] == "torch"}, unpickler.modules
    _same_model(restored, est, case, X_test)
    assert restored.fitted_params_ == est.fitted_params_
    assert restored.device_.type == "cpu"


def test_skops_refuses_a_file_with_other_types(tmp_path):
    from conformance.cases import _sentiment
    from interpretable import EmbeddingBagClassifier

    X, y, _ = _sentiment(n=16)
    clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, y)
    clf.set_params(callbacks=[("hook", print)])  # a function: code skops must not trust
    path = tmp_path / "model.skops"
    sio.dump(clf, path)
    assert "builtins.print" in sio.get_untrusted_types(file=path)
    with pytest.raises(Exception, match="print"):
        sio.load(path, trusted=trusted_types())


@pytest.fixture(scope="module")
def fitted():
    from conformance.cases import _sentiment
    from interpretable import EmbeddingBagClassifier

    X, y, X_test = _sentiment(n=16)
    return EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, y), X_test


def _restore(state, cls):
    new = cls.__new__(cls)
    set_estimator_state(new, state)
    return new


@pytest.mark.parametrize("change, message", [
    (lambda s: s["weights"].update({"embedding.weight": np.zeros((3, 4), np.float32)}),
     r"'embedding.weight' has shape \(3, 4\)"),
    (lambda s: s["weights"]["output.bias"].fill(np.nan), "NaN"),
    (lambda s: s["weights"].update({"output.bias": np.array(["x", "y"])}), "numeric numpy"),
    (lambda s: s["weights"].pop("output.bias"), "missing"),
    (lambda s: s["params"].update({"max_epochs": -1}), "max_epochs"),
    (lambda s: s["params"].pop("lr"), "each parameter"),
    (lambda s: s["fitted_params"].update({"embed_dim": "big"}), "embed_dim"),
    (lambda s: s["fitted"].update({"classes": np.array(["a"])}), "fitted state|shape"),
    (lambda s: s["attributes"].update({"__class__": 1}), "not the name of a fitted"),
    (lambda s: s.update({"estimator": "SEATClassifier"}), "estimator 'EmbeddingBagClassifier'"),
    (lambda s: s.pop("interpretable_state"), "state version None; this version reads version 1"),
    (lambda s: s.update({"interpretable_state": 2}), "state version 2; this version reads"),
])
def test_a_state_that_is_no_valid_model_is_refused(fitted, change, message):
    clf, _ = fitted
    state = copy.deepcopy(estimator_state(clf))
    change(state)
    with pytest.raises(ValueError, match=message):
        _restore(state, type(clf))


def test_copies_keep_sharing_or_copying_the_module(fitted):
    clf, X_test = fitted
    assert copy.copy(clf).module_ is clf.module_
    deep = copy.deepcopy(clf)
    assert deep.module_ is not clf.module_
    np.testing.assert_array_equal(deep.predict_proba(X_test), clf.predict_proba(X_test))


def test_unfitted_estimators_keep_their_parameters(fitted):
    clf, _ = fitted
    blank = pickle.loads(pickle.dumps(type(clf)(embed_dim=3, lr=0.5)))
    assert not hasattr(blank, "module_")
    assert (blank.embed_dim, blank.lr) == (3, 0.5)


@pytest.mark.skipif(torch.cuda.is_available(), reason="simulates a machine without CUDA")
def test_a_pickle_made_for_a_gpu_loads_on_the_cpu(fitted):
    """The state holds numpy weights: a model fitted with device="cuda" unpickles onto the
    CPU where there is no GPU (its device parameter is kept for the next fit)."""
    clf, X_test = fitted
    state = estimator_state(clf)
    state["params"] = {**state["params"], "device": "cuda"}
    restored = _restore(state, type(clf))
    assert restored.device == "cuda" and restored.device_.type == "cpu"
    np.testing.assert_array_equal(restored.predict_proba(X_test), clf.predict_proba(X_test))
