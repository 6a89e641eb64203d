"""Shared machinery of the neural estimators: the public model interface, parameter
validation, transactional skorch training, the one batching loop, the explain contract and safe
persistence.

A concrete estimator subclasses :class:`NeuralEstimator` (or :class:`NeuralClassifier`), lists
its hyper-parameters in ``__init__`` and in ``_parameter_constraints`` and implements

* ``_fit(X, y)``: train on a fresh copy of the estimator (see :meth:`NeuralEstimator.fit`);
* ``encode(X) -> Batch``: validated inputs as module keyword tensors (public: metrics and
  attribution methods work from it);
* ``_build_module()`` and ``_get_fitted_state()`` / ``_set_fitted_state(state)`` for
  :meth:`save` / :meth:`load`;
* ``explain_methods`` (default first) and ``_explainer(method)`` returning the function that
  explains an encoded :class:`Batch` (its keyword-only parameters are the method's options).

See CONTRIBUTING.md for a walk-through.
"""

from __future__ import annotations

import contextvars
import copy
import inspect
import math
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from numbers import Integral, Real
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin, is_classifier
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from skorch.callbacks import Callback
from skorch.dataset import ValidSplit, unpack_data
from skorch.hf import AccelerateMixin
from skorch.utils import noop

from ..explanation import with_sample_ids
from ..nn.losses import logits_of
from ..validation import check_batch_size, check_random_state_seed, make_generator, resolve_device
from .persistence import from_jsonable, load_estimator, save_estimator, to_jsonable
from .training import plain_print, training_callbacks

__all__ = [
    "Batch",
    "NeuralEstimator",
    "NeuralClassifier",
    "TrainingDivergedError",
    "SAMPLE_WEIGHT",
    "to_jsonable",
    "from_jsonable",
]

_OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
}
_AUTOCAST = {"float32": None, "bf16": torch.bfloat16}
#: key of the per-sample loss weights in a training batch (never passed to the module)
SAMPLE_WEIGHT = "sample_weight"


@dataclass(frozen=True)
class Batch:
    """Encoded samples, the public way from user inputs to model inputs.

    inputs : dict of CPU tensors with the sample axis first, the module's keyword arguments
        (text: ``tokens (n, T)``, ``lengths (n,)`` [, ``query``, ``query_lengths``]; images:
        ``x (n, C', H, W)``);
    units : per-sample lists of the units the model sees (tokens), or None;
    queries : per-sample query tokens of (text, query) pairs, or None;
    images : validated ``(n, H, W, C)`` float images in [0, 1], or None;
    texts : the validated original texts (or ``(text, query)`` pairs), or None.
    """

    inputs: dict
    units: list | None = None
    queries: list | None = None
    images: np.ndarray | None = None
    texts: list | None = None

    def __len__(self) -> int:
        return len(next(iter(self.inputs.values())))


#: progress bars of the batching loop, set for the duration of one ``explain`` call
_SHOW_PROGRESS = contextvars.ContextVar("interpretable_explain_progress", default=False)


def _is_fitted_attribute(name: str) -> bool:
    return name.endswith("_") and not name.startswith("_")


class TrainingDivergedError(RuntimeError):
    """Raised when the training loss or the weights become NaN or infinite; the estimator keeps
    the state it had before ``fit`` (fit is transactional)."""


class _DivergenceGuard(Callback):
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


