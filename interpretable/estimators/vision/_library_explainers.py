"""The explanation methods of
:class:`~interpretable.estimators.vision.ImageClassifier` (any torchvision or
timm classifier) that the other image classifiers do not share:

* ``"gradcam"`` (:class:`FeatureMapGradCAM`): GradCAM at the network's last spatial feature
  map, found when the model is adopted or fitted (``estimator.gradcam_layer_``), or at any
  ``layer=`` (:func:`~interpretable.attribution.layer_gradcam`);
* ``"gradient"`` (:class:`PixelGradient`): the pixel gradient's L2 norm over the channels;
* ``"occlusion"``, ``"lime"`` and ``"kernel_shap"`` (:class:`FeatureMapOcclusion`,
  :class:`FeatureMapLime`, :class:`FeatureMapKernelShap`): the patch methods of
  :mod:`interpretable.estimators.methods`, their default window one cell of that
  feature map;
* ``"integrated_gradients"`` and ``"input_x_gradient"`` (:class:`FeatureMapIntegratedGradients`,
  :class:`FeatureMapInputXGradient`): the pixel methods of
  :mod:`interpretable.estimators.methods`, or with ``layer=`` (a module name of the
  library's model whose output is a spatial map ``(B, C, h, w)``) captum
  ``LayerIntegratedGradients`` / ``LayerGradientXActivation`` at that layer's output, summed
  over its channels and spread over the image keeping their sum
  (:func:`~interpretable.attribution.layer_attribution`); layer integrated
  gradients report the logit and, as ``bias``, the logit with the layer's output at its value
  for the baseline image, so that ``completeness_error`` measures their convergence;
* ``"deeplift"`` (:class:`PixelDeepLift`): captum ``DeepLift`` from the baseline image, on a
  copy of the network whose every ReLU run is a module of its own, not in place
  (:func:`~interpretable.attribution.deeplift_copy`), where captum's rules make it exact
  (its maps sum to the logit minus the baseline's logit: ReLU networks without max pooling,
  such as torchvision's RegNetX); refused elsewhere, naming the operations that prevent it
  (torchvision's ResNets: their max pooling).

SmoothGrad and GradientSHAP are those of :mod:`interpretable.estimators.methods`.
None sets anything on the fitted network: the hooking methods hook a copy that shares its
weights.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from interpretable.attribution import (
    deeplift_refusal,
    layer_attribution,
    layer_gradcam,
    named_layer,
    pixel_deeplift,
    pixel_gradient,
)
from interpretable.estimators.core._explainer import Attributions
from interpretable.estimators.vision._explainers import (
    ImageExplainer,
    PixelInputXGradient,
    PixelIntegratedGradients,
    PixelKernelShap,
    PixelLime,
    PixelOcclusion,
    _baseline_image,
)
from interpretable.nn import LibraryImageModel, channels_last

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.core._inference import BatchedInference
    from interpretable.estimators.vision._library_model import ImageClassifier

__all__ = ["FeatureMapGradCAM", "PixelGradient", "FeatureMapOcclusion", "FeatureMapLime",
           "FeatureMapKernelShap", "FeatureMapIntegratedGradients", "FeatureMapInputXGradient",
           "PixelDeepLift"]


def _check_layer(estimator, layer) -> None:
    """ValueError unless ``layer`` names a module of the library's model."""
    named_layer(estimator.module_.model, layer,
                f"{type(estimator.module_.model).__name__} (estimator.module_.model)")


def _logits_and_target(estimator, batch, target):
    with torch.no_grad():
        logits = estimator.forward_batch(batch).float()
    if target is None:
        return logits, logits.argmax(1)
    return logits, torch.as_tensor(target, dtype=torch.long, device=logits.device)


