"""Constructor parameters declared once, in the signature."""

from __future__ import annotations

import functools
import inspect

__all__ = ["stores_params"]


def stores_params(init):
    """Make an ``__init__`` store every argument unchanged under its own name.

    Parameters
    ----------
    init : callable
        An ``__init__`` whose signature declares the parameters (its body is not run).

    Returns
    -------
    callable
        The ``__init__``: it stores the arguments and does nothing else (no validation, no
        computation; ``fit`` validates), scikit-learn's convention. ``get_params`` and
        ``clone`` read the same signature (``inspect.signature`` follows the wrapper to it).

    Examples
    --------
    >>> from sklearn.base import BaseEstimator
    >>> from interpretable.estimators.core.params import stores_params
    >>> class Model(BaseEstimator):
    ...     @stores_params
    ...     def __init__(self, hidden_size=128, *, lr=1e-3):
    ...         \"\"\"Store the parameters (see the class docstring).\"\"\"
    >>> Model(64).get_params()
    {'hidden_size': 64, 'lr': 0.001}
    """
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    return __init__
