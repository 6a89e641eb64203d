"""Training controls of the neural estimators, as skorch callbacks and small helpers: the epoch
log in plain text when it is not shown on a terminal, a progress bar on terminals, validation
accuracy, early stopping with best-epoch restore and the user's own callbacks (copied per fit).

:meth:`NeuralEstimator._fit_net <interpretable.estimators.base.NeuralEstimator._fit_net>`
assembles them from the estimator's parameters with :func:`training_callbacks`.
"""

from __future__ import annotations

import copy
import re
import sys

from skorch.callbacks import Callback, EarlyStopping, ProgressBar

from ..nn.losses import logits_of

__all__ = ["plain_print", "check_callbacks", "training_callbacks", "ValidAccuracy"]

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")


def plain_print(text: str) -> None:
    """``print`` that drops ANSI colour codes unless standard output is a terminal (skorch's
    epoch table colours the best scores)."""
    print(text if sys.stdout.isatty() else _ANSI_ESCAPE.sub("", text), flush=True)


def check_callbacks(callbacks) -> list:
    """Fresh copies of the user's ``callbacks`` (skorch callbacks or ``(name, callback)``
    pairs): every fit trains with its own copies, the parameter is never changed."""
    checked = []
    for item in callbacks or ():
        callback = item[1] if isinstance(item, tuple) and len(item) == 2 else item
        if not isinstance(callback, Callback) or (
                isinstance(item, tuple) and not isinstance(item[0], str)):
            raise TypeError("callbacks must hold skorch callbacks or (name, callback) pairs, "
                            f"got {item!r}.")
        checked.append(copy.deepcopy(item))
    return checked


class ValidAccuracy(Callback):
    """Records ``valid_acc``, the accuracy of the logits (the module output or its first item)
    over the validation batches of each epoch."""

    def on_epoch_begin(self, net, **kwargs):
        self.correct_, self.count_ = 0, 0

    def on_batch_end(self, net, batch=None, training=False, y_pred=None, **kwargs):
        if not training:
            y = batch[1].to(logits_of(y_pred).device)
            self.correct_ += int((logits_of(y_pred).argmax(1) == y).sum())
            self.count_ += len(y)

    def on_epoch_end(self, net, **kwargs):
        if self.count_:
            net.history.record("valid_acc", self.correct_ / self.count_)


def training_callbacks(*, verbose: int, validated: bool, classifier: bool,
                       early_stopping: bool, patience: int, callbacks) -> list:
    """The skorch callbacks of one training phase, in order: a progress bar (``verbose`` on a
    terminal), validation accuracy (``validated`` classifiers), early stopping on the validation
    loss (or the training loss without a validation set) restoring the best epoch's weights, and
    copies of the user's ``callbacks``."""
    out = []
    if verbose and sys.stderr.isatty():
        out.append(("progress_bar", ProgressBar()))
    if validated and classifier:
        out.append(("valid_acc", ValidAccuracy()))
    if early_stopping:
        out.append(("early_stopping", EarlyStopping(
            monitor="valid_loss" if validated else "train_loss", patience=patience,
            load_best=True)))
    return out + check_callbacks(callbacks)
