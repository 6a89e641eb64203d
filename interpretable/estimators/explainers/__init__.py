"""The explanation methods of every estimator family, in one place.

An :class:`Explainer` declares its ``name`` and whether it is ``class_independent``, and
computes attributions for one batch (:meth:`Explainer.attribute`); the shared loop of
:meth:`Explainer.explain` does batching, padding, targets and assembly. Each estimator class
declares the methods it offers in its ``explainers`` class attribute, its default first;
``estimator.explain(X, method=name)`` finds the method there through :func:`get_explainer`,
and ``estimator.explain_methods`` lists their names. Options only metrics need (e.g.
``embedding_offset``) go through ``get_explainer(estimator, name).explain(estimator, X, ...)``.

Adding a method is writing one object and declaring it on the estimator (see
CONTRIBUTING.md)::

    class TokenLength(TokenExplainer):
        name = "token_length"
        def attribute(self, estimator, batch, target):
            ...

    class MyClassifier(EmbeddingBagClassifier):
        explainers = (*EmbeddingBagClassifier.explainers, TokenLength())
"""

from ..bert import explainers as bcos_text
from ..core.explainer import (
                              Attributions,
                              Explainer,
                              describe_explainers,
                              explainers_for,
                              get_explainer,
)
from ..sequence import explainers as sequence
from ..sequence.explainers import StepExplainer
from ..text import explainers as text
from ..text.explainers import TokenExplainer
from ..vision import explainers as image
from ..vision.explainers import ImageExplainer

__all__ = ["Attributions", "Explainer", "ImageExplainer", "StepExplainer", "TokenExplainer",
           "bcos_text", "describe_explainers", "explainers_for", "get_explainer", "image",
           "sequence", "text"]
