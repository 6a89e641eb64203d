"""How the neural estimators train: skorch nets with small overridable steps, the training
controls as callbacks, warm start and the fit transaction.

An estimator says *what* to train (a module factory, a criterion, tensors and per-phase
overrides) through :meth:`NeuralEstimator._fit_net
<interpretable.estimators.base.NeuralEstimator._fit_net>`; :func:`train_module` builds the net
from the estimator's training parameters and trains it:

* :class:`TrainingNet` — skorch's ``NeuralNet`` whose criterion sees the module's full output
  (``get_loss``), with per-sample loss weights and mixed precision (``train_step_single``);
  :class:`AcceleratedTrainingNet` runs it under Hugging Face Accelerate;
* callbacks — :class:`DivergenceGuard` (NaN / inf stops the fit), :class:`ValidAccuracy`,
  early stopping with best-epoch restore, a progress bar, the user's own (copied per fit);
* :func:`fit_transactionally` — train a copy, swap its fitted attributes in only on success;
* :func:`warm_started` — continue from a copy of the previous fit's weights.
"""

from __future__ import annotations

import copy
import inspect
import math
import re
import sys
import textwrap
from collections.abc import Iterator, Mapping
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.base import is_classifier
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from skorch import NeuralNet
from skorch.callbacks import Callback, EarlyStopping, ProgressBar
from skorch.dataset import ValidSplit, unpack_data
from skorch.hf import AccelerateMixin
from skorch.utils import noop

from ..nn.losses import logits_of
from ..nn.tensors import make_generator

__all__ = [
    "TRAINING_CONSTRAINTS",
    "OPTIMIZERS",
    "PRECISIONS",
    "SAMPLE_WEIGHT",
    "TrainingDivergedError",
    "DivergenceGuard",
    "ValidAccuracy",
    "TrainingNet",
    "AcceleratedTrainingNet",
    "plain_print",
    "check_callbacks",
    "check_sample_weight",
    "training_callbacks",
    "train_module",
    "warm_started",
    "fit_transactionally",
    "TRAINING_DOC",
    "CLASS_WEIGHT_DOC",
    "expand_parameter_docs",
]

OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
}
#: autocast dtype of each ``precision`` (None: the parameters' own)
PRECISIONS = {"float32": None, "bf16": torch.bfloat16}
#: key of the per-sample loss weights in a training batch (never passed to the module)
SAMPLE_WEIGHT = "sample_weight"

#: constraints of the training parameters every neural estimator takes
TRAINING_CONSTRAINTS: dict = {
    "lr": [Interval(Real, 0, None, closed="neither")],
    "max_epochs": [Interval(Integral, 1, None, closed="left")],
    "batch_size": [Interval(Integral, 1, None, closed="left")],
    "optimizer": [StrOptions(set(OPTIMIZERS))],
    "weight_decay": [Interval(Real, 0, None, closed="left")],
    "device": [str, torch.device],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
    "callbacks": [list, None],
    "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
    "early_stopping": ["boolean"],
    "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
    "warm_start": ["boolean"],
    "precision": [StrOptions(set(PRECISIONS))],
    "accelerator": [HasMethods(["prepare", "unwrap_model", "reduce"]), None],
}

_ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")

#: numpydoc of the training parameters (``{training_parameters}`` in an estimator docstring)
TRAINING_DOC = """\
lr : float > 0
    Learning rate.
max_epochs : int >= 1
    Number of passes over the training data.
batch_size : int >= 1
    Mini-batch size for training and inference (``explain`` and the metrics take their own
    ``batch_size``).
optimizer : {"adam", "adamw", "sgd", "rmsprop"}
weight_decay : float >= 0
device : "auto", "cpu", "cuda", "cuda:N" or torch.device
    ``"auto"`` uses CUDA when available.
random_state : int, RandomState or None
    Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
    is left untouched.
verbose : int
    When > 0, print skorch's epoch table (plain text unless standard output is a terminal)
    and, on a terminal, a progress bar over the batches of each epoch and of ``explain``.
callbacks : list or None
    skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
    your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
    with deep copies: the callbacks passed here are never changed.
validation_fraction : float in (0, 1) or None
    Share of the training data held out (stratified for classifiers, seeded by
    ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
    (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
early_stopping : bool
    Stop when the validation loss (the training loss without ``validation_fraction``) has
    not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
    (skorch's ``EarlyStopping(load_best=True)``).
n_iter_no_change : int >= 1
    Patience of ``early_stopping``, in epochs.
warm_start : bool
    When True, fitting a fitted estimator continues training its weights (the vocabulary,
    classes and input size stay those of the first fit; other labels, a changed input
    size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
    state starts afresh.
precision : {"float32", "bf16"}
    ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
    the weights stay float32), while prediction and explanations always run in the
    parameters' own precision, so inherent explanations stay exact.
accelerator : accelerate.Accelerator or None
    Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
    ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
    with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
    the accelerator (``Accelerator(mixed_precision="bf16")``). See
    :mod:`interpretable.scale`.
"""
#: numpydoc of the classifiers' ``class_weight`` (``{class_weight}`` in a docstring)
CLASS_WEIGHT_DOC = """\
class_weight : None, "balanced" or dict {label: weight}
    Weights of the classes in the training loss (multiplied with ``sample_weight``);
    ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
"""


