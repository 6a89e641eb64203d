"""Vision transformer classifiers: :class:`BcosViTClassifier` (B-cos ViTs: the holistically
explainable ViT of Böhle et al., and the B-cos v2 ViTs of the ``bcos`` package with their
ImageNet weights) and the conventional :class:`ViTClassifier` baseline.

Both take images ``(n, H, W)`` (grey) or ``(n, H, W, C)``, float in [0, 1] or uint8, or with
``image_size`` any images (see :mod:`interpretable.estimators.vision.base`).
"""
from __future__ import annotations

import inspect
import math
import os
from collections.abc import Mapping
from numbers import Integral, Real

import torch
from torch import nn

from ...nn.bcos.holistic_vit import ATTENTION_PRIORS, BcosViT
from ...nn.bcos.layers import encode_image
from ...nn.bcos.simple_vit import BcosSimpleViT
from ...nn.bcos.vit_conversion import IMAGENET_MEAN, IMAGENET_STD, read_conventional
from ...nn.conventional_vit import LAYOUTS, ConventionalViT
from ...nn.losses import OneHotBCE, OutputCrossEntropy
from ...nn.vit import ViT
from ...params import Interval, StrOptions
from ..core.model_folder import FORMAT_VERSION
from ..core.persistence import restore_estimator
from .base import VisionTransformerClassifier
from .explainers import BcosContributions
from .pretrained import (
    HOLISTIC,
    HOLISTIC_PARAMS,
    RELEASED_CROP,
    check_backbone,
    conventional_backbone,
    head_order,
    imagenet_head,
    imprint_classifier,
    pretrained_format,
    read_pretrained,
    read_weights,
    resolve_architecture,
    set_trainable,
    start_from,
    v2_token_stride,
)

__all__ = ["AUTO_WARMUP", "HEAD_LR_SCALE", "VisionTransformerClassifier", "BcosViTClassifier",
           "ViTClassifier"]

#: ``warmup="auto"`` from pretrained weights (0 from scratch)
AUTO_WARMUP = 0.1
#: learning rate of the new classifier on pretrained weights relative to ``lr`` (both chosen
#: on the stand-in of benchmarks/bench_finetune.py)
HEAD_LR_SCALE = 5.0


def _same(a, b) -> bool:
    sequences = (list, tuple)
    return list(a) == list(b) if isinstance(a, sequences) and isinstance(b, sequences) \
        else a == b


