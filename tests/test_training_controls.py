"""Training controls shared by every estimator: callbacks, validation split, early
stopping with best-epoch restore, class and sample weights, warm start, mixed precision and the
verbose output."""

import copy
import sys

import numpy as np
import pytest
import torch
from conformance.cases import _TINY_VIT, _digits, _parentheses, _sentiment
from sklearn.model_selection import StratifiedShuffleSplit
from skorch.callbacks import Callback, EarlyStopping, LRScheduler

from interpretable import (
    BcosViTClassifier,
    DiversityLSTMClassifier,
    EmbeddingBagClassifier,
    ISANSequenceTagger,
    SEATClassifier,
)
from interpretable.estimators.seat import SEAT


def _embedding_bag(**params):
    return EmbeddingBagClassifier(**{"embed_dim": 8, "max_epochs": 2, "random_state": 0,
                                     **params})


def _diversity(**params):
    return DiversityLSTMClassifier(**{"embed_dim": 8, "hidden_size": 8, "max_epochs": 2,
                                      "random_state": 0, **params})


def _held_out(X, y, fraction, seed=0):
    """The rows ``validation_fraction`` holds out (skorch's ValidSplit: the first split of a
    seeded StratifiedShuffleSplit)."""
    _, valid = next(StratifiedShuffleSplit(test_size=fraction, random_state=seed).split(X, y))
    return [X[i] for i in valid], y[valid]


def _weights(est):
    return {k: v.detach().clone() for k, v in est.module_.state_dict().items()}


def test_early_stopping_stops_and_restores_the_best_epoch():
    X, y, _ = _sentiment(96)
    y = np.random.RandomState(0).permutation(y)  # shuffled labels: the validation loss rises
    clf = _embedding_bag(lr=0.1, max_epochs=60, validation_fraction=0.25, early_stopping=True,
                         n_iter_no_change=3).fit(X, y)
    losses = [h["valid_loss"] for h in clf.history_]
    best = int(np.argmin(losses))
    assert len(losses) == best + 1 + 3 < 60  # stopped after 3 epochs without improvement
    X_valid, y_valid = _held_out(X, y, 0.25)
    index = np.searchsorted(clf.classes_, y_valid)
    restored = -np.log(clf.predict_proba(X_valid)[np.arange(len(index)), index]).mean()
    assert restored == pytest.approx(losses[best], abs=1e-5)  # the best epoch's weights
    assert restored < losses[-1] - 1e-3


def test_validation_loss_and_accuracy_are_recorded():
    X, y, _ = _sentiment(96)
    clf = _diversity(max_epochs=3, validation_fraction=0.25).fit(X, y)
    assert [set(h) >= {"train_loss", "valid_loss", "valid_acc"} for h in clf.history_] == [True] * 3
    X_valid, y_valid = _held_out(X, y, 0.25)
    assert sorted(y_valid.tolist()) == ["neg"] * 12 + ["pos"] * 12  # stratified
    assert clf.history_[-1]["valid_acc"] == pytest.approx(clf.score(X_valid, y_valid))


def test_early_stopping_without_validation_monitors_the_training_loss():
    X, y, _ = _sentiment(64)
    clf = _embedding_bag(max_epochs=3, early_stopping=True).fit(X, y)
    assert len(clf.history_) == 3 and "valid_loss" not in clf.history_[-1]


def test_balanced_class_weight_equals_the_explicit_dict():
    X, y, _ = _sentiment(96)
    keep = np.r_[np.flatnonzero(y == "neg"), np.flatnonzero(y == "pos")[:16]]  # 48 : 16
    X, y = [X[i] for i in keep], y[keep]
    balanced = _embedding_bag(class_weight="balanced").fit(X, y).predict_proba(X)
    explicit = _embedding_bag(class_weight={"neg": 64 / 96, "pos": 64 / 32}).fit(X, y)
    np.testing.assert_allclose(balanced, explicit.predict_proba(X), atol=1e-6)
    unweighted = _embedding_bag().fit(X, y).predict_proba(X)
    assert balanced[:, 1].mean() > unweighted[:, 1].mean() + 1e-3  # the rare class gains


