"""The explanation methods of
:class:`~interpretable.estimators.vision.library_model.ImageClassifier` (any torchvision or
timm classifier) that the other image classifiers do not share:

* ``"gradcam"`` (:class:`FeatureMapGradCAM`): GradCAM at the network's last spatial feature
  map, found when the model is adopted or fitted (``estimator.gradcam_layer_``), or at any
  ``layer=`` (:func:`~interpretable.attribution.feature_maps.layer_gradcam`);
* ``"gradient"`` (:class:`PixelGradient`): the pixel gradient's L2 norm over the channels;
* ``"occlusion"`` (:class:`FeatureMapOcclusion`): captum's occlusion, its default window one
  cell of that feature map.

Input × gradient, integrated gradients, SmoothGrad and GradientSHAP are those of
:mod:`interpretable.estimators.vision.explainers`. None sets anything on the fitted network.
"""
from __future__ import annotations

import torch

from ...attribution.feature_maps import layer_gradcam, named_layer, pixel_gradient
from ...attribution.hooked import deeplift_refusal
from ...nn.library_image import LibraryImageModel, channels_last
from ..core.explainer import Attributions
from .explainers import ImageExplainer, PixelOcclusion

__all__ = ["FeatureMapGradCAM", "PixelGradient", "FeatureMapOcclusion"]


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
    def refusal(cls, estimator) -> str | None:
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
        >>> from interpretable.estimators.vision.library_explainers import FeatureMapGradCAM
        >>> FeatureMapGradCAM.refusal(None) is None
        True
        """
        if isinstance(estimator, type) or not hasattr(estimator, "gradcam_layer_") \
                or estimator.gradcam_layer_ is not None:
            return None
        return (f"{type(estimator.module_.model).__name__} has no spatial feature map (no "
                "module output lies on the image grid before its pooling): pass layer= a "
                "module whose output does")

    def prepare(self, estimator, encoded, target, *, layer=None) -> dict:
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
        named_layer(estimator.module_.model, layer,
                    f"{type(estimator.module_.model).__name__} (estimator.module_.model)")
        return {"layer": layer}

    def attribute(self, estimator, batch, target, *, layer=None) -> Attributions:
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

    def attribute(self, estimator, batch, target) -> Attributions:
        logits, t = _logits_and_target(estimator, batch, target)
        return Attributions(values=pixel_gradient(estimator.module_, batch["x"], t),
                            logits=logits, target=t)


class FeatureMapOcclusion(PixelOcclusion):
    """Occlusion (captum): the drop of the logit when a ``window`` × ``window`` square is
    replaced by the ``baseline``, every ``stride`` pixels; ``window`` None: one cell of the
    network's last feature map (the image side over the map's, e.g. 32 pixels for a ResNet's
    7 × 7 map of a 224-pixel image), ``stride`` None: the window; a pixel holds the mean over
    the windows covering it."""

    def attribute(self, estimator, batch, target, *, window=None, stride=None,
                  baseline="zeros", sigma=5.0) -> Attributions:
        if window is None:
            height, width = batch["x"].shape[-2:]
            grid = estimator.feature_grid_ or (8, 8)
            window = max(1, min(height // grid[0], width // grid[1]))
        return super().attribute(estimator, batch, target, window=window, stride=stride,
                                 baseline=baseline, sigma=sigma)


class _DeepLiftRefusal(ImageExplainer):
    """Never offered: says why captum's DeepLift would be inexact on the network (the
    modules it names), whichever other families are imported."""

    name = "deeplift"

    @classmethod
    def refusal(cls, estimator) -> str | None:
        module = None if isinstance(estimator, type) else getattr(estimator, "module_", None)
        if not isinstance(module, LibraryImageModel):
            return None  # the other families' DeepLift says it
        return deeplift_refusal(module, type(estimator).__name__)  # as the text families'

    def attribute(self, estimator, batch, target) -> Attributions:
        raise ValueError(f"method='deeplift' does not explain {type(estimator).__name__}: "
                         f"{self.refusal(estimator)}.")
