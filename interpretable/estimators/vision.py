"""Vision transformer classifiers: :class:`BcosViTClassifier` (holistically explainable B-cos
ViT, Böhle et al.) and the conventional :class:`ViTClassifier` baseline of the same size.

Both take images ``(n, H, W)`` (grey) or ``(n, H, W, C)``, float in [0, 1] or uint8.
"""
from __future__ import annotations

import copy
import functools
from numbers import Integral, Real

import numpy as np
import torch
from torch import nn
from sklearn.utils._param_validation import Interval, StrOptions
from torch.nn import functional as F

from ..validation import check_images, check_targets, make_generator
from ..attribution.vision import METHODS, attribute, inherent, inherent_terms
from ..explanation import ImageExplanation
from ..nn.bcos import encode_image
from ..nn.bcos_vit import ATTENTION_PRIORS, BcosViT
from ..nn.losses import weighted_mean
from ..nn.vit import ViT
from .base import Batch, NeuralClassifier

__all__ = ["BcosViTClassifier", "ViTClassifier"]


class _OneHotBCE(nn.Module):
    """Binary cross-entropy on sigmoid outputs against one-hot targets (B-cos training),
    optionally weighted per sample."""

    def forward(self, logits: torch.Tensor, y: torch.Tensor, sample_weight=None) -> torch.Tensor:
        target = F.one_hot(y.long(), logits.shape[1]).to(logits.dtype)
        if sample_weight is None:
            return F.binary_cross_entropy_with_logits(logits, target)
        return weighted_mean(F.binary_cross_entropy_with_logits(
            logits, target, reduction="none").mean(1), sample_weight)


class _ZoomOutBatches:
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
        from torch.utils.data import default_collate

        X, y = default_collate(items)
        images = X["x"] if self.scale is None else self._zoom_out(X["x"])
        return {**X, "x": self.encode(images)}, y


class _ImageTransformerClassifier(NeuralClassifier):
    """Shared image-classifier machinery: validation, encoding, training, prediction and the
    post-hoc explanations. Subclasses set ``explain_methods`` and implement ``_make_module``,
    ``_criterion`` and ``_encode``."""

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

    def __init__(self, *, patch_size, embed_dim, depth, num_heads, mlp_ratio, stem_channels,
                 zoom_out, zoom_out_probability, lr, lr_decay_at, max_epochs, batch_size,
                 optimizer, weight_decay, device, random_state, verbose,
                 class_weight, callbacks, validation_fraction, early_stopping, n_iter_no_change,
                 warm_start, precision, accelerator):
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size,
                         optimizer=optimizer, weight_decay=weight_decay, device=device,
                         random_state=random_state, verbose=verbose,
                         class_weight=class_weight, callbacks=callbacks,
                         validation_fraction=validation_fraction, early_stopping=early_stopping,
                         n_iter_no_change=n_iter_no_change, warm_start=warm_start,
                         precision=precision, accelerator=accelerator)
        self.patch_size = patch_size
        self.embed_dim = embed_dim
        self.depth = depth
        self.num_heads = num_heads
        self.mlp_ratio = mlp_ratio
        self.stem_channels = stem_channels
        self.zoom_out = zoom_out
        self.zoom_out_probability = zoom_out_probability
        self.lr_decay_at = lr_decay_at

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
        batches = _ZoomOutBatches(self._encode, self.zoom_out, self.zoom_out_probability,
                                  make_generator(seed + 1))
        self._fit_net(self._warm_started(self._build_module), self._criterion(),
                      {"x": torch.as_tensor(X)}, torch.as_tensor(y_index, dtype=torch.long),
                      seed=seed, sample_weight=self._training_weights(y_index, sample_weight),
                      callbacks=self._callbacks(), iterator_train__collate_fn=batches,
                      iterator_valid__collate_fn=_ZoomOutBatches(self._encode, None, 0.0, None))

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

    # ------------------------------------------------------------------ explanations
    def _explain_post_hoc(self, batch: Batch, target, *, batch_size, method,
                          n_steps=32) -> ImageExplanation:
        """Pixel attributions (n, H, W) by a post-hoc method (see
        :func:`interpretable.attribution.vision.attribute`). Integrated gradients start from
        a black image (for B-cos models its encoding ``(0, 1)``, not the all-zero input)."""
        logits = self.logits(batch.inputs, batch_size=batch_size).numpy()
        predicted = logits.argmax(1)
        t_index = self.target_indices(target, logits)
        targets = torch.as_tensor(t_index, dtype=torch.long)
        black = self._encode(np.zeros((1, *batch.images.shape[1:]), dtype=np.float32))
        maps = [attribute(self.module_, b["x"], targets[rows].to(self.device_), method,
                          n_steps=n_steps, baseline=black).cpu()
                for rows, b in self.iter_batches(batch.inputs, batch_size)]
        return ImageExplanation(values=torch.cat(maps).numpy(), target=self.classes_[t_index],
                                prediction=self.classes_[predicted], method=method,
                                images=batch.images, classes=self.classes_,
                                proba=torch.softmax(torch.as_tensor(logits, dtype=torch.float64),
                                                    1).numpy())

    def _explainer(self, method: str):
        explain = functools.partial(self._explain_post_hoc, method=method)
        if method == "integrated_gradients":
            return explain
        return lambda batch, target, *, batch_size: explain(batch, target, batch_size=batch_size)


