"""Vision transformer classifiers: :class:`BcosViTClassifier` (holistically explainable B-cos
ViT, Böhle et al.) and the conventional :class:`ViTClassifier` baseline of the same size.

Both take images ``(n, H, W)`` (grey) or ``(n, H, W, C)``, float in [0, 1] or uint8.
"""
from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from ..nn.bcos import encode_image
from ..nn.bcos_vit import ATTENTION_PRIORS, BcosViT
from ..nn.losses import OneHotBCE
from ..nn.tensors import make_generator
from ..nn.vit import ViT
from ..validation import check_images, check_targets
from .augmentation import ZoomOutBatches
from .base import Batch
from .classifier import NeuralClassifier
from .params import stores_params

__all__ = ["VisionTransformerClassifier", "BcosViTClassifier", "ViTClassifier"]


class VisionTransformerClassifier(NeuralClassifier):
    """Shared image-classifier machinery: validation, encoding, training and prediction; the
    post-hoc pixel explainers of :mod:`interpretable.estimators.explainers.image` apply to every
    subclass. Subclasses implement ``_make_module``, ``_criterion`` and ``_encode``."""

    _parameter_constraints = {
        **NeuralClassifier._parameter_constraints,
        "patch_size": [Interval(Integral, 1, None, closed="left")],
        "embed_dim": [Interval(Integral, 1, None, closed="left")],
        "depth": [Interval(Integral, 1, None, closed="left")],
        "num_heads": [Interval(Integral, 1, None, closed="left")],
        "mlp_ratio": [Interval(Real, 0, None, closed="neither")],
        "stem_channels": [tuple, list],
        "zoom_out": [tuple, list, None],
        "zoom_out_probability": [Interval(Real, 0, 1, closed="both")],
        "lr_decay_at": [Interval(Real, 0, 1, closed="right"), None],
    }

    def __sklearn_tags__(self):
        """Inputs are images ``(n, H, W)`` or ``(n, H, W, C)``."""
        tags = super().__sklearn_tags__()
        tags.input_tags.string = False
        tags.input_tags.three_d_array = True
        return tags

    # ------------------------------------------------------------------ subclass hooks
    def _make_module(self, in_channels: int, image_size: tuple, n_classes: int) -> nn.Module:
        raise NotImplementedError

    def _criterion(self) -> nn.Module:
        raise NotImplementedError

    def _encode(self, X: np.ndarray) -> torch.Tensor:
        """(n, H, W, C) float32 in [0, 1] -> model input (n, C', H, W)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ fitted state
    def _build_module(self) -> nn.Module:
        return self._make_module(self._encoded_channels(), tuple(self.image_shape_),
                                 len(self.classes_))

    def _encoded_channels(self) -> int:
        probe = np.zeros((1, 1, 1, self.n_channels_), dtype=np.float32)
        return self._encode(probe).shape[1]

    def _get_fitted_state(self) -> dict:
        return {"classes_": self.classes_, "n_channels_": self.n_channels_,
                "image_shape_": list(self.image_shape_)}

    def _set_fitted_state(self, state: dict) -> None:
        self.classes_ = np.asarray(state["classes_"])
        self.n_channels_ = int(state["n_channels_"])
        self.image_shape_ = tuple(state["image_shape_"])

    def _check_params(self) -> None:
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim={self.embed_dim} must be divisible by "
                             f"num_heads={self.num_heads}.")
        if int(self.embed_dim * self.mlp_ratio) < 1:
            raise ValueError(f"mlp_ratio={self.mlp_ratio} gives an MLP of "
                             f"int(embed_dim * mlp_ratio) = 0 units (embed_dim="
                             f"{self.embed_dim}); it must be at least 1.")
        channels = self.stem_channels
        if not all(isinstance(c, Integral) and not isinstance(c, bool) and c >= 1
                   for c in channels):
            raise ValueError(f"stem_channels must be a sequence of integers >= 1, got "
                             f"{channels!r}.")
        scale = self.zoom_out
        if scale is not None and not (
                len(scale) == 2
                and all(isinstance(v, Real) and not isinstance(v, bool) for v in scale)
                and 0 < scale[0] <= scale[1] <= 1):
            raise ValueError("zoom_out must be None or (low, high) with "
                             f"0 < low <= high <= 1, got {scale!r}.")

    def _callbacks(self) -> list:
        """Learning-rate decay ×0.1 after ``lr_decay_at`` of the epochs (as in the paper)."""
        if self.lr_decay_at is None:
            return []
        from skorch.callbacks import LRScheduler

        milestone = max(1, int(round(self.lr_decay_at * self.max_epochs)))
        return [("lr_decay", LRScheduler(policy=torch.optim.lr_scheduler.MultiStepLR,
                                         milestones=[milestone], gamma=0.1))]

    # ------------------------------------------------------------------ training
    def _fit(self, X, y, sample_weight=None):
        """Train on images X (n, H, W[, C]) and labels y (n,) (with ``warm_start``: of the
        channels and size of the previous fit)."""
        seed = self._start_fit()
        continues = self._continues()
        X = check_images(X, channels=self.n_channels_ if continues else None)
        y = check_targets(y, len(X))
        h, w = X.shape[1:3]
        if continues and (h, w) != tuple(self.image_shape_):
            raise ValueError("warm_start=True continues the previous model, fitted on images "
                             f"of size {tuple(self.image_shape_)}; X has {(h, w)}.")
        if h % self.patch_size or w % self.patch_size:
            raise ValueError(f"image size {(h, w)} must be divisible by "
                             f"patch_size={self.patch_size}.")
        y_index = self._fit_labels(y)
        self.n_channels_ = X.shape[-1]
        self.image_shape_ = (h, w)
        batches = ZoomOutBatches(self._encode, self.zoom_out, self.zoom_out_probability,
                                  make_generator(seed + 1))
        self._fit_net(self._warm_started(self._build_module), self._criterion(),
                      {"x": torch.as_tensor(X)}, torch.as_tensor(y_index, dtype=torch.long),
                      seed=seed, sample_weight=self._training_weights(y_index, sample_weight),
                      callbacks=self._callbacks(), iterator_train__collate_fn=batches,
                      iterator_valid__collate_fn=ZoomOutBatches(self._encode, None, 0.0, None))

    # ------------------------------------------------------------------ inference
    def encode(self, X) -> Batch:
        """Validate images against the fitted channels and size: ``Batch`` with ``inputs``
        = ``{"x": model input (n, C', H, W)}`` and ``images`` = float32 ``(n, H, W, C)``."""
        self._check_fitted()
        images = check_images(X, channels=self.n_channels_)
        if tuple(images.shape[1:3]) != tuple(self.image_shape_):
            raise ValueError(f"X has images of size {tuple(images.shape[1:3])} but the "
                             f"estimator was fitted on {tuple(self.image_shape_)}.")
        return Batch({"x": self._encode(images)}, images=images)


class BcosViTClassifier(VisionTransformerClassifier):
    """Holistically explainable B-cos Vision Transformer (Böhle, Fritz & Schiele).

    Every component is dynamic linear, so each logit is exactly ``W(x)·x + bias``.

    Parameters
    ----------
    patch_size : int
        Kernel size and stride of the last stem convolution (one token per patch).
    embed_dim, depth, num_heads, mlp_ratio : transformer size (MLP hidden = mlp_ratio·embed_dim).
    stem_channels : tuple of int
        Channels of the 3×3 B-cos convolutions of the CNN tokeniser before the patch layer.
    attention_prior : {"multiplicative", "additive", "none"}
        Learned per-layer, per-head prior ``B``: ``SM(R)·SM(B)``, ``SM(R+B)`` or none.
    b : float
        B-cos exponent B (1 = linear, 2 in the paper).
    max_out : int
        Units per neuron pooled by MaxOut in the stem, attention and MLP layers (1 = none).
    scale_factor : float or None
        f in the per-layer output scaling γ = f/√fan_in (None: 30; see
        :class:`~interpretable.nn.bcos_vit.BcosViT` for why not the paper's 15 / 150).
    output_scale : float
        Factor applied to the classifier output before the logit bias (the paper's 10⁻³
        compensates features scaled by 10³; no such scaling here, so 1).
    logit_bias : float or None
        Fixed logit bias (None: log(p/(1-p)) with p = 1/n_classes, as log(0.01/0.99) for
        ImageNet in the paper).
    stem_stride : int
        Stride of the first 3×3 stem convolution (the patch convolution then uses
        ``patch_size / stem_stride``; must divide ``patch_size``). 1 keeps the full resolution;
        2, as in the ``bcos`` package's stem, is about 1.3× faster (see README, Performance).
    zoom_out : (low, high) or None
        Random zoom-out augmentation: at every epoch, a training image is (with
        ``zoom_out_probability``) shrunk by a factor drawn uniformly from [low, high]
        (0 < low <= high <= 1) and placed at a random position on a black canvas. The paper
        trains with random resized crops, so its models know objects at many scales; models
        trained on centred MNIST digits do not, and the downscaled cells of the grid pointing
        game are then out of distribution. None: no augmentation.
    zoom_out_probability : float
        Share of the training images zoomed out at each epoch (with ``zoom_out``).
    lr_decay_at : float or None
        The learning rate is divided by 10 after this fraction of ``max_epochs`` (the paper:
        after 60 of 100 epochs); None keeps it constant.
    {class_weight}
    {training_parameters}

    Training uses binary cross-entropy on sigmoid outputs. The default explanation is exact:
    the contribution maps ``W(x)ᵀ_k ⊙ x``
    (:class:`~interpretable.estimators.explainers.image.BcosContributions`).
    """

    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints,
        "attention_prior": [StrOptions(set(ATTENTION_PRIORS))],
        "b": [Interval(Real, 1, None, closed="left")],
        "max_out": [Interval(Integral, 1, None, closed="left")],
        "scale_factor": [Interval(Real, 0, None, closed="neither"), None],
        "output_scale": [Interval(Real, 0, None, closed="neither")],
        "logit_bias": [Interval(Real, None, None, closed="neither"), None],
        "stem_stride": [Interval(Integral, 1, None, closed="left")],
    }

    @stores_params
    def __init__(self, patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0,
                 stem_channels=(32,), attention_prior="multiplicative", b=2.0, max_out=2,
                 scale_factor=None, output_scale=1.0, logit_bias=None, stem_stride=1, *,
                 zoom_out=None, zoom_out_probability=0.5, lr=2e-3, lr_decay_at=0.6, max_epochs=15,
                 batch_size=32, optimizer="adam", weight_decay=0.0, device="auto",
                 random_state=None, verbose=0, class_weight=None, callbacks=None,
                 validation_fraction=None, early_stopping=False, n_iter_no_change=5,
                 warm_start=False, precision="float32", accelerator=None):
        """Store the parameters unchanged (see the class docstring)."""

    def _check_params(self) -> None:
        super()._check_params()
        if self.patch_size % self.stem_stride:
            raise ValueError(f"stem_stride={self.stem_stride} must divide "
                             f"patch_size={self.patch_size}.")

    def _make_module(self, in_channels, image_size, n_classes):
        return BcosViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                       self.depth, self.num_heads, self.mlp_ratio, tuple(self.stem_channels),
                       self.attention_prior, self.b, self.max_out,
                       self.scale_factor, self.output_scale, self.logit_bias,
                       stem_stride=self.stem_stride)

    def _criterion(self):
        return OneHotBCE()

    def _encode(self, X):
        return encode_image(torch.as_tensor(X).permute(0, 3, 1, 2))  # channels-last memory


