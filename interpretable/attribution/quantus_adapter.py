"""Run Quantus metrics (https://github.com/understandable-machine-intelligence-lab/Quantus)
on fitted image estimators.

Quantus needs a torch ``model`` taking channels-first images and an
``explain_func(model, inputs, targets, **kwargs) -> np.ndarray``. :class:`QuantusModel` is that
model for any fitted :mod:`interpretable.estimators.vision` estimator, and :func:`explain_func`
explains through the estimator's public ``explain``::

    metric = quantus.Focus()
    scores = metric(model=QuantusModel(clf), x_batch=x, y_batch=y, custom_batch=positions,
                    explain_func=explain_func, explain_func_kwargs={"method": "inherent"})

The estimator's network is a registered submodule, so Quantus's model-randomisation tests
(MPRT) reset its layers (every B-cos layer and attention prior has ``reset_parameters``), and
the explanations of a randomised copy come from the randomised network. Labels are the
estimator's class indices (as Quantus's ``y_batch``); images are float in [0, 1].
"""
from __future__ import annotations

import numpy as np
import torch
from torch import nn

__all__ = ["QuantusModel", "explain_func"]


class QuantusModel(nn.Module):
    """A fitted image estimator as a torch module: images (n, C, H, W) in [0, 1] -> logits
    (n, n_classes). ``estimator.module_`` is registered as ``net``."""

    def __init__(self, estimator):
        super().__init__()
        if getattr(estimator, "module_", None) is None or not hasattr(estimator, "encode"):
            raise TypeError("QuantusModel needs a fitted image estimator from "
                            "interpretable.estimators.vision.")
        self.estimator = estimator
        self.net = estimator.module_

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        images = torch.as_tensor(x).detach().permute(0, 2, 3, 1)
        return self.estimator.logits(self.estimator.encode(images).inputs)


def explain_func(model, inputs, targets, *, method: str | None = None, batch_size=None,
                 **options) -> np.ndarray:
    """Quantus ``explain_func``: ``model`` a :class:`QuantusModel`, ``inputs`` images
    (n, C, H, W) in [0, 1], ``targets`` class indices (n,) -> attributions (n, 1, H, W) float32
    of the estimator's ``explain(..., method=method, **options)`` (None: its default method)."""
    if not isinstance(model, QuantusModel):
        raise TypeError(f"model must be a QuantusModel, got {type(model).__name__}.")
    clf = model.estimator
    images = np.moveaxis(np.asarray(inputs, dtype=np.float32), 1, -1)
    labels = clf.classes_[np.asarray(targets, dtype=np.int64).reshape(-1)]
    values = clf.explain(images, target=labels, method=method, batch_size=batch_size,
                         **options).values
    return np.asarray(values, dtype=np.float32)[:, None]
