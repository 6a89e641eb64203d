"""Constructor parameters checked against declared constraints.

Every estimator and transformer of the package declares, as scikit-learn's do, a class
attribute ``_parameter_constraints``: for each parameter of ``__init__``, the list of the
kinds of value it accepts. ``fit`` checks the parameters with :func:`validate_parameters`
(through :func:`validate_estimator_parameters`); a value that satisfies none of its
parameter's constraints raises an :class:`InvalidParameterError` naming the parameter, the
values it accepts and the value received.

The constraints:

* an :class:`Interval` of ints or floats, e.g. ``Interval(Integral, 1, None, closed="left")``;
* :class:`StrOptions`, a set of strings;
* :class:`HasMethods`, any object with these methods (duck typing);
* a type: its instances (``str``, ``dict``, ``torch.nn.Module``, ...);
* ``None``: the value None;
* ``callable``: any callable;
* ``"boolean"``: a ``bool`` or ``numpy.bool_``;
* ``"verbose"``: an int >= 0 or a bool;
* ``"random_state"``: an int in [0, 2**32 - 1], a ``numpy.random.RandomState`` or None.

The same vocabulary as scikit-learn's parameter validation, on this module's own classes: the
package depends on no private part of scikit-learn. A bool is not a number here: ``True``
satisfies no :class:`Interval` (a parameter that takes both lists ``"boolean"`` too).
"""

from __future__ import annotations

import inspect
import math
from numbers import Integral, Real
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from collections.abc import Collection, Iterable

    from sklearn.base import BaseEstimator

__all__ = [
    "HasMethods",
    "Interval",
    "InvalidParameterError",
    "StrOptions",
    "parameter_names",
    "validate_estimator_parameters",
    "validate_parameters",
]


class InvalidParameterError(ValueError, TypeError):
    """A parameter's type or value is not one its constraints accept.

    Both a ``ValueError`` and a ``TypeError`` (as scikit-learn's): code catching either
    catches it.

    Examples
    --------
    >>> from interpretable.utils import InvalidParameterError
    >>> issubclass(InvalidParameterError, ValueError), issubclass(InvalidParameterError, TypeError)
    (True, True)
    """


def _type_name(kind: type) -> str:
    if kind is Integral:
        return "int"
    if kind is Real:
        return "float"
    return kind.__qualname__ if kind.__module__ == "builtins" \
        else f"{kind.__module__}.{kind.__qualname__}"


def _is_bool(value) -> bool:
    return isinstance(value, (bool, np.bool_))


class Interval:
    """The ints or floats between two bounds.

    Parameters
    ----------
    type : {numbers.Integral, numbers.Real}
        Ints (``Integral``: Python and numpy ints) or floats (``Real``: ints too).
    left, right : int, float or None
        The bounds (None: unbounded on that side).
    closed : {"left", "right", "both", "neither"}
        Which bounds belong to the interval.

    Examples
    --------
    >>> from numbers import Integral
    >>> from interpretable.utils import Interval
    >>> positive = Interval(Integral, 1, None, closed="left")
    >>> positive.is_satisfied_by(3), positive.is_satisfied_by(0), positive.is_satisfied_by(True)
    (True, False, False)
    >>> print(positive)
    an int in the range [1, inf)
    """

    def __init__(self, type: type, left: float | None, right: float | None, *, closed: str):
        if type not in (Integral, Real):
            raise ValueError(f"type must be numbers.Integral or numbers.Real, got {type!r}.")
        if closed not in ("left", "right", "both", "neither"):
            raise ValueError("closed must be 'left', 'right', 'both' or 'neither', got "
                             f"{closed!r}.")
        for side, bound in (("left", left), ("right", right)):
            if bound is not None and (not isinstance(bound, type) or _is_bool(bound)):
                raise TypeError(f"{side} must be {'an int' if type is Integral else 'a number'}"
                                f" or None, got {bound!r}.")
        if left is not None and right is not None and right <= left:
            raise ValueError(f"right must be greater than left, got left={left} and "
                             f"right={right}.")
        self.type, self.left, self.right, self.closed = type, left, right, closed

    def is_satisfied_by(self, value: object) -> bool:
        """Whether ``value`` is a number of the interval's type within its bounds.

        Parameters
        ----------
        value : object
            The value to check.

        Returns
        -------
        bool
            False for bools and NaN.

        Examples
        --------
        >>> from numbers import Real
        >>> from interpretable.utils import Interval
        >>> Interval(Real, 0, 1, closed="neither").is_satisfied_by(0.5)
        True
        """
        if not isinstance(value, self.type) or _is_bool(value):
            return False
        if not isinstance(value, Integral) and math.isnan(value):
            return False
        if self.left is not None and (value < self.left or value == self.left
                                      and self.closed in ("right", "neither")):
            return False
        return self.right is None or not (value > self.right or value == self.right
                                          and self.closed in ("left", "neither"))

    def __str__(self) -> str:
        bounds = [-math.inf if self.left is None else self.left,
                  math.inf if self.right is None else self.right]
        if self.type is Real:
            bounds = [float(b) for b in bounds]
        low, high = ("-inf" if math.isinf(b) and b < 0 else "inf" if math.isinf(b) else b
                     for b in bounds)
        opening = "[" if self.closed in ("left", "both") else "("
        closing = "]" if self.closed in ("right", "both") else ")"
        return f"{'an int' if self.type is Integral else 'a float'} in the range " \
               f"{opening}{low}, {high}{closing}"

    def __repr__(self) -> str:
        return f"Interval({_type_name(self.type)}, {self.left!r}, {self.right!r}, " \
               f"closed={self.closed!r})"


