"""The exact explanation of
:class:`~interpretable.estimators.vision.BcosResNetClassifier`:
:class:`BcosResNetContributions` (``"inherent"``), the contribution maps ``W(x)ᵀ_k ⊙ x`` of the
image or of a chosen layer's input (:func:`~interpretable.nn.bcos.resnet_contributions`). The
post-hoc pixel methods of :mod:`interpretable.estimators.methods` apply as they are
(GradCAM on the last feature map); the attention methods do not (a ResNet has none).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interpretable.estimators.core._explainer import Attributions
from interpretable.estimators.vision._explainers import ImageExplainer
from interpretable.nn import explained_logits
from interpretable.nn.bcos import RESNET_LAYERS, resnet_contributions, spread_to_pixels

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.vision._bcos_resnet import BcosResNetClassifier

__all__ = ["BcosResNetContributions"]


class BcosResNetContributions(ImageExplainer):
    """The exact contribution maps of a B-cos ResNet: ``W(x)ᵀ_k ⊙ x`` summed over channels,
    with ``W(x)`` (``weights``), logit and bias (``completeness_error``); the bias is the logit
    bias plus the contributions of any biases (a model at the conversion's start).

    layer : None or one of ``"layer1"``, ..., ``"layer4"``, ``"fc"``: explain that layer's
        input instead of the image: the contributions ``W_l(x)ᵀ a_l`` of its feature map
        ``a_l`` (the ``"fc"`` input is the last feature map), summed over its channels, each
        cell's share spread evenly over the pixels it covers (nearest-neighbour), so the map
        still sums with ``bias`` to the logit; no ``weights``. Deeper layers give coarser,
        more semantic maps.
    dtype : None or "float64": explain with a float64 copy of the model (completeness to
        ~1e-12 instead of float32 rounding).
    contrast : None, "mean" or a label: explain the target's logit minus the mean logit or
        another class's logit (as exact).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosResNetClassifier
    >>> X = np.random.default_rng(0).random((8, 16, 16, 3), dtype=np.float32)
    >>> clf = BcosResNetClassifier(dict(block="basic", layers=[1, 1, 1, 1], width=4),
    ...                            max_epochs=1, random_state=0).fit(X, [0, 1] * 4)
    >>> explanation = clf.explain(X[:2], layer="layer3", dtype="float64")
    >>> explanation.values.shape, bool(abs(explanation.completeness_error).max() < 1e-10)
    ((2, 16, 16), True)
    """

    name = "inherent"
    dtypes = ("float32", "float64")

    def prepare(self, estimator: BcosResNetClassifier, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, *, layer: str | None = None
                ) -> dict[str, Any]:
        """Check ``layer`` (ValueError naming the layers).

        Parameters
        ----------
        estimator : BcosResNetClassifier
            The explained estimator.
        encoded : EncodedImages
            The encoded images.
        target : torch.Tensor or None
            The explained classes.
        layer : str or None, default=None
            The explained layer's name (a ResNet's ``"layer1"`` ... ``"fc"``, a DenseNet's
            ``"denseblock1"`` ... ``"classifier"``), or None (the image).

        Returns
        -------
        dict
            The checked options.

        Examples
        --------
        >>> from interpretable.estimators.vision._resnet_explainers import (
        ...     BcosResNetContributions)
        >>> BcosResNetContributions().prepare(None, None, None, layer="fc")
        {'layer': 'fc'}
        """
        # a fitted DenseNet names its blocks; a ResNet's layers are RESNET_LAYERS
        layers = getattr(getattr(estimator, "module_", None), "layers", RESNET_LAYERS)
        if layer is not None and layer not in layers:
            raise ValueError(f"layer must be None or one of {list(layers)}, got {layer!r}.")
        return {"layer": layer}

    def attribute(self, estimator: BcosResNetClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, layer: str | None = None,
                  contrast: torch.Tensor | None = None) -> Attributions:
        module = estimator.module_
        x = batch["x"].to(next(module.parameters()).dtype)
        chosen = None if target is None else \
            torch.as_tensor(np.asarray(target), dtype=torch.long, device=x.device)
        c = resnet_contributions(module, x, chosen, contrast, layer=layer)
        logits, t = c.logits, c.target
        # the logit bias, the same for every class: its share of the explained difference
        bias = c.constants.double().cpu() + explained_logits(
            torch.full(logits.shape, float(module.logit_bias), dtype=torch.float64), t.cpu(),
            None if contrast is None else contrast.cpu())
        maps = c.maps if layer is None else spread_to_pixels(c.maps, x.shape[-2:])
        extras = {"weights": c.weights.permute(0, 2, 3, 1)} if layer is None else {}
        return Attributions(values=maps, logits=logits, target=t,
                            logit=explained_logits(logits, t, contrast), bias=bias,
                            extras=extras)
