"""The state that ``pickle``, ``copyreg``-based tools (joblib, cloudpickle) and ``skops.io``
store for an estimator: plain data instead of torch objects.

The state of a fitted estimator is what :meth:`~.base.NeuralEstimator.save` writes, kept as
Python values: its parameters, the parameters it was fitted with, its fitted state (the
JSON-compatible ``_get_fitted_state()``), the module's tensors as numpy arrays and the other
fitted attributes JSON can hold (``history_``, ...); as in the saved folder, the fitted
models that fit borrowed (a distillation teacher, ``_borrowed_params``) are not stored.
Unpickling rebuilds the module as :meth:`~.base.NeuralEstimator.load` does
(:func:`.persistence.restore_estimator`): parameters and fitted state checked, the module
built on the meta device, every tensor's name, shape and dtype compared with it and
non-finite weights refused before any weight is used. The module goes to the estimator's
``device`` (the CPU where that device is not available here), so a pickle made on a GPU
machine loads on a CPU one.

skops: the state holds only types skops trusts by default (str, numbers, lists, tuples, dicts,
numpy arrays), the estimator itself and the objects its parameters hold (e.g. a
``TextEncoder``, a SEAT variant). :func:`trusted_types` lists the package's own classes; load
with ``skops.io.load(path, trusted=trusted_types())``, which refuses a file holding any other
type (``skops.io.get_untrusted_types(file=path)`` shows what a file holds). Each of those
classes is rebuilt from data only and checked as above, so trusting them runs no code from the
file.
"""

from __future__ import annotations

import copy
import os

import numpy as np
import torch
from sklearn.base import BaseEstimator

from interpretable.estimators.core._model_folder import FORMAT_VERSION
from interpretable.estimators.core._persistence import from_jsonable, restore_estimator, to_jsonable
from interpretable.estimators.core._training import is_fitted_attribute
from interpretable.nn import resolve_device
from interpretable.utils import parameter_names, validate_parameters

__all__ = ["trusted_types"]

STATE_VERSION = 1
_KEYS = {"interpretable_state", "estimator", "params"}
_FITTED_KEYS = _KEYS | {"fitted_params", "fitted", "weights", "attributes"}
#: fitted attributes the state stores otherwise (the module's weights, the restore device)
_REBUILT = {"module_", "device_", "fitted_params_"}


class EstimatorState:
    """Mixin: pickling and skops through :func:`estimator_state`.

    ``copy.copy`` and ``copy.deepcopy`` copy the attributes as they are (the module included).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> import pickle
    >>> pickle.loads(pickle.dumps(clf)).predict(["good film"]).shape
    (1,)
    """

    def __getstate__(self) -> dict:
        return estimator_state(self)

    def __setstate__(self, state) -> None:
        set_estimator_state(self, state)

    def __copy__(self):
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        return new

    def __deepcopy__(self, memo):
        new = type(self).__new__(type(self))
        memo[id(self)] = new
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
        return new


def estimator_state(estimator) -> dict:
    """Return the plain-data state of an estimator (see the module docstring).

    It reads the estimator, never changes it.

    Parameters
    ----------
    estimator : NeuralEstimator
        The estimator, fitted or not.

    Returns
    -------
    dict
        Its parameters and, when fitted, its fitted state and weights.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.estimators.core._state import estimator_state
    >>> sorted(estimator_state(clf))
    ['attributes', 'estimator', 'fitted', 'fitted_params', 'interpretable_state', 'params',
     'weights']
    """
    state = {"interpretable_state": STATE_VERSION, "estimator": type(estimator).saved_as,
             "params": estimator.get_params(deep=False)}
    if not hasattr(estimator, "module_"):
        return state
    attributes = {}
    for name, value in vars(estimator).items():
        if is_fitted_attribute(name) and name not in _REBUILT:
            try:
                attributes[name] = to_jsonable(value)
            except TypeError:  # an object: rebuilt from the fitted state
                continue
    weights = {name: tensor.detach().cpu().numpy()
               for name, tensor in estimator.module_.state_dict().items()}
    return {**state, "params": _lent_back(estimator, state["params"]),
            "fitted_params": _lent_back(estimator, estimator.fitted_params_),
            "fitted": estimator._get_fitted_state(), "weights": weights,
            "attributes": attributes}


def _lent_back(estimator, params: dict) -> dict:
    """``params`` of a fitted estimator without the models it borrowed for fitting
    (``_borrowed_params``, e.g. a teacher): None in their place, a folder's path kept."""
    return {name: None if name in estimator._borrowed_params
            and not isinstance(value, (str, os.PathLike)) else value
            for name, value in params.items()}


