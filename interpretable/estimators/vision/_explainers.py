"""Explainers of the image classifiers: pixel maps ``(B, H, W)`` assembled into an
:class:`~interpretable.explanation.ImageExplanation`.

* ``"inherent"`` (:class:`BcosContributions`): the exact B-cos contribution maps
  ``W(x)ᵀ_k ⊙ x``, one forward and one backward pass per batch (for B-cos v2 and B-cosified
  models the contributions of the positional embedding, the class token and any biases go
  into ``bias``);
* ``"rollout"``, ``"final_attention"``, ``"gradsam"``, ``"gradcam"``, ``"input_x_gradient"``,
  ``"integrated_gradients"``, ``"occlusion"``, ``"lime"``, ``"kernel_shap"``, ``"smoothgrad"``,
  ``"gradient_shap"``: post-hoc
  maps of :func:`~interpretable.attribution.attribute_pixels` (SmoothGrad: captum
  ``NoiseTunnel`` over ``Saliency``, the L2 norm over the channels of the gradient averaged
  over ``nt_samples`` noisy copies; GradientSHAP: captum ``GradientShap`` from the
  ``baseline`` or a tuple of them, ``n_samples`` draws; both seeded by ``random_state``, per
  image).

DeepLIFT is not offered: the vision transformers' LayerNorm, GELU and softmax attention (and
the B-cos layers) are operations captum's DeepLift has no exact rule for
(``explain(method="deeplift")`` names them).

``baseline`` (integrated gradients, occlusion, LIME, Kernel SHAP and GradientSHAP) is the
image the pixels move to:
``"zeros"`` (default) a black image (for B-cos models its encoding ``(0, 1)``, not the
all-zero input), a number in [0, 1] the image of that constant pixel value, ``"blur"`` a
Gaussian-blurred copy of the explained image (standard deviation ``sigma`` pixels, default 5;
:func:`~interpretable.attribution._images.gaussian_blur`). Integrated gradients sum to the
logit minus the baseline's logit (up to ``n_steps``); occlusion replaces a ``window`` ×
``window`` square every ``stride`` pixels (default: the model's token patches, one at a
time).
"""

from __future__ import annotations

import contextlib
from numbers import Real
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interpretable.attribution import (
    PERTURBATION_METHODS,
    attribute_pixels,
    gaussian_blur,
    inherent,
    inherent_terms,
)
from interpretable.estimators.core._explainer import Attributions, Explainer
from interpretable.explanation import ImageExplanation
from interpretable.nn import explained_logits
from interpretable.nn.bcos import BcosSimpleViT, vit_contributions

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.vision._base import VisionTransformerClassifier

__all__ = ["ImageExplainer", "BcosContributions", "Rollout", "FinalAttention",
           "GradSAM", "GradCAM", "PixelInputXGradient", "PixelIntegratedGradients",
           "PixelOcclusion", "PixelLime", "PixelKernelShap", "PixelSmoothGrad",
           "PixelGradientShap"]

#: the named baselines of integrated gradients and occlusion (or a number: a constant image)
BASELINES = ("zeros", "blur")


def _stacked(fields: dict, name: str, dtype=None):
    """The per-sample arrays ``fields[name]`` as one array, or None; each row is released once
    copied, so memory peaks at the result plus one batch (not twice the result)."""
    if name not in fields:
        return None
    rows = fields[name]
    out = np.empty((len(rows), *np.shape(rows[0])), dtype=dtype or rows[0].dtype)
    for i in range(len(rows)):
        out[i], rows[i] = rows[i], None
    return out