@pytest.mark.parametrize("make, data", [
    (lambda: _diversity(cell="diversity", batch_size=256), lambda: _sentiment(40)[:2]),
    (lambda: BcosViTClassifier(**{**_TINY_VIT, "batch_size": 256}), lambda: _digits(40)[:2]),
], ids=["DiversityLSTM", "BcosViT"])
def test_sample_weight_two_equals_duplicated_rows(make, data):
    """With one batch per epoch the weighted mean loss is the loss of the duplicated data. Both
    continue one fitted model (warm start), so they share its vocabulary and initial weights
    (a vocabulary learned from duplicated rows would be ordered differently)."""
    X, y = data()
    twice = np.arange(len(y)) % 3 == 0
    rows = np.r_[np.arange(len(y)), np.flatnonzero(twice)]
    X_dup = [X[i] for i in rows] if isinstance(X, list) else X[rows]
    start = make().set_params(warm_start=True).fit(X, y)
    weighted = copy.deepcopy(start).fit(X, y, sample_weight=np.where(twice, 2.0, 1.0))
    duplicated = copy.deepcopy(start).fit(X_dup, y[rows])
    np.testing.assert_allclose(weighted.predict_proba(X), duplicated.predict_proba(X), atol=1e-5)
    plain = copy.deepcopy(start).fit(X, y).predict_proba(X)
    assert np.abs(weighted.predict_proba(X) - plain).max() > 1e-4


def test_sample_weight_is_checked():
    X, y, _ = _sentiment(32)
    with pytest.raises(ValueError, match=r"shape \(32,\)"):
        _embedding_bag().fit(X, y, sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="non-negative"):
        _embedding_bag().fit(X, y, sample_weight=-np.ones(32))
    X_seq, Y, _ = _parentheses()
    with pytest.raises(ValueError, match="ISANSequenceTagger does not support sample_weight"):
        ISANSequenceTagger(hidden_size=4, max_epochs=1).fit(X_seq, Y, sample_weight=np.ones(48))


def test_warm_start_continues_from_the_fitted_weights():
    X, y, _ = _sentiment(64)
    clf = _diversity(warm_start=True).fit(X, y)
    before, module = _weights(clf), clf.module_
    clf.set_params(lr=1e-9, max_epochs=1).fit(X, y)  # a step too small to move the weights
    assert [h["epoch"] for h in clf.history_] == [1, 2, 3]
    for name, value in _weights(clf).items():
        torch.testing.assert_close(value, before[name], atol=1e-6, rtol=0)
    assert clf.module_ is not module  # a copy was trained, the old module is untouched
    for name, value in module.state_dict().items():
        assert torch.equal(value, before[name])
    cold = _diversity(lr=1e-9, max_epochs=1).fit(X, y)
    assert any(not torch.allclose(v, before[k], atol=1e-3) for k, v in _weights(cold).items())


def test_warm_start_refuses_incompatible_data_and_architecture():
    X, y, _ = _sentiment(64)
    clf = _diversity(warm_start=True).fit(X, y)
    with pytest.raises(ValueError, match="classes"):
        clf.fit(X, np.where(y == "pos", "other", y))
    with pytest.raises(ValueError, match="other weights"):
        clf.set_params(hidden_size=4).fit(X, y)
    images, labels, _ = _digits(40)
    vit = BcosViTClassifier(**{**_TINY_VIT, "max_epochs": 1}, warm_start=True).fit(images, labels)
    with pytest.raises(ValueError, match="size"):
        vit.fit(images[:, :4, :4], labels)
    with pytest.raises(ValueError, match="variant 'seat'"):
        seat = SEATClassifier(encoder="rnn", embed_dim=8, hidden_size=8, max_epochs=1,
                              variant=SEAT(epochs=1, pgd_steps=1), random_state=0,
                              warm_start=True)
        seat.fit(X, y).fit(X, y)


