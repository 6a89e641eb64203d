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


@pytest.mark.parametrize("case", CASES, ids=str)
def test_diverging_fit_raises_clear_error(case):
    X, y, X_test = case.data()
    est = clone(case.make()).set_params(lr=1e38, optimizer="sgd", max_epochs=3)
    with pytest.raises(TrainingDivergedError, match="lower the learning rate|Lower the learning rate"):
        est.fit(X, y) if y is not None else est.fit(X)
    params = list(est.module_.parameters())
    assert all(torch.isfinite(p).all() for p in params)  # last good weights restored
