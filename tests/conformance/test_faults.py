"""Faults: diverging fits stop cleanly, interrupted fits leave a usable model."""

import numpy as np
import pytest
import torch
from sklearn.base import clone

from interpretable.estimators.base import TrainingDivergedError, TrainingNet

from .cases import CASES


@pytest.mark.parametrize("case", CASES, ids=str)
def test_interrupted_fit_leaves_usable_model(case, monkeypatch):
    """Ctrl-C during epoch 2 ends training (skorch's handling) with the weights so far."""
    X, y, X_test = case.data()
    epochs = []
    original = TrainingNet.on_epoch_begin

    def interrupt(self, net, **kwargs):
        epochs.append(len(net.history))
        if len(net.history) == 2:
            raise KeyboardInterrupt
        return original(self, net, **kwargs)

    monkeypatch.setattr(TrainingNet, "on_epoch_begin", interrupt, raising=False)
    est = clone(case.make()).set_params(max_epochs=5)
    est.fit(X, y) if y is not None else est.fit(X)
    # training stopped in epoch 2 (two-stage fits such as SEAT's run their next stage after)
    assert max(epochs) == 2 and 1 <= len(est.history_) <= 2
    proba = est.predict_proba(X_test)
    assert np.isfinite(np.concatenate([np.ravel(p) for p in proba])).all()


def _fit(est, X, y):
    return est.fit(X, y) if y is not None else est.fit(X)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_diverging_refit_keeps_the_previous_model(case):
    """fit is transactional: a diverging refit raises a clear error and leaves the previously
    fitted model (weights, state_dict, fitted attributes) exactly as it was."""
    X, y, X_test = case.data()
    est = _fit(clone(case.make()), X, y)
    state = {k: v.clone() for k, v in est.module_.state_dict().items()}
    fitted = {k for k in vars(est) if k.endswith("_")}
    before = est.predict_proba(X_test)
    est.set_params(lr=1e38, optimizer="sgd", max_epochs=3)
    with pytest.raises(TrainingDivergedError, match="Lower the learning rate"):
        _fit(est, X, y)
    assert {k for k in vars(est) if k.endswith("_")} == fitted
    for k, v in est.module_.state_dict().items():
        assert torch.equal(v, state[k]), k
    after = est.predict_proba(X_test)
    for a, b in zip(np.atleast_1d(before), np.atleast_1d(after)):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_rejected_refit_keeps_the_previous_model(case):
    """A refit rejected by validation (here: empty data) changes nothing."""
    X, y, X_test = case.data()
    est = _fit(clone(case.make()), X, y)
    before = est.predict_proba(X_test)
    with pytest.raises(ValueError):
        _fit(est, [], [] if y is not None else None)
    after = est.predict_proba(X_test)
    for a, b in zip(np.atleast_1d(before), np.atleast_1d(after)):
        np.testing.assert_array_equal(a, b)