def expand_parameter_docs(doc: str | None) -> str | None:
    """``doc`` with the lines ``{training_parameters}`` and ``{class_weight}`` replaced by
    :data:`TRAINING_DOC` and :data:`CLASS_WEIGHT_DOC`, indented as the token: every estimator
    documents every parameter, each written once in the source."""
    if doc is None:
        return None
    for token, text in (("{training_parameters}", TRAINING_DOC),
                        ("{class_weight}", CLASS_WEIGHT_DOC)):
        doc = re.sub(rf"^([ \t]*){re.escape(token)}[ \t]*$",
                     lambda m, text=text: textwrap.indent(text.rstrip(), m.group(1)),
                     doc, flags=re.MULTILINE)
    return doc


class TrainingDivergedError(RuntimeError):
    """Raised when the training loss or the weights become NaN or infinite; the estimator keeps
    the state it had before ``fit`` (fit is transactional)."""


# ---------------------------------------------------------------------------- callbacks
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


class DivergenceGuard(Callback):
    """Stop with :class:`TrainingDivergedError` when the loss or the weights stop being finite.

    The loss is computed before the optimizer step, so the weights are checked too (at each
    epoch boundary): a step can make them non-finite after a batch whose loss was finite.
    """

    def _check_weights(self, net):
        if not all(torch.isfinite(p).all() for p in net.module_.parameters()):
            self._diverged(net, "the weights became non-finite")

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
    """The training controls of one phase as skorch callbacks, in order: a progress bar
    (``verbose`` on a terminal), validation accuracy (``validated`` classifiers), early
    stopping on the validation loss (or the training loss without a validation set) restoring
    the best epoch's weights, and copies of the user's ``callbacks``."""
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


