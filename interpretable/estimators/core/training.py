"""How the neural estimators train: skorch nets with small overridable steps, the training
controls as callbacks, warm start and the fit transaction.

This module holds what importing an estimator needs (the training parameters' constraints and
documentation, the fit transaction, warm start); the skorch side (:class:`TrainingNet`, the
callbacks, :func:`~.nets.train_module`) lives in :mod:`.nets`, imported at the first fit.

An estimator says *what* to train (a module factory, a criterion, tensors and per-phase
overrides) through :meth:`NeuralEstimator._fit_net
<interpretable.estimators.core.base.NeuralEstimator._fit_net>`; :func:`~.nets.train_module` builds
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
import inspect
import re
import textwrap
from collections.abc import Iterator
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions

__all__ = [
    "TRAINING_CONSTRAINTS",
    "OPTIMIZERS",
    "PRECISIONS",
    "SAMPLE_WEIGHT",
    "TrainingDivergedError",
    "check_sample_weight",
    "warm_started",
    "fit_transactionally",
    "TRAINING_DOC",
    "CLASS_WEIGHT_DOC",
    "expand_parameter_docs",
    "with_defaults",
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
    The torch optimizer.
weight_decay : float >= 0
    L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
device : "auto", "cpu", "cuda", "cuda:N" or torch.device
    ``"auto"`` uses CUDA when available.
random_state : int, RandomState or None
    Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
    is left untouched.
verbose : int
    When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
    logging takes it, else printed: plain text unless standard output is a terminal) and,
    on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
    ``explain`` (see :mod:`interpretable.progress`).
callbacks : list or None
    The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
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


def _default_text(value) -> str:
    """A default as scikit-learn's docstrings write it (``"auto"``, ``None``, ``(32,)``)."""
    return f'"{value}"' if isinstance(value, str) else repr(value)


def with_defaults(doc: str | None, init) -> str | None:
    r"""Append ``, default=<value>`` to each Parameters entry that names no default.

    The defaults are read from the signature of ``init``, so shared entries
    (:data:`TRAINING_DOC`) show each estimator's own.

    Parameters
    ----------
    doc : str or None
        A numpydoc docstring.
    init : callable
        The ``__init__`` whose parameters the entries document.

    Returns
    -------
    str or None
        The docstring.

    Examples
    --------
    >>> from interpretable.estimators.core.training import with_defaults
    >>> def init(self, lr=0.01, device="auto"):
    ...     pass
    >>> print(with_defaults("Model.\n\nParameters\n----------\nlr : float\n    Rate.\n"
    ...                     "device : str, default=\"cpu\"\n", init))
    Model.
    <BLANKLINE>
    Parameters
    ----------
    lr : float, default=0.01
        Rate.
    device : str, default="cpu"
    <BLANKLINE>
    """
    if doc is None:
        return None
    parameters = inspect.signature(init).parameters
    lines = doc.split("\n")
    indent = None  # the Parameters section's indentation while inside it
    for i, line in enumerate(lines):
        underlined = i + 1 < len(lines) and set(lines[i + 1].strip()) == {"-"}
        if underlined and line.strip():
            indent = line[:len(line) - len(line.lstrip())] if line.strip() == "Parameters" \
                else None
            continue
        match = re.fullmatch(r"(\s*)(\w+) : (.+?)\s*", line)
        if indent is None or match is None or match.group(1) != indent:
            continue
        parameter = parameters.get(match.group(2))
        if parameter is not None and parameter.default is not inspect.Parameter.empty \
                and "default=" not in match.group(3):
            lines[i] = f"{indent}{match.group(2)} : {match.group(3)}, " \
                       f"default={_default_text(parameter.default)}"
    return "\n".join(lines)


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
