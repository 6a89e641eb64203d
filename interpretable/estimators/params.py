"""Constructor parameters declared once, in the signature."""

from __future__ import annotations

import functools
import inspect

__all__ = ["stores_params"]


def stores_params(init):
    """Decorate an ``__init__`` whose signature declares the parameters: every argument is
    stored unchanged under its own name, scikit-learn's convention, and nothing else happens
    (no validation, no computation; ``fit`` validates). ``get_params`` and ``clone`` read the
    same signature (``inspect.signature`` follows the wrapper to it)::

        @stores_params
        def __init__(self, hidden_size=128, *, lr=1e-3):
            \"\"\"Store the parameters (see the class docstring).\"\"\"
    """
    signature = inspect.signature(init)

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for name, value in list(bound.arguments.items())[1:]:
            setattr(self, name, value)

    return __init__