class ImageExplainer(Explainer):
    """Pixel attributions of a vision-transformer classifier.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosViTClassifier
    >>> from interpretable.estimators.methods import get_explainer
    >>> X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, [0, 1] * 2)
    >>> explainer = get_explainer(clf)
    >>> explainer.name, explainer.explain(clf, X[:2]).values.shape
    ('inherent', (2, 8, 8))
    """

    def assemble(self, estimator: VisionTransformerClassifier, encoded: EncodedInputs,
                 fields: dict[str, list[Any]], **options: Any) -> ImageExplanation:
        """Build the image explanation of the encoded samples from their attributions' fields.

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        encoded : EncodedInputs
            The encoded samples (``estimator.encode(X)``).
        fields : dict of str to list
            Every field of :class:`Attributions` as a list with one entry per sample.
        **options
            The method's options.

        Returns
        -------
        ImageExplanation
            The explanation (``explain`` calls this last).

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import BcosViTClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
        >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
        ...                         stem_channels=(4,), max_epochs=1, random_state=0)
        >>> clf = clf.fit(X, [0, 1] * 2)
        >>> explainer = get_explainer(clf)
        >>> explainer.explain(clf, X[:1]).images.shape
        (1, 8, 8, 3)
        """
        logits = torch.as_tensor(_stacked(fields, "logits"), dtype=torch.float64)
        classes = estimator.classes_
        return ImageExplanation(
            values=_stacked(fields, "values"),
            target=classes[np.asarray(fields["target"], dtype=np.int64)],
            prediction=classes[logits.argmax(1).numpy()], method=self.name,
            images=encoded.images, weights=_stacked(fields, "weights"),
            logit=_stacked(fields, "logit", np.float64), bias=_stacked(fields, "bias", np.float64),
            components=_stacked(fields, "components"),
            component_names=self.component_names(estimator, **options),
            proba=torch.softmax(logits, 1).numpy(), classes=classes,
            crop_boxes=getattr(encoded, "crop_boxes", None),
            class_independent=self.class_independent)

    def component_names(self, estimator: VisionTransformerClassifier, **options: Any
                        ) -> list[str]:
        """Return the names of the model components of ``components`` (none by default).

        Parameters
        ----------
        estimator : fitted image classifier
            The explained estimator.
        **options
            The method's options (e.g. ``by="head"``).

        Returns
        -------
        list of str
            The names.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import BcosViTClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
        >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
        ...                         stem_channels=(4,), max_epochs=1, random_state=0)
        >>> clf = clf.fit(X, [0, 1] * 2)
        >>> explainer = get_explainer(clf)
        >>> explainer.component_names(clf)
        []
        """
        return []


def _chosen(logits: torch.Tensor, target) -> torch.Tensor:
    if target is None:
        return logits.argmax(1)
    return torch.as_tensor(np.asarray(target), dtype=torch.long, device=logits.device)


class BcosContributions(ImageExplainer):
    """The exact contribution maps ``W(x)ᵀ_k ⊙ x`` summed over channels, with ``W(x)``
    (``weights``), logit and bias (``completeness_error``); the bias of a B-cos v2 or
    B-cosified model is its logit bias plus the contributions of its positional embedding,
    class token and biases.

    by : None or "head": also the exact contribution of every residual-stream component
        (token embedding, each layer's heads and MLP) as ``components``; they sum to
        ``values`` (for v2 models the positional embedding's share stays in ``bias``).
    dtype : None or "float64": explain with a float64 copy of the model (completeness to
        ~1e-12 instead of float32 rounding, which is relatively large for logits near 0).
    contrast : None, "mean" or a label: explain the target's logit minus the mean logit or
        another class's logit (maps, components and ``W(x)`` of the difference, as exact).
    """

    name = "inherent"
    dtypes = ("float32", "float64")

    def prepare(self, estimator: VisionTransformerClassifier, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, *, by: str | None = None
                ) -> dict[str, Any]:
        if by not in (None, "head"):
            raise ValueError(f"by must be None or 'head', got {by!r}.")
        return {"by": by}

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, by: str | None = None,
                  contrast: torch.Tensor | None = None) -> Attributions:
        module = estimator.module_
        x = batch["x"].to(next(module.parameters()).dtype)
        chosen = None if target is None else \
            torch.as_tensor(np.asarray(target), dtype=torch.long, device=x.device)
        if isinstance(module, BcosSimpleViT):
            maps, weights, positional, constants, logits, t = vit_contributions(module, x, chosen,
                                                                            contrast)
            bias = (positional.double() + constants.double()).cpu()
        else:
            maps, weights, logits = inherent(module, x, chosen, contrast)
            t = logits.argmax(1) if chosen is None else chosen
            bias = torch.zeros(len(t), dtype=torch.float64)
        # the logit bias, the same for every class: its share of the explained difference
        bias = bias + explained_logits(torch.full(logits.shape, float(module.logit_bias),
                                                  dtype=torch.float64), t.cpu(),
                                       None if contrast is None else contrast.cpu())
        extras = {"weights": weights.permute(0, 2, 3, 1)}
        if by == "head":
            extras["components"] = inherent_terms(module, x, t, contrast)[0]
        return Attributions(values=maps, logits=logits, target=t,
                            logit=explained_logits(logits, t, contrast), bias=bias,
                            extras=extras)

    def component_names(self, estimator: VisionTransformerClassifier, *, by: str | None = None
                        ) -> list[str]:
        return list(estimator.module_.term_names()) if by == "head" else []


