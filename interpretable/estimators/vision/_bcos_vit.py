"""The holistically explainable B-cos Vision Transformer classifier of Böhle, Fritz &
Schiele, :class:`BcosViTClassifier` (network :class:`~interpretable.nn.bcos.BcosViT`).

It takes images ``(n, H, W)`` (grey) or ``(n, H, W, C)``, float in [0, 1] or uint8, or with
``image_size`` any images (see :mod:`interpretable.estimators.vision`). The B-cos v2 ViTs
and B-cosified torchvision / timm ViTs are
:class:`~interpretable.estimators.vision.BcosSimpleViTClassifier`.
"""
from __future__ import annotations

from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import torch

from interpretable.estimators.vision._base import SizedVisionTransformerClassifier
from interpretable.estimators.vision._explainers import BcosContributions
from interpretable.nn import OneHotBCE
from interpretable.nn.bcos import ATTENTION_PRIORS, BcosViT, encode_image
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    import numpy as np
    from accelerate import Accelerator
    from skorch.callbacks import Callback

__all__ = ["BcosViTClassifier"]


class BcosViTClassifier(SizedVisionTransformerClassifier):
    """B-cos Vision Transformer classifier, holistically explainable (exact contribution maps).

    The holistically explainable ViT of Böhle, Fritz & Schiele, trained from scratch: a CNN
    tokenizer of B-cos convolutions, B-cos attention with a learned per-head prior and B-cos
    MLPs with MaxOut. Every component is dynamic linear, so each logit is exactly
    ``W(x)·x + bias``. The B-cos v2 ViTs of the ``bcos`` package (with their ImageNet weights)
    and B-cosified torchvision / timm ViTs are :class:`BcosSimpleViTClassifier`.

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
    stem_channels : tuple of int, default=(32,)
        Channels of the 3×3 B-cos convolutions of the CNN tokenizer before the patch
        layer.
    attention_prior : {"multiplicative", "additive", "none"}, default="multiplicative"
        Learned per-layer, per-head prior ``B``: ``SM(R)·SM(B)``, ``SM(R+B)`` or
        none.
    b : float, default=2.0
        B-cos exponent B (1 = linear, 2 in the paper).
    max_out : int, default=2
        Units per neuron pooled by MaxOut in the stem, attention and MLP layers
        (1 = none).
    scale_factor : float or None, default=None
        Factor f in the per-layer output scaling γ = f/√fan_in (None: 30; see
        :class:`~interpretable.nn.bcos.BcosViT` for why not the paper's 15 / 150).
    output_scale : float, default=1.0
        Factor applied to the classifier output before the logit bias (the paper's
        10⁻³ compensates features scaled by 10³; no such scaling here, so 1).
    logit_bias : float or None, default=None
        Fixed logit bias (None: log(p/(1-p)) with p = 1/n_classes, as log(0.01/0.99) for
        ImageNet in the paper and log(1/999) in the released v2 models).
    stem_stride : int, default=1
        Stride of the first 3×3 stem convolution (the patch convolution then uses
        ``patch_size / stem_stride``; must divide ``patch_size``). 1 keeps the full resolution;
        2, as in the ``bcos`` package's stem, is about 1.3× faster (see README, Performance).
    logit_bias : float or None, default=None
        Fixed logit bias (None: log(p/(1-p)) with p = 1/n_classes, as log(0.01/0.99) for
        ImageNet in the paper).
    image_size : "auto", None or int, default="auto"
        The inputs. None (or "auto"): images as given, an array ``(n, H, W[, C])`` of the
        training size and channels. An int s: any images (arrays of any size, lists of
        differently sized arrays, PIL images, file paths), converted to RGB: those of s × s
        pixels as they are, the others' shorter side resized to round(s·8/7) and
        centre-cropped to s × s (the ImageNet evaluation transform,
        :func:`~interpretable.datasets.eval_crops`); explanations are maps
        of the crops (``explanation.images``) and ``explanation.crop_boxes`` gives each crop's
        box in its source image.
    zoom_out : (low, high) or None, default=None
        Random zoom-out augmentation: at every epoch, a training image is (with
        ``zoom_out_probability``) shrunk by a factor drawn uniformly from [low, high]
        (0 < low <= high <= 1) and placed at a random position on a black canvas. The paper
        trains with random resized crops, so its models know objects at many scales; models
        trained on centred MNIST digits do not, and the downscaled cells of the grid pointing
        game are then out of distribution. None: no augmentation.
    zoom_out_probability : float, default=0.5
        Share of the training images zoomed out at each epoch (with ``zoom_out``).
    lr_decay_at : float or None, default=0.6
        The learning rate is divided by 10 after this fraction of ``max_epochs`` (the paper:
        after 60 of 100 epochs); None keeps it constant.
    warmup : float in [0, 1), default=0.0
        Share of the training steps over which the learning rate rises linearly to ``lr``
        (``lr_decay_at`` applies after it).
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
    module_ : BcosViT
        The fitted network (:class:`~interpretable.nn.bcos.BcosViT`).
    image_shape_ : tuple of int
        ``(H, W)`` of the images the model sees.
    n_channels_ : int
        Channels of the input images.
    crop_size_ : int or None
        The crop side with an ``image_size``, else None.
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    BcosSimpleViTClassifier : The B-cos v2 ViTs, pretrained or B-cosified.
    ViTClassifier : The conventional ViT baseline.
    interpretable.metrics.grid_pointing_game : Localisation of the explanations.

    Notes
    -----
    Training uses binary cross-entropy on sigmoid outputs against one-hot targets (the
    paper), computed stably from the logits (finite for any finite logit). Inference runs in
    batches of at most ``batch_size`` images, fewer when an explanation of the batch would need
    more than about 1 GiB (CPU) or half the free GPU memory.

    The default explanation is exact: the contribution maps ``W(x)ᵀ_k ⊙ x``
    (:class:`~interpretable.estimators.methods.BcosContributions`).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosViTClassifier
    >>> X = np.random.default_rng(0).random((8, 8, 8, 3), dtype=np.float32)
    >>> y = [0, 1] * 4
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, random_state=0).fit(X, y)
    >>> clf.predict(X[:2]).shape
    (2,)
    >>> explanation = clf.explain(X[:2])
    >>> explanation.values.shape  # (n, H, W): the contribution of every pixel
    (2, 8, 8)
    >>> bool(abs(explanation.completeness_error).max() < 1e-3)  # exact: sums to the logit
    True
    """

    saved_as = "BcosViTClassifier"

    #: the explanation methods it offers, its default first
    explainers = (BcosContributions(), *SizedVisionTransformerClassifier.explainers)

    _parameter_constraints = {
        **SizedVisionTransformerClassifier._parameter_constraints,
        "attention_prior": [StrOptions(set(ATTENTION_PRIORS))],
        "b": [Interval(Real, 1, None, closed="left")],
        "max_out": [Interval(Integral, 1, None, closed="left")],
        "scale_factor": [Interval(Real, 0, None, closed="neither"), None],
        "output_scale": [Interval(Real, 0, None, closed="neither")],
        "logit_bias": [Interval(Real, None, None, closed="neither"), None],
        "stem_stride": [Interval(Integral, 1, None, closed="left")],
        "warmup": [Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, patch_size: int = 4, embed_dim: int = 64, depth: int = 4,
                 num_heads: int = 4, mlp_ratio: float = 2.0,
                 stem_channels: tuple[int, ...] = (32,),
                 attention_prior: str = "multiplicative", b: float = 2.0, max_out: int = 2,
                 scale_factor: float | None = None, output_scale: float = 1.0,
                 logit_bias: float | None = None, stem_stride: int = 1, *,
                 image_size: int | Literal["auto"] | None = "auto",
                 zoom_out: tuple[float, float] | None = None,
                 zoom_out_probability: float = 0.5, lr: float = 2e-3,
                 lr_decay_at: float | None = 0.6, warmup: float = 0.0, max_epochs: int = 15,
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
        self.attention_prior = attention_prior
        self.b = b
        self.max_out = max_out
        self.scale_factor = scale_factor
        self.output_scale = output_scale
        self.logit_bias = logit_bias
        self.stem_stride = stem_stride
        self.image_size = image_size
        self.zoom_out = zoom_out
        self.zoom_out_probability = zoom_out_probability
        self.lr = lr
        self.lr_decay_at = lr_decay_at
        self.warmup = warmup
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

    def _check_params(self) -> None:
        super()._check_params()
        if self.patch_size % self.stem_stride:
            raise ValueError(f"stem_stride={self.stem_stride} must divide "
                             f"patch_size={self.patch_size}.")

    def _make_module(self, in_channels, image_size, n_classes):
        return BcosViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                       self.depth, self.num_heads, self.mlp_ratio, self._stem_channels(),
                       self.attention_prior, self.b, self.max_out,
                       self.scale_factor, self.output_scale, self.logit_bias,
                       stem_stride=self.stem_stride)

    def _criterion(self):
        return OneHotBCE(0.0)

    def _encode(self, X):
        return encode_image(torch.as_tensor(X).permute(0, 3, 1, 2))  # channels-last memory

    def _phase(self, n_samples: int) -> dict:
        """The paper's step decay, after a linear warm-up when ``warmup`` > 0."""
        return {"lr": self.lr, "callbacks": self._callbacks(self.warmup)}