def set_estimator_state(estimator, state) -> None:
    """Make a new, empty estimator the one a state describes.

    Parameters
    ----------
    estimator : NeuralEstimator
        A new instance (``cls.__new__(cls)``).
    state : dict
        A state from :func:`estimator_state`.

    Raises
    ------
    ValueError
        If ``state`` is not a state of the estimator's class (the error names what is wrong).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.estimators.core._state import estimator_state, set_estimator_state
    >>> copy = EmbeddingBagClassifier.__new__(EmbeddingBagClassifier)
    >>> set_estimator_state(copy, estimator_state(clf))
    >>> copy.predict(["good film"]).tolist() == clf.predict(["good film"]).tolist()
    True
    """
    cls = type(estimator)
    if not isinstance(state, dict) or state.get("interpretable_state") != STATE_VERSION:
        found = state.get("interpretable_state") if isinstance(state, dict) else None
        raise ValueError(f"not the state of a {cls.__name__} of this version of interpretable "
                         f"(state version {found!r:.20}; this version reads version "
                         f"{STATE_VERSION}).")
    if state.keys() not in (_KEYS, _FITTED_KEYS) or state["estimator"] != cls.saved_as:
        raise ValueError(f"the state of a {cls.__name__} needs the keys {sorted(_FITTED_KEYS)} "
                         f"and estimator {cls.saved_as!r}; got {sorted(state)[:8]} and "
                         f"{state['estimator']!r:.40}.")
    params = _checked_params(cls, state["params"])
    if state.keys() == _FITTED_KEYS:
        restored = _restored(cls, state, params["device"])
        estimator.__dict__.update(vars(restored))
        kept = set(vars(restored)) - {"history_"}  # the save format has no history
        attributes = state["attributes"]
        if not isinstance(attributes, dict):
            raise ValueError("the state's attributes must be a dict.")
        for name, value in attributes.items():
            if not is_fitted_attribute(name):
                raise ValueError(f"the state's attributes hold {name!r:.40}, which is not the "
                                 "name of a fitted attribute.")
            if name not in kept:
                setattr(estimator, name, from_jsonable(value))
        estimator.fitted_params_ = dict(state["fitted_params"])
    estimator.__dict__.update(params)


def _checked_params(cls, params) -> dict:
    """The parameters of a state: each of ``cls`` once, each valid."""
    names = set(parameter_names(cls))
    if not isinstance(params, dict) or params.keys() != names:
        found = sorted(params) if isinstance(params, dict) else type(params).__name__
        raise ValueError(f"the state's params must name each parameter of {cls.__name__} "
                         f"once, got {found}.")
    validate_parameters(cls._parameter_constraints, params, cls.__name__)
    return params


def _restored(cls, state: dict, device):
    """The fitted estimator of ``state``, checked and built as ``load`` builds a saved one, on
    ``device`` (the CPU where it is not available)."""
    try:
        resolve_device(device)
    except ValueError:
        device = "cpu"
    weights = state["weights"]
    if not isinstance(weights, dict) or not all(
            isinstance(k, str) and isinstance(v, np.ndarray) and v.dtype.kind in "biuf"
            for k, v in weights.items()):
        raise ValueError("the state's weights must map tensor names to numeric numpy arrays.")
    config = {"format_version": FORMAT_VERSION, "estimator": cls.saved_as,
              "params": state["fitted_params"], "dropped_params": [],
              "fitted": state["fitted"], "weights": None}

    def read(name: str) -> torch.Tensor:
        array = weights[name]
        return torch.from_numpy(array if array.flags.writeable else array.copy())

    try:
        return restore_estimator(config, cls, device,
                                 {k: tuple(v.shape) for k, v in weights.items()}, read)
    except ValueError as exc:
        raise ValueError(f"cannot restore the {cls.__name__}: {exc}") from exc


def _subclasses(cls):
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def trusted_types() -> list[str]:
    """Return the names of the package's classes that an estimator's skops file may hold.

    These are the estimators and the scikit-learn-style objects their parameters take (text
    encoders, SEAT variants). Pass them as ``skops.io.load(path, trusted=trusted_types())``.

    Returns
    -------
    list of str
        Qualified class names, sorted.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> import skops.io
    >>> from interpretable.estimators.core import trusted_types
    >>> skops.io.dump(clf, "model.skops")
    >>> skops.io.load("model.skops", trusted=trusted_types()).classes_
    array(['neg', 'pos'], dtype='<U3')
    """
    import interpretable

    for name in interpretable.__all__:  # import every estimator module
        getattr(interpretable, name)
    return sorted({f"{c.__module__}.{c.__name__}" for c in _subclasses(BaseEstimator)
                   if c.__module__.split(".")[0] == "interpretable"})
