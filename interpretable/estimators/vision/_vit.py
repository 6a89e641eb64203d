"""The conventional Vision Transformer classifier, :class:`ViTClassifier`: the accuracy
baseline of the B-cos ViTs, trained here or taken as it is from torchvision or timm
(:meth:`ViTClassifier.from_pretrained`), explained post hoc.

It takes images ``(n, H, W)`` (grey) or ``(n, H, W, C)``, float in [0, 1] or uint8, or with
``image_size`` any images, those of the model's size as they are (see
:mod:`interpretable.estimators.vision`); one image without its batch axis is refused.
"""
from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from interpretable.estimators.core._model_folder import FORMAT_VERSION
from interpretable.estimators.core._persistence import restore_estimator
from interpretable.estimators.vision._base import SizedVisionTransformerClassifier
from interpretable.estimators.vision._pretrained import head_order, read_weights
from interpretable.nn import CHECKPOINT_LAYOUTS, ConventionalViT, OutputCrossEntropy, ViT
from interpretable.nn.bcos import IMAGENET_MEAN, IMAGENET_STD, read_conventional
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    import os
    from collections.abc import Hashable, Sequence

    import numpy as np
    from accelerate import Accelerator
    from skorch.callbacks import Callback

    from interpretable.estimators.vision._library_model import ImageClassifier

__all__ = ["ViTClassifier"]