def _baseline_image(estimator, x: torch.Tensor, baseline, sigma) -> torch.Tensor:
    """The encoded baseline ``(1 or B, C, H, W)`` of the encoded images ``x``: a constant
    image (``"zeros"``: black), or ``x`` blurred (blurring commutes with the encoding)."""
    if isinstance(baseline, str) and baseline == "blur":
        return gaussian_blur(x, sigma)
    value = 0.0 if isinstance(baseline, str) and baseline == "zeros" else baseline
    if isinstance(value, (bool, str)) or not isinstance(value, Real) or not 0 <= value <= 1:
        raise ValueError(f"baseline must be one of {list(BASELINES)} or a pixel value in "
                         f"[0, 1], got {baseline!r}.")
    image = np.full((1, *estimator.image_shape_, estimator.n_channels_), value, np.float32)
    return estimator.encode(image).inputs["x"].to(x)


class _PostHoc(ImageExplainer):
    """A post-hoc map of :func:`~interpretable.attribution.attribute_pixels` named ``name``
    (``settings``: its further keyword arguments)."""

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *,
                  baseline: str | float | Sequence[str | float] = "zeros", sigma: float = 5.0,
                  **settings: Any) -> Attributions:
        with torch.no_grad():
            logits = estimator.forward_batch(batch).float()
        t = _chosen(logits, target)
        x = batch["x"]
        if isinstance(baseline, (tuple, list)) and self.name == "gradient_shap":
            if not baseline:
                raise ValueError("baseline must name at least one baseline.")
            image = torch.stack([_baseline_image(estimator, x, b, sigma).expand_as(x)
                                 for b in baseline], 1)
        else:
            image = _baseline_image(estimator, x, baseline, sigma)
        # the perturbation methods only run forward passes: in the predictions' precision
        precision = estimator.inference_autocast() if self.name in PERTURBATION_METHODS \
            else contextlib.nullcontext()
        with precision:
            maps = attribute_pixels(estimator.module_, x, t, self.name, baseline=image, **settings)
        return Attributions(values=maps.float(), logits=logits, target=t)


class _NoOptions(_PostHoc):
    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None) -> Attributions:
        return super().attribute(estimator, batch, target)


class Rollout(_NoOptions):
    """Attention rollout (Abnar & Zuidema, 2020), ``(A + I)`` row-normalised."""

    name = "rollout"
    class_independent = True


class FinalAttention(_NoOptions):
    """Head-averaged attention of the last layer."""

    name = "final_attention"
    class_independent = True


class GradSAM(_NoOptions):
    """GradSAM (Barkan et al., 2021): mean over layers and heads of ``A ⊙ ReLU(∂y/∂A)``."""

    name = "gradsam"


class GradCAM(_NoOptions):
    """GradCAM on the final token map, upsampled to the image."""

    name = "gradcam"


class PixelInputXGradient(_NoOptions):
    """Input × gradient (captum), summed over the encoded channels."""

    name = "input_x_gradient"


class PixelIntegratedGradients(_PostHoc):
    """Integrated gradients (captum) from ``baseline`` (a black image by default, a constant
    pixel value or ``"blur"``: the image blurred with ``sigma``), ``n_steps`` integration
    steps."""

    name = "integrated_gradients"

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, n_steps: int = 32,
                  baseline: str | float = "zeros", sigma: float = 5.0) -> Attributions:
        return super().attribute(estimator, batch, target, baseline=baseline, sigma=sigma,
                                 n_steps=n_steps)