class BcosViTClassifier(_ImageTransformerClassifier):
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
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose :
        see :class:`~interpretable.estimators.base.NeuralEstimator`. Training uses binary
        cross-entropy on sigmoid outputs.
    """

    _parameter_constraints = {
        **_ImageTransformerClassifier._parameter_constraints,
        "attention_prior": [StrOptions(set(ATTENTION_PRIORS))],
        "b": [Interval(Real, 1, None, closed="left")],
        "max_out": [Interval(Integral, 1, None, closed="left")],
        "scale_factor": [Interval(Real, 0, None, closed="neither"), None],
        "output_scale": [Interval(Real, 0, None, closed="neither")],
        "logit_bias": [Interval(Real, None, None, closed="neither"), None],
        "stem_stride": [Interval(Integral, 1, None, closed="left")],
    }
    explain_methods = METHODS

    def __init__(self, patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0,
                 stem_channels=(32,), attention_prior="multiplicative", b=2.0, max_out=2,
                 scale_factor=None, output_scale=1.0, logit_bias=None, stem_stride=1, *, zoom_out=None,
                 zoom_out_probability=0.5, lr=2e-3, lr_decay_at=0.6, max_epochs=15,
                 batch_size=32, optimizer="adam", weight_decay=0.0, device="auto",
                 random_state=None, verbose=0, class_weight=None, callbacks=None,
                 validation_fraction=None, early_stopping=False, n_iter_no_change=5,
                 warm_start=False, precision="float32", accelerator=None):
        super().__init__(patch_size=patch_size, embed_dim=embed_dim, depth=depth,
                         num_heads=num_heads, mlp_ratio=mlp_ratio, stem_channels=stem_channels,
                         zoom_out=zoom_out, zoom_out_probability=zoom_out_probability,
                         lr=lr, lr_decay_at=lr_decay_at, max_epochs=max_epochs,
                         batch_size=batch_size, optimizer=optimizer, weight_decay=weight_decay,
                         device=device, random_state=random_state,
                         verbose=verbose, class_weight=class_weight, callbacks=callbacks,
                         validation_fraction=validation_fraction, early_stopping=early_stopping,
                         n_iter_no_change=n_iter_no_change, warm_start=warm_start,
                         precision=precision, accelerator=accelerator)
        self.attention_prior = attention_prior
        self.b = b
        self.max_out = max_out
        self.scale_factor = scale_factor
        self.output_scale = output_scale
        self.logit_bias = logit_bias
        self.stem_stride = stem_stride

    def _make_module(self, in_channels, image_size, n_classes):
        return BcosViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                       self.depth, self.num_heads, self.mlp_ratio, tuple(self.stem_channels),
                       self.attention_prior, self.b, self.max_out,
                       self.scale_factor, self.output_scale, self.logit_bias,
                       stem_stride=self.stem_stride)

    def _criterion(self):
        return _OneHotBCE()

    def _encode(self, X):
        return encode_image(torch.as_tensor(X).permute(0, 3, 1, 2))  # channels-last memory

    def _explain_inherent(self, batch: Batch, target, *, batch_size, by=None,
                          dtype=None) -> ImageExplanation:
        """The exact contribution maps ``W(x)ᵀ_k ⊙ x`` summed over channels, with ``W(x)``,
        logit and bias (``completeness_error``); one forward and one backward pass per batch.

        by : None or "head": also the exact contribution of every residual-stream component
            (token embedding, each layer's heads and MLP) as ``components``; they sum to
            ``values``.
        dtype : None or "float64": explain with a float64 copy of the model (completeness to
            ~1e-12 instead of float32 rounding, which is relatively large for logits near 0).
        """
        if by not in (None, "head"):
            raise ValueError(f"by must be None or 'head', got {by!r}.")
        if dtype not in (None, "float32", "float64"):
            raise ValueError(f"dtype must be None, 'float32' or 'float64', got {dtype!r}.")
        module, encoded = self.module_, batch.inputs["x"]
        if dtype is not None:
            precision = getattr(torch, dtype)
            module, encoded = copy.deepcopy(module).to(precision), encoded.to(precision)
        t_index = None if target is None else \
            torch.as_tensor(self.target_indices(target, encoded), dtype=torch.long)
        fields = {k: [] for k in ("maps", "weights", "logits", "targets", "predicted",
                                  "components", "proba")}
        names = []
        for rows, b in self.iter_batches({"x": encoded}, batch_size):
            x = b["x"]
            t = None if t_index is None else t_index[rows].to(x.device)
            contrib, w, lg = inherent(module, x, t)
            t = lg.argmax(1) if t is None else t
            fields["maps"].append(contrib.cpu())
            fields["weights"].append(w.permute(0, 2, 3, 1).cpu())
            fields["logits"].append(lg.gather(1, t[:, None])[:, 0].cpu())
            fields["targets"].append(t.cpu())
            fields["predicted"].append(lg.argmax(1).cpu())
            fields["proba"].append(torch.softmax(lg.double(), 1).cpu())
            if by == "head":
                comp, names = inherent_terms(module, x, t)
                fields["components"].append(comp.cpu())
        cat = {k: torch.cat(v).numpy() if v else None for k, v in fields.items()}
        logit = cat["logits"].astype(np.float64)
        return ImageExplanation(
            values=cat["maps"], target=self.classes_[cat["targets"]],
            prediction=self.classes_[cat["predicted"]], method="inherent", images=batch.images,
            weights=cat["weights"], logit=logit, bias=np.full(len(logit), module.logit_bias),
            components=cat["components"], component_names=list(names), proba=cat["proba"],
            classes=self.classes_)

    def _explainer(self, method: str):
        if method == "inherent":
            return self._explain_inherent
        return super()._explainer(method)


class ViTClassifier(_ImageTransformerClassifier):
    """Conventional Vision Transformer of the same size (CNN stem, learned positional
    embedding, GELU, LayerNorm, cross-entropy): the accuracy baseline for
    :class:`BcosViTClassifier`. Explained post hoc only (``explain_methods``). Parameters as
    in :class:`BcosViTClassifier` (``zoom_out`` included); ``dropout`` in the blocks."""

    _parameter_constraints = {
        **_ImageTransformerClassifier._parameter_constraints,
        "dropout": [Interval(Real, 0, 1, closed="left")],
    }
    explain_methods = tuple(m for m in METHODS if m != "inherent")

    def __init__(self, patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0,
                 stem_channels=(32,), dropout=0.0, *, zoom_out=None, zoom_out_probability=0.5,
                 lr=2e-3, lr_decay_at=0.6, max_epochs=15, batch_size=32, optimizer="adam",
                 weight_decay=0.0, device="auto", random_state=None, verbose=0,
                 class_weight=None, callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        super().__init__(patch_size=patch_size, embed_dim=embed_dim, depth=depth,
                         num_heads=num_heads, mlp_ratio=mlp_ratio, stem_channels=stem_channels,
                         zoom_out=zoom_out, zoom_out_probability=zoom_out_probability,
                         lr=lr, lr_decay_at=lr_decay_at, max_epochs=max_epochs,
                         batch_size=batch_size, optimizer=optimizer, weight_decay=weight_decay,
                         device=device, random_state=random_state,
                         verbose=verbose, class_weight=class_weight, callbacks=callbacks,
                         validation_fraction=validation_fraction, early_stopping=early_stopping,
                         n_iter_no_change=n_iter_no_change, warm_start=warm_start,
                         precision=precision, accelerator=accelerator)
        self.dropout = dropout

    def _make_module(self, in_channels, image_size, n_classes):
        return ViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                   self.depth, self.num_heads, self.mlp_ratio, tuple(self.stem_channels),
                   self.dropout)

    def _criterion(self):
        return nn.CrossEntropyLoss()

    def _encode(self, X):
        return torch.as_tensor(X).permute(0, 3, 1, 2).contiguous()