class StrOptions:
    """One of a set of strings.

    Parameters
    ----------
    options : set of str
        The accepted strings.

    Examples
    --------
    >>> from interpretable.utils import StrOptions
    >>> pooling = StrOptions({"mean", "cls"})
    >>> pooling.is_satisfied_by("cls"), pooling.is_satisfied_by("max")
    (True, False)
    >>> print(pooling)
    a str among {'cls', 'mean'}
    """

    def __init__(self, options: Collection[str]):
        if not all(isinstance(option, str) for option in options):
            raise TypeError(f"options must be strings, got {sorted(map(repr, options))}.")
        self.options = set(options)

    def is_satisfied_by(self, value: object) -> bool:
        """Whether ``value`` is one of the options.

        Parameters
        ----------
        value : object
            The value to check.

        Returns
        -------
        bool
            True for a ``str`` among the options.

        Examples
        --------
        >>> from interpretable.utils import StrOptions
        >>> StrOptions({"auto"}).is_satisfied_by("auto")
        True
        """
        return isinstance(value, str) and value in self.options

    def __str__(self) -> str:
        return f"a str among {{{', '.join(map(repr, sorted(self.options)))}}}"

    def __repr__(self) -> str:
        return f"StrOptions({sorted(self.options)!r})"


class HasMethods:
    """Any object that has these methods.

    Parameters
    ----------
    methods : str or list of str
        The names of the methods.

    Examples
    --------
    >>> from interpretable.utils import HasMethods
    >>> from interpretable.preprocessing import TextEncoder
    >>> encoder = HasMethods(["fit", "tokenize_many"])
    >>> encoder.is_satisfied_by(TextEncoder()), encoder.is_satisfied_by("words")
    (True, False)
    >>> print(encoder)
    an object implementing 'fit' and 'tokenize_many'
    """

    def __init__(self, methods: str | Iterable[str]):
        self.methods = [methods] if isinstance(methods, str) else list(methods)

    def is_satisfied_by(self, value: object) -> bool:
        """Whether ``value`` has every method.

        Parameters
        ----------
        value : object
            The value to check.

        Returns
        -------
        bool
            True when each named attribute of ``value`` is callable.

        Examples
        --------
        >>> from interpretable.utils import HasMethods
        >>> HasMethods("get_vector").is_satisfied_by({})
        False
        """
        return all(callable(getattr(value, method, None)) for method in self.methods)

    def __str__(self) -> str:
        names = [repr(method) for method in self.methods]
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        return f"an object implementing {listed}"

    def __repr__(self) -> str:
        return f"HasMethods({self.methods!r})"


class _Check:
    """A constraint given by a value (a type, None, a marker string): a test and a text."""

    def __init__(self, test, text: str):
        self.is_satisfied_by, self.text = test, text

    def __str__(self) -> str:
        return self.text


_SEED = Interval(Integral, 0, 2**32 - 1, closed="both")
_MARKERS = {
    "boolean": _Check(_is_bool, "a bool"),
    "verbose": _Check(lambda v: _is_bool(v) or isinstance(v, Integral) and v >= 0,
                      "an int in the range [0, inf) or a bool"),
    "random_state": _Check(
        lambda v: v is None or isinstance(v, np.random.RandomState) or _SEED.is_satisfied_by(v),
        f"{_SEED}, an instance of 'numpy.random.RandomState' or None"),
}