class FeatureMapGradCAM(ImageExplainer):
    """GradCAM (Selvaraju et al., 2017) at the last spatial feature map of the network
    (``estimator.gradcam_layer_``), or at ``layer`` (a module name of the library's model,
    ``estimator.module_.model.named_modules()``): the ReLU of the channels of the layer's
    output weighted by their mean gradient, upsampled bilinearly to the image (captum's
    ``LayerGradCam`` with ``relu_attributions=True``, interpolated)."""

    name = "gradcam"

    @classmethod
    def refusal(cls, estimator: BatchedInference | type[BatchedInference]) -> str | None:
        """Say why GradCAM cannot explain a fitted network without a spatial feature map.

        Parameters
        ----------
        estimator : estimator or type
            A class or an instance (fitted or not).

        Returns
        -------
        str or None
            The reason, or None.

        Examples
        --------
        >>> from interpretable.estimators.methods import FeatureMapGradCAM
        >>> FeatureMapGradCAM.refusal(None) is None
        True
        """
        if isinstance(estimator, type) or not hasattr(estimator, "gradcam_layer_") \
                or estimator.gradcam_layer_ is not None:
            return None
        return (f"{type(estimator.module_.model).__name__} has no spatial feature map (no "
                "module output lies on the image grid before its pooling): pass layer= a "
                "module whose output does")

    def prepare(self, estimator: ImageClassifier, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, *, layer: str | None = None
                ) -> dict[str, Any]:
        """Check ``layer`` (a module of the library's model) or that the network has a
        feature map.

        Parameters
        ----------
        estimator : ImageClassifier
            The explained estimator.
        encoded : EncodedImages
            The encoded images.
        target : torch.Tensor or None
            The explained classes.
        layer : str or None, default=None
            The layer's name, or None (``estimator.gradcam_layer_``).

        Returns
        -------
        dict
            The checked options.
        """
        if layer is None:
            layer = estimator.gradcam_layer_
            if layer is None:
                raise ValueError(f"method='gradcam' does not explain "
                                 f"{type(estimator).__name__}: {self.refusal(estimator)}.")
        _check_layer(estimator, layer)
        return {"layer": layer}

    def attribute(self, estimator: ImageClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, layer: str | None = None) -> Attributions:
        logits, t = _logits_and_target(estimator, batch, target)
        module = estimator.module_
        grid = estimator.token_grid_
        maps = layer_gradcam(module, batch["x"], t, layer or estimator.gradcam_layer_,
                             network=module.model,
                             grid=None if grid is None else tuple(grid),
                             prefer_channels_last=channels_last(module.model))
        return Attributions(values=maps, logits=logits, target=t)


class PixelGradient(ImageExplainer):
    """The gradient of the logit with respect to the pixels (captum ``Saliency``, signed),
    its L2 norm over the channels: the map SmoothGrad averages over noisy copies."""

    name = "gradient"

    def attribute(self, estimator: ImageClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None) -> Attributions:
        logits, t = _logits_and_target(estimator, batch, target)
        return Attributions(values=pixel_gradient(estimator.module_, batch["x"], t),
                            logits=logits, target=t)


