"""Shared machinery of the neural estimators: seeding, device, skorch training, batched
inference, validation of the explain call and safe persistence.

A concrete estimator subclasses :class:`NeuralEstimator`, lists its hyper-parameters in its own
``__init__`` (passing the common ones to ``super().__init__``) and implements

* ``_build_module()``: the ``nn.Module`` (from :mod:`interpretable.nn`) for the fitted state,
* ``_get_fitted_state()`` / ``_set_fitted_state(state)``: the non-tensor fitted attributes as
  JSON-compatible values (see :func:`to_jsonable`), used by :meth:`save` / :meth:`load`,

and trains with :meth:`_fit_net` and predicts with :meth:`_forward_batches`.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted
from skorch import NeuralNet
from skorch.callbacks import Callback

from .._validation import check_random_state_seed, make_generator, resolve_device

__all__ = [
    "NeuralEstimator",
    "NeuralClassifier",
    "TrainingDivergedError",
    "to_jsonable",
    "from_jsonable",
]

_FORMAT_VERSION = 1
_WEIGHTS_FILE = "weights.safetensors"
_CONFIG_FILE = "config.json"
_OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
}


class TrainingDivergedError(RuntimeError):
    """Raised when the training loss becomes NaN or infinite; the last good weights are kept."""


class _DivergenceGuard(Callback):
    """Keep a snapshot of the last finite weights (taken at each epoch start); when the loss
    or the weights stop being finite, restore it and stop with :class:`TrainingDivergedError`.

    The loss is computed before the optimizer step, so the weights are checked too: a step can
    make them non-finite after a batch whose loss was still finite.
    """

    def on_train_begin(self, net, **kwargs):
        self._snapshot = None

    def _weights_finite(self, net) -> bool:
        return all(torch.isfinite(p).all() for p in net.module_.parameters())

    def _diverged(self, net, reason: str):
        if self._snapshot is not None:
            net.module_.load_state_dict(self._snapshot)
        raise TrainingDivergedError(
            f"training diverged in epoch {len(net.history)} ({reason}); the last finite weights "
            "(from the start of an epoch) were restored. Lower the learning rate `lr`."
        )

    def on_epoch_begin(self, net, **kwargs):
        if not self._weights_finite(net):
            self._diverged(net, "the weights became non-finite")
        self._snapshot = copy.deepcopy(net.module_.state_dict())

    def on_batch_end(self, net, batch=None, training=False, loss=None, **kwargs):
        loss = float(loss.detach()) if loss is not None else float("nan")
        if training and not math.isfinite(loss):
            self._diverged(net, f"loss={loss}")

    def on_train_end(self, net, **kwargs):
        if not self._weights_finite(net):
            self._diverged(net, "the weights became non-finite")


class TrainingNet(NeuralNet):
    """skorch ``NeuralNet`` whose criterion receives the module's full output.

    The criterion is an ``nn.Module`` called as ``criterion(module_output, y)``, so models with
    extra outputs (attention, hidden states) add their regularisers there. Override
    :meth:`get_loss` or :meth:`train_step` for anything else.
    """

    def get_loss(self, y_pred, y_true, X=None, training=False):
        return self.criterion_(y_pred, y_true.to(self.device))


class NeuralEstimator(BaseEstimator):
    """Base class of the neural estimators.

    Parameters
    ----------
    lr : float
        Learning rate.
    max_epochs : int
        Number of passes over the training data.
    batch_size : int
        Mini-batch size for training and inference.
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}
    weight_decay : float
    device : "auto", "cpu", "cuda" or torch.device
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None
        Seeds initialisation, shuffling and dropout; the global torch RNG is left untouched.
    verbose : int
        Print skorch's epoch table when > 0.
    """

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
    ):
        self.lr = lr
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose

    # ------------------------------------------------------------------ hooks for subclasses
    def _build_module(self) -> torch.nn.Module:
        raise NotImplementedError

    def _get_fitted_state(self) -> dict:
        raise NotImplementedError

    def _set_fitted_state(self, state: dict) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------------ training
    def _validate_training_params(self) -> None:
        for name in ("max_epochs", "batch_size"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}.")
        if not isinstance(self.lr, (int, float)) or not self.lr > 0:
            raise ValueError(f"lr must be a positive number, got {self.lr!r}.")
        if self.optimizer not in _OPTIMIZERS:
            raise ValueError(
                f"optimizer must be one of {sorted(_OPTIMIZERS)}, got {self.optimizer!r}."
            )

    def _start_fit(self) -> int:
        """Validate the common parameters, set ``device_`` and return the seed of this fit."""
        self._validate_training_params()
        self.device_ = resolve_device(self.device)
        return check_random_state_seed(self.random_state)

    def _fit_net(self, module_factory, criterion, X, y, *, seed, callbacks=(), **net_kwargs):
        """Build the module under ``seed`` and train it with skorch.

        ``module_factory()`` builds the module (called with the torch RNG seeded), ``X`` is a dict
        of CPU tensors passed to ``module.forward(**batch)``, ``y`` a tensor. Sets ``module_`` and
        ``history_``. Returns the skorch net (not stored: the estimator keeps only the module).
        """
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            module = module_factory()
            net = TrainingNet(
                module=module,
                criterion=criterion,
                optimizer=_OPTIMIZERS[self.optimizer],
                optimizer__weight_decay=self.weight_decay,
                lr=self.lr,
                max_epochs=self.max_epochs,
                batch_size=self.batch_size,
                train_split=None,
                iterator_train__shuffle=True,
                iterator_train__generator=make_generator(seed),
                device=self.device_,
                callbacks=[("divergence_guard", _DivergenceGuard()), *callbacks],
                verbose=self.verbose,
                **net_kwargs,
            )
            self.module_ = module
            try:
                net.fit(X, y)
            finally:
                self.module_ = net.module_.eval()
                self.history_ = [dict(epoch) for epoch in net.history]
        return net

    # ------------------------------------------------------------------ inference
    def _check_fitted(self) -> None:
        check_is_fitted(self, "module_")

    def _batches(self, inputs: Mapping[str, torch.Tensor], batch_size=None):
        """Yield ``(rows, batch)``: slices of ``inputs`` (tensors with the sample axis first)
        moved to ``device_``."""
        n = len(next(iter(inputs.values())))
        step = batch_size or self.batch_size
        for start in range(0, n, step):
            rows = slice(start, min(start + step, n))
            yield rows, {k: v[rows].to(self.device_) for k, v in inputs.items()}

    def _forward_batches(
        self, inputs: Mapping[str, torch.Tensor], *, grad: bool = False, batch_size=None
    ) -> Iterator[tuple[slice, object]]:
        """Yield ``(rows, module(**batch))`` over mini-batches of ``inputs`` in eval mode."""
        self._check_fitted()
        self.module_.eval()
        with torch.set_grad_enabled(grad):
            for rows, batch in self._batches(inputs, batch_size):
                yield rows, self.module_(**batch)

    # ------------------------------------------------------------------ explain helpers
    @staticmethod
    def _check_method(method: str, allowed) -> str:
        if method not in allowed:
            raise ValueError(
                f"method={method!r} is not supported; choose one of {sorted(allowed)}."
            )
        return method

    # ------------------------------------------------------------------ persistence
    def save(self, path) -> Path:
        """Save to directory ``path``: ``weights.safetensors`` + ``config.json`` (no pickle)."""
        from safetensors.torch import save_file

        self._check_fitted()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.module_.state_dict().items()}
        save_file(state, str(path / _WEIGHTS_FILE))
        params, dropped = {}, []
        for name, value in self.get_params(deep=False).items():
            try:
                json.dumps(to_jsonable(value))
                params[name] = to_jsonable(value)
            except TypeError:
                dropped.append(name)
        config = {
            "format_version": _FORMAT_VERSION,
            "estimator": type(self).__name__,
            "params": params,
            "dropped_params": dropped,
            "fitted": to_jsonable(self._get_fitted_state()),
        }
        (path / _CONFIG_FILE).write_text(json.dumps(config, indent=1))
        return path

    @classmethod
    def load(cls, path, device="auto"):
        """Load an estimator saved with :meth:`save`. Parameters that could not be stored as
        JSON (e.g. a ``KeyedVectors`` object) come back as ``None``; the fitted weights
        already contain what they contributed."""
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        path = Path(path)
        config_file, weights_file = path / _CONFIG_FILE, path / _WEIGHTS_FILE
        for f in (config_file, weights_file):
            if not f.is_file():
                raise FileNotFoundError(f"{f} does not exist; is {path} a saved estimator?")
        try:
            config = json.loads(config_file.read_text())
            name = config["estimator"]
            params, fitted = config["params"], from_jsonable(config["fitted"])
        except (json.JSONDecodeError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise ValueError(f"{config_file} is corrupt or not an interpretable config: {exc}")
        if config.get("format_version") != _FORMAT_VERSION:
            raise ValueError(f"{config_file} has unsupported format {config.get('format_version')}.")
        klass = NeuralEstimator._registry.get(name)
        if klass is None or not issubclass(klass, cls):
            raise ValueError(f"{path} holds a {name}, which is not a {cls.__name__}.")
        params = {k: from_jsonable(v) for k, v in params.items()}
        params.update({k: None for k in config.get("dropped_params", [])})
        params["device"] = device
        estimator = klass(**params)
        estimator.device_ = resolve_device(device)
        estimator._set_fitted_state(fitted)
        module = estimator._build_module()
        try:
            state = load_file(str(weights_file))
            module.load_state_dict(state, strict=True)
        except (SafetensorError, RuntimeError, OSError) as exc:
            raise ValueError(f"{weights_file} is corrupt or does not match the config: {exc}")
        estimator.module_ = module.to(estimator.device_).eval()
        estimator.history_ = []
        return estimator

    def __sklearn_is_fitted__(self):
        return hasattr(self, "module_")


class NeuralClassifier(ClassifierMixin, NeuralEstimator):
    """Classifier outputs shared by the text and image classifiers.

    Subclasses implement ``decision_function(X) -> (n, n_classes)`` logits and set ``classes_``.
    """

    def predict_proba(self, X) -> np.ndarray:
        """Softmax of the logits, ``(n, n_classes)`` float64."""
        logits = torch.from_numpy(np.asarray(self.decision_function(X), dtype=np.float64))
        return torch.softmax(logits, dim=1).numpy()

    def predict(self, X) -> np.ndarray:
        logits = np.asarray(self.decision_function(X))  # raises NotFittedError first
        return self.classes_[logits.argmax(axis=1)]

    def score(self, X, y, sample_weight=None) -> float:
        """Accuracy; labels not seen in ``fit`` raise a ``ValueError``."""
        self._check_fitted()
        y = np.asarray(y)
        unseen = np.setdiff1d(np.unique(y), self.classes_)
        if unseen.size:
            raise ValueError(f"y contains labels not seen in fit: {unseen.tolist()[:5]}.")
        return super().score(X, y, sample_weight=sample_weight)

    def _class_indices(self, target, n: int) -> np.ndarray | None:
        """Indices into ``classes_`` of the logits to explain: None for ``target=None`` (the
        predicted classes), else one label for all ``n`` samples or one label per sample."""
        if target is None:
            return None
        labels = np.asarray(target)
        if labels.ndim == 0:
            labels = np.full(n, labels.item(), dtype=labels.dtype)
        if labels.ndim != 1 or len(labels) != n:
            raise ValueError(f"target must be one label or {n} labels, got shape {labels.shape}.")
        unseen = sorted(set(labels.tolist()) - set(self.classes_.tolist()), key=str)
        if unseen:
            raise ValueError(f"target contains labels not seen in fit: {unseen[:5]}.")
        return np.searchsorted(self.classes_, labels)


def to_jsonable(value):
    """Encode numpy arrays / scalars and nested containers as JSON-compatible values."""
    if isinstance(value, np.ndarray):
        if value.dtype == object:
            return {"__ndarray__": [to_jsonable(v) for v in value.tolist()], "dtype": "object"}
        return {"__ndarray__": value.tolist(), "dtype": value.dtype.str}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            return {"__items__": [[to_jsonable(k), to_jsonable(v)] for k, v in value.items()]}
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [to_jsonable(v) for v in value]}
    if isinstance(value, list):
        return [to_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store a {type(value).__name__} as JSON")


def from_jsonable(value):
    """Inverse of :func:`to_jsonable`."""
    if isinstance(value, dict):
        if "__ndarray__" in value:
            dtype = value["dtype"]
            dtype = object if dtype == "object" else np.dtype(dtype)
            return np.array(from_jsonable(value["__ndarray__"]), dtype=dtype)
        if "__tuple__" in value:
            return tuple(from_jsonable(v) for v in value["__tuple__"])
        if "__items__" in value:
            return {from_jsonable(k): from_jsonable(v) for k, v in value["__items__"]}
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value

