"""The explanation methods of every estimator family, in one place.

An :class:`Explainer` declares its ``name`` and whether it is ``class_independent``, and
computes attributions for one batch (:meth:`Explainer.attribute`); the shared loop of
:meth:`Explainer.explain` does batching, padding, targets and assembly. Each estimator class
declares the methods it offers in its ``explainers`` class attribute, its default first;
``estimator.explain(X, method=name)`` finds the method there through :func:`get_explainer`,
and ``estimator.explain_methods`` lists their names. Options only metrics need (e.g.
``embedding_offset``) go through ``get_explainer(estimator, name).explain(estimator, X, ...)``.

Each family's explainers are here under a short name: ``text``, ``bert`` (the BERT-family
classifiers, B-cos and conventional), ``image`` and ``sequence``.

Adding a method is writing one object and declaring it on the estimator (see
CONTRIBUTING.md)::

    class TokenLength(TokenExplainer):
        name = "token_length"
        def attribute(self, estimator, batch, target):
            ...

    class MyClassifier(EmbeddingBagClassifier):
        explainers = (*EmbeddingBagClassifier.explainers, TokenLength())
"""

import sys

from interpretable.estimators.bert import explainers as bert
from interpretable.estimators.core._explainer import (
           Attributions,
           Explainer,
           describe_explainers,
           explainers_for,
           get_explainer,
)
from interpretable.estimators.sequence import explainers as sequence
from interpretable.estimators.sequence.explainers import StepExplainer
from interpretable.estimators.text import explainers as text
from interpretable.estimators.text.explainers import TokenExplainer
from interpretable.estimators.vision import explainers as image
from interpretable.estimators.vision.explainers import ImageExplainer

__all__ = ["Attributions", "Explainer", "ImageExplainer", "StepExplainer", "TokenExplainer",
           "bert", "describe_explainers", "explainers_for", "get_explainer", "image",
           "sequence", "text"]

# the family modules import under these names too (``import
# interpretable.estimators.explainers.bert``), as the API reference names them
sys.modules.update({f"{__name__}.bert": bert, f"{__name__}.image": image,
                    f"{__name__}.sequence": sequence, f"{__name__}.text": text})