class _RecordLR(Callback):
    """A user callback: writes the optimizer's learning rate into the history."""

    def on_epoch_end(self, net, **kwargs):
        net.history.record("recorded_lr", net.optimizer_.param_groups[0]["lr"])


def test_user_callbacks_run_on_copies():
    X, y, _ = _sentiment(64)
    stopping = EarlyStopping(patience=1)
    scheduler = LRScheduler(policy=torch.optim.lr_scheduler.StepLR, step_size=1, gamma=0.5)
    callbacks = [stopping, ("halve", scheduler), _RecordLR()]
    clf = _embedding_bag(lr=0.1, max_epochs=3, validation_fraction=0.25, callbacks=callbacks)
    clf.fit(X, y)
    assert [h["recorded_lr"] for h in clf.history_][:2] == [0.05, 0.025]  # halved each epoch
    assert clf.callbacks is callbacks and clf.get_params()["callbacks"][0] is stopping
    assert not hasattr(stopping, "best_epoch_") and not hasattr(scheduler, "policy_")
    with pytest.raises(TypeError, match="skorch callbacks"):
        _embedding_bag(callbacks=[object()]).fit(X, y)


def test_verbose_output_to_a_file_is_plain_text(capsys):
    X, y, _ = _sentiment(64)
    _diversity(verbose=1, validation_fraction=0.25).fit(X, y)
    out = capsys.readouterr().out
    assert "valid_loss" in out and "valid_acc" in out and "\x1b" not in out
    _diversity().fit(X, y)
    assert capsys.readouterr().out == ""


def test_verbose_shows_a_progress_bar_on_a_terminal(capsys, monkeypatch):
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    X, y, _ = _sentiment(64)
    _diversity(verbose=1, batch_size=16).fit(X, y)
    assert "| 0/4 [" in capsys.readouterr().err  # tqdm bars over the 4 batches of an epoch


def test_seat_names_its_phases(capsys):
    X, y, _ = _sentiment(32)
    SEATClassifier(encoder="rnn", embed_dim=8, hidden_size=8, max_epochs=1,
                   variant=SEAT(epochs=1, pgd_steps=1), random_state=0, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    first, second = out.index("phase 1/2: vanilla"), out.index("phase 2/2: SEAT")
    assert first < out.index("train_loss") < second < out.rindex("closeness")


def test_bf16_training_keeps_float32_weights_and_exact_explanations():
    X, y, _ = _digits(40)
    mixed = BcosViTClassifier(**_TINY_VIT, precision="bf16").fit(X, y)
    full = BcosViTClassifier(**_TINY_VIT).fit(X, y)
    assert mixed.history_[0]["train_loss"] != full.history_[0]["train_loss"]  # autocast ran
    assert all(p.dtype == torch.float32 for p in mixed.module_.parameters())
    assert mixed.explain(X[:4]).completeness_error.max() < 1e-5


def test_new_parameters_are_validated():
    X, y, _ = _sentiment(16)
    for params in ({"validation_fraction": 1.5}, {"n_iter_no_change": 0},
                   {"precision": "fp8"}, {"class_weight": "auto"}, {"warm_start": 1}):
        with pytest.raises(ValueError, match=next(iter(params))):
            _embedding_bag(**params).fit(X, y)


def test_explain_progress_bar_only_on_a_terminal_and_only_during_explain(monkeypatch, capsys):
    """verbose explain shows a tqdm bar on a terminal (and nothing else is changed)."""
    from interpretable import _progress as progress

    X, y, _ = _sentiment()
    X_test = X[:6]
    est = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, batch_size=2, verbose=1,
                                 random_state=0).fit(X, y)
    capsys.readouterr()
    quiet = est.explain(X_test)  # stderr is not a terminal under pytest: no bar
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    shown = est.explain(X_test)
    assert "explain" in capsys.readouterr().err
    assert progress.SHOW_PROGRESS.get() is False  # reset after the call
    for a, b in zip(quiet.values, shown.values, strict=True):
        assert (a == b).all()
