"""What the image classifiers share (:class:`VisionTransformerClassifier`): the input rules,
training with augmentation, and inference in memory-bounded batches.

Inputs follow ``image_size``: None uses images as given, an array ``(n, H, W[, C])`` of the
training size and channels; an int ``s`` takes any images (arrays of any size, lists of
differently sized arrays, PIL images, file paths) as RGB: an image of ``s × s`` pixels as it
is, any other through the ImageNet evaluation transform (shorter side resized to
``round(s * 8 / 7)``, centre crop ``s × s``; :func:`~interpretable.datasets.eval_crops`),
and records each crop's box in its source image. One image without its batch axis is refused
(:func:`~interpretable._validation.refuse_single_image`).
"""
from __future__ import annotations

from dataclasses import dataclass
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from interpretable._validation import (
    check_batch_size,
    check_images,
    check_targets,
    refuse_single_image,
)
from interpretable.datasets import eval_crops
from interpretable.estimators.core._base import TABULAR_CHECKS, EncodedInputs
from interpretable.estimators.core._classifier import TABULAR_CLASSIFIER_CHECKS, NeuralClassifier
from interpretable.estimators.vision._augmentation import ZoomOutBatches
from interpretable.estimators.vision._explainers import (
    FinalAttention,
    GradCAM,
    GradSAM,
    PixelGradientShap,
    PixelInputXGradient,
    PixelIntegratedGradients,
    PixelKernelShap,
    PixelLime,
    PixelOcclusion,
    PixelSmoothGrad,
    Rollout,
)
from interpretable.nn import logits_of, make_generator
from interpretable.nn.bcos import explanation_mode
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    import os
    from collections.abc import Hashable, Iterator, Mapping, Sequence

    from numpy.typing import ArrayLike
    from PIL import Image

    from interpretable.estimators.core._explainer import Explainer
    from interpretable.explanation import ImageExplanation

__all__ = ["EncodedImages", "VisionTransformerClassifier", "SizedVisionTransformerClassifier",
           "INFERENCE_MEMORY"]

#: bytes the activations of one inference batch may take on CPU (on CUDA: half the free memory)
INFERENCE_MEMORY = 2**30
#: activation bytes of an explanation (forward + backward) per byte autograd saves (measured
#: 1.5 for a ViT-Ti at 224 px on CPU)
SAVED_TO_PEAK = 2
_BYTES_PER_IMAGE: dict = {}  # (parameter shapes, input shape, dtype) -> bytes


def resize_size(crop_size: int) -> int:
    """The resize of the evaluation transform for a crop of ``crop_size`` (256 for 224)."""
    return round(crop_size * 8 / 7)


@dataclass(frozen=True)
class EncodedImages(EncodedInputs):
    """A :class:`~interpretable.estimators.core.EncodedInputs` of images with their crop boxes.

    Parameters
    ----------
    inputs : dict of str to torch.Tensor
        ``{"x": model input (n, C', H, W)}``.
    units : None, default=None
        Unused for images.
    queries : None, default=None
        Unused for images.
    images : ndarray of shape (n, H, W, C) or None, default=None
        The images the model sees, float in [0, 1].
    texts : None, default=None
        Unused for images.
    crop_boxes : ndarray of shape (n, 4) or None, default=None
        Float64 (top, left, bottom, right): the part of each source image the model saw
        (``image_size`` transform), in its pixel coordinates; None for images used as given.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosViTClassifier
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, [0, 1])
    >>> batch = clf.encode(X)
    >>> batch.inputs["x"].shape, batch.crop_boxes is None
    (torch.Size([2, 6, 8, 8]), True)
    """

    crop_boxes: np.ndarray | None = None


def activation_bytes(module: nn.Module, input_shape: tuple, dtype: torch.dtype) -> int:
    """Bytes autograd saves for one more image of ``input_shape`` (C, H, W) in a forward pass
    of ``module`` (on the meta device: nothing is allocated) in explanation mode with constant
    parameters, as the explanations run."""
    def saved(n: int) -> int:
        total = 0

        def pack(tensor):
            nonlocal total
            total += tensor.numel() * tensor.element_size()
            return tensor

        x = torch.zeros((n, *input_shape), dtype=dtype, device="meta", requires_grad=True)
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), \
                explanation_mode(constant_parameters=True):
            logits_of(module(x))
        return total

    return saved(2) - saved(1)


