"""Faults: diverging fits stop cleanly, interrupted fits leave a usable model."""

import numpy as np
import pytest
import torch
from sklearn.base import clone

from conformance.cases import CASES
from interpretable.estimators.core._base import TrainingDivergedError, TrainingNet


def _interrupt_in_epoch(n: int, monkeypatch) -> list:
    """Make Ctrl-C arrive at the start of epoch ``n`` of every training phase; returns the
    list of epoch numbers seen."""
    epochs = []
    original = TrainingNet.on_epoch_begin

    def interrupt(self, net, **kwargs):
        epochs.append(len(net.history))
        if len(net.history) == n:
            raise KeyboardInterrupt
        return original(self, net, **kwargs)

    monkeypatch.setattr(TrainingNet, "on_epoch_begin", interrupt, raising=False)
    return epochs


def _two_phase(est) -> bool:
    variant = getattr(est, "variant", None)
    return variant is not None and not isinstance(variant, str) and variant.has_second_phase


@pytest.mark.parametrize("case", CASES, ids=str)
def test_interrupted_fit_leaves_usable_model(case, monkeypatch):
    """Ctrl-C during epoch 2 of a one-phase fit ends training (skorch's handling) with the
    weights so far; in a multi-phase fit (SEAT) it ends the whole fit, and the estimator keeps
    the state it had (here: unfitted)."""
    X, y, X_test = case.data()
    epochs = _interrupt_in_epoch(2, monkeypatch)
    est = clone(case.make()).set_params(max_epochs=5)
    if _two_phase(est):
        with pytest.raises(KeyboardInterrupt):
            _fit(est, X, y)
        assert max(epochs) == 2 and not hasattr(est, "module_")
        return
    _fit(est, X, y)
    assert max(epochs) == 2 and 1 <= len(est.history_) <= 2
    proba = est.predict_proba(X_test)
    assert np.isfinite(np.concatenate([np.ravel(p) for p in proba])).all()


@pytest.mark.parametrize("phase", [0, 1])
def test_interrupted_multi_phase_refit_keeps_the_previous_model(phase, monkeypatch):
    """Ctrl-C in either phase of a SEAT refit leaves the previously fitted model as it was."""
    case = next(c for c in CASES if c.name == "SEATClassifier-seat")
    X, y, X_test = case.data()
    est = _fit(clone(case.make()).set_params(max_epochs=3), X, y)
    before = est.predict_proba(X_test)
    state = {k: v.clone() for k, v in est.module_.state_dict().items()}
    seen = []
    original = TrainingNet.on_epoch_begin

    def interrupt(self, net, **kwargs):
        seen.append(type(net.module_).__name__)
        if len(seen) > 1 and seen[-1] != seen[0] or phase == 0:
            raise KeyboardInterrupt
        return original(self, net, **kwargs)

    monkeypatch.setattr(TrainingNet, "on_epoch_begin", interrupt, raising=False)
    with pytest.raises(KeyboardInterrupt):
        _fit(est, X, y)
    assert len(set(seen)) == phase + 1  # the interrupted phase: the first or the second
    np.testing.assert_array_equal(est.predict_proba(X_test), before)
    for k, v in est.module_.state_dict().items():
        assert torch.equal(v, state[k]), k


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
    for a, b in zip(np.atleast_1d(before), np.atleast_1d(after), strict=True):
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
    for a, b in zip(np.atleast_1d(before), np.atleast_1d(after), strict=True):
        np.testing.assert_array_equal(a, b)