class BcosViTClassifier(VisionTransformerClassifier):
    """B-cos Vision Transformer classifier, holistically explainable (exact contribution maps).

    The holistically explainable ViT of Böhle, Fritz & Schiele (the default), or the B-cos
    v2 ViTs of the ``bcos`` package, from scratch or fine-tuned from their ImageNet weights
    (``pretrained``; :meth:`from_pretrained` gives the ImageNet classifier itself).
    Every component is dynamic linear, so each logit is exactly ``W(x)·x + bias``.

    Parameters
    ----------
    patch_size : int, default=4
        (holistic) Kernel size and stride of the last stem convolution (one token per patch).
    embed_dim : int, default=64
        (holistic) Token dimension.
    depth : int, default=4
        (holistic) Number of transformer blocks.
    num_heads : int, default=4
        (holistic) Attention heads per block.
    mlp_ratio : float, default=2.0
        (holistic) MLP hidden size as a multiple of ``embed_dim``.
    stem_channels : tuple of int, default=(32,)
        (holistic) Channels of the 3×3 B-cos convolutions of the CNN tokeniser before the patch
        layer.
    attention_prior : {"multiplicative", "additive", "none"}, default="multiplicative"
        (holistic) Learned per-layer, per-head prior ``B``: ``SM(R)·SM(B)``, ``SM(R+B)`` or
        none.
    b : float, default=2.0
        (holistic) B-cos exponent B (1 = linear, 2 in the paper).
    max_out : int, default=2
        (holistic) Units per neuron pooled by MaxOut in the stem, attention and MLP layers
        (1 = none).
    scale_factor : float or None, default=None
        (holistic) f in the per-layer output scaling γ = f/√fan_in (None: 30; see
        :class:`~interpretable.nn.bcos.holistic_vit.BcosViT` for why not the paper's 15 / 150).
    output_scale : float, default=1.0
        (holistic) Factor applied to the classifier output before the logit bias (the paper's
        10⁻³ compensates features scaled by 10³; no such scaling here, so 1).
    logit_bias : float or None, default=None
        Fixed logit bias (None: log(p/(1-p)) with p = 1/n_classes, as log(0.01/0.99) for
        ImageNet in the paper and log(1/999) in the released v2 models).
    stem_stride : int, default=1
        (holistic) Stride of the first 3×3 stem convolution (the patch convolution then uses
        ``patch_size / stem_stride``; must divide ``patch_size``). 1 keeps the full resolution;
        2, as in the ``bcos`` package's stem, is about 1.3× faster (see README, Performance).
    architecture : None, "holistic", a released name or a dict, default=None
        The network. None: the holistic ViT of the paper, or with ``pretrained`` the released
        model it names. ``"holistic"``: the paper's ViT, sized by the parameters marked
        (holistic). A name of :data:`~interpretable.nn.bcos.zoo.PRETRAINED`
        (``"simple_vit_ti_patch16_224"``, ..., ``"vitc_l_patch1_14"``): that B-cos v2 ViT
        (fixed sin-cos positional embedding, bias-free LayerNorms, B = 2, no MaxOut). A dict
        ``{"dim", "depth", "heads", "mlp_dim", "patch_size"[, "stem_channels"]}`` of
        :class:`~interpretable.nn.bcos.simple_vit.BcosSimpleViT` sizes: a custom v2 ViT (e.g. a tiny
        one); with a conventional ViT's state dict as ``pretrained``, ``{"heads": h}`` is
        enough (its other sizes are read off its shapes). With a v2 architecture or a
        conventional checkpoint the (holistic) parameters must keep their defaults (a
        ValueError names those that do not); images must be multiples of the token stride
        (16 for the released models).
    pretrained : None, a released name or a path, default=None
        Start ``fit`` from these weights: a released name (read from the torch hub cache;
        download it once with ``from_pretrained(name, download=True)``) or a ``.pth`` file in
        the ``bcos`` key layout (``architecture`` says which network unless its file name is a
        released one), or the state dict of a conventional torchvision or timm
        ``VisionTransformer`` (``architecture={"heads": h}``, its number of heads, which a state
        dict does not record; its other sizes are read off its shapes; images of the size its
        learned positions fix, normalised with ImageNet's mean and std in training): ``fit``
        B-cosifies it (:func:`~interpretable.nn.bcos.vit_conversion.bcosify_vit`) and
        fine-tunes it from the recipe's start, every bias removed and B = 2. ``fit`` puts a new
        classifier on it for the labels of y and trains as ``finetune`` says; ``clone`` keeps
        the parameter, so every fit starts from it; the fitted model no longer needs the file.
    finetune : "all", "head" or int k >= 1, default="all"
        What ``fit`` trains from ``pretrained`` weights: every weight; only the classifier
        (its LayerNorm and B-cos layer: fastest, the backbone's features as they are); or the
        last k transformer blocks and the classifier. Without ``pretrained``: "all".
    image_size : "auto", None or int, default="auto"
        The inputs. None: images as given, an array ``(n, H, W[, C])`` of the training size and
        channels. An int s: any images (arrays of any size, lists of differently sized arrays,
        PIL images, file paths), converted to RGB, their shorter side resized to round(s·8/7)
        and centre-cropped to s × s (the ImageNet evaluation transform,
        :func:`~interpretable.datasets.images.eval_crops`); explanations are maps of the crops
        (``explanation.images``) and ``explanation.crop_boxes`` gives each crop's box in its
        source image. "auto": 224 (the released models' transform) for a released
        architecture or ``pretrained`` weights, else None.
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
    warmup : float in [0, 1) or "auto", default="auto"
        Share of the training steps over which the learning rate rises linearly to ``lr``
        (``lr_decay_at`` applies after it). "auto": 0.1 from ``pretrained`` weights (the
        gradients of a new classifier would otherwise disturb the pretrained features), else 0.
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
        ``explain`` (see :mod:`interpretable.progress`).
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
        exact.
    inference_precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` runs ``predict``, ``predict_proba``, ``decision_function`` and ``score``
        under ``torch.autocast`` in bfloat16 where the device computes bfloat16 natively (a
        CUDA GPU of compute capability 8.0 or newer, a CPU with AVX512-BF16 or AMX); elsewhere
        they run in float32, with one warning. Outputs keep their dtypes (float32 logits,
        float64 probabilities). ``explain``, ``logits`` and the metrics always run in the
        parameters' own precision. Saved with the model (models saved before it load with
        ``"float32"``).
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.scale`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    module_ : torch.nn.Module
        The fitted network (:class:`~interpretable.nn.bcos.holistic_vit.BcosViT` or a v2 ViT).
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
    ViTClassifier : The conventional ViT baseline.
    interpretable.metrics.grid_pointing_game : Localisation of the explanations.

    Notes
    -----
    From ``pretrained`` weights the new classifier learns at 5 × ``lr`` (1e-2 by default), the
    other trained layers at ``lr``. Training uses binary cross-entropy on sigmoid outputs,
    computed stably from the logits (finite for any finite logit), against one-hot targets for
    the holistic ViT (the paper) and, as the ``bcos`` package trains its v2 models,
    targets 1/n_classes for the other classes with a v2
    architecture: their logit is then the logit bias, which a B-cos classifier reaches (its
    logits are bounded by the norm of its input, so one-hot targets, which ask for unbounded
    negative logits, leave a new classifier almost unable to learn). Inference runs in batches
    of at most ``batch_size`` images, fewer when an explanation of the batch would need more
    than about 1 GiB (CPU) or half the free GPU memory.

    The default explanation is exact: the contribution maps ``W(x)ᵀ_k ⊙ x``
    (:class:`~interpretable.estimators.vision.explainers.BcosContributions`); for v2 models
    ``bias`` holds the logit bias plus the contribution of the positional embedding.

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
    explainers = (BcosContributions(), *VisionTransformerClassifier.explainers)

    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints,
        "attention_prior": [StrOptions(set(ATTENTION_PRIORS))],
        "b": [Interval(Real, 1, None, closed="left")],
        "max_out": [Interval(Integral, 1, None, closed="left")],
        "scale_factor": [Interval(Real, 0, None, closed="neither"), None],
        "output_scale": [Interval(Real, 0, None, closed="neither")],
        "logit_bias": [Interval(Real, None, None, closed="neither"), None],
        "stem_stride": [Interval(Integral, 1, None, closed="left")],
        "architecture": [None, str, dict],
        "pretrained": [None, str, os.PathLike],
        "finetune": [StrOptions({"all", "head"}), Interval(Integral, 1, None, closed="left")],
        "warmup": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
    }
    _params_since_0_1 = {**VisionTransformerClassifier._params_since_0_1, "architecture": None,
                         "pretrained": None, "finetune": "all", "warmup": "auto"}
    _fitted_since_0_1 = {**VisionTransformerClassifier._fitted_since_0_1, "architecture_": None}

    def __init__(self, patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0,
                 stem_channels=(32,), attention_prior="multiplicative", b=2.0, max_out=2,
                 scale_factor=None, output_scale=1.0, logit_bias=None, stem_stride=1, *,
                 architecture=None, pretrained=None, finetune="all", image_size="auto",
                 zoom_out=None, zoom_out_probability=0.5, lr=2e-3, lr_decay_at=0.6,
                 warmup="auto", max_epochs=15, batch_size=32, optimizer="adam",
                 weight_decay=0.0, device="auto", random_state=None, verbose=0,
                 class_weight=None, callbacks=None, validation_fraction=None,
                 early_stopping=False, n_iter_no_change=5, warm_start=False,
                 precision="float32", inference_precision="float32", accelerator=None):
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
        self.architecture = architecture
        self.pretrained = pretrained
        self.finetune = finetune
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

    @classmethod
    def from_pretrained(cls, name_or_path, *, architecture=None, classes=None,
                        download: bool = False, **params) -> "BcosViTClassifier":
        """Build a fitted classifier from a released ImageNet model or a ``.pth`` checkpoint.

        ``predict`` gives ImageNet class names, ``explain`` exact contribution maps of the
        crops the model sees (``image_size="auto"``: its 224-px evaluation transform).

        Parameters
        ----------
        name_or_path : str or os.PathLike
            A name of :data:`~interpretable.nn.bcos.zoo.PRETRAINED`, read from the torch hub
            cache, or a ``.pth`` file in the ``bcos`` key layout (``architecture`` says which
            network unless its file name is a released one).
        architecture : None, str or dict, default=None
            The network, as the ``architecture`` parameter.
        classes : sequence or None, default=None
            The labels of the checkpoint's classifier rows, in row order (None: the 1,000
            ImageNet class names of
            :func:`~interpretable.datasets.images.imagenet_class_names`). ``classes_`` holds
            them sorted (scikit-learn's convention; the rows follow).
        download : bool, default=False
            Download a released model into the torch hub cache once (SHA-256 checked);
            nothing is downloaded otherwise.
        **params
            Further parameters (e.g. ``finetune="head"``, ``max_epochs``, ``device``). The
            estimator's ``pretrained`` is ``name_or_path``, so a later ``fit`` (or a
            ``clone``'s) fine-tunes from these weights for the labels it is given.

        Returns
        -------
        BcosViTClassifier
            The fitted classifier.

        Examples
        --------
        A checkpoint of a tiny v2 ViT (a released name such as
        ``"vitc_ti_patch1_14"`` works the same way once downloaded):

        >>> import numpy as np, torch
        >>> from interpretable import BcosViTClassifier
        >>> from interpretable.nn.bcos.zoo import to_bcos_state_dict
        >>> arch = dict(dim=8, depth=1, heads=2, mlp_dim=16, patch_size=8)
        >>> X = np.random.default_rng(0).random((4, 16, 16, 3), dtype=np.float32)
        >>> tiny = BcosViTClassifier(architecture=arch, max_epochs=1, random_state=0)
        >>> torch.save(to_bcos_state_dict(tiny.fit(X, [0, 1, 0, 1]).module_), "tiny.pth")
        >>> clf = BcosViTClassifier.from_pretrained("tiny.pth", architecture=arch,
        ...                                         classes=["cat", "dog"], image_size=16)
        >>> clf.classes_
        array(['cat', 'dog'], dtype='<U3')
        """
        if pretrained_format(name_or_path) != "bcos":
            raise ValueError(f"{name_or_path} holds a conventional ViT, which must be "
                             "fine-tuned to become B-cos: BcosViTClassifier(pretrained=..., "
                             "architecture={'heads': h}).fit(X, y) (or, as it is, "
                             "ViTClassifier.from_pretrained).")
        estimator = cls(architecture=architecture, pretrained=name_or_path, **params)
        estimator._validate_parameters()
        estimator._start_fit()
        crop = estimator._crop_size()
        side = crop or RELEASED_CROP
        module = read_pretrained(name_or_path, estimator._backbone(), (side, side), download)
        estimator.classes_ = imagenet_head(module, classes)
        estimator.n_channels_, estimator.image_shape_, estimator.crop_size_ = 3, (side, side), crop
        estimator._prepare_fit()
        if estimator.logit_bias is not None:
            module.logit_bias = float(estimator.logit_bias)
        estimator.module_ = module.to(estimator.device_).eval()
        estimator.history_ = []
        estimator.fitted_params_ = estimator.get_params(deep=False)
        return estimator

    # ------------------------------------------------------------------ architecture
    def _backbone(self) -> str | dict:
        """:data:`~.pretrained.HOLISTIC` or the v2 backbone dict (see :mod:`.pretrained`); a
        B-cosified model continued by ``warm_start`` has the fitted sizes (no file read)."""
        fitted = self.architecture_ if self._continues() else None
        if fitted is not None and fitted["bcosified"]:
            return conventional_backbone(self.architecture, "the fitted model is a B-cosified "
                                         "conventional ViT", lambda heads: fitted)
        return resolve_architecture(self.architecture, self.pretrained)

    def _check_params(self) -> None:
        """The architecture itself is resolved at fit (:meth:`_backbone`): a loaded model's
        ``pretrained`` file may be gone."""
        super()._check_params()
        if self.patch_size % self.stem_stride:
            raise ValueError(f"stem_stride={self.stem_stride} must divide "
                             f"patch_size={self.patch_size}.")
        if self.architecture != HOLISTIC and not (self.architecture is None
                                                  and self.pretrained is None):
            defaults = inspect.signature(type(self).__init__).parameters
            changed = [k for k in HOLISTIC_PARAMS
                       if not _same(getattr(self, k), defaults[k].default)]
            if changed:
                raise ValueError(f"{changed} apply to the holistic architecture only; this "
                                 "network takes its sizes from architecture= (and pretrained=): "
                                 "leave them at their defaults.")

    def _crop_size(self):
        if self.image_size != "auto":
            return self.image_size
        released = self.pretrained is not None or isinstance(self.architecture, str) \
            and self.architecture != HOLISTIC
        return RELEASED_CROP if released else None

    def _token_stride(self, channels):
        backbone = self._backbone()
        if backbone == HOLISTIC:
            return super()._token_stride(channels)
        return v2_token_stride(backbone, channels), "the architecture's patch and stem"

    def _make_module(self, in_channels, image_size, n_classes):
        return BcosViT(in_channels, image_size, n_classes, self.patch_size, self.embed_dim,
                       self.depth, self.num_heads, self.mlp_ratio, self._stem_channels(),
                       self.attention_prior, self.b, self.max_out,
                       self.scale_factor, self.output_scale, self.logit_bias,
                       stem_stride=self.stem_stride)

    def _build_module(self) -> nn.Module:
        if self.architecture_ is None:
            return super()._build_module()
        return BcosSimpleViT(**{**self.architecture_,
                                "image_size": tuple(self.architecture_["image_size"])})

    def _criterion(self):
        return OneHotBCE("uniform" if self.architecture_ is not None else 0.0)

    def _encode(self, X):
        return encode_image(torch.as_tensor(X).permute(0, 3, 1, 2))  # channels-last memory

    # ------------------------------------------------------------------ fitting
    def _prepare_fit(self) -> None:
        backbone = self._backbone()
        if self.finetune != "all" and self.pretrained is None:
            raise ValueError(f"finetune={self.finetune!r} trains part of pretrained weights; "
                             "without pretrained= use finetune='all'.")
        if backbone == HOLISTIC:
            self.architecture_ = None
            return
        if self.finetune not in ("all", "head") and self.finetune > backbone["depth"]:
            raise ValueError(f"finetune={self.finetune} blocks, but the architecture has "
                             f"{backbone['depth']}.")
        if self.pretrained is not None and self.n_channels_ != 3:
            raise ValueError(f"pretrained weights take RGB images; X has {self.n_channels_} "
                             "channel(s): pass image_size=... (grey images become RGB) or RGB "
                             "arrays.")
        bcosified = self.architecture_["bcosified"] if self._continues() else \
            self.pretrained is not None and pretrained_format(self.pretrained) != "bcos"
        self.architecture_ = {**backbone, "num_classes": len(self.classes_),
                              "in_channels": 2 * self.n_channels_,
                              "image_size": list(self.image_shape_),
                              "logit_bias": self.logit_bias, "bcosified": bcosified}

    def _module_factory(self, X, y):
        """From ``pretrained`` weights: the backbone's, and a new classifier imprinted with the
        centred class means of the pretrained features of X (see
        :func:`~.pretrained.imprint_classifier`)."""
        if self.architecture_ is None:
            return self._build_module
        source = None
        if self.pretrained is not None and not self._continues():
            source = read_pretrained(self.pretrained, self._backbone(), self.image_shape_)
            features = self._features(source, X)

        def build():
            module = self._build_module()
            if source is not None:
                imprint_classifier(start_from(module, source), features, y)
            return set_trainable(module, self.finetune)

        return build

    def _features(self, module, X) -> torch.Tensor:
        """The classifier's inputs (n, D) (pooled tokens after the head LayerNorm) of images
        X (n, H, W, C), in batches."""
        with torch.no_grad():
            return torch.cat([module.linear_head.norm(module.pooled(module.forward_features(
                self._encode(X[i:i + self.batch_size]))[0]))
                for i in range(0, len(X), self.batch_size)])

    def _phase(self, n_samples: int) -> dict:
        """The learning rates (the new classifier's on pretrained weights ×
        :data:`HEAD_LR_SCALE`) and their schedule: the paper's step decay, after a linear
        warm-up when ``warmup`` > 0."""
        pretrained = self.pretrained is not None
        warmup = self.warmup if self.warmup != "auto" else AUTO_WARMUP * pretrained
        phase = {"lr": self.lr}
        if pretrained:
            phase["optimizer__param_groups"] = [("linear_head.*",
                                                 {"lr": self.lr * HEAD_LR_SCALE})]
        return {**phase, "callbacks": self._callbacks(warmup)}

    # ------------------------------------------------------------------ fitted state
    def _get_fitted_state(self) -> dict:
        return {**super()._get_fitted_state(), "architecture_": self.architecture_}

    def _set_fitted_state(self, state: dict) -> None:
        """The fitted architecture is checked on its own (the module is built from it): the
        parameters only say what the next fit trains."""
        super()._set_fitted_state(state)
        architecture = state["architecture_"]
        if architecture is not None:
            if not isinstance(architecture, dict):
                raise ValueError(f"architecture_ must be None or a dict, got {architecture!r}.")
            fitted = {"num_classes": len(self.classes_), "in_channels": 2 * self.n_channels_,
                      "image_size": list(self.image_shape_)}
            bias = architecture.get("logit_bias")
            bcosified = architecture.get("bcosified", False)  # absent before B-cosification
            if any(architecture.get(k) != v for k, v in fitted.items()) or not (
                    bias is None or isinstance(bias, (int, float)) and math.isfinite(bias)) \
                    or not isinstance(bcosified, bool):
                raise ValueError(f"architecture_ {architecture!r} does not match the fitted "
                                 f"classes, channels and image size {fitted}.")
            set_here = (*fitted, "logit_bias", "bcosified")
            backbone = {k: v for k, v in architecture.items() if k not in set_here}
            architecture = {**check_backbone(backbone, bcosified), **fitted, "logit_bias": bias,
                            "bcosified": bcosified}
        self.architecture_ = architecture


class ViTClassifier(VisionTransformerClassifier):
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
        Channels of the 3×3 convolutions of the CNN tokeniser before the patch layer (None:
        the layout's, ``(32,)`` for ``"stem"`` and ``()`` for the others).
    dropout : float in [0, 1), default=0.0
        Dropout in the blocks.
    layout : {"stem", "timm", "torchvision"}, default="stem"
        ``"stem"``: the network above (:class:`~interpretable.nn.vit.ViT`). ``"timm"`` /
        ``"torchvision"``: the standard ViT of those libraries, with their state-dict keys
        (:class:`~interpretable.nn.conventional_vit.ConventionalViT`: patch convolution, class
        token, learned positions, pre-norm blocks, head on the class token; no stem, no
        dropout), on square RGB
        images normalised with ImageNet's mean and std: ``module_.state_dict()`` saved to a
        file is a checkpoint that ``BcosViTClassifier(pretrained=...)`` B-cosifies.
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
        ``explain`` (see :mod:`interpretable.progress`).
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
        exact.
    inference_precision : {"float32", "bf16"}, default="float32"
        ``"bf16"`` runs ``predict``, ``predict_proba``, ``decision_function`` and ``score``
        under ``torch.autocast`` in bfloat16 where the device computes bfloat16 natively (a
        CUDA GPU of compute capability 8.0 or newer, a CPU with AVX512-BF16 or AMX); elsewhere
        they run in float32, with one warning. Outputs keep their dtypes (float32 logits,
        float64 probabilities). ``explain``, ``logits`` and the metrics always run in the
        parameters' own precision. Saved with the model (models saved before it load with
        ``"float32"``).
    accelerator : accelerate.Accelerator or None, default=None
        Train through Hugging Face Accelerate (skorch's ``AccelerateMixin``): under
        ``accelerate launch`` every process trains on its share of each batch (DDP) and all end
        with the same weights; ``device`` is then the accelerator's. Mixed precision is set on
        the accelerator (``Accelerator(mixed_precision="bf16")``). See
        :mod:`interpretable.scale`.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        The class labels.
    module_ : ViT or ConventionalViT
        The fitted network (:class:`~interpretable.nn.vit.ViT`, or with another ``layout``
        :class:`~interpretable.nn.conventional_vit.ConventionalViT`).
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
        **VisionTransformerClassifier._parameter_constraints,
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "layout": [StrOptions({"stem", *LAYOUTS})],
        "stem_channels": [tuple, list, None],
    }
    _params_since_0_1 = {**VisionTransformerClassifier._params_since_0_1, "layout": "stem"}

    def __init__(self, patch_size=4, embed_dim=64, depth=4, num_heads=4, mlp_ratio=2.0,
                 stem_channels=None, dropout=0.0, *, layout="stem", image_size="auto",
                 zoom_out=None,
                 zoom_out_probability=0.5, lr=2e-3, lr_decay_at=0.6, max_epochs=15,
                 batch_size=32, optimizer="adam", weight_decay=0.0, device="auto",
                 random_state=None, verbose=0, class_weight=None, callbacks=None,
                 validation_fraction=None, early_stopping=False, n_iter_no_change=5,
                 warm_start=False, precision="float32", inference_precision="float32",
                 accelerator=None):
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
    def from_pretrained(cls, model, *, classes=None, architecture=None, mean=IMAGENET_MEAN,
                        std=IMAGENET_STD, **params) -> "ViTClassifier":
        """Return a trained torchvision or timm ``VisionTransformer`` as a fitted classifier.

        Its logits are the original's on images normalised with ``mean`` and ``std`` (to
        rounding: ~1e-5 in float32, ~1e-12 in float64); every post-hoc method explains it and
        it saves and loads as a fitted estimator (float32; ``astype`` first for another
        dtype). The checkpoint is checked key by key, shape by shape, before any memory is
        allocated.

        Parameters
        ----------
        model : nn.Module, mapping of str to torch.Tensor, str or os.PathLike
            A torchvision or timm ``VisionTransformer`` (the plain ViT: class token, learned
            positions, pre-norm blocks, head on the class token), its state dict, or a file
            of it (``.safetensors``, else read with ``torch.load(weights_only=True)``).
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
            positions fix, so any image is resized and centre-cropped to it; ``device``,
            ``batch_size``, ...).

        Returns
        -------
        ViTClassifier
            The fitted classifier (``layout`` the model's).

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