class ViTClassifier(SizedVisionTransformerClassifier):
    """Conventional Vision Transformer classifier, the accuracy baseline of the B-cos ViT.

    CNN stem, learned positional embedding, GELU, LayerNorm, cross-entropy, of the size of
    :class:`BcosViTClassifier`. Explained post hoc only (``explain_methods``: attention
    rollout, gradients).

    Parameters
    ----------
    patch_size : int, default=4
        Kernel size and stride of the last stem convolution (one token per patch).
    embed_dim : int, default=64
        Token dimension.
    depth : int, default=4
        Number of transformer blocks.
    num_heads : int, default=4
        Attention heads per block.
    mlp_ratio : float, default=2.0
        MLP hidden size as a multiple of ``embed_dim``.
    stem_channels : tuple of int or None, default=None
        Channels of the 3×3 convolutions of the CNN tokenizer before the patch layer (None:
        the layout's, ``(32,)`` for ``"stem"`` and ``()`` for the others).
    dropout : float in [0, 1), default=0.0
        Dropout in the blocks.
    layout : {"stem", "timm", "torchvision"}, default="stem"
        ``"stem"``: the network above (:class:`~interpretable.nn.ViT`). ``"timm"`` /
        ``"torchvision"``: the standard ViT of those libraries, with their state-dict keys
        (:class:`~interpretable.nn.ConventionalViT`: patch convolution, class
        token, learned positions, pre-norm blocks, head on the class token; no stem, no
        dropout), on square RGB
        images normalised with ImageNet's mean and std: ``module_.state_dict()`` saved to a
        file is a checkpoint that ``BcosSimpleViTClassifier(pretrained=...)`` B-cosifies.
    image_size : "auto", None or int, default="auto"
        The inputs, as in :class:`BcosViTClassifier` ("auto" is None here).
    zoom_out : (low, high) or None, default=None
        Random zoom-out augmentation, as in :class:`BcosViTClassifier`.
    zoom_out_probability : float, default=0.5
        Share of the training images zoomed out at each epoch (with ``zoom_out``).
    lr_decay_at : float or None, default=0.6
        The learning rate is divided by 10 after this fraction of ``max_epochs``; None keeps
        it constant.
    class_weight : None, "balanced" or dict {label: weight}, default=None
        Weights of the classes in the training loss (multiplied with ``sample_weight``);
        ``"balanced"``: ``n_samples / (n_classes * count(label))`` as in scikit-learn.
    lr : float > 0, default=0.002
        Learning rate.
    max_epochs : int >= 1, default=15
        Number of passes over the training data.
    batch_size : int >= 1, default=32
        Mini-batch size for training and inference (``explain`` and the metrics take their own
        ``batch_size``).
    optimizer : {"adam", "adamw", "sgd", "rmsprop"}, default="adam"
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
    module_ : ViT or ConventionalViT
        The fitted network (:class:`~interpretable.nn.ViT`, or with another ``layout``
        :class:`~interpretable.nn.ConventionalViT`).
    image_shape_ : tuple of int
        ``(H, W)`` of the images the model sees.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    BcosViTClassifier : The inherently explainable counterpart.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import ViTClassifier
    >>> X = np.random.default_rng(0).random((8, 8, 8, 3), dtype=np.float32)
    >>> clf = ViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
    ...                     max_epochs=1, random_state=0).fit(X, [0, 1] * 4)
    >>> clf.explain(X[:2]).method  # attention rollout
    'rollout'
    """

    saved_as = "ViTClassifier"

    _parameter_constraints = {
        **SizedVisionTransformerClassifier._parameter_constraints,
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "layout": [StrOptions({"stem", *CHECKPOINT_LAYOUTS})],
        "stem_channels": [tuple, list, None],
    }

    def __init__(self, patch_size: int = 4, embed_dim: int = 64, depth: int = 4,
                 num_heads: int = 4, mlp_ratio: float = 2.0,
                 stem_channels: tuple[int, ...] | None = None, dropout: float = 0.0, *,
                 layout: str = "stem", image_size: int | Literal["auto"] | None = "auto",
                 zoom_out: tuple[float, float] | None = None,
                 zoom_out_probability: float = 0.5, lr: float = 2e-3,
                 lr_decay_at: float | None = 0.6, max_epochs: int = 15,
                 batch_size: int = 32, optimizer: str = "adam", weight_decay: float = 0.0,
                 device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.patch_size = patch_size
        self.embed_dim = embed_dim
        self.depth = depth
        self.num_heads = num_heads
        self.mlp_ratio = mlp_ratio
        self.stem_channels = stem_channels
        self.dropout = dropout
        self.layout = layout
        self.image_size = image_size
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

    @classmethod
    def from_pretrained(cls, model: (nn.Module | Mapping[str, torch.Tensor] | str
                                     | os.PathLike[str]), *,
                        classes: Sequence[Hashable] | None = None,
                        architecture: Mapping[str, int] | None = None,
                        mean: Sequence[float] = IMAGENET_MEAN,
                        std: Sequence[float] = IMAGENET_STD,
                        **params: Any) -> ViTClassifier | ImageClassifier:
        """Return a trained torchvision or timm ``VisionTransformer`` as a fitted classifier.

        Its logits are the original's on images normalised with ``mean`` and ``std`` (to
        rounding: ~1e-5 in float32, ~1e-12 in float64); every post-hoc method explains it and
        it saves and loads as a fitted estimator (float32; ``astype`` first for another
        dtype). The checkpoint is checked key by key, shape by shape, before any memory is
        allocated.

        Which pixels the model sees (the default ``image_size``, the side ``s`` its learned
        positions fix): an image of ``s × s`` pixels as it is, so the logits are the model's
        own on it; an image of any other size (or a PIL image, a file) through the weights'
        evaluation preset, its shorter side resized to ``round(s·8/7)`` (256 for 224) and
        centre-cropped to ``s × s`` as torchvision's ``weights.transforms()`` do, the crop's
        box in the source image kept in ``explanation.crop_boxes`` (the metrics map the maps
        back to the source pixels through it). ``image_size=None`` takes arrays of ``s × s``
        pixels only.

        Parameters
        ----------
        model : nn.Module, mapping of str to torch.Tensor, str or os.PathLike
            A torchvision or timm ``VisionTransformer`` (the plain ViT: class token, learned
            positions, pre-norm blocks, head on the class token), its state dict, or a file
            of it (``.safetensors``, else read with ``torch.load(weights_only=True)``). Any
            other torchvision or timm classifier object (a ResNet, a ConvNeXt, ...) is handed
            to :meth:`ImageClassifier.from_pretrained`, which runs it as it is.
        classes : sequence or None, default=None
            The labels of the head's outputs, in output order (None: for 1,000 outputs the
            ImageNet class names). ``classes_`` holds them sorted (the head's rows follow).
        architecture : mapping or None, default=None
            Sizes the model must have; ``{"heads": h}`` is needed for a state dict or a file
            (the other sizes, ``dim``, ``depth``, ``mlp_dim``, ``patch_size``,
            ``num_classes``, ``image_size``, come from its shapes).
        mean, std : sequence of 3 floats, default=ImageNet's
            The normalisation the model was trained with (folded into its patch embedding:
            the estimator normalises with ImageNet's).
        **params
            Further parameters (``image_size``: default the side the model's learned
            positions fix, see above; ``device``, ``batch_size``, ...).

        Returns
        -------
        ViTClassifier or ImageClassifier
            The fitted classifier (``layout`` the model's); an :class:`ImageClassifier` for a
            classifier of another architecture.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable import ViTClassifier
        >>> X = np.random.default_rng(0).random((4, 16, 16, 3), dtype=np.float32)
        >>> vit = ViTClassifier(patch_size=8, embed_dim=8, depth=1, num_heads=2, layout="timm",
        ...                     max_epochs=1, random_state=0).fit(X, [0, 1, 0, 1])
        >>> state = vit.module_.state_dict()  # e.g. timm's, or a file of it
        >>> clf = ViTClassifier.from_pretrained(state, classes=["cat", "dog"],
        ...                                     architecture={"heads": 2})
        >>> clf.classes_, clf.image_size
        (array(['cat', 'dog'], dtype='<U3'), 16)
        """
        if isinstance(model, nn.Module) and type(model).__name__ != "VisionTransformer" \
                and type(model).__module__.partition(".")[0] in ("torchvision", "timm"):
            from interpretable.estimators.vision._library_model import (
                ImageClassifier,  # any other architecture, as it is
            )

            return ImageClassifier.from_pretrained(
                model, classes=classes, mean=None if mean is IMAGENET_MEAN else mean,
                std=None if std is IMAGENET_STD else std, **params)
        source = model if isinstance(model, (nn.Module, Mapping)) else read_weights(model)
        layout, state, sizes = read_conventional(source, architecture=architecture)
        dim, side = sizes["dim"], sizes["image_size"]
        if sizes["mlp_dim"] % dim:  # mlp_ratio could not say it
            raise ValueError(f"the MLP width {sizes['mlp_dim']} is not a multiple of the token "
                             f"width {dim}: ViTClassifier sizes its MLP by mlp_ratio.")
        params = {"patch_size": sizes["patch_size"], "embed_dim": dim, "depth": sizes["depth"],
                  "num_heads": sizes["heads"], "mlp_ratio": sizes["mlp_dim"] // dim,
                  "layout": layout, "image_size": side, **params}
        estimator = cls(**params)
        estimator._validate_parameters()
        crop = estimator._crop_size()
        if crop not in (None, side):
            raise ValueError(f"the model's learned positions fix images of {side} pixels; "
                             f"image_size={crop} differs (pass {side} or None).")
        labels, order = head_order(sizes["num_classes"], classes)
        fitted = {"classes_": labels, "n_channels_": 3, "image_shape_": [side, side],
                  "crop_size_": crop}
        read = _imagenet_normalised(state, layout, mean, std, order)
        config = {"format_version": FORMAT_VERSION, "estimator": cls.saved_as,
                  "params": estimator.get_params(deep=False), "dropped_params": [],
                  "fitted": fitted, "weights": None}
        return restore_estimator(config, cls, estimator.device,
                                 {k: tuple(v.shape) for k, v in state.items()},
                                 read, dtype=state[_PATCH[layout]].dtype)

    def _check_params(self) -> None:
        super()._check_params()
        if self.layout != "stem" and (self._stem_channels() or self.dropout):
            raise ValueError(f"layout={self.layout!r} has no CNN stem and no dropout: pass "
                             f"stem_channels=None or () and dropout=0, got "
                             f"{self.stem_channels!r} and {self.dropout!r}.")

    def _stem_channels(self) -> tuple:
        if self.stem_channels is None:
            return (32,) if self.layout == "stem" else ()
        return super()._stem_channels()

    def _make_module(self, in_channels, image_size, n_classes):
        if self.layout == "stem":
            return ViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                       self.depth, self.num_heads, self.mlp_ratio, self._stem_channels(),
                       self.dropout)
        if image_size[0] != image_size[1]:
            raise ValueError(f"layout={self.layout!r} takes square images, got "
                             f"{tuple(image_size)}.")
        return ConventionalViT(self.layout, image_size[0], self.patch_size, self.depth,
                               self.num_heads, self.embed_dim,
                               int(self.embed_dim * self.mlp_ratio), n_classes)

    def _criterion(self):
        return OutputCrossEntropy()  # per-sample weights: class_weight, sample_weight

    def _encode(self, X):
        images = torch.as_tensor(X).permute(0, 3, 1, 2).contiguous()
        if self.layout == "stem":
            return images
        if images.shape[1] != 3:
            raise ValueError(f"layout={self.layout!r} takes RGB images, got "
                             f"{images.shape[1]} channel(s).")
        mean, std = (torch.tensor(v, dtype=images.dtype)[:, None, None]
                     for v in (IMAGENET_MEAN, IMAGENET_STD))
        return (images - mean) / std


