"""The explanation methods, one object each, in one registry.

An :class:`Explainer` declares its ``name``, the estimators it ``applies_to`` and whether it is
``class_independent``, and computes attributions for one batch (:meth:`Explainer.attribute`);
the shared loop of :meth:`Explainer.explain` does batching, padding, targets and assembly.
``estimator.explain(X, method=name)`` finds it through :func:`get_explainer`;
``estimator.explain_methods`` lists the methods that apply, the default first (the first
registered). Options only metrics need (e.g. ``embedding_offset``) go through
``get_explainer(estimator, name).explain(estimator, X, ...)``.

Adding a method is adding one registered object (see CONTRIBUTING.md)::

    @register
    class TokenLength(TokenExplainer):
        name = "token_length"
        def attribute(self, estimator, batch, target):
            ...
"""

from . import bcos_text  # first: "inherent" is the default of the B-cos text models
from . import image, sequence, text
from .base import (Attributions, Explainer, describe_explainers, explainers_for, get_explainer,
                   register)
from .image import ImageExplainer
from .sequence import StepExplainer
from .text import TokenExplainer

__all__ = ["Attributions", "Explainer", "describe_explainers", "bcos_text", "ImageExplainer",
           "StepExplainer", "TokenExplainer",
           "explainers_for", "get_explainer", "register", "image", "sequence", "text"]