class _FeatureMapWindow:
    """A patch method whose default ``window`` is one cell of the network's last feature map
    (the image side over the map's, e.g. 32 pixels for a ResNet's 7 × 7 map of a 224-pixel
    image; 8 × 8 cells without a map)."""

    def patch_window(self, estimator: ImageClassifier, batch: dict[str, torch.Tensor],
                     window: int | None) -> int:
        """``window``, or for None one cell of the last feature map."""
        if window is not None:
            return window
        height, width = batch["x"].shape[-2:]
        grid = estimator.feature_grid_ or (8, 8)
        return max(1, min(height // grid[0], width // grid[1]))


class FeatureMapOcclusion(_FeatureMapWindow, PixelOcclusion):
    """Occlusion (captum): the drop of the logit when a ``window`` × ``window`` square is
    replaced by the ``baseline``, every ``stride`` pixels; ``window`` None: one cell of the
    network's last feature map, ``stride`` None: the window; a pixel holds the mean over
    the windows covering it."""


class FeatureMapLime(_FeatureMapWindow, PixelLime):
    """LIME over patches that tile the image, by default the cells of the network's last
    feature map (see :class:`~interpretable.estimators.methods.PixelLime`)."""


class FeatureMapKernelShap(_FeatureMapWindow, PixelKernelShap):
    """Kernel SHAP over patches that tile the image, by default the cells of the network's last
    feature map (see :class:`~interpretable.estimators.methods.PixelKernelShap`)."""


def _complete(maps, logits, target, baseline_logit) -> Attributions:
    """Attributions of ``maps``, with the explained logit and, as ``bias``, ``baseline_logit``
    (what the maps sum to the logit minus) where there is one."""
    if baseline_logit is None:
        return Attributions(values=maps, logits=logits, target=target)
    return Attributions(values=maps, logits=logits, target=target,
                        logit=logits.gather(1, target[:, None])[:, 0], bias=baseline_logit)


class _AtLayer:
    """A pixel method with a captum layer version at ``layer=`` (a module name of the library's
    model; :func:`~interpretable.attribution.layer_attribution`)."""

    def prepare(self, estimator: ImageClassifier, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, **options: Any) -> dict[str, Any]:
        """Check ``layer`` (a module of the library's model), where given.

        Parameters
        ----------
        estimator : ImageClassifier
            The explained estimator.
        encoded : EncodedImages
            The encoded images.
        target : torch.Tensor or None
            The explained classes.
        **options
            The method's options.

        Returns
        -------
        dict
            The checked options.
        """
        if options.get("layer") is not None:
            _check_layer(estimator, options["layer"])
        return super().prepare(estimator, encoded, target, **options)

    def _at_layer(self, estimator, batch, target, layer, **settings) -> Attributions:
        """The attributions of the method's layer version at ``layer`` (``settings``: the
        further keyword arguments of
        :func:`~interpretable.attribution.layer_attribution`)."""
        logits, t = _logits_and_target(estimator, batch, target)
        module = estimator.module_
        maps, baseline_logit = layer_attribution(
            module, batch["x"], t, layer, self.name, network=module.model,
            prefer_channels_last=channels_last(module.model), **settings)
        return _complete(maps, logits, t, baseline_logit)


class FeatureMapIntegratedGradients(_AtLayer, PixelIntegratedGradients):
    """Integrated gradients (captum) from ``baseline`` (a black image by default, a constant
    pixel value or ``"blur"``: the image blurred with ``sigma``), ``n_steps`` integration
    steps; ``layer="<module name>"`` (a module of ``estimator.module_.model`` whose output is a
    spatial map): layer integrated gradients (captum ``LayerIntegratedGradients``) at that
    module's output, summed over its channels and spread over the image keeping their sum,
    with the logit and, as ``bias``, the logit with the layer's output at its value for the
    baseline (``completeness_error`` measures convergence)."""

    def attribute(self, estimator: ImageClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, n_steps: int = 32,
                  baseline: str | float = "zeros", sigma: float = 5.0,
                  layer: str | None = None) -> Attributions:
        if layer is None:
            return super().attribute(estimator, batch, target, n_steps=n_steps,
                                     baseline=baseline, sigma=sigma)
        return self._at_layer(estimator, batch, target, layer, n_steps=n_steps,
                             baseline=_baseline_image(estimator, batch["x"], baseline, sigma))


class FeatureMapInputXGradient(_AtLayer, PixelInputXGradient):
    """Input × gradient (captum), summed over the encoded channels; ``layer="<module
    name>"`` (a module of ``estimator.module_.model`` whose output is a spatial map): gradient
    × activation at that module's output (captum ``LayerGradientXActivation``), summed over
    its channels and spread over the image keeping their sum."""

    def attribute(self, estimator: ImageClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, layer: str | None = None) -> Attributions:
        if layer is None:
            return super().attribute(estimator, batch, target)
        return self._at_layer(estimator, batch, target, layer)


class PixelDeepLift(ImageExplainer):
    """DeepLIFT (captum ``DeepLift``, rescale rule) from ``baseline`` (as for integrated
    gradients), summed over the channels; its attributions sum to the logit minus the
    baseline's logit (the ``bias``). Offered where that holds: networks of linear maps and the
    activations DeepLIFT has exact rules for (torchvision's RegNetX; each ReLU run gets a
    module of its own in the copy explained); on any other the method is refused, naming the
    operations that prevent it (a ResNet's max pooling, LayerNorm, GELU, attention, ...)."""

    name = "deeplift"

    @classmethod
    def refusal(cls, estimator: BatchedInference | type[BatchedInference]) -> str | None:
        """Say why DeepLIFT would not be exact on a fitted library network.

        Parameters
        ----------
        estimator : estimator or type
            A class or an instance (fitted or not).

        Returns
        -------
        str or None
            The reason, naming the operations that prevent it, or None (exact, or not a
            library network: the other families' DeepLift says it).

        Examples
        --------
        >>> from interpretable.estimators.methods import PixelDeepLift
        >>> PixelDeepLift.refusal(None) is None
        True
        """
        module = None if isinstance(estimator, type) else getattr(estimator, "module_", None)
        if not isinstance(module, LibraryImageModel):
            return None
        return deeplift_refusal(module, type(estimator).__name__)  # as the text families'

    def prepare(self, estimator: ImageClassifier, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, **options: Any) -> dict[str, Any]:
        """Refuse a network on which DeepLIFT would not be exact, naming the operations.

        Parameters
        ----------
        estimator : ImageClassifier
            The explained estimator.
        encoded : EncodedImages
            The encoded images.
        target : torch.Tensor or None
            The explained classes.
        **options
            The method's options.

        Returns
        -------
        dict
            The options.
        """
        refusal = self.refusal(estimator)
        if refusal is not None:
            raise ValueError(f"method='deeplift' does not explain {type(estimator).__name__}: "
                             f"{refusal}.")
        return super().prepare(estimator, encoded, target, **options)

    def attribute(self, estimator: ImageClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, baseline: str | float = "zeros",
                  sigma: float = 5.0) -> Attributions:
        logits, t = _logits_and_target(estimator, batch, target)
        x = batch["x"]
        maps, baseline_logit = pixel_deeplift(estimator.module_, x, t,
                                              _baseline_image(estimator, x, baseline, sigma))
        return _complete(maps, logits, t, baseline_logit)
