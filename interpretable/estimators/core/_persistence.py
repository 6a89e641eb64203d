"""Safe persistence of fitted estimators: a folder with ``config.json`` (parameters and fitted
state as JSON) and the safetensors file of the module's tensors that it names. Never pickle:
no code from a model file ever runs.

:func:`save_estimator` first checks that what it writes loads back, then replaces the model in
one step (see :mod:`.model_folder`: loads running meanwhile, in any process, get the previous
model or the new one, never a mix; a failed or killed save leaves the previous one).
:func:`load_estimator` treats both files as hostile: it bounds the config's size and nesting,
checks its schema, validates the parameters (the estimator's ``_parameter_constraints``) and
the fitted state, builds the module on the meta device and compares every tensor's name and
shape with the weights file's header before reading any tensor (so memory is bounded by the
file size), and refuses non-finite weights.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from sklearn.base import BaseEstimator

from interpretable.estimators.core._model_folder import (
    CONFIG_FILE,
    FORMAT_VERSION,
    check_schema,
    check_target,
    new_weights_name,
    publish,
    read_snapshot,
)
from interpretable.nn import resolve_device
from interpretable.utils import (
    InvalidParameterError,
    check_regular,
    parameter_names,
    validate_estimator_parameters,
    validate_parameters,
)

if TYPE_CHECKING:
    import os
    from typing import TypeVar

    from interpretable.estimators.core._base import NeuralEstimator

    _Estimator = TypeVar("_Estimator", bound=NeuralEstimator)

__all__ = ["save_estimator", "load_estimator"]

#: bound on the size of a decoded array in a config
MAX_ARRAY_BYTES = 2**30
_TRUSTED_USE = "pickle works for trusted use"


# ---------------------------------------------------------------------------- JSON encoding
def to_jsonable(value, name="value"):
    """Encode numpy arrays / scalars, tuples and dicts with non-str keys as JSON-compatible
    values; anything else JSON cannot hold raises a ``TypeError`` naming where it is in
    ``name``."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biufU":
            return {"__ndarray__": value.tolist(), "dtype": value.dtype.str}
        if value.dtype == object:
            return {"__ndarray__": to_jsonable(value.tolist(), name), "dtype": "object"}
        raise TypeError(f"cannot store {name} (an array of dtype {value.dtype}) as JSON")
    if isinstance(value, np.generic):
        return to_jsonable(value.item(), name)
    if isinstance(value, Mapping):
        if all(isinstance(k, str) and not k.startswith("__") for k in value):
            return {k: to_jsonable(v, f"{name}[{k!r}]") for k, v in value.items()}
        return {"__items__": [[to_jsonable(k, f"a key of {name}"), to_jsonable(v, f"{name}[{k!r}]")]
                              for k, v in value.items()]}
    if isinstance(value, (tuple, list)):
        items = [to_jsonable(v, f"{name}[{i}]") for i, v in enumerate(value)]
        return {"__tuple__": items} if isinstance(value, tuple) else items
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"cannot store {name} (a {type(value).__name__}) as JSON")


def from_jsonable(value):
    """Inverse of :func:`to_jsonable`; malformed input raises a ``ValueError``."""
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    if not isinstance(value, dict):
        return value
    if "__ndarray__" in value:
        return _decode_array(_marked(value, "__ndarray__", "dtype"), value["dtype"])
    if "__tuple__" in value:
        return tuple(from_jsonable(v) for v in _marked(value, "__tuple__"))
    if "__items__" in value:
        items = _marked(value, "__items__")
        if not all(isinstance(kv, list) and len(kv) == 2 for kv in items):
            raise ValueError("__items__ must be a list of [key, value] pairs")
        return {from_jsonable(k): from_jsonable(v) for k, v in items}
    return {k: from_jsonable(v) for k, v in value.items()}


def _marked(value: dict, marker: str, *extra: str) -> list:
    """The list under ``marker`` of an encoded value, checking the entry's keys."""
    if value.keys() != {marker, *extra} or not isinstance(value[marker], list):
        raise ValueError(f"malformed {marker} entry with keys {sorted(value)}")
    return value[marker]


def _decode_array(items: list, dtype) -> np.ndarray:
    values = np.array(from_jsonable(items), dtype=object)
    if dtype == "object":
        return values
    try:
        dtype = np.dtype(dtype) if isinstance(dtype, str) else None
    except TypeError:
        dtype = None
    if dtype is None or dtype.kind not in "biufU" or values.size * dtype.itemsize > MAX_ARRAY_BYTES:
        raise ValueError(f"arrays of dtype {dtype!r} with {values.size} values are not accepted")
    try:
        return values.astype(dtype)
    except (TypeError, OverflowError) as exc:
        raise ValueError(f"cannot decode an array of dtype {dtype}: {exc}") from None