# ---------------------------------------------------------------------------- nets
class TrainingNet(NeuralNet):
    """skorch ``NeuralNet`` whose criterion receives the module's full output.

    The criterion is an ``nn.Module`` called as ``criterion(module_output, y)``, so models with
    extra outputs (attention, hidden states) add their regularisers there; a batch whose inputs
    carry per-sample weights ``(B,)`` under :data:`SAMPLE_WEIGHT` (not passed to the module)
    calls ``criterion(module_output, y, sample_weight=w)``. ``autocast`` (a dtype or None)
    runs the training forward pass and loss under ``torch.autocast`` (mixed precision; the
    parameters, gradients and evaluation keep their dtype). Override :meth:`get_loss` or
    :meth:`train_step_single` for anything else.
    """

    def __init__(self, *args, autocast=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.autocast = autocast

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
        if isinstance(x, Mapping) and SAMPLE_WEIGHT in x:
            x = {k: v for k, v in x.items() if k != SAMPLE_WEIGHT}
        return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        y_true = y_true.to(self.device)
        if isinstance(X, Mapping) and SAMPLE_WEIGHT in X:
            weight = X[SAMPLE_WEIGHT].to(y_true.device)
            return self.criterion_(y_pred, y_true, sample_weight=weight)
        return self.criterion_(y_pred, y_true)

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
def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray | None:
    """``sample_weight`` as a checked float64 array ``(n,)``, or None."""
    if sample_weight is None:
        return None
    weight = np.asarray(sample_weight, dtype=np.float64)
    if weight.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {weight.shape}.")
    if not np.isfinite(weight).all() or (weight < 0).any() or not weight.sum() > 0:
        raise ValueError("sample_weight must be finite and non-negative, not all zero.")
    return weight


def train_module(estimator, module_factory, criterion, X, y, *, seed: int, callbacks=(),
                 max_epochs=None, lr=None, sample_weight=None, validation=True,
                 **net_kwargs) -> NeuralNet:
    """Build the module under ``seed`` and train it with skorch, as ``estimator``'s training
    parameters say (optimizer, learning rate, epochs, batch size, validation split, early
    stopping, precision, accelerator, callbacks, verbosity). Returns the trained net.

    ``module_factory()`` builds the module (called with the torch RNG seeded); ``X`` is a dict
    of CPU tensors passed to ``module.forward(**batch)``, ``y`` a tensor; ``max_epochs`` and
    ``lr`` override the estimator's for this phase; ``sample_weight`` (n,) are per-sample loss
    weights (the criterion must take ``sample_weight``); ``validation=False`` trains on all of
    ``X`` whatever ``validation_fraction`` says (phases whose loss needs gradients);
    ``callbacks`` are added to the phase's. ``net_kwargs`` go to the net (e.g.
    ``iterator_train__collate_fn``).
    """
    accelerator = estimator.accelerator
    if accelerator is not None and estimator.precision != "float32":
        raise ValueError(f"precision={estimator.precision!r} cannot be combined with an "
                         "accelerator: set it there, Accelerator(mixed_precision='bf16').")
    if sample_weight is not None:
        if "sample_weight" not in inspect.signature(criterion.forward).parameters:
            raise ValueError(f"{type(estimator).__name__} does not support sample weights "
                             "(sample_weight, class_weight) in this training phase.")
        X = {**X, SAMPLE_WEIGHT: torch.as_tensor(sample_weight, dtype=torch.float32)}
    validated = validation and estimator.validation_fraction is not None
    classifier = is_classifier(estimator)
    if accelerator is None:
        net_class, placement = TrainingNet, {"device": estimator.device_,
                                             "autocast": PRECISIONS[estimator.precision]}
    else:
        net_class, placement = AcceleratedTrainingNet, {
            "device": None, "accelerator": accelerator, "unwrap_after_train": False}
    main_process = accelerator is None or accelerator.is_main_process
    verbose = estimator.verbose and main_process
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        net = net_class(
            module=module_factory(),
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
            callbacks__print_log__sink=plain_print if verbose else noop,
            verbose=estimator.verbose,
            **placement,
            **net_kwargs,
        )
        net.fit(X, y)
    return net


def warm_started(module_factory, previous: torch.nn.Module):
    """A factory of ``module_factory()``'s module holding ``previous``'s weights (a copy: the
    fitted module is never trained in place). A changed architecture raises a ValueError."""
    state = previous.state_dict()

    def build():
        module = module_factory()
        shapes = {k: tuple(v.shape) for k, v in module.state_dict().items()}
        changed = sorted(k for k in shapes.keys() | state.keys()
                         if shapes.get(k) != tuple(getattr(state.get(k), "shape", ())))
        if changed:
            raise ValueError("warm_start=True continues the previous model, but the "
                             f"parameters give other weights: {changed[:5]}. Refit with "
                             "warm_start=False.")
        module.load_state_dict(state)
        return module

    return build


# ---------------------------------------------------------------------------- the transaction
def _is_fitted_attribute(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_")


def fit_transactionally(estimator, fit, X, y, sample_weight):
    """Run ``fit(work, X, y, sample_weight)`` on a shallow copy ``work`` of ``estimator`` and
    move its fitted attributes (names ending in ``_``) into ``estimator`` only when it returns:
    a rejected, interrupted or crashed refit leaves the previous model fully usable.

    The copy starts without fitted attributes unless ``warm_start`` continues a fitted model
    (whose attributes it then shares, never changing them in place). ``fitted_params_``
    records the parameters of the fit (what ``save`` stores).
    """
    X = list(X) if isinstance(X, Iterator) else X  # read a generator once
    y = list(y) if isinstance(y, Iterator) else y
    work = copy.copy(estimator)
    if not (estimator.warm_start and estimator.__sklearn_is_fitted__()):
        for name in [k for k in vars(work) if _is_fitted_attribute(k)]:
            delattr(work, name)
    fit(work, X, y, sample_weight)
    work.fitted_params_ = work.get_params(deep=False)
    for name in [k for k in vars(estimator) if _is_fitted_attribute(k)]:
        delattr(estimator, name)
    estimator.__dict__.update({k: v for k, v in vars(work).items() if _is_fitted_attribute(k)})
    return estimator