class PixelOcclusion(_PostHoc):
    """Occlusion (captum): the drop of the logit when a ``window`` × ``window`` square is
    replaced by the ``baseline`` (as for integrated gradients), every ``stride`` pixels
    (None: a token's patch, tiling the image); a pixel holds the mean over the windows
    covering it."""

    name = "occlusion"

    def patch_window(self, estimator: VisionTransformerClassifier,
                     batch: dict[str, torch.Tensor], window: int | None) -> int | None:
        """The side of the windows in pixels: ``window``, or None for the default of
        :func:`~interpretable.attribution.attribute_pixels` (a token's patch)."""
        return window

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, window: int | None = None,
                  stride: int | None = None, baseline: str | float = "zeros",
                  sigma: float = 5.0) -> Attributions:
        return super().attribute(estimator, batch, target, baseline=baseline, sigma=sigma,
                                 window=self.patch_window(estimator, batch, window),
                                 stride=stride)


class PixelLime(PixelOcclusion):
    """LIME (captum ``Lime``'s computation) over patches of ``window`` × ``window`` pixels that
    tile the image (None: a token's patch): ``n_samples`` coalitions per image, each patch kept
    with probability 1/2, the others replaced by the ``baseline`` (as for integrated
    gradients); every pixel holds its patch's Lasso coefficient. Seeded by ``random_state``,
    per image."""

    name = "lime"

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, window: int | None = None,
                  baseline: str | float = "zeros", sigma: float = 5.0, n_samples: int = 200,
                  random_state: int | None = 0) -> Attributions:
        return _PostHoc.attribute(self, estimator, batch, target, baseline=baseline,
                                  sigma=sigma, window=self.patch_window(estimator, batch, window),
                                  n_samples=n_samples, random_state=random_state)


class PixelKernelShap(PixelLime):
    """Kernel SHAP (captum ``KernelShap``'s computation) over patches of ``window`` ×
    ``window`` pixels that tile the image (None: a token's patch), ``n_samples`` coalitions per
    image; every pixel holds its patch's Shapley value (the patches' values sum to the logit
    minus the ``baseline``'s logit, approximately). Seeded by ``random_state``, per image."""

    name = "kernel_shap"


class PixelSmoothGrad(_PostHoc):
    """SmoothGrad (captum ``NoiseTunnel`` over ``Saliency``): the gradient of the logit
    averaged over ``nt_samples`` copies of the image with Gaussian noise of standard deviation
    ``stdevs`` in the encoded pixel space (None: 15 % of the spread of each encoded image),
    its L2 norm over the channels; ``nt_type="smoothgrad_sq"`` or ``"vargrad"``: the mean
    square or the variance of the gradients. Every image draws its noise from a generator of
    its own seeded by ``random_state`` (None: unseeded)."""

    name = "smoothgrad"

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, nt_type: str = "smoothgrad",
                  nt_samples: int = 10, stdevs: float | None = None,
                  random_state: int | None = 0) -> Attributions:
        return super().attribute(estimator, batch, target, nt_type=nt_type,
                                 nt_samples=nt_samples, stdevs=stdevs,
                                 random_state=random_state)


class PixelGradientShap(_PostHoc):
    """GradientSHAP (captum ``GradientShap``): the mean over ``n_samples`` draws of
    ``(x + ε − b) ⊙ ∂y/∂x`` at a uniformly random point between a baseline ``b`` and the
    image, summed over the channels; ``baseline`` as for integrated gradients, or a tuple of
    them (the distribution ``b`` is drawn from); ``ε`` of standard deviation ``stdevs``.
    Seeded by ``random_state``, per image."""

    name = "gradient_shap"

    def attribute(self, estimator: VisionTransformerClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *,
                  baseline: str | float | Sequence[str | float] = "zeros", sigma: float = 5.0,
                  n_samples: int = 10, stdevs: float = 0.0,
                  random_state: int | None = 0) -> Attributions:
        return super().attribute(estimator, batch, target, baseline=baseline, sigma=sigma,
                                 n_samples=n_samples, stdevs=stdevs,
                                 random_state=random_state)
