"""The skorch side of training (see :mod:`.training`): :class:`TrainingNet`, whose criterion
sees the module's full output, its Accelerate variant, the training controls as callbacks and
:func:`train_module`, which builds and trains the net of one training phase. Imported at the
first fit: importing the text classifiers, the BERT-family models or the ViTs does not import
skorch (~0.8 s); SEAT's training phases and the sequence models use skorch classes at import."""

from __future__ import annotations

import copy
import functools
import inspect
import logging
import math
from collections.abc import Mapping

import torch
from sklearn.base import is_classifier
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping, ProgressBar
from skorch.dataset import ValidSplit, unpack_data
from skorch.hf import AccelerateMixin
from skorch.utils import noop

from interpretable._progress import interactive, progress_bar, report
from interpretable.estimators.core._training import (
    OPTIMIZERS,
    PRECISIONS,
    SAMPLE_WEIGHT,
    TrainingDivergedError,
    checked_autocast,
)
from interpretable.nn import logits_of, make_generator

logger = logging.getLogger(__name__)


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


class DivergenceGuard(Callback):
    """Stop with :class:`TrainingDivergedError` when the loss or the weights stop being finite.

    The loss is computed before the optimizer step, so the weights are checked too (at each
    epoch boundary): a step can make them non-finite after a batch whose loss was finite. Their
    norms are checked as well: a network that normalises weights and activations (B-cos rows,
    LayerNorm) never produces a non-finite loss, but once a weight's norm overflows its layer
    silently outputs zeros.
    """

    def _check_weights(self, net):
        if not all(torch.isfinite(p).all() for p in net.module_.parameters()):
            self._diverged(net, "the weights became non-finite")
        if not all(torch.isfinite(torch.linalg.vector_norm(p.detach()))
                   for p in net.module_.parameters()):
            self._diverged(net, "the norm of a weight overflowed")

    def _diverged(self, net, reason: str):
        raise TrainingDivergedError(
            f"training diverged in epoch {len(net.history)} ({reason}); the estimator keeps "
            "its previous state. Lower the learning rate `lr`."
        )

    def on_epoch_begin(self, net, **kwargs):
        self._check_weights(net)

    def on_batch_end(self, net, batch=None, training=False, loss=None, **kwargs):
        loss = float(loss.detach()) if loss is not None else float("nan")
        if training and not math.isfinite(loss):
            self._diverged(net, f"loss={loss}")

    def on_train_end(self, net, **kwargs):
        self._check_weights(net)


class TrainingStepCallback(Callback):
    """Base of the callbacks that act at every training step: :meth:`at_step` runs before
    the first step and after each one, with ``step_`` (0-based) of ``total_`` steps (the
    batches of ``max_epochs`` epochs of the training split, ``steps_per_epoch_`` each, per
    process when Accelerate distributes the batches)."""

    def on_train_begin(self, net, **kwargs):
        self.step_, self.total_ = 0, None

    def on_epoch_begin(self, net, dataset_train=None, **kwargs):
        if self.total_ is None:
            # each of Accelerate's processes takes every num_processes-th batch
            processes = getattr(getattr(net, "accelerator", None), "num_processes", 1)
            batches = math.ceil(len(dataset_train) / net.batch_size)
            self.steps_per_epoch_ = math.ceil(batches / processes)
            self.total_ = self.steps_per_epoch_ * net.max_epochs
            self.at_step(net)

    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            self.step_ += 1
            self.at_step(net)

    def at_step(self, net) -> None:
        """Act at training step ``step_``."""
        raise NotImplementedError


class LearningRateSchedule(TrainingStepCallback):
    """The learning-rate schedule of every estimator: at each training step, each parameter
    group's rate is its set rate times :meth:`factor`.

    Parameters
    ----------
    warmup : float in [0, 1), default=0.0
        Share of the training steps over which the factor rises linearly to 1.
    decay : {"linear", "step"} or None, default=None
        Then ``"linear"``: down to 0 at the last step (BERT's schedule); ``"step"``: ×0.1 from
        the epoch at ``decay_at`` of the epochs on (the B-cos ViT paper's); None: 1.
    decay_at : float in (0, 1] or None, default=None
        The share of the epochs after which ``"step"`` decays (None: never).

    Examples
    --------
    >>> from interpretable.estimators.core._nets import LearningRateSchedule
    >>> schedule = LearningRateSchedule(warmup=0.25, decay="linear")
    >>> schedule.total_ = 8
    >>> [round(schedule.factor(step), 3) for step in range(8)]
    [0.5, 1.0, 1.0, 0.833, 0.667, 0.5, 0.333, 0.167]
    """

    def __init__(self, warmup: float = 0.0, decay: str | None = None,
                 decay_at: float | None = None):
        self.warmup, self.decay, self.decay_at = warmup, decay, decay_at

    def on_train_begin(self, net, **kwargs):
        super().on_train_begin(net, **kwargs)
        self.base_lrs_ = [group["lr"] for group in net.optimizer_.param_groups]

    def on_epoch_begin(self, net, dataset_train=None, **kwargs):
        """Set the rate of the epoch's first step and record it (``event_lr``, the first
        parameter group's, as skorch's ``LRScheduler`` does)."""
        super().on_epoch_begin(net, dataset_train=dataset_train, **kwargs)
        net.history.record("event_lr", net.optimizer_.param_groups[0]["lr"])

    def factor(self, step: int) -> float:
        """The learning rate of ``step`` (0-based) relative to the set one."""
        rising = max(1, round(self.warmup * self.total_)) if self.warmup else 0
        if step < rising:
            return (step + 1) / rising
        if self.decay == "linear":
            return max(0.0, (self.total_ - step) / max(1, self.total_ - rising))
        if self.decay == "step" and self.decay_at is not None:
            epochs = self.total_ // self.steps_per_epoch_
            decay_step = max(1, round(self.decay_at * epochs)) * self.steps_per_epoch_
            return 0.1 if step >= decay_step else 1.0
        return 1.0

    def at_step(self, net) -> None:
        for group, base in zip(net.optimizer_.param_groups, self.base_lrs_, strict=True):
            group["lr"] = base * self.factor(self.step_)


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


