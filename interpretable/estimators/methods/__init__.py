"""The explanation methods of every estimator family, in one place.

An :class:`Explainer` declares its ``name`` and whether it is ``class_independent``, and
computes attributions for one batch (:meth:`Explainer.attribute`); the shared loop of
:meth:`Explainer.explain` does batching, padding, targets and assembly. Each estimator class
declares the methods it offers in its ``explainers`` class attribute, its default first;
``estimator.explain(X, method=name)`` finds the method there through :func:`get_explainer`,
and ``estimator.explain_methods`` lists their names. Options only metrics need (e.g.
``embedding_offset``) go through ``get_explainer(estimator, name).explain(estimator, X, ...)``.

Every method's class is here, named by the inputs it explains: no prefix for the word-token
methods of the vocabulary classifiers (``Gradient``, ``Lime``), ``Bert`` for the
transformer text classifiers, ``Pixel`` / ``FeatureMap`` for images (``FeatureMap`` only on
:class:`~interpretable.ImageClassifier`), ``Step`` for the sequence models; the exact
explanations are ``...Contributions``.

Adding a method is writing one object and declaring it on the estimator (see
CONTRIBUTING.md)::

    class TokenLength(TokenExplainer):
        name = "token_length"
        def attribute(self, estimator, batch, target):
            ...

    class MyClassifier(EmbeddingBagClassifier):
        explainers = (*EmbeddingBagClassifier.explainers, TokenLength())
"""

from interpretable.estimators.core._explainer import (
    Attributions,
    Explainer,
    describe_explainers,
    explainers_for,
    get_explainer,
)
from interpretable.estimators.sequence._explainers import (
    ISANContributions,
    StepExplainer,
    StepGradient,
    StepInputXGradient,
    StepIntegratedGradients,
)
from interpretable.estimators.text._explainers import (
    Attention,
    DeepLift,
    DetachedGradient,
    Gradient,
    GradientShap,
    InputXGradient,
    IntegratedGradients,
    KernelShap,
    Lime,
    MeanEmbeddingContributions,
    Occlusion,
    SmoothGrad,
    SmoothGradIntegratedGradients,
    TokenExplainer,
    VanillaAttention,
)
from interpretable.estimators.transformer._explainers import (
    BcosTextContributions,
    BertAttention,
    BertExplainer,
    BertGradient,
    BertGradientShap,
    BertInputXGradient,
    BertIntegratedGradients,
    BertKernelShap,
    BertLime,
    BertOcclusion,
    BertRollout,
    BertSmoothGrad,
    BertSmoothGradIntegratedGradients,
)
from interpretable.estimators.vision._explainers import (
    BcosContributions,
    FinalAttention,
    GradCAM,
    GradSAM,
    ImageExplainer,
    PixelGradientShap,
    PixelInputXGradient,
    PixelIntegratedGradients,
    PixelKernelShap,
    PixelLime,
    PixelOcclusion,
    PixelSmoothGrad,
    Rollout,
)
from interpretable.estimators.vision._library_explainers import (
    FeatureMapGradCAM,
    FeatureMapInputXGradient,
    FeatureMapIntegratedGradients,
    FeatureMapKernelShap,
    FeatureMapLime,
    FeatureMapOcclusion,
    PixelDeepLift,
    PixelGradient,
)
from interpretable.estimators.vision._resnet_explainers import BcosResNetContributions

__all__ = [
    # the contract and the registry
    "Explainer", "TokenExplainer", "BertExplainer", "ImageExplainer", "StepExplainer",
    "Attributions", "get_explainer", "explainers_for", "describe_explainers",
    # word tokens (vocabulary classifiers)
    "MeanEmbeddingContributions", "Attention", "VanillaAttention", "Gradient",
    "IntegratedGradients", "InputXGradient", "Occlusion", "Lime", "KernelShap", "SmoothGrad",
    "SmoothGradIntegratedGradients", "GradientShap", "DeepLift", "DetachedGradient",
    # word pieces (transformer text classifiers)
    "BcosTextContributions", "BertAttention", "BertRollout", "BertGradient",
    "BertIntegratedGradients", "BertInputXGradient", "BertOcclusion", "BertLime",
    "BertKernelShap", "BertSmoothGrad", "BertSmoothGradIntegratedGradients", "BertGradientShap",
    # images
    "BcosContributions", "BcosResNetContributions", "Rollout", "FinalAttention", "GradSAM",
    "GradCAM", "PixelGradient", "PixelInputXGradient", "PixelIntegratedGradients",
    "PixelOcclusion", "PixelLime", "PixelKernelShap", "PixelSmoothGrad", "PixelGradientShap",
    "PixelDeepLift", "FeatureMapGradCAM", "FeatureMapOcclusion", "FeatureMapLime",
    "FeatureMapKernelShap", "FeatureMapIntegratedGradients", "FeatureMapInputXGradient",
    # sequence steps
    "ISANContributions", "StepGradient", "StepInputXGradient", "StepIntegratedGradients",
]
