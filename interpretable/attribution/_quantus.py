"""Run Quantus metrics (https://github.com/understandable-machine-intelligence-lab/Quantus)
on fitted image estimators.

Quantus needs a torch ``model`` taking channels-first images and an
``explain_func(model, inputs, targets, **kwargs) -> np.ndarray``. :class:`QuantusModel` is that
model for any fitted :mod:`interpretable.estimators.vision` estimator, and :func:`explain_func`
explains through the estimator's public ``explain``::

    metric = quantus.Focus()
    scores = metric(model=QuantusModel(clf), x_batch=x, y_batch=y, custom_batch=positions,
                    explain_func=explain_func, explain_func_kwargs={"method": "inherent"},
                    device="cpu")

The estimator's network is a registered submodule, so Quantus's model-randomisation tests
(MPRT) reset its layers (every B-cos layer and attention prior has ``reset_parameters``), and
the explanations of a randomised copy come from the randomised network. Labels are the
estimator's class indices (as Quantus's ``y_batch``); images are float in [0, 1].
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.vision import VisionTransformerClassifier

__all__ = ["QuantusModel", "explain_func"]


class QuantusModel(nn.Module):
    """A fitted image estimator as a torch module, for Quantus.

    Images (n, C, H, W) in [0, 1] → logits (n, n_classes). ``estimator.module_`` is registered
    as ``net``.

    Parameters
    ----------
    estimator : fitted image classifier
        A :class:`~interpretable.BcosViTClassifier`,
        :class:`~interpretable.BcosSimpleViTClassifier` or :class:`~interpretable.ViTClassifier`.

    See Also
    --------
    explain_func : Quantus's ``explain_func`` for it.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from interpretable import BcosViTClassifier
    >>> from interpretable.attribution import QuantusModel, explain_func
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, [0, 1])
    >>> model = QuantusModel(clf)
    >>> model(torch.as_tensor(X).permute(0, 3, 1, 2)).shape
    torch.Size([2, 2])
    """

    def __init__(self, estimator: VisionTransformerClassifier):
        super().__init__()
        if getattr(estimator, "module_", None) is None or not hasattr(estimator, "encode"):
            raise TypeError("QuantusModel needs a fitted image estimator from "
                            "interpretable.estimators.vision.")
        self.estimator = estimator
        self.net = estimator.module_
        self.training = False  # as the fitted module: Quantus refuses models in training mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Compute the logits of channel-first images.

        Parameters
        ----------
        x : torch.Tensor of shape (n, C, H, W)
            Images in [0, 1].

        Returns
        -------
        torch.Tensor of shape (n, n_classes)
            The logits.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from interpretable import BcosViTClassifier
        >>> from interpretable.attribution import QuantusModel, explain_func
        >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
        >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
        ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, [0, 1])
        >>> model = QuantusModel(clf)
        >>> model.forward(torch.zeros(1, 3, 8, 8)).shape
        torch.Size([1, 2])
        """
        images = torch.as_tensor(x).detach().permute(0, 2, 3, 1)
        return self.estimator.logits(self.estimator.encode(images).inputs)


def explain_func(model: QuantusModel, inputs: ArrayLike, targets: ArrayLike, *,
                 method: str | None = None, batch_size: int | None = None,
                 device: object = None, softmax: bool | None = None,
                 channel_first: bool | None = None, **options: Any) -> np.ndarray:
    """Explain images for Quantus: its ``explain_func`` over a :class:`QuantusModel`.

    The attributions are the estimator's ``explain(..., method=method, **options)``. The
    arguments Quantus adds are accepted: ``device`` (every metric passes the device it was called
    with; the estimator explains on its own device), ``softmax`` and ``channel_first`` (options of
    ``quantus.explain`` that ``explain_func_kwargs`` may carry): explanations are of the logits
    of channel-first images.

    Parameters
    ----------
    model : QuantusModel
        The wrapped estimator.
    inputs : ndarray of shape (n, C, H, W)
        Images in [0, 1].
    targets : ndarray of shape (n,)
        Class indices.
    method : str or None, default=None
        The explanation method (None: the estimator's default).
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).
    device : object, default=None
        Accepted and ignored.
    softmax : bool or None, default=None
        ``True`` raises (explanations are of the logits).
    channel_first : bool or None, default=None
        ``False`` raises (inputs are channel first).
    **options
        Options of the method.

    Returns
    -------
    ndarray of shape (n, 1, H, W)
        The attributions (float32).

    Raises
    ------
    ValueError
        If ``softmax=True`` or ``channel_first=False``.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from interpretable import BcosViTClassifier
    >>> from interpretable.attribution import QuantusModel, explain_func
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, [0, 1])
    >>> model = QuantusModel(clf)
    >>> explain_func(model, X.transpose(0, 3, 1, 2), np.array([0, 1])).shape
    (2, 1, 8, 8)
    """
    if not isinstance(model, QuantusModel):
        raise TypeError(f"model must be a QuantusModel, got {type(model).__name__}.")
    if softmax:
        raise ValueError("explain_func explains logits: softmax=True (explaining "
                         "probabilities) is not supported.")
    if channel_first is False:
        raise ValueError("explain_func takes channel-first images (n, C, H, W), as Quantus "
                         "passes them: channel_first=False is not supported.")
    clf = model.estimator
    images = np.moveaxis(np.asarray(inputs, dtype=np.float32), 1, -1)
    labels = clf.classes_[np.asarray(targets, dtype=np.int64).reshape(-1)]
    values = clf.explain(images, target=labels, method=method, batch_size=batch_size,
                         **options).values
    return np.asarray(values, dtype=np.float32)[:, None]