#: the patch embedding and head of each layout, as in its state dict
_PATCH = {"torchvision": "conv_proj.weight", "timm": "patch_embed.proj.weight"}
_HEAD = {"torchvision": "heads.head.", "timm": "head."}


def _imagenet_normalised(state, layout: str, mean, std, order):
    """``read(name)``: the tensors of ``state`` for inputs normalised with ImageNet's mean and
    std instead of ``mean`` and ``std`` (the patch embedding ``W``, ``b`` becomes ``W σ₀/σ``,
    ``b + Σ W (μ₀ - μ)/σ``, in float64), its head's rows in ``order``; each computed when
    read."""
    patch = _PATCH[layout]
    bias = patch[:-len("weight")] + "bias"
    mean, std, mean0, std0 = (torch.as_tensor(v, dtype=torch.float64)[:, None, None]
                              for v in (mean, std, IMAGENET_MEAN, IMAGENET_STD))
    if mean.shape != (3, 1, 1) or std.shape != (3, 1, 1) or not (std > 0).all():
        raise ValueError("mean and std must hold 3 values each, std > 0.")

    def weight():
        return (state[patch].double() * std0 / std).to(state[patch].dtype)

    def shifted():
        shift = (state[patch].double() * (mean0 - mean) / std).sum((1, 2, 3))
        return (state[bias].double() + shift).to(state[bias].dtype)

    rows = torch.as_tensor(order)
    head = {_HEAD[layout] + k: (lambda k=k: state[_HEAD[layout] + k][rows])
            for k in ("weight", "bias")}
    changed = {patch: weight, bias: shifted, **head}
    return lambda name: changed[name]() if name in changed else state[name]