class ViTClassifier(VisionTransformerClassifier):
    """Conventional Vision Transformer of the same size (CNN stem, learned positional
    embedding, GELU, LayerNorm, cross-entropy): the accuracy baseline for
    :class:`BcosViTClassifier`. Explained post hoc only (``explain_methods``). Parameters as
    in :class:`BcosViTClassifier` (``zoom_out`` included); ``dropout`` in the blocks."""

    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints,
        "dropout": [Interval(Real, 0, 1, closed="left")],
    }

    @stores_params
    def __init__(self, patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0,
                 stem_channels=(32,), dropout=0.0, *, zoom_out=None, zoom_out_probability=0.5,
                 lr=2e-3, lr_decay_at=0.6, max_epochs=15, batch_size=32, optimizer="adam",
                 weight_decay=0.0, device="auto", random_state=None, verbose=0,
                 class_weight=None, callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        """Store the parameters unchanged (see the class docstring)."""

    def _make_module(self, in_channels, image_size, n_classes):
        return ViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                   self.depth, self.num_heads, self.mlp_ratio, tuple(self.stem_channels),
                   self.dropout)

    def _criterion(self):
        return nn.CrossEntropyLoss()

    def _encode(self, X):
        return torch.as_tensor(X).permute(0, 3, 1, 2).contiguous()