# ---------------------------------------------------------------------------- save
def save_estimator(estimator: NeuralEstimator, path: str | os.PathLike[str]) -> Path:
    """Save a fitted estimator to the folder ``path``; see :meth:`NeuralEstimator.save`."""
    path = Path(path)
    check_target(path)
    text = json.dumps({**_config(estimator), "weights": new_weights_name()}, indent=1)
    state = {k: v.detach().cpu().contiguous() for k, v in estimator.module_.state_dict().items()}
    try:
        restore_estimator(json.loads(text), type(estimator), "cpu",
                          {k: tuple(v.shape) for k, v in state.items()}, state.__getitem__)
    except ValueError as exc:
        raise ValueError(f"cannot save {type(estimator).__name__}: the files would not load "
                         f"back: {exc}") from exc
    publish(path, text, state)
    return path


def _config(estimator) -> dict:
    """config.json of a fitted estimator: the parameters it was fitted with (parameters JSON
    cannot hold are listed in ``dropped_params`` and load as None) and its fitted state."""
    name = type(estimator).saved_as
    params, dropped = {}, []
    for key, value in estimator.fitted_params_.items():
        try:
            params[key] = to_jsonable(value)
        except TypeError:
            dropped.append(key)
    try:  # load takes the device from its argument
        validate_parameters(
            {k: estimator._parameter_constraints[k] for k in dropped if k != "device"},
            dict.fromkeys(dropped), name)
    except InvalidParameterError as exc:
        raise TypeError(f"cannot save {name}: parameter(s) {dropped} cannot be stored as JSON "
                        f"and None cannot replace them ({exc}); {_TRUSTED_USE}.") from None
    try:
        fitted = to_jsonable(estimator._get_fitted_state(), "the fitted state")
    except TypeError as exc:
        raise TypeError(f"cannot save {name}: {exc}; {_TRUSTED_USE}.") from None
    return {"format_version": FORMAT_VERSION, "estimator": name, "params": params,
            "dropped_params": dropped, "fitted": fitted}


