"""Training-time image augmentation of the vision classifiers."""

from __future__ import annotations

import torch
from torch.nn import functional as F
from torch.utils.data import default_collate

__all__: list[str] = []  # the training augmentation of the vision estimators


class ZoomOutBatches:
    """Training collate function: random zoom-out augmentation, then the model's encoding.

    Each image ``(H, W, C)`` of a batch is, with ``probability``, shrunk by a factor drawn
    uniformly from ``scale = (low, high)`` (area interpolation) and placed at a random position
    on a black canvas of its original size; ``encode`` then maps the batch ``(B, H, W, C)`` to
    the model input. ``scale=None`` only encodes. Draws come from ``generator``.
    """

    def __init__(self, encode, scale, probability: float, generator: torch.Generator):
        self.encode, self.scale, self.probability = encode, scale, probability
        self.generator = generator

    def _zoom_out(self, images: torch.Tensor) -> torch.Tensor:
        n, h, w, _ = images.shape
        low, high = self.scale
        chosen = torch.rand(n, generator=self.generator) < self.probability
        factors = low + (high - low) * torch.rand(n, generator=self.generator)
        offsets = torch.rand(n, 2, generator=self.generator)
        out = images.clone()
        for i in torch.nonzero(chosen)[:, 0].tolist():
            sh, sw = max(1, round(h * float(factors[i]))), max(1, round(w * float(factors[i])))
            small = F.interpolate(images[i].permute(2, 0, 1)[None], size=(sh, sw), mode="area")
            top, left = int(offsets[i, 0] * (h - sh + 1)), int(offsets[i, 1] * (w - sw + 1))
            out[i] = 0
            out[i, top:top + sh, left:left + sw] = small[0].permute(1, 2, 0)
        return out

    def __call__(self, items):
        X, y = default_collate(items)
        images = X["x"] if self.scale is None else self._zoom_out(X["x"])
        return {**X, "x": self.encode(images)}, y