def _constraint(constraint):
    """``constraint`` as an object with ``is_satisfied_by`` and a ``str``."""
    if isinstance(constraint, (Interval, StrOptions, HasMethods)):
        return constraint
    if constraint is None:
        return _Check(lambda v: v is None, "None")
    if constraint is callable:
        return _Check(callable, "a callable")
    if isinstance(constraint, type):
        return _Check(lambda v: isinstance(v, constraint),
                      f"an instance of {_type_name(constraint)!r}")
    if isinstance(constraint, str) and constraint in _MARKERS:
        return _MARKERS[constraint]
    raise ValueError(f"unknown constraint {constraint!r}: use an Interval, StrOptions, "
                     "HasMethods, a type, None, callable, 'boolean', 'verbose' or "
                     "'random_state'.")


def validate_parameters(constraints: dict, params: dict, caller_name: str) -> None:
    """Check each parameter against its constraints.

    Parameters
    ----------
    constraints : dict of str to list
        For each parameter, the constraints it accepts (see :mod:`interpretable.utils`): a
        value is valid when it satisfies one of them.
    params : dict of str to object
        The parameters to check; those without an entry in ``constraints`` are not checked.
    caller_name : str
        The estimator or function the parameters belong to, named in the error.

    Raises
    ------
    InvalidParameterError
        For the first parameter that satisfies none of its constraints: the message names
        the parameter, what it accepts and the value received.

    Examples
    --------
    >>> from numbers import Integral
    >>> from interpretable.utils import Interval, StrOptions, validate_parameters
    >>> constraints = {"max_epochs": [Interval(Integral, 1, None, closed="left")],
    ...                "pooling": [StrOptions({"mean", "cls"}), None]}
    >>> validate_parameters(constraints, {"max_epochs": 3, "pooling": None}, "Model")
    >>> try:
    ...     validate_parameters(constraints, {"max_epochs": 0}, "Model")
    ... except ValueError as error:
    ...     print(error)
    The 'max_epochs' parameter of Model must be an int in the range [1, inf). Got 0 instead.
    """
    for name, value in params.items():
        if name not in constraints:
            continue
        accepted = [_constraint(c) for c in constraints[name]]
        if any(c.is_satisfied_by(value) for c in accepted):
            continue
        texts = [str(c) for c in accepted]
        listed = texts[0] if len(texts) == 1 else f"{', '.join(texts[:-1])} or {texts[-1]}"
        raise InvalidParameterError(f"The {name!r} parameter of {caller_name} must be "
                                    f"{listed}. Got {value!r} instead.")


def validate_estimator_parameters(estimator: BaseEstimator) -> None:
    """Check an estimator's parameters against its class's ``_parameter_constraints``.

    Parameters
    ----------
    estimator : estimator
        Any object with ``get_params`` whose class declares ``_parameter_constraints``.

    Raises
    ------
    InvalidParameterError
        If a parameter is invalid (the message names the estimator's class).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.utils import validate_estimator_parameters
    >>> try:
    ...     validate_estimator_parameters(EmbeddingBagClassifier(optimizer="lbfgs"))
    ... except ValueError as error:
    ...     print(error)
    The 'optimizer' parameter of EmbeddingBagClassifier must be a str among
    {'adam', 'adamw', 'rmsprop', 'sgd'}. Got 'lbfgs' instead.
    """
    validate_parameters(type(estimator)._parameter_constraints,
                        estimator.get_params(deep=False), type(estimator).__name__)


def parameter_names(estimator_class: type) -> list[str]:
    """The names of a class's constructor parameters, sorted: the keys of ``get_params``.

    Parameters
    ----------
    estimator_class : type
        An estimator class (its ``__init__`` names every parameter, scikit-learn's
        convention).

    Returns
    -------
    list of str
        The parameter names, ``self`` and ``**kwargs`` left out.

    Examples
    --------
    >>> from interpretable.utils import parameter_names
    >>> from interpretable.preprocessing import TextEncoder
    >>> parameter_names(TextEncoder)
    ['lowercase', 'max_len', 'max_vocab', 'min_freq']
    """
    parameters = list(inspect.signature(estimator_class.__init__).parameters.values())[1:]
    return sorted(p.name for p in parameters if p.kind is not p.VAR_KEYWORD)