class BatchProgressBar(ProgressBar):
    """skorch's bar over the batches of each epoch, drawn by
    :func:`~interpretable._progress.progress_bar` (tqdm's widget in Jupyter, its text bar on a
    terminal)."""

    def on_epoch_begin(self, net, dataset_train=None, dataset_valid=None, **kwargs):
        self.pbar_ = progress_bar(
            total=self._get_batches_per_epoch(net, dataset_train, dataset_valid),
            desc=f"epoch {len(net.history)}", unit="batch")


def training_callbacks(*, verbose: int, validated: bool, classifier: bool,
                       early_stopping: bool, patience: int, callbacks) -> list:
    """The training controls of one phase as skorch callbacks, in order: a progress bar
    (``verbose`` on a terminal or in Jupyter), validation accuracy (``validated``
    classifiers), early stopping on the validation loss (or the training loss without a
    validation set) restoring the best epoch's weights (its message reported when
    ``verbose``), and copies of the user's ``callbacks``."""
    out = []
    if verbose and interactive():
        out.append(("progress_bar", BatchProgressBar()))
    if validated and classifier:
        out.append(("valid_acc", ValidAccuracy()))
    if early_stopping:
        out.append(("early_stopping", EarlyStopping(
            monitor="valid_loss" if validated else "train_loss", patience=patience,
            load_best=True, sink=functools.partial(report, logger) if verbose else noop)))
    return out + check_callbacks(callbacks)


# ---------------------------------------------------------------------------- nets
class TrainingNet(NeuralNet):
    """skorch ``NeuralNet`` whose criterion receives the module's full output.

    The criterion is an ``nn.Module`` called as ``criterion(module_output, y)``, so models with
    extra outputs (attention, hidden states) add their regularisers there. ``loss_inputs``
    names per-sample inputs of the loss that travel in the batch's inputs but are not passed
    to the module (e.g. :data:`SAMPLE_WEIGHT`, weights ``(B,)``, or a teacher's probabilities):
    the criterion gets those present as keywords, ``criterion(module_output, y,
    sample_weight=w)``. ``autocast`` (a dtype or None)
    runs the training forward pass and loss under ``torch.autocast`` (mixed precision; the
    parameters, gradients and evaluation keep their dtype). Override :meth:`get_loss` or
    :meth:`train_step_single` for anything else.
    """

    def __init__(self, *args, autocast=None, loss_inputs=frozenset(), **kwargs):
        super().__init__(*args, **kwargs)
        self.autocast = autocast
        self.loss_inputs = frozenset(loss_inputs)

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        """skorch's loop; a KeyboardInterrupt (which skorch turns into the end of training) is
        recorded in ``interrupted_`` so that a multi-phase fit can stop as a whole."""
        self.interrupted_ = False
        try:
            return super().fit_loop(X, y, epochs, **fit_params)
        except KeyboardInterrupt:
            self.interrupted_ = True
            raise

    def infer(self, x, **fit_params):
        if isinstance(x, Mapping) and not self.loss_inputs.isdisjoint(x):
            x = {k: v for k, v in x.items() if k not in self.loss_inputs}
        return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        y_true = y_true.to(self.device)
        extra = {k: X[k].to(y_true.device) for k in self.loss_inputs
                 if isinstance(X, Mapping) and k in X}
        return self.criterion_(y_pred, y_true, **extra)

    def train_step_single(self, batch, **fit_params):
        if self.autocast is None:
            return super().train_step_single(batch, **fit_params)
        self._set_training(True)
        Xi, yi = unpack_data(batch)
        with torch.autocast(torch.device(self.device).type, dtype=self.autocast):
            y_pred = self.infer(Xi, **fit_params)
            loss = self.get_loss(y_pred, yi, X=Xi, training=True)
        loss.backward()
        return {"loss": loss, "y_pred": y_pred}


