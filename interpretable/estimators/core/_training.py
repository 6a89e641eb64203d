"""How the neural estimators train: skorch nets with small overridable steps, the training
controls as callbacks, warm start and the fit transaction.

This module holds what importing an estimator needs (the training parameters' constraints,
the fit transaction, warm start); the skorch side (:class:`TrainingNet`, the
callbacks, :func:`~.nets.train_module`) lives in :mod:`.nets`, imported at the first fit.

An estimator says *what* to train (a module factory, a criterion, tensors and per-phase
overrides) through :meth:`NeuralEstimator._fit_net
<interpretable.estimators.core.NeuralEstimator._fit_net>`; :func:`~.nets.train_module` builds
the net from the estimator's training parameters and trains it:

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
import weakref
from collections.abc import Iterator
from numbers import Integral, Real

import numpy as np
import torch

from interpretable._validation import warn_caller
from interpretable.nn import autocast_fallbacks
from interpretable.utils import HasMethods, Interval, StrOptions

__all__ = ["TrainingDivergedError"]

OPTIMIZERS = {
    "adam": torch.optim.Adam,
    "adamw": torch.optim.AdamW,
    "sgd": torch.optim.SGD,
    "rmsprop": torch.optim.RMSprop,
}
#: autocast dtype of each ``precision`` (None: the parameters' own)
PRECISIONS = {"float32": None, "bf16": torch.bfloat16}
#: the options each estimator was warned about by :func:`checked_autocast` (a fit's working
#: copy, so once per fit, or the fitted estimator, so once per estimator)
_WARNED_FALLBACK: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
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


def checked_autocast(estimator, module: torch.nn.Module, option: str,
                     dtype: torch.dtype | None, doing: str) -> torch.dtype | None:
    """The dtype to run ``module`` under autocast in, on ``estimator.device_``, for ``option``
    (``"precision"`` or ``"inference_precision"``), which asks for ``dtype`` (None: float32).

    Where torch has no ``dtype`` kernel of a recurrent layer there (oneDNN's bfloat16 LSTM
    without AVX-512, see :func:`~interpretable.nn._recurrent.autocast_fallbacks`), the
    package's own layers run in float32 and the rest in ``dtype``: returns ``dtype``; a layer
    run by a custom module cannot switch alone: returns None (float32 throughout). Either
    warns once per estimator and option, ``doing`` (e.g. ``"training"``) naming the step.
    """
    fallbacks = [] if dtype is None else autocast_fallbacks(module, estimator.device_, dtype)
    if not fallbacks:
        return dtype
    kinds = "/".join(sorted({layer.kind for layer in fallbacks}))
    custom = [layer.name for layer in fallbacks if not layer.handled]
    warned = _WARNED_FALLBACK.setdefault(estimator, set())
    if option not in warned:
        warned.add(option)
        name = str(dtype).removeprefix("torch.")
        outcome = (f"{doing} runs the {kinds} layers in float32 and the rest in {name}"
                   if not custom else f"{kinds} {', '.join(map(repr, custom[:3]))} of a custom "
                   f"module cannot switch alone, so {doing} runs in float32 throughout")
        warn_caller(f"{type(estimator).__name__}: {option}={getattr(estimator, option)!r} but "
                    f"torch has no {name} {kinds} kernel on {estimator.device_} "
                    f"({fallbacks[0].reason}); {outcome}.")
    return None if custom else dtype


class TrainingDivergedError(RuntimeError):
    """Raised when the training loss or the weights become NaN or infinite; the estimator keeps
    the state it had before ``fit`` (fit is transactional)."""


def check_sample_weight(sample_weight, n_samples: int) -> np.ndarray | None:
    """``sample_weight`` as a checked float64 array ``(n,)``, or None: a copy, writable even
    when the input is not (a pandas Series gives a read-only view, which torch warns about)."""
    if sample_weight is None:
        return None
    weight = np.array(sample_weight, dtype=np.float64)
    if weight.shape != (n_samples,):
        raise ValueError(f"sample_weight must have shape ({n_samples},), got {weight.shape}.")
    if not np.isfinite(weight).all() or (weight < 0).any() or not weight.sum() > 0:
        raise ValueError("sample_weight must be finite and non-negative, not all zero.")
    return weight


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
def is_fitted_attribute(name) -> bool:
    """Whether ``name`` is a fitted attribute: an identifier ending in ``_`` that does not
    start with ``_`` (scikit-learn's convention); what a fit moves in and a state holds."""
    return isinstance(name, str) and name.isidentifier() and name.endswith("_") \
        and not name.startswith("_")


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
        for name in [k for k in vars(work) if is_fitted_attribute(k)]:
            delattr(work, name)
    fit(work, X, y, sample_weight)
    work.fitted_params_ = work.get_params(deep=False)
    for name in [k for k in vars(estimator) if is_fitted_attribute(k)]:
        delattr(estimator, name)
    estimator.__dict__.update({k: v for k, v in vars(work).items() if is_fitted_attribute(k)})
    return estimator