class TrainingNet(NeuralNet):
    """skorch ``NeuralNet`` whose criterion receives the module's full output.

    The criterion is an ``nn.Module`` called as ``criterion(module_output, y)``, so models with
    extra outputs (attention, hidden states) add their regularisers there; a batch whose inputs
    carry per-sample weights ``(B,)`` under :data:`SAMPLE_WEIGHT` (not passed to the module)
    calls ``criterion(module_output, y, sample_weight=w)``. ``autocast`` (a dtype or None)
    runs the training forward pass and loss under ``torch.autocast`` (mixed precision; the
    parameters, gradients and evaluation keep their dtype). Override :meth:`get_loss` or
    :meth:`train_step` for anything else.
    """

    def __init__(self, *args, autocast=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.autocast = autocast

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


class NeuralEstimator(BaseEstimator):
    """Base class of the neural estimators.

    Parameters
    ----------
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

    _parameter_constraints: dict = {
        "lr": [Interval(Real, 0, None, closed="neither")],
        "max_epochs": [Interval(Integral, 1, None, closed="left")],
        "batch_size": [Interval(Integral, 1, None, closed="left")],
        "optimizer": [StrOptions(set(_OPTIMIZERS))],
        "weight_decay": [Interval(Real, 0, None, closed="left")],
        "device": [str, torch.device],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
        "callbacks": [list, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither"), None],
        "early_stopping": ["boolean"],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
        "precision": [StrOptions(set(_AUTOCAST))],
        "accelerator": [HasMethods(["prepare", "unwrap_model", "reduce"]), None],
    }
    #: explanation methods accepted by :meth:`explain`, the default first
    explain_methods: tuple[str, ...] = ()
    _registry: dict[str, type] = {}

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        NeuralEstimator._registry[cls.__name__] = cls

    def __init__(
        self,
        *,
        lr=1e-3,
        max_epochs=10,
        batch_size=64,
        optimizer="adam",
        weight_decay=0.0,
        device="auto",
        random_state=None,
        verbose=0,
        callbacks=None,
        validation_fraction=None,
        early_stopping=False,
        n_iter_no_change=5,
        warm_start=False,
        precision="float32",
        accelerator=None,
    ):
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.accelerator = accelerator

    def __sklearn_tags__(self):
        """Inputs are texts or symbol sequences (image estimators override this), never 2-d
        numeric arrays; fits are deterministic given ``random_state``."""
        tags = super().__sklearn_tags__()
        tags.input_tags.two_d_array = False
        tags.input_tags.string = True
        tags.non_deterministic = False
        return tags

    # ------------------------------------------------------------------ hooks for subclasses
    def _fit(self, X, y, sample_weight=None):
        """Train: set the fitted attributes (``module_``, ``history_``, ...) on ``self``."""
        raise NotImplementedError

    def encode(self, X) -> Batch:
        """Validate ``X`` and encode it as a :class:`Batch` of module inputs (CPU tensors)."""
        raise NotImplementedError

    def _build_module(self) -> torch.nn.Module:
        raise NotImplementedError

    def _get_fitted_state(self) -> dict:
        raise NotImplementedError

    def _set_fitted_state(self, state: dict) -> None:
        raise NotImplementedError

    def _explainer(self, method: str):
        """The function ``f(batch, target, *, batch_size, **options)`` behind ``method``."""
        raise NotImplementedError

    def _check_params(self) -> None:
        """Checks beyond ``_parameter_constraints`` (e.g. relations between parameters)."""

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> None:
        """scikit-learn's constraint validation (``_parameter_constraints``, merged up the class
        hierarchy by the subclasses), plus: no bool where a number is expected, and the
        estimator's own :meth:`_check_params`."""
        super()._validate_params()
        params = self.get_params(deep=False)
        for name, constraints in self._parameter_constraints.items():
            numeric = any(isinstance(c, Interval) for c in constraints)
            boolean = any(c in ("boolean", bool) for c in constraints)
            if numeric and not boolean and isinstance(params[name], (bool, np.bool_)):
                raise ValueError(f"The {name!r} parameter of {type(self).__name__} must be a "
                                 f"number, got the bool {params[name]!r}.")
        self._check_params()

    # ------------------------------------------------------------------ training
    def fit(self, X, y=None, sample_weight=None):
        """Fit on ``X`` (and ``y``); returns ``self``.

        ``sample_weight`` (n,) weights each sample's loss (non-negative; a weight of 2 counts a
        sample twice); the classifiers support it (for SEAT see its docstring), as they do
        ``class_weight``.

        Transactional: the estimator is trained as a fresh copy and its fitted attributes
        replace the old ones only when training succeeded, so a rejected or crashed refit
        leaves the previous model fully usable. With ``warm_start`` the copy starts from the
        fitted state (never changed in place).
        """
        self._validate_params()
        X = list(X) if isinstance(X, Iterator) else X  # read a generator once
        y = list(y) if isinstance(y, Iterator) else y
        work = copy.copy(self)
        if not (self.warm_start and self.__sklearn_is_fitted__()):
            for name in [k for k in vars(work) if _is_fitted_attribute(k)]:
                delattr(work, name)
        work._fit(X, y, sample_weight)
        work.fitted_params_ = work.get_params(deep=False)  # what save() stores
        for name in [k for k in vars(self) if _is_fitted_attribute(k)]:
            delattr(self, name)
        self.__dict__.update({k: v for k, v in vars(work).items() if _is_fitted_attribute(k)})
        return self

    def _start_fit(self) -> int:
        """Set ``device_`` (the accelerator's when there is one) and return the seed of this
        fit."""
        self.device_ = resolve_device(self.device) if self.accelerator is None \
            else self.accelerator.device
        return check_random_state_seed(self.random_state)

    def _log(self, message: str) -> None:
        """Print ``message`` (e.g. the name of a training phase) when ``verbose``, on the main
        process only."""
        if self.verbose and (self.accelerator is None or self.accelerator.is_main_process):
            plain_print(f"{type(self).__name__}: {message}")

    def _continues(self) -> bool:
        """Whether this fit continues the previous one (``warm_start`` on a fitted estimator:
        ``fit`` kept its fitted attributes)."""
        return self.warm_start and hasattr(self, "fitted_params_")

    def _warm_started(self, module_factory):
        """``module_factory``, or when this fit continues the previous one, a factory of the
        same module holding the previous fit's weights (a copy: the fitted module is never
        trained in place). A changed architecture raises a ``ValueError``."""
        if not self._continues():
            return module_factory
        previous = self.module_.state_dict()

        def build():
            module = module_factory()
            shapes = {k: tuple(v.shape) for k, v in module.state_dict().items()}
            changed = sorted(k for k in shapes.keys() | previous.keys()
                             if shapes.get(k) != tuple(getattr(previous.get(k), "shape", ())))
            if changed:
                raise ValueError("warm_start=True continues the previous model, but the "
                                 f"parameters give other weights: {changed[:5]}. Refit with "
                                 "warm_start=False.")
            module.load_state_dict(previous)
            return module

        return build

    def _training_weights(self, y, sample_weight):
        """Per-sample loss weights (n,) for the training targets ``y`` (n, ...): the checked
        ``sample_weight``, or None."""
        if sample_weight is None:
            return None
        weight = np.asarray(sample_weight, dtype=np.float64)
        if weight.shape != (len(y),):
            raise ValueError(f"sample_weight must have shape ({len(y)},), got {weight.shape}.")
        if not np.isfinite(weight).all() or (weight < 0).any() or not weight.sum() > 0:
            raise ValueError("sample_weight must be finite and non-negative, not all zero.")
        return weight

    def _fit_net(self, module_factory, criterion, X, y, *, seed, callbacks=(), max_epochs=None,
                 lr=None, sample_weight=None, validation=True, **net_kwargs):
        """Build the module under ``seed`` and train it with skorch.

        ``module_factory()`` builds the module (called with the torch RNG seeded), ``X`` is a dict
        of CPU tensors passed to ``module.forward(**batch)``, ``y`` a tensor; ``max_epochs`` and
        ``lr`` override the constructor's for one training phase; ``sample_weight`` (n,) are the
        per-sample loss weights (see :meth:`_training_weights`; the criterion must take
        ``sample_weight``); ``validation=False`` trains on all of ``X`` whatever
        ``validation_fraction`` says (phases whose loss needs gradients). The training controls
        (``callbacks``, ``early_stopping``, ``precision``, ``accelerator``, ...) apply to every
        phase. With ``warm_start`` the epochs are appended to the previous fit's ``history_``
        (callbacks such as learning-rate schedules start afresh, as does the optimizer). Sets
        ``module_`` (in eval mode) and ``history_``. Returns the skorch net (not stored).
        """
        accelerator = self.accelerator
        if accelerator is not None and self.precision != "float32":
            raise ValueError(f"precision={self.precision!r} cannot be combined with an "
                             "accelerator: set it there, Accelerator(mixed_precision='bf16').")
        if sample_weight is not None:
            if "sample_weight" not in inspect.signature(criterion.forward).parameters:
                raise ValueError(f"{type(self).__name__} does not support sample weights "
                                 "(sample_weight, class_weight) in this training phase.")
            X = {**X, SAMPLE_WEIGHT: torch.as_tensor(sample_weight, dtype=torch.float32)}
        validated = validation and self.validation_fraction is not None
        if accelerator is None:
            net_class, placement = TrainingNet, {"device": self.device_,
                                                 "autocast": _AUTOCAST[self.precision]}
        else:
            net_class, placement = AcceleratedTrainingNet, {
                "device": None, "accelerator": accelerator, "unwrap_after_train": False}
        main_process = accelerator is None or accelerator.is_main_process
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = module_factory()
            net = net_class(
                module=module,
                criterion=criterion,
                optimizer=_OPTIMIZERS[self.optimizer],
                optimizer__weight_decay=float(self.weight_decay),
                lr=float(self.lr if lr is None else lr),
                max_epochs=int(self.max_epochs if max_epochs is None else max_epochs),
                batch_size=int(self.batch_size),
                train_split=ValidSplit(self.validation_fraction, stratified=is_classifier(self),
                                       random_state=seed) if validated else None,
                iterator_train__shuffle=True,
                iterator_train__generator=make_generator(seed),
                callbacks=[("divergence_guard", _DivergenceGuard()), *callbacks,
                           *training_callbacks(
                               verbose=self.verbose and main_process, validated=validated,
                               classifier=is_classifier(self) and accelerator is None,
                               early_stopping=self.early_stopping,
                               patience=self.n_iter_no_change, callbacks=self.callbacks)],
                callbacks__print_log__sink=plain_print if self.verbose and main_process else noop,
                verbose=self.verbose,
                **placement,
                **net_kwargs,
            )
            net.fit(X, y)
            module = net.module_ if accelerator is None else accelerator.unwrap_model(net.module_)
            self.module_ = module.eval()
        previous = self.history_ if self._continues() else []
        self.history_ = previous + [{**epoch, "epoch": len(previous) + epoch["epoch"]}
                                    for epoch in net.history]
        return net

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        check_is_fitted(self, "module_")

    def _trim_batch(self, batch: dict) -> dict:
        """Per-batch preprocessing of the device tensors (text models cut padding)."""
        return batch

    def _inference_order(self, inputs) -> torch.Tensor | None:
        """A permutation ``(n,)`` of the samples that makes batched prediction cheaper (text:
        longest first, so each trimmed batch holds texts of similar length), or None."""
        return None

    def iter_batches(self, inputs: Mapping[str, torch.Tensor], batch_size=None
                     ) -> Iterator[tuple[slice, dict]]:
        """The one batching loop: yield ``(rows, batch)`` with ``batch`` the slice ``rows`` of
        ``inputs`` (tensors, sample axis first) on ``device_``."""
        self._check_fitted()
        step = check_batch_size(batch_size, default=self.batch_size)
        n = len(next(iter(inputs.values())))
        starts = range(0, n, step)
        if _SHOW_PROGRESS.get() and len(starts) > 1 and sys.stderr.isatty():
            from tqdm.auto import tqdm

            starts = tqdm(starts, desc=f"{type(self).__name__}.explain", unit="batch",
                          leave=False)
        for start in starts:
            rows = slice(start, min(start + step, n))
            yield rows, self._trim_batch({k: v[rows].to(self.device_) for k, v in inputs.items()})

    def forward_batch(self, batch: dict, **options):
        """The module's output for one batch of device tensors (no gradient mode is set; the
        fitted module is never changed)."""
        return self.module_(**batch, **options)

    def forward_batches(self, inputs: Mapping[str, torch.Tensor], *, batch_size=None,
                        grad: bool = False, **options) -> Iterator[tuple[slice, dict, object]]:
        """Yield ``(rows, batch, output)`` over mini-batches of ``inputs``."""
        with torch.set_grad_enabled(grad):
            for rows, batch in self.iter_batches(inputs, batch_size):
                yield rows, batch, self.forward_batch(batch, **options)

    # ------------------------------------------------------------------ explain
    def explain(self, X, target=None, *, method=None, batch_size=None, **options):
        """Explain the ``target`` outputs of ``X`` with ``method``.

        Parameters
        ----------
        X : inputs as for ``predict``.
        target : None (the predicted class / symbol), one label for all samples, or one per
            sample.
        method : one of :attr:`explain_methods` (None: the first, the estimator's default).
        batch_size : mini-batch size (None: the estimator's ``batch_size``).
        **options : options of ``method`` (e.g. ``n_steps`` of integrated gradients); an
            option the method does not take raises a ``TypeError`` naming it.

        Returns
        -------
        An explanation from :mod:`interpretable.explanation`.
        """
        self._check_fitted()
        method = self.explain_methods[0] if method is None else method
        if not isinstance(method, str) or method not in self.explain_methods:
            raise ValueError(f"method={method!r} is not supported by {type(self).__name__}; "
                             f"choose one of {list(self.explain_methods)}.")
        batch_size = check_batch_size(batch_size, default=self.batch_size)
        explainer = self._explainer(method)
        accepted = [name for name, p in inspect.signature(explainer).parameters.items()
                    if p.kind is inspect.Parameter.KEYWORD_ONLY and name != "batch_size"]
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise TypeError(f"explain(method={method!r}) got unexpected option(s) {unknown}; "
                            f"it takes {accepted or 'no options'}.")
        shown = _SHOW_PROGRESS.set(bool(self.verbose))  # this call (and thread) only
        try:
            explanation = explainer(self.encode(X), target, batch_size=batch_size, **options)
        finally:
            _SHOW_PROGRESS.reset(shown)
        return with_sample_ids(explanation, X)

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> Path:
        """Save to the folder ``path`` (``config.json`` + ``weights.safetensors``, no pickle);
        returns ``path``.

        Stores the parameters the model was fitted with (``fitted_params_``; a ``set_params``
        after ``fit`` does not leak into the file) and its fitted state. A parameter JSON cannot
        hold is stored as None when None is a valid value for it (e.g. a gensim ``KeyedVectors``
        ``embeddings``: its contribution is in the weights; a refit of the loaded model then
        learns embeddings from scratch); otherwise (e.g. a custom ``nn.Module`` encoder) or if
        the fitted state is not JSON-compatible (e.g. bytes labels), a ``TypeError`` is raised
        before anything is written (pickle works for trusted use).

        Atomic: the files are written to a new folder next to ``path`` that then replaces
        ``path``, so ``path`` holds the complete new model or, on any error, exactly what it
        held before. An existing ``path`` must be empty or hold a saved model.
        """
        self._check_fitted()
        return save_estimator(self, path)

    @classmethod
    def load(cls, path, device="auto"):
        """Load an estimator saved with :meth:`save` onto ``device``.

        Model files are untrusted input: no code from them runs, and a file that is corrupt,
        edited or inconsistent raises a ``ValueError`` naming the wrong field or tensor (a
        missing file a ``FileNotFoundError``) before large memory is allocated. Parameters
        stored as None come back as None.
        """
        return load_estimator(cls, path, device)

    def __sklearn_is_fitted__(self):
        return hasattr(self, "module_")