class AcceleratedTrainingNet(AccelerateMixin, TrainingNet):
    """:class:`TrainingNet` under a Hugging Face ``Accelerator`` (skorch's ``AccelerateMixin``):
    each process trains on its share of the batches and gradients are averaged across processes
    (DDP). The recorded losses are averaged across processes too, so that every process keeps
    the same history and early stopping or checkpoints decide alike on all of them."""

    def _initialize_accelerator(self):
        """As skorch's, but criteria without trainable parameters are left unprepared: on CPU
        processes accelerate wraps every prepared module in DDP, which refuses those."""
        criteria = self._criteria
        self._criteria = [name for name in criteria if any(
            p.requires_grad for p in getattr(getattr(self, name + "_"), "parameters", list)())]
        try:
            return super()._initialize_accelerator()
        finally:
            self._criteria = criteria

    def train_step(self, batch, **fit_params):
        step = super().train_step(batch, **fit_params)
        return {**step, "loss": self.accelerator.reduce(step["loss"].detach(), "mean")}

    def validation_step(self, batch, **fit_params):
        step = super().validation_step(batch, **fit_params)
        return {**step, "loss": self.accelerator.reduce(step["loss"], "mean")}


# ---------------------------------------------------------------------------- one phase
def train_module(estimator, module_factory, criterion, X, y, *, seed: int, callbacks=(),
                 max_epochs=None, lr=None, sample_weight=None, loss_inputs=None,
                 validation=True, **net_kwargs) -> NeuralNet:
    """Build the module under ``seed`` and train it with skorch, as ``estimator``'s training
    parameters say (optimizer, learning rate, epochs, batch size, validation split, early
    stopping, precision, accelerator, callbacks, verbosity). Returns the trained net.

    ``module_factory()`` builds the module (called with the torch RNG seeded); ``X`` is a dict
    of CPU tensors passed to ``module.forward(**batch)``, ``y`` a tensor; ``max_epochs`` and
    ``lr`` override the estimator's for this phase; ``sample_weight`` (n,) are per-sample loss
    weights (the criterion must take ``sample_weight``); ``loss_inputs`` maps further keywords
    of the criterion to per-sample tensors ``(n, ...)`` (e.g. a teacher's probabilities);
    ``validation=False`` trains on all of
    ``X`` whatever ``validation_fraction`` says (phases whose loss needs gradients);
    ``callbacks`` are added to the phase's. ``net_kwargs`` go to the net (e.g.
    ``iterator_train__collate_fn``).
    """
    accelerator = estimator.accelerator
    if accelerator is not None and estimator.precision != "float32":
        raise ValueError(f"precision={estimator.precision!r} cannot be combined with an "
                         "accelerator: set it there, Accelerator(mixed_precision='bf16').")
    accepted = inspect.signature(criterion.forward).parameters
    if sample_weight is not None:
        if SAMPLE_WEIGHT not in accepted:
            raise ValueError(f"{type(estimator).__name__} does not support sample weights "
                             "(sample_weight, class_weight) in this training phase.")
        loss_inputs = {**(loss_inputs or {}),
                       SAMPLE_WEIGHT: torch.as_tensor(sample_weight, dtype=torch.float32)}
    loss_inputs = loss_inputs or {}
    unknown = sorted(set(loss_inputs) - set(accepted))
    if unknown:
        raise TypeError(f"the criterion {type(criterion).__name__} takes no {unknown}.")
    X = {**X, **loss_inputs}
    validated = validation and estimator.validation_fraction is not None
    classifier = is_classifier(estimator)
    if accelerator is None:
        net_class, placement = TrainingNet, {"device": estimator.device_}
    else:
        net_class, placement = AcceleratedTrainingNet, {
            "device": None, "accelerator": accelerator, "unwrap_after_train": False}
    main_process = accelerator is None or accelerator.is_main_process
    verbose = estimator.verbose and main_process
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        module = module_factory()
        if accelerator is None:  # float32 where torch lacks a layer's kernel (one warning)
            placement["autocast"] = checked_autocast(
                estimator, module, "precision", PRECISIONS[estimator.precision], "training")
        net = net_class(
            module=module,
            criterion=criterion,
            optimizer=OPTIMIZERS[estimator.optimizer],
            optimizer__weight_decay=float(estimator.weight_decay),
            lr=float(estimator.lr if lr is None else lr),
            max_epochs=int(estimator.max_epochs if max_epochs is None else max_epochs),
            batch_size=int(estimator.batch_size),
            train_split=ValidSplit(estimator.validation_fraction, stratified=classifier,
                                   random_state=seed) if validated else None,
            iterator_train__shuffle=True,
            iterator_train__generator=make_generator(seed),
            callbacks=[("divergence_guard", DivergenceGuard()), *callbacks, *training_callbacks(
                verbose=verbose, validated=validated,
                classifier=classifier and accelerator is None,
                early_stopping=estimator.early_stopping, patience=estimator.n_iter_no_change,
                callbacks=estimator.callbacks)],
            callbacks__print_log__sink=functools.partial(report, logger) if verbose else noop,
            verbose=estimator.verbose,
            **placement,
            loss_inputs=frozenset(loss_inputs),
            **net_kwargs,
        )
        net.fit(X, y)
    return net
