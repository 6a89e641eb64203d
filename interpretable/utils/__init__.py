"""The foundation every layer uses: scikit-learn-style parameter validation (the constraints of
``_parameter_constraints`` and the checks ``fit`` runs) and atomic file writing
(:func:`replacing`, :func:`exclusive`)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.utils._files import (
    check_regular as check_regular,
    exclusive,
    fsync as fsync,
    open_regular as open_regular,
    remove as remove,
    replacing,
    reporting as reporting,
)
from interpretable.utils._params import (
    HasMethods,
    Interval,
    InvalidParameterError,
    StrOptions,
    parameter_names,
    validate_estimator_parameters,
    validate_parameters,
)

__all__ = [
    "validate_parameters", "validate_estimator_parameters", "parameter_names", "Interval",
    "StrOptions", "HasMethods", "InvalidParameterError", "replacing", "exclusive",
]
