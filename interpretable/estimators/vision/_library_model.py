"""Any torchvision or timm image classifier, run as it is: :class:`ImageClassifier`.

The network is the library's own module (a ResNet, ConvNeXt, EfficientNet, DenseNet, Swin,
DeiT, ...: any classification builder of torchvision, any timm model), rebuilt from its
recipe (:mod:`interpretable.nn`) and run in eval mode behind
:class:`~interpretable.nn.LibraryImageModel`, on images normalised as it was
trained. :meth:`ImageClassifier.from_pretrained` takes a model, its state dict or a file as it
is (checked on the meta device first, :mod:`.library_pretrained`); ``fit`` fine-tunes it or
trains one from scratch. The saved model is the recipe (library, name, builder arguments) and
safetensors weights: no code is read from a file.

Images follow :mod:`.base`: an image at the model's input size as it is, any other resized and
centre-cropped as the weights' preset does. The post-hoc methods are those of
:mod:`.library_explainers` and :mod:`.explainers` (GradCAM at the last spatial feature map).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from torch import nn

from interpretable._validation import check_images, refuse_single_image
from interpretable.datasets import eval_crops
from interpretable.estimators.core._training import fit_transactionally
from interpretable.estimators.vision._base import VisionTransformerClassifier, resize_size
from interpretable.estimators.vision._explainers import PixelGradientShap, PixelSmoothGrad
from interpretable.estimators.vision._library_explainers import (
    FeatureMapGradCAM,
    FeatureMapInputXGradient,
    FeatureMapIntegratedGradients,
    FeatureMapKernelShap,
    FeatureMapLime,
    FeatureMapOcclusion,
    PixelDeepLift,
    PixelGradient,
)
from interpretable.estimators.vision._library_pretrained import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    check_rebuilt,
    check_weights,
    image_preset,
    load_into,
    resolve_recipe,
    source_state,
    start_weights,
)
from interpretable.estimators.vision._pretrained import head_order, read_weights
from interpretable.nn import (
    LibraryImageModel,
    OutputCrossEntropy,
    build_model,
    check_options,
    find_feature_map,
    fixed_input_size,
    head_keys,
    split_architecture,
    token_grid,
)
from interpretable.utils import Interval

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    from accelerate import Accelerator
    from skorch.callbacks import Callback

__all__ = ["ImageClassifier"]


def _grid(value) -> tuple | None:
    """A saved grid: None or two positive integers."""
    if value is None:
        return None
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(
            type(v) is int and v >= 1 for v in value):
        raise ValueError(f"a grid must be None or two positive integers, got {value!r}.")
    return tuple(value)


def _normalisation(values, what: str) -> tuple:
    """A checked mean or std: three finite numbers (std > 0)."""
    if not isinstance(values, (list, tuple)) or len(values) != 3 or not all(
            isinstance(v, Real) and not isinstance(v, bool) and np.isfinite(v)
            for v in values) or (what == "std" and not all(v > 0 for v in values)):
        raise ValueError(f"{what} must hold 3 finite numbers (one per RGB channel"
                         f"{', each > 0' if what == 'std' else ''}), got {values!r}.")
    return tuple(float(v) for v in values)


class ImageClassifier(VisionTransformerClassifier):
    """Any torchvision or timm image classifier, run as it is.

    The network is the library's own module (any torchvision classification builder, any
    timm model: ResNet, ConvNeXt, EfficientNet, DenseNet, Swin, DeiT, ...), in eval mode, on
    images normalised with ``mean`` and ``std``. :meth:`from_pretrained` takes a trained
    model, its state dict or a file as it is (its logits are the model's own); ``fit``
    fine-tunes ``pretrained`` weights with a new classifier for the labels, or trains the
    architecture from scratch. Explained post hoc: GradCAM at the last spatial feature map
    (``gradcam_layer_``, or ``layer=``), the pixel gradient, input × gradient, integrated
    gradients, occlusion, SmoothGrad and GradientSHAP; DeepLIFT is refused, naming the
    modules that would make it inexact.

    Parameters
    ----------
    architecture : str or None, default=None
        The network: ``"torchvision:name"`` (a torchvision classification builder, e.g.
        ``"torchvision:resnet50"``), ``"timm:name"`` (a timm model name) or ``"name"``
        (torchvision's builder of that name, else timm's; with weights, the library whose
        model they fit). None: the model given as ``pretrained`` names itself.
    architecture_options : dict or None, default=None
        Further arguments of the builder (JSON values: numbers, strings, lists), e.g. timm's
        ``{"img_size": 32, "depths": [1, 1]}``; ``num_classes`` comes from the labels, and
        nothing that loads weights by name (``weights``, ``pretrained``, ...) is accepted.
    pretrained : None, nn.Module, mapping of str to torch.Tensor, str or os.PathLike, default=None
        The weights ``fit`` starts from (every weight but the classifier's, which is new for
        the labels of y): a torchvision or timm model, its state dict or a file of it
        (``.safetensors``, else read with ``torch.load(weights_only=True)``). Borrowed: shared
        by clones, never stored (``save`` and pickles hold None, a path as the path). None:
        random initialisation.
    mean, std : sequence of 3 floats or None, default=None
        The normalisation the network takes (None: ImageNet's).
    image_size : "auto", None or int, default="auto"
        None: images as given, arrays ``(n, H, W[, C])`` of the training size (grey images
        are repeated over the 3 channels). An int s: any images as RGB, s × s ones as they
        are, others resized to ``resize_size`` and centre-cropped to s × s. "auto": with
        ``pretrained``, the model's input size (its fixed size, else its weights' preset
        crop), else None.
    resize_size : int or None, default=None
        The shorter side an image is resized to before the centre crop (None:
        round(s·8/7)).
    zoom_out : (low, high) or None, default=None
        Random zoom-out augmentation: each epoch a training image is (with
        ``zoom_out_probability``) shrunk by a factor from U[low, high] (0 < low <= high <= 1)
        and placed at random on a black canvas. None: none.
    zoom_out_probability : float, default=0.5
        Share of the training images zoomed out at each epoch (with ``zoom_out``).
    lr_decay_at : float or None, default=None
        The learning rate is divided by 10 after this fraction of ``max_epochs``; None keeps
        it constant.
    class_weight : None, "balanced" or dict {label: weight}, default=None
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0, default=0.0003
        Learning rate.
    max_epochs : int >= 1, default=5
        Number of passes over the training data.
    batch_size : int >= 1, default=32
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}, default="adamw"
        The torch optimizer.
    weight_decay : float >= 0, default=0.0
        L2 penalty (decoupled for ``"adamw"``), passed to the optimizer.
    device : "auto", "cpu", "cuda", "cuda:N" or torch.device, default="auto"
        ``"auto"`` uses CUDA when available.
    random_state : int, RandomState or None, default=None
        Seeds initialisation, shuffling, dropout and the validation split; the global torch RNG
        is left untouched.
    verbose : int, default=0
        When > 0, report skorch's epoch table (logged at INFO by ``interpretable`` loggers when
        logging takes it, else printed: plain text unless standard output is a terminal) and,
        on a terminal or in Jupyter, draw progress bars over the batches of each epoch and of
        ``explain`` (see :mod:`interpretable._progress`).
    callbacks : list or None, default=None
        The skorch callbacks (``EarlyStopping``, ``LRScheduler``, ``Checkpoint``, ``ProgressBar``,
        your own) or ``(name, callback)`` pairs, added to every training phase. Each fit trains
        with deep copies: the callbacks passed here are never changed.
    validation_fraction : float in (0, 1) or None, default=None
        Share of the training data held out (stratified for classifiers, seeded by
        ``random_state``); its loss (``valid_loss``) and, for classifiers, accuracy
        (``valid_acc``) are recorded in ``history_`` after every epoch. None: train on all.
    early_stopping : bool, default=False
        Stop when the validation loss (the training loss without ``validation_fraction``) has
        not improved for ``n_iter_no_change`` epochs, and restore the weights of the best epoch
        (skorch's ``EarlyStopping(load_best=True)``).
    n_iter_no_change : int >= 1, default=5
        Patience of ``early_stopping``, in epochs.
    warm_start : bool, default=False
        When True, fitting a fitted estimator continues training its weights (the vocabulary,
        classes and input size stay those of the first fit; other labels, a changed input
        size or architecture raise a ``ValueError``); ``history_`` grows. The optimizer
        state starts afresh.
    precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` trains with mixed precision (``torch.autocast`` in bfloat16: forward and loss;
        the weights stay float32); prediction runs in ``inference_precision``, and
        explanations always in the parameters' own precision, so inherent explanations stay
        exact. Recurrent layers that torch cannot run in bfloat16 on the device (such as the
        LSTM on an x86 CPU without AVX-512) train in float32, with one warning per fit (the
        whole model does when a custom module runs them).
    inference_precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` runs ``predict``, ``predict_proba``, ``decision_function`` and ``score``
        under ``torch.autocast`` in bfloat16 where the device computes bfloat16 natively (a
        CUDA GPU of compute capability 8.0 or newer, a CPU with AVX512-BF16 or AMX); elsewhere
        they run in float32, with one warning, as do recurrent layers that torch cannot run in
        bfloat16 there (the whole model when a custom module runs them). Outputs keep their
        dtypes (float32 logits, float64 probabilities). So do the forward passes of the
        perturbation methods of ``explain`` (occlusion, LIME, Kernel SHAP); the other methods,
        ``logits`` and the metrics run in the parameters' own precision. Saved with the model.
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.integrations`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    module_ : LibraryImageModel
        The fitted network (:class:`~interpretable.nn.LibraryImageModel`; the
        library's module is ``module_.model``).
    architecture_ : dict
        Its recipe: ``library``, ``name`` and the builder's ``options``.
    gradcam_layer_ : str or None
        Where GradCAM reads the network: its last spatial feature map (a module name of
        ``module_.model``), found on a probe image (None: it has none).
    feature_grid_ : tuple of int or None
        That map's ``(h, w)`` on the model's images (occlusion's default window is one cell).
    token_grid_ : tuple of int or None
        The patch grid of a model on patch tokens (ViT, DeiT, Swin), else None.
    mean_, std_ : tuple of float
        The normalisation the network takes.
    resize_size_ : int or None
        The shorter side before the centre crop (None: images as given).
    image_shape_, n_channels_, crop_size_ : tuple of int, int, int or None
        ``(H, W)`` of the images the model sees, the channels of the training images, the
        crop side (None: images used as given).
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    ViTClassifier : The plain ViT converted to the package's own network (attention rollout).
    BcosResNetClassifier : A torchvision ResNet B-cosified: exact contribution maps.

    Examples
    --------
    A tiny torchvision ResNet standing in for yours:

    >>> import numpy as np, torchvision
    >>> from interpretable import ImageClassifier
    >>> resnet = torchvision.models.resnet18(num_classes=3).eval()
    >>> clf = ImageClassifier.from_pretrained(resnet, classes=["a", "b", "c"], image_size=64,
    ...                                       device="cpu")
    >>> clf.architecture_["name"], clf.gradcam_layer_, clf.feature_grid_
    ('resnet18', 'layer4', (2, 2))
    >>> X = np.random.default_rng(0).random((2, 64, 64, 3), dtype=np.float32)
    >>> clf.explain(X, method="gradcam").values.shape
    (2, 64, 64)
    """

    saved_as = "ImageClassifier"
    explainers = (FeatureMapGradCAM(), PixelGradient(), FeatureMapInputXGradient(),
                  FeatureMapIntegratedGradients(), FeatureMapOcclusion(), FeatureMapLime(),
                  FeatureMapKernelShap(), PixelSmoothGrad(),
                  PixelGradientShap(), PixelDeepLift())
    _borrowed_params = ("pretrained",)
    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints,
        "architecture": [str, None],
        "architecture_options": [dict, None],
        "pretrained": [None, str, os.PathLike, nn.Module, Mapping],
        "mean": [tuple, list, None],
        "std": [tuple, list, None],
        "resize_size": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, architecture: str | None = None, *,
                 architecture_options: dict[str, Any] | None = None,
                 pretrained: (nn.Module | Mapping[str, torch.Tensor] | str | os.PathLike[str]
                              | None) = None,
                 mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                 image_size: int | Literal["auto"] | None = "auto", resize_size: int | None = None,
                 zoom_out: tuple[float, float] | None = None,
                 zoom_out_probability: float = 0.5, lr: float = 3e-4,
                 lr_decay_at: float | None = None, max_epochs: int = 5,
                 batch_size: int = 32, optimizer: str = "adamw", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.architecture = architecture
        self.architecture_options = architecture_options
        self.pretrained = pretrained
        self.mean = mean
        self.std = std
        self.image_size = image_size
        self.resize_size = resize_size
        self.zoom_out = zoom_out
        self.zoom_out_probability = zoom_out_probability
        self.lr = lr
        self.lr_decay_at = lr_decay_at
        self.max_epochs = max_epochs
        self.batch_size = batch_size
        self.optimizer = optimizer
        self.weight_decay = weight_decay
        self.device = device
        self.random_state = random_state
        self.verbose = verbose
        self.class_weight = class_weight
        self.callbacks = callbacks
        self.validation_fraction = validation_fraction
        self.early_stopping = early_stopping
        self.n_iter_no_change = n_iter_no_change
        self.warm_start = warm_start
        self.precision = precision
        self.inference_precision = inference_precision
        self.accelerator = accelerator

    # ------------------------------------------------------------------ from_pretrained
    @classmethod
    def from_pretrained(cls, model: (nn.Module | Mapping[str, torch.Tensor] | str
                                     | os.PathLike[str]), *, architecture: str | None = None,
                        architecture_options: dict[str, Any] | None = None,
                        classes: Sequence[Hashable] | None = None,
                        mean: Sequence[float] | None = None, std: Sequence[float] | None = None,
                        **params: Any) -> ImageClassifier:
        """Return a trained torchvision or timm classifier as a fitted estimator, as it is.

        No training: the network is the model's own, rebuilt from its recipe (the library,
        its name, the builder's arguments) with its weights, so ``predict_proba`` is the
        softmax of the model's logits on images normalised with ``mean`` and ``std`` (to
        float rounding, 1e-5). The weights are checked key by key, shape by shape against
        the recipe's model built on the meta device before any memory is allocated; a model
        object is also run beside its rebuild on a probe batch (the recipe must compute what
        it computes). Every explanation method, ``save`` / ``load``, pickling, pipelines and
        the Dask export work as after ``fit``; ``fit`` fine-tunes it (a new classifier for
        the labels of y; ``warm_start=True`` continues its own on the same labels).

        Which pixels the model sees (the default ``image_size``: its input size, the side
        its learned positions or attention masks fix, else its weights' preset crop,
        torchvision's ``weights.transforms()`` or timm's data config): an image of that size
        as it is, so the logits are the model's own on it; any other through the preset,
        its shorter side resized to ``resize_size`` (the preset's: e.g. 232 for
        torchvision's ConvNeXt, ``floor(crop / crop_pct)`` for timm) and centre-cropped, the
        crop's box kept in ``explanation.crop_boxes``. The resize is bilinear and antialiased
        (presets that name bicubic differ slightly there).

        Parameters
        ----------
        model : nn.Module, mapping of str to torch.Tensor, str or os.PathLike
            A torchvision or timm classifier, its state dict or a file of it
            (``.safetensors``, else read with ``torch.load(weights_only=True)``).
        architecture : str or None, default=None
            ``"torchvision:name"``, ``"timm:name"`` or ``"name"``: needed for a state dict
            or a file; a model object names itself (timm's ``pretrained_cfg``, torchvision's
            builder of its class whose weights it fits).
        architecture_options : dict or None, default=None
            The builder's further arguments the model was built with (e.g. timm's
            ``img_size``, ``depths``, ``embed_dim``); ``num_classes`` is read off the
            weights.
        classes : sequence or None, default=None
            The labels of the classifier's outputs, in output order (None: for 1,000 outputs
            the ImageNet class names). ``classes_`` holds them sorted (the classifier's rows
            follow).
        mean, std : sequence of 3 floats or None, default=None
            The normalisation the model was trained with (None: its preset's, ImageNet's for
            most).
        **params
            Further parameters (``image_size``, ``resize_size``, ``device``, ``batch_size``,
            and ``lr`` or ``max_epochs`` for a later ``fit``).

        Returns
        -------
        ImageClassifier
            The fitted classifier (``pretrained`` is ``model``).

        Raises
        ------
        ValueError
            If the weights fit no model of the recipe (the differences are named), the
            rebuilt model computes other logits than the given one, or ``classes`` does not
            name each output once.

        Examples
        --------
        >>> import numpy as np, timm, torch
        >>> from interpretable import ImageClassifier
        >>> options = {"depths": [1, 1, 1, 1], "dims": [8, 16, 32, 64]}
        >>> convnext = timm.create_model("convnext_atto", num_classes=2, **options).eval()
        >>> torch.save(convnext.state_dict(), "convnext.pth")   # what you already have
        >>> clf = ImageClassifier.from_pretrained(
        ...     "convnext.pth", architecture="timm:convnext_atto", architecture_options=options,
        ...     classes=["cat", "dog"], image_size=64, device="cpu")
        >>> X = np.random.default_rng(0).random((2, 64, 64, 3), dtype=np.float32)
        >>> x = clf.encode(X).inputs["x"]
        >>> bool(torch.allclose(clf.logits(clf.encode(X).inputs), convnext(x), atol=1e-5))
        True
        >>> clf.gradcam_layer_
        'stages'
        """
        source = model if isinstance(model, (nn.Module, Mapping)) else read_weights(model)
        recipe, outputs = resolve_recipe(architecture, architecture_options, source)
        preset = image_preset(recipe, source if isinstance(source, nn.Module) else None)
        image_size = params.pop("image_size", "auto")
        side = preset["crop"] if image_size in ("auto", None) else image_size
        resize = params.pop("resize_size", None)
        if resize is None and isinstance(side, int) and not isinstance(side, bool):
            resize = max(side, round(side * preset["resize"] / preset["crop"]))
        estimator = cls(architecture=f"{recipe['library']}:{recipe['name']}",
                        architecture_options=recipe["options"] or None, pretrained=model,
                        mean=tuple(mean) if mean is not None else preset["mean"],
                        std=tuple(std) if std is not None else preset["std"],
                        image_size=side if image_size == "auto" else image_size,
                        resize_size=resize, **params)
        estimator._validate_parameters()
        return fit_transactionally(
            estimator, lambda work, *_: work._adopt_pretrained(source, recipe, outputs, classes,
                                                               side),
            None, None, None)

    def _adopt_pretrained(self, source, recipe: dict, outputs: int, classes, side: int) -> None:
        """Fitted state of the read model as it is (``from_pretrained``)."""
        self._start_fit()
        fixed = None
        if isinstance(source, nn.Module):
            fixed = fixed_input_size(source)
        crop = self._crop_size()
        if fixed is not None and crop not in (None, fixed):
            raise ValueError(f"the model takes images of {fixed} x {fixed} pixels (fixed by "
                             f"its positions or attention masks); image_size={crop} differs "
                             f"(pass {fixed} or None).")
        labels, order = head_order(outputs, classes)
        given = state = source_state(source)
        heads = set(head_keys(recipe["library"], recipe["name"], recipe["options"]))
        rows = torch.as_tensor(order)
        state = {k: v[rows] if k in heads and v.dim() and v.shape[0] == outputs else v
                 for k, v in state.items()}
        with torch.device("meta"):
            expected = {k: tuple(v.shape) for k, v in build_model(
                recipe["library"], recipe["name"], recipe["options"], outputs
            ).state_dict().items()}
        check_weights(state, expected, "the model's weights")
        network = build_model(recipe["library"], recipe["name"], recipe["options"], outputs)
        network = load_into(network, state, source=given).float().eval()
        if isinstance(source, nn.Module):
            original = LibraryImageModel(network)  # compare in the original row order
            check_rebuilt(source, _Reordered(original, np.argsort(order)), side)
        self.classes_ = labels
        self.n_channels_, self.image_shape_, self.crop_size_ = 3, (side, side), crop
        self.architecture_ = dict(recipe)
        self.resize_size_ = self._resize(crop)
        self.mean_, self.std_ = self._normalisation()
        self.module_ = LibraryImageModel(network).to(self.device_).eval()
        self._find_feature_map()
        self.history_ = []

    # ------------------------------------------------------------------ parameters
    def _check_params(self) -> None:
        super()._check_params()
        check_options(self.architecture_options)
        if self.architecture is not None:
            split_architecture(self.architecture)
        for what in ("mean", "std"):
            if getattr(self, what) is not None:
                _normalisation(getattr(self, what), what)

    def _normalisation(self) -> tuple[tuple, tuple]:
        return (_normalisation(self.mean if self.mean is not None else IMAGENET_MEAN, "mean"),
                _normalisation(self.std if self.std is not None else IMAGENET_STD, "std"))

    def _recipe(self) -> dict:
        """The checked recipe of the parameters (``architecture``, ``architecture_options``,
        the model given as ``pretrained``)."""
        source = self.pretrained if isinstance(self.pretrained, nn.Module) else None
        if self.architecture is None and source is None:
            raise ValueError("ImageClassifier needs architecture= (e.g. "
                             "'torchvision:resnet50' or 'timm:convnext_tiny') or a torchvision "
                             "or timm model as pretrained=.")
        return resolve_recipe(self.architecture, self.architecture_options, source)[0]

    def _crop_size(self) -> int | None:
        if self.image_size != "auto":
            return self.image_size
        if self.pretrained is None:
            return None
        source = self.pretrained if isinstance(self.pretrained, nn.Module) else None
        return image_preset(self._recipe(), source)["crop"]

    def _resize(self, crop: int | None) -> int | None:
        if crop is None:
            return None
        return max(crop, self.resize_size if self.resize_size is not None
                   else resize_size(crop))

    def _token_stride(self, channels: int) -> tuple[int, str]:
        return 1, "any size"

    # ------------------------------------------------------------------ inputs
    def _read(self, X, crop_size, channels=None, image_shape=None):
        """As the base's, with the fitted (or the parameters') ``resize_size``."""
        if crop_size is None:
            return check_images(X, channels=channels, image_shape=image_shape), None
        refuse_single_image(X, image_shape="any")
        resize = getattr(self, "resize_size_", None) or self._resize(crop_size)
        crops, boxes = eval_crops(X, resize, crop_size, channels_last=True,
                                  keep_crop_sized=True)
        return crops.numpy(), np.asarray(boxes, dtype=np.float64)

    def _encode(self, X):
        images = torch.as_tensor(X).permute(0, 3, 1, 2)
        if images.shape[1] == 1:  # grey images: the same value on the 3 channels
            images = images.expand(-1, 3, -1, -1)
        if images.shape[1] != 3:
            raise ValueError(f"ImageClassifier takes RGB (or grey) images, got "
                             f"{images.shape[1]} channels.")
        fitted = getattr(self, "mean_", None)
        mean, std = (fitted, self.std_) if fitted is not None else self._normalisation()
        mean, std = (torch.tensor(v, dtype=images.dtype)[:, None, None] for v in (mean, std))
        return ((images - mean) / std).contiguous()

    # ------------------------------------------------------------------ fit
    def _prepare_fit(self) -> None:
        if not self._continues():
            self.architecture_ = self._recipe()
        recipe = self.architecture_
        with torch.device("meta"):
            fixed = fixed_input_size(build_model(recipe["library"], recipe["name"],
                                                 recipe["options"], len(self.classes_)))
        if fixed is not None and tuple(self.image_shape_) != (fixed, fixed):
            raise ValueError(f"{recipe['library']}:{recipe['name']} takes images of {fixed} x "
                             f"{fixed} pixels (fixed by its positions or attention masks), not "
                             f"{tuple(self.image_shape_)}: pass image_size={fixed} or images "
                             "of that size.")
        self.resize_size_ = self.resize_size_ if self._continues() else \
            self._resize(self.crop_size_)
        if not self._continues():
            self.mean_, self.std_ = self._normalisation()

    def _module_factory(self, X, y):
        """The recipe's network: from the ``pretrained`` weights (but the classifier's, new),
        else randomly initialised."""
        recipe = dict(self.architecture_)
        start = None
        if self.pretrained is not None and not self._continues():
            start = start_weights(recipe, self.pretrained, len(self.classes_))
        n_classes = len(self.classes_)

        def build():
            network = build_model(recipe["library"], recipe["name"], recipe["options"],
                                  n_classes)
            if start is not None:
                load_into(network, start, strict=False)
            return LibraryImageModel(network.float())

        return build

    def _fit(self, X, y, sample_weight=None):
        super()._fit(X, y, sample_weight)
        self._find_feature_map()

    def _criterion(self):
        return OutputCrossEntropy()  # per-sample weights: class_weight, sample_weight

    def _find_feature_map(self) -> None:
        """Set ``gradcam_layer_``, ``feature_grid_`` and ``token_grid_`` from a probe image
        (see :func:`~interpretable.nn.find_feature_map`)."""
        network = self.module_.model
        parameter = next(network.parameters())
        probe = torch.zeros((1, 3, *self.image_shape_), dtype=parameter.dtype,
                            device=parameter.device)
        self.gradcam_layer_, self.feature_grid_ = find_feature_map(network, probe)
        self.token_grid_ = token_grid(network)

    # ------------------------------------------------------------------ the network
    def _build_module(self) -> LibraryImageModel:
        recipe = self.architecture_
        return LibraryImageModel(build_model(recipe["library"], recipe["name"],
                                             recipe["options"], len(self.classes_)))

    def _memory_bounded_batch(self, input_shape: tuple) -> int:
        try:
            return super()._memory_bounded_batch(input_shape)
        except Exception:  # noqa: BLE001 - a model whose forward the meta device cannot run
            return self.batch_size

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        grids = {k: None if getattr(self, k) is None else list(getattr(self, k))
                 for k in ("feature_grid_", "token_grid_")}
        return {**super()._get_fitted_state(), "architecture_": dict(self.architecture_),
                "resize_size_": self.resize_size_, "mean_": list(self.mean_),
                "std_": list(self.std_), "gradcam_layer_": self.gradcam_layer_, **grids}

    def _set_fitted_state(self, state: dict) -> None:
        super()._set_fitted_state(state)
        recipe = state["architecture_"]
        if not isinstance(recipe, dict) or set(recipe) != {"library", "name", "options"} \
                or recipe["library"] not in ("torchvision", "timm") \
                or not isinstance(recipe["name"], str) or not recipe["name"]:
            raise ValueError(f"architecture_ must hold library, name and options, got "
                             f"{recipe!r}.")
        self.architecture_ = {"library": recipe["library"], "name": recipe["name"],
                              "options": check_options(recipe["options"], "architecture_")}
        resize = state["resize_size_"]
        if (resize is None) != (self.crop_size_ is None) or (
                resize is not None and (type(resize) is not int or resize < self.crop_size_)):
            raise ValueError(f"resize_size_={resize!r} does not match crop_size_="
                             f"{self.crop_size_!r}.")
        self.resize_size_ = resize
        self.mean_ = _normalisation(state["mean_"], "mean")
        self.std_ = _normalisation(state["std_"], "std")
        layer = state["gradcam_layer_"]
        if layer is not None and (not isinstance(layer, str) or not layer):
            raise ValueError(f"gradcam_layer_ must be None or a module name, got {layer!r}.")
        self.gradcam_layer_ = layer
        self.feature_grid_ = _grid(state["feature_grid_"])
        self.token_grid_ = _grid(state["token_grid_"])


class _Reordered(nn.Module):
    """``network``'s logits with their columns in ``order`` (the rows of a classifier sorted
    by label, back in the original model's order)."""

    def __init__(self, network: nn.Module, order):
        super().__init__()
        self.network = network
        self.order = torch.as_tensor(order)

    def forward(self, x):
        return self.network(x)[:, self.order.to(x.device)]