class VisionTransformerClassifier(NeuralClassifier):
    """Shared image-classifier machinery: validation, encoding, training and prediction; the
    post-hoc pixel explainers of :mod:`interpretable.estimators.methods` apply to every
    subclass. Subclasses implement ``_make_module``, ``_criterion`` and ``_encode``."""

    #: the explanation methods it offers, its default first
    explainers = (Rollout(), FinalAttention(), GradSAM(), GradCAM(), PixelInputXGradient(),
                   PixelIntegratedGradients(), PixelOcclusion(), PixelLime(), PixelKernelShap(),
                   PixelSmoothGrad(), PixelGradientShap())

    _parameter_constraints = {
        **NeuralClassifier._parameter_constraints,
        "image_size": [StrOptions({"auto"}), Interval(Integral, 1, None, closed="left"), None],
        "zoom_out": [tuple, list, None],
        "zoom_out_probability": [Interval(Real, 0, 1, closed="both")],
        "lr_decay_at": [Interval(Real, 0, 1, closed="right"), None],
    }
    _expected_failed_checks = dict.fromkeys(
        TABULAR_CHECKS + TABULAR_CLASSIFIER_CHECKS + ("check_fit2d_1sample",),
        "fits on 2-d numeric data, which an image classifier refuses: it takes image batches "
        "(n, H, W) or (n, H, W, C)")

    def __sklearn_tags__(self):
        """Inputs are images ``(n, H, W)`` or ``(n, H, W, C)``, pixels never negative."""
        tags = super().__sklearn_tags__()
        tags.input_tags.string = False
        tags.input_tags.three_d_array = True
        tags.input_tags.positive_only = True
        return tags

    # ------------------------------------------------------------------ subclass hooks
    def _make_module(self, in_channels: int, image_size: tuple, n_classes: int) -> nn.Module:
        raise NotImplementedError

    def _criterion(self) -> nn.Module:
        raise NotImplementedError

    def _encode(self, X: np.ndarray) -> torch.Tensor:
        """(n, H, W, C) float32 in [0, 1] -> model input (n, C', H, W)."""
        raise NotImplementedError

    def _crop_size(self) -> int | None:
        """``image_size`` resolved: None (images as given) or the crop size."""
        return None if self.image_size == "auto" else self.image_size

    def _token_stride(self, channels: int) -> tuple[int, str]:
        """(input pixels per token side, what sets it) for images of ``channels`` channels."""
        raise NotImplementedError

    def _prepare_fit(self) -> None:
        """Set further fitted attributes once ``classes_``, ``n_channels_`` and
        ``image_shape_`` are known (before the module is built)."""

    def _module_factory(self, X: np.ndarray, y: np.ndarray):
        """What builds the module to train on images X (n, H, W, C) and class indices y (n,)
        (before ``warm_start`` loads the previous fit)."""
        return self._build_module

    def _phase(self, n_samples: int) -> dict:
        """Training-phase overrides of :meth:`_fit_net` (``lr``, ``callbacks``, net keywords)
        for ``n_samples`` training images."""
        return {"callbacks": self._callbacks()}

    # ------------------------------------------------------------------ fitted state
    def _build_module(self) -> nn.Module:
        return self._make_module(self._encoded_channels(), tuple(self.image_shape_),
                                 len(self.classes_))

    def _encoded_channels(self) -> int:
        probe = np.zeros((1, 1, 1, self.n_channels_), dtype=np.float32)
        return self._encode(probe).shape[1]

    def _get_fitted_state(self) -> dict:
        return {"classes_": self.classes_, "n_channels_": self.n_channels_,
                "image_shape_": list(self.image_shape_), "crop_size_": self.crop_size_}

    def _set_fitted_state(self, state: dict) -> None:
        self.classes_ = np.asarray(state["classes_"])
        self.n_channels_ = int(state["n_channels_"])
        self.image_shape_ = tuple(state["image_shape_"])
        crop = state["crop_size_"]
        if crop is not None and (type(crop) is not int or crop < 1
                                 or self.image_shape_ != (crop, crop)):
            raise ValueError(f"crop_size_={crop!r} does not match image_shape_ "
                             f"{self.image_shape_}.")
        self.crop_size_ = crop

    def _check_params(self) -> None:
        scale = self.zoom_out
        if scale is not None and not (
                len(scale) == 2
                and all(isinstance(v, Real) and not isinstance(v, bool) for v in scale)
                and 0 < scale[0] <= scale[1] <= 1):
            raise ValueError("zoom_out must be None or (low, high) with "
                             f"0 < low <= high <= 1, got {scale!r}.")

    def _callbacks(self, warmup: float = 0.0) -> list:
        """The learning-rate schedule: a linear rise over the first ``warmup`` share of the
        steps, then ×0.1 after ``lr_decay_at`` of the epochs (as in the paper)."""
        if self.lr_decay_at is None and not warmup:
            return []
        from interpretable.estimators.core._nets import (
            LearningRateSchedule,  # skorch: imported at the first fit
        )

        return [("lr_schedule", LearningRateSchedule(warmup, decay="step",
                                                     decay_at=self.lr_decay_at))]

    # ------------------------------------------------------------------ inputs
    def _read(self, X, crop_size: int | None, channels: int | None = None,
              image_shape: tuple | None = None) -> tuple[np.ndarray, np.ndarray | None]:
        """Images float32 (n, H, W, C) in [0, 1] and their crop boxes (n, 4) or None; the
        fitted ``channels`` and ``image_shape`` (None before a first fit) tell one image
        from a batch."""
        if crop_size is None:
            return check_images(X, channels=channels, image_shape=image_shape), None
        refuse_single_image(X, image_shape="any")
        crops, boxes = eval_crops(X, resize_size(crop_size), crop_size, channels_last=True,
                                  keep_crop_sized=True)
        return crops.numpy(), np.asarray(boxes, dtype=np.float64)

    # ------------------------------------------------------------------ training
    def _fit(self, X, y, sample_weight=None):
        """Train on images X and labels y (n,) (with ``warm_start``: of the channels and size
        of the previous fit)."""
        seed = self._start_fit()
        continues = self._continues()
        crop = self.crop_size_ if continues else self._crop_size()
        fitted = (self.n_channels_, self.image_shape_) if continues else ()
        X, _ = self._read(X, crop, *fitted)
        y = check_targets(y, len(X))
        h, w = X.shape[1:3]
        if continues and (h, w) != tuple(self.image_shape_):
            raise ValueError("warm_start=True continues the previous model, fitted on images "
                             f"of size {tuple(self.image_shape_)}; X has {(h, w)}.")
        stride, source = self._token_stride(X.shape[-1])
        if h % stride or w % stride:
            raise ValueError(f"image size {(h, w)} must be divisible by {stride} (the token "
                             f"stride, {source}).")
        y_index = self._fit_labels(y)
        self.n_channels_, self.image_shape_, self.crop_size_ = X.shape[-1], (h, w), crop
        self._prepare_fit()
        batches = ZoomOutBatches(self._encode, self.zoom_out, self.zoom_out_probability,
                                 make_generator(seed + 1))
        self._fit_net(self._warm_started(self._module_factory(X, y_index)), self._criterion(),
                      {"x": torch.as_tensor(X)}, torch.as_tensor(y_index, dtype=torch.long),
                      seed=seed, sample_weight=self._training_weights(y_index, sample_weight),
                      iterator_train__collate_fn=batches,
                      iterator_valid__collate_fn=ZoomOutBatches(self._encode, None, 0.0, None),
                      **self._phase(len(X)))
        self.module_.requires_grad_(True)  # layers frozen for fine-tuning

    # ------------------------------------------------------------------ inference
    def encode(self, X: ArrayLike | Sequence[str | os.PathLike[str] | Image.Image | ArrayLike]
               ) -> EncodedImages:
        """Validate images against the fitted input rules (``image_size``) and encode them.

        Parameters
        ----------
        X : array-like of shape (n_samples, H, W[, C]) or sequence of images
            Images as in ``fit`` (with an ``image_size``: arrays of any size, PIL images or
            file paths; those of ``image_size`` pixels are taken as they are, the others
            resized and centre-cropped).

        Returns
        -------
        EncodedImages
            ``inputs``: ``{"x": model input (n, C', H, W)}`` (float64 for a float64 module,
            e.g. ``astype("float64")``); ``images``: float32 ``(n, H, W, C)``, the crops
            the model sees; ``crop_boxes``.

        Raises
        ------
        ValueError
            If ``X`` is one image without its batch axis (pass ``X[None]``), or the images'
            size differs from the fitted one.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import BcosViTClassifier
        >>> X = np.random.default_rng(0).random((8, 8, 8, 3), dtype=np.float32)
        >>> y = [0, 1] * 4
        >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
        ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, y)
        >>> clf.encode(X[:2]).images.shape
        (2, 8, 8, 3)
        """
        self._check_fitted()
        images, boxes = self._read(X, self.crop_size_, self.n_channels_, self.image_shape_)
        if tuple(images.shape[1:3]) != tuple(self.image_shape_):
            raise ValueError(f"X has images of size {tuple(images.shape[1:3])} but the "
                             f"estimator was fitted on {tuple(self.image_shape_)}.")
        exact = next(self.module_.parameters()).dtype == torch.float64  # encoded in float64
        return EncodedImages({"x": self._encode(images.astype(np.float64) if exact else images)},
                             images=images, crop_boxes=boxes)

    def iter_batches(self, inputs: Mapping[str, torch.Tensor], batch_size: int | None = None,
                     *, ordered: bool = False
                     ) -> Iterator[tuple[slice | torch.Tensor, dict[str, torch.Tensor]]]:
        """Yield the mini-batches of encoded images, bounded in memory.

        With ``batch_size=None`` the batches hold at most the estimator's ``batch_size``
        images, fewer when the activations of an explanation of the batch would exceed
        :data:`INFERENCE_MEMORY` bytes (CPU) or half the free memory of the GPU.

        Parameters
        ----------
        inputs : mapping of str to torch.Tensor
            Encoded images (``encode(X).inputs``).
        batch_size : int or None, default=None
            Images per batch (None: bounded as above).
        ordered : bool, default=False
            Unused for images (same sizes); kept for the common signature.

        Yields
        ------
        rows : slice
            The batch's rows of ``inputs``.
        batch : dict of str to torch.Tensor
            Those rows on ``device_``.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import BcosViTClassifier
        >>> X = np.random.default_rng(0).random((8, 8, 8, 3), dtype=np.float32)
        >>> y = [0, 1] * 4
        >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
        ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, y)
        >>> [rows for rows, _ in clf.iter_batches(clf.encode(X).inputs, batch_size=5)]
        [slice(0, 5, None), slice(5, 8, None)]
        """
        self._check_fitted()
        if batch_size is None:
            batch_size = min(check_batch_size(None, default=self.batch_size),
                             self._memory_bounded_batch(tuple(inputs["x"].shape[1:])))
        yield from super().iter_batches(inputs, batch_size, ordered=ordered)

    if TYPE_CHECKING:  # explain (the estimators' own) explains images: ImageExplanation
        def explain(self, X: ArrayLike | Sequence[str | os.PathLike[str] | Image.Image
                                                   | ArrayLike],
                    target: Hashable | ArrayLike | None = None, *,
                    contrast: Hashable | ArrayLike | None = None,
                    method: str | Explainer | None = None, batch_size: int | None = None,
                    **options: Any) -> ImageExplanation:
            ...

    def _memory_bounded_batch(self, input_shape: tuple) -> int:
        """The most images per batch whose explanation fits the memory budget."""
        dtype = next(self.module_.parameters()).dtype
        key = (type(self.module_).__name__, input_shape, dtype,
               tuple((k, tuple(v.shape)) for k, v in self.module_.state_dict().items()))
        if key not in _BYTES_PER_IMAGE:
            with torch.device("meta"):
                meta = self._build_module().to(dtype)
            _BYTES_PER_IMAGE[key] = max(1, SAVED_TO_PEAK * activation_bytes(meta, input_shape,
                                                                            dtype))
        device = torch.device(self.device_)
        budget = INFERENCE_MEMORY if device.type != "cuda" else \
            torch.cuda.mem_get_info(device)[0] // 2
        return max(1, budget // _BYTES_PER_IMAGE[key])


class SizedVisionTransformerClassifier(VisionTransformerClassifier):
    """A :class:`VisionTransformerClassifier` whose network the parameters size:
    ``patch_size``, ``embed_dim``, ``depth``, ``num_heads``, ``mlp_ratio`` and
    ``stem_channels`` (the holistic B-cos ViT and the conventional ViT)."""

    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints,
        "patch_size": [Interval(Integral, 1, None, closed="left")],
        "embed_dim": [Interval(Integral, 1, None, closed="left")],
        "depth": [Interval(Integral, 1, None, closed="left")],
        "num_heads": [Interval(Integral, 1, None, closed="left")],
        "mlp_ratio": [Interval(Real, 0, None, closed="neither")],
        "stem_channels": [tuple, list],
    }

    def _stem_channels(self) -> tuple:
        """``stem_channels`` resolved: the channels of the stem's convolutions."""
        return tuple(self.stem_channels)

    def _token_stride(self, channels: int) -> tuple[int, str]:
        return self.patch_size, f"patch_size={self.patch_size}"

    def _check_params(self) -> None:
        super()._check_params()
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim={self.embed_dim} must be divisible by "
                             f"num_heads={self.num_heads}.")
        if int(self.embed_dim * self.mlp_ratio) < 1:
            raise ValueError(f"mlp_ratio={self.mlp_ratio} gives an MLP of "
                             f"int(embed_dim * mlp_ratio) = 0 units (embed_dim="
                             f"{self.embed_dim}); it must be at least 1.")
        channels = self._stem_channels()
        if not all(isinstance(c, Integral) and not isinstance(c, bool) and c >= 1
                   for c in channels):
            raise ValueError(f"stem_channels must be a sequence of integers >= 1, got "
                             f"{channels!r}.")