# ---------------------------------------------------------------------------- load
def load_estimator(cls: type[_Estimator], path: str | os.PathLike[str],
                   device: str | torch.device = "auto") -> _Estimator:
    """Load an estimator saved by :func:`save_estimator`; see :meth:`NeuralEstimator.load`."""
    path = Path(path)

    def read(config, weights_file: Path):
        try:
            check_regular(weights_file)  # safetensors would block on a named pipe
            with safe_open(str(weights_file), framework="pt") as f:
                # safe_open has keys() but is not iterable (`for k in f` raises TypeError)
                shapes = {k: tuple(f.get_slice(k).get_shape()) for k in f.keys()}  # noqa: SIM118
                return restore_estimator(config, cls, device, shapes, f.get_tensor)
        except RuntimeError:  # torch opens the file again to read the tensors
            if weights_file.is_file():
                raise
            raise FileNotFoundError(f"{weights_file} was deleted while being read") from None
        except SafetensorError as exc:
            raise ValueError(f"{weights_file} is corrupt: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"cannot load {path}: {exc}") from exc

    return read_snapshot(path, read)


def restore_estimator(config, cls, device, shapes: Mapping[str, tuple],
                      read: Callable[[str], torch.Tensor], dtype: torch.dtype | None = None):
    """The fitted estimator described by ``config`` (decoded config.json) and its tensors:
    ``shapes`` maps each tensor's name to its shape, ``read(name)`` reads it. Raises a
    ``ValueError`` naming the wrong field or tensor; reads tensors only once the module built
    from the config has exactly their names and shapes. ``dtype``: the module's floating
    dtype (None: the one ``_build_module`` gives)."""
    estimator = _estimator_from_config(config, cls, device)
    module = _meta_module(estimator)
    if dtype is not None:
        module = module.to(dtype)
    expected = module.state_dict()
    missing, unexpected = sorted(expected.keys() - shapes), sorted(shapes.keys() - expected)
    if missing or unexpected:
        raise ValueError(f"the weights file holds the weights of another model: tensors missing "
                         f"{missing[:5]}, unexpected {unexpected[:5]}.")
    for name, meta in expected.items():
        if tuple(meta.shape) != shapes[name]:
            sources = _shape_sources(estimator, name, meta.shape)
            raise ValueError(f"tensor {name!r} has shape {shapes[name]} in the weights file but "
                             f"{CONFIG_FILE} implies {tuple(meta.shape)} (its shape follows "
                             f"{sources or 'the fitted state'}).")
    tensors = {name: _checked_tensor(name, read(name), meta.dtype)
               for name, meta in expected.items()}
    module.load_state_dict(tensors, strict=True, assign=True)
    stale = _meta_tensors(module)
    if stale:
        raise TypeError(f"{type(estimator).__name__}._build_module() keeps tensors outside the "
                        f"module's state_dict ({stale[:5]}); they cannot be saved or loaded.")
    estimator.module_ = module.to(estimator.device_).eval()
    estimator.history_ = []
    estimator.fitted_params_ = estimator.get_params(deep=False)
    return estimator


def _meta_module(estimator) -> torch.nn.Module:
    """The estimator's module on the meta device: shapes without memory."""
    try:
        with torch.device("meta"):
            return estimator._build_module()
    except Exception as exc:  # noqa: BLE001 - any failure means the config is unusable
        raise ValueError(f"the module described by {CONFIG_FILE} cannot be built on the meta "
                         f"device ({type(exc).__name__}: {exc}).") from exc


def _shape_sources(estimator, name: str, shape: torch.Size) -> list[str]:
    """The integer parameters and fitted attributes that the shape of tensor ``name`` follows:
    each is doubled in turn and the module rebuilt on the meta device."""
    sources = []
    for attr, value in vars(estimator).items():
        if type(value) is int and value:
            trial = copy.copy(estimator)
            setattr(trial, attr, 2 * value)
            try:
                if _meta_module(trial).state_dict()[name].shape != shape:
                    sources.append(attr)
            except ValueError:
                continue
    return sources


def _estimator_from_config(config, cls, device):
    """The estimator described by ``config``, without its module: schema, parameters and
    fitted state checked."""
    check_schema(config)
    name = config["estimator"]
    klass = cls._saved_classes.get(name) if isinstance(name, str) else None
    if klass is None or not issubclass(klass, cls):
        raise ValueError(f"{CONFIG_FILE} holds estimator {name!r}, which is not a known "
                         f"{cls.__name__}.")
    params, dropped, fitted = config["params"], config["dropped_params"], config["fitted"]
    if not isinstance(params, dict) or not isinstance(dropped, list) \
            or not all(isinstance(k, str) for k in dropped):
        raise ValueError(f"{CONFIG_FILE}: params must be an object and dropped_params a list "
                         "of parameter names.")
    stored, names = {*params, *dropped}, set(parameter_names(klass))
    wrong = sorted(stored - names) + sorted(names - stored) + sorted(set(params) & set(dropped))
    if wrong:
        raise ValueError(f"{CONFIG_FILE}: params must name each parameter of {name} once; "
                         f"unknown, missing or repeated: {wrong}.")
    try:
        estimator = klass(**{**{k: from_jsonable(v) for k, v in params.items()},
                             **dict.fromkeys(dropped), "device": device})
        estimator._validate_parameters()
    except (TypeError, ValueError) as exc:
        raise ValueError(f"{CONFIG_FILE} params: {exc}") from exc
    estimator.device_ = resolve_device(device)
    try:
        estimator._set_fitted_state(from_jsonable(fitted))
        for value in vars(estimator).values():
            if isinstance(value, BaseEstimator):
                validate_estimator_parameters(value)
    except Exception as exc:  # noqa: BLE001 - any failure means the fitted state is unusable
        raise ValueError(f"{CONFIG_FILE} has an invalid fitted state "
                         f"({type(exc).__name__}: {exc}).") from exc
    return estimator


def _checked_tensor(name: str, tensor: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    if tensor.dtype != dtype:
        raise ValueError(f"tensor {name!r} has dtype {tensor.dtype} in the weights file; the model "
                         f"needs {dtype}.")
    if tensor.is_floating_point() and not torch.isfinite(tensor).all():
        raise ValueError(f"tensor {name!r} in the weights file holds NaN or infinite values.")
    return tensor


def _meta_tensors(module: torch.nn.Module) -> list[str]:
    """Names of the tensors (buffers and plain attributes) still on the meta device."""
    named = [*module.named_buffers(),
             *((f"{prefix}.{k}".lstrip("."), v) for prefix, m in module.named_modules()
               for k, v in vars(m).items() if isinstance(v, torch.Tensor))]
    return sorted(name for name, t in named if t.is_meta)