class NeuralClassifier(ClassifierMixin, NeuralEstimator):
    """Classifier outputs shared by the text and image classifiers.

    Subclasses implement :meth:`encode` and a module whose output is the logits ``(B, C)`` (or
    a tuple starting with them), and set ``classes_`` in ``_fit`` (:meth:`_fit_labels`).

    Parameters: those of :class:`NeuralEstimator`, plus
    class_weight : None, "balanced" or dict {label: weight}
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    """

    _parameter_constraints = {
        **NeuralEstimator._parameter_constraints,
        "class_weight": [StrOptions({"balanced"}), dict, None],
    }

    def __init__(self, *, class_weight=None, **params):
        super().__init__(**params)
        self.class_weight = class_weight

    def _fit_labels(self, y) -> np.ndarray:
        """Class indices (n,) of the training labels ``y``; sets ``classes_``, or when the fit
        continues the previous one (``warm_start``) keeps its classes (other labels raise)."""
        if not self._continues():
            self.classes_, index = np.unique(y, return_inverse=True)
            return index.reshape(-1)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError("warm_start=True continues the previous model, fitted on the "
                             f"classes {self.classes_.tolist()[:10]}; y has others: "
                             f"{unseen.tolist()[:5]}. Refit with warm_start=False.")
        return np.searchsorted(self.classes_, y)

    def _training_weights(self, y, sample_weight):
        """``sample_weight`` times the ``class_weight`` of each sample's class index ``y``."""
        weight = super()._training_weights(y, sample_weight)
        if self.class_weight is None:
            return weight
        y = np.asarray(y)
        per_class = compute_class_weight(self.class_weight, classes=self.classes_,
                                         y=self.classes_[y])
        return per_class[y] if weight is None else per_class[y] * weight

    def logits(self, inputs: Mapping[str, torch.Tensor], *, batch_size=None, **options
               ) -> torch.Tensor:
        """Logits ``(n, n_classes)`` (float32, CPU) of encoded ``inputs`` (``Batch.inputs``);
        ``options`` go to :meth:`forward_batch`. Samples run in :meth:`_inference_order`."""
        order = self._inference_order(inputs)
        if order is not None:
            inputs = {k: v[order] for k, v in inputs.items()}
        logits = torch.cat([logits_of(out).detach().float().cpu() for _, _, out in
                            self.forward_batches(inputs, batch_size=batch_size, **options)])
        return logits if order is None else logits[torch.argsort(order)]

    def decision_function(self, X) -> np.ndarray:
        """scikit-learn's convention: the logits ``(n, n_classes)``, or for two classes the
        margin of the positive class ``classes_[1]``, ``logit_1 - logit_0``, shape ``(n,)``."""
        logits = self.logits(self.encode(X).inputs).numpy()
        return logits[:, 1] - logits[:, 0] if logits.shape[1] == 2 else logits

    def predict_proba(self, X) -> np.ndarray:
        """Softmax of the logits, ``(n, n_classes)`` float64."""
        logits = self.logits(self.encode(X).inputs).double()
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X) -> np.ndarray:
        logits = self.logits(self.encode(X).inputs)  # raises NotFittedError first
        return self.classes_[logits.numpy().argmax(axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy; labels not seen in ``fit`` raise a ``ValueError``."""
        self._check_fitted()
        y = np.asarray(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y contains labels not seen in fit: {unseen.tolist()[:5]}.")
        return super().score(X, y, sample_weight=sample_weight)

    def target_indices(self, target, logits) -> np.ndarray:
        """Indices into ``classes_`` of the logits to explain, ``(n,)``: the predicted classes
        for ``target=None`` (from ``logits (n, C)``), else one label for all samples or one
        label per sample."""
        n = len(logits)
        if target is None:
            return np.asarray(logits).argmax(axis=1)
        labels = np.asarray(target)
        if labels.ndim == 0:
            labels = np.full(n, labels.item(), dtype=labels.dtype)
        if labels.ndim != 1 or len(labels) != n:
            raise ValueError(f"target must be one label or {n} labels, got shape {labels.shape}.")
        unseen = sorted(set(labels.tolist()) - set(self.classes_.tolist()), key=str)
        if unseen:
            raise ValueError(f"target contains labels not seen in fit: {unseen[:5]}.")
        return np.searchsorted(self.classes_, labels)

