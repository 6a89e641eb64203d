"""The B-cos v2 Vision Transformer classifier, :class:`BcosSimpleViTClassifier` (network
:class:`~interpretable.nn.bcos.BcosSimpleViT`): the ``simple_vit`` and ``vitc`` ViTs
of the ``bcos`` package, from scratch or fine-tuned from their ImageNet weights, their ImageNet
classifiers as they are (:meth:`BcosSimpleViTClassifier.from_pretrained`), and B-cosified
torchvision / timm ViTs fine-tuned from the conventional weights.

It takes images ``(n, H, W)`` (grey) or ``(n, H, W, C)``, float in [0, 1] or uint8, or with
``image_size`` any images (see :mod:`interpretable.estimators.vision`); the checkpoints are
read and checked by :mod:`interpretable.estimators.vision`.
"""
from __future__ import annotations

import math
import os
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from interpretable.estimators.core._training import fit_transactionally
from interpretable.estimators.vision._base import VisionTransformerClassifier
from interpretable.estimators.vision._explainers import BcosContributions
from interpretable.estimators.vision._pretrained import (
    RELEASED_CROP,
    check_backbone,
    conventional_backbone,
    imagenet_head,
    imprint_classifier,
    pretrained_format,
    read_pretrained,
    resolve_architecture,
    set_trainable,
    start_from,
    v2_token_stride,
)
from interpretable.nn import OneHotBCE
from interpretable.nn.bcos import BcosSimpleViT, encode_image
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    import numpy as np
    from accelerate import Accelerator
    from skorch.callbacks import Callback

__all__ = ["BcosSimpleViTClassifier"]

#: ``warmup="auto"`` from pretrained weights (0 from scratch)
AUTO_WARMUP = 0.1
#: learning rate of the new classifier on pretrained weights relative to ``lr`` (both chosen
#: on the stand-in of benchmarks/bench_finetune.py)
HEAD_LR_SCALE = 5.0


class BcosSimpleViTClassifier(VisionTransformerClassifier):
    """B-cos v2 Vision Transformer classifier, pretrained or B-cosified (exact contribution maps).

    The B-cos v2 ViTs of the ``bcos`` package (Böhle et al.): a fixed sin-cos positional
    embedding, bias-free LayerNorms, B = 2, no MaxOut; from scratch, fine-tuned from their
    ImageNet weights (``pretrained``), or their ImageNet classifiers as they are
    (:meth:`from_pretrained`). Also a conventional torchvision or timm ViT B-cosified (Arya et
    al., "B-cosification") and fine-tuned from its weights. Every component is dynamic linear,
    so each logit is exactly ``W(x)·x + bias``. The holistic ViT of the first B-cos ViT paper is
    :class:`BcosViTClassifier`.

    Parameters
    ----------
    architecture : None, a released name or a dict, default=None
        The network. A name of :data:`~interpretable.nn.bcos.PRETRAINED`
        (``"simple_vit_ti_patch16_224"``, ..., ``"vitc_l_patch1_14"``): that released ViT. A
        dict ``{"dim", "depth", "heads", "mlp_dim", "patch_size"[, "stem_channels"]}`` of
        :class:`~interpretable.nn.bcos.BcosSimpleViT` sizes: a custom one (e.g. a
        tiny one); with a conventional ViT's state dict as ``pretrained``, ``{"heads": h}`` is
        enough (its other sizes are read off its shapes). None: the released model that
        ``pretrained`` names. Images must be multiples of the token stride (16 for the released
        models).
    pretrained : None, a released name or a path, default=None
        Start ``fit`` from these weights: a released name (read from the torch hub cache;
        download it once with ``from_pretrained(name, download=True)``) or a ``.pth`` file in
        the ``bcos`` key layout (``architecture`` says which network unless its file name is a
        released one), or the state dict of a conventional torchvision or timm
        ``VisionTransformer`` (``architecture={"heads": h}``, its number of heads, which a state
        dict does not record; its other sizes are read off its shapes; images of the size its
        learned positions fix, normalised with ImageNet's mean and std in training): ``fit``
        B-cosifies it (:func:`~interpretable.nn.bcos.bcosify_vit`) and
        fine-tunes it from the recipe's start, every bias removed and B = 2. ``fit`` puts a new
        classifier on it for the labels of y and trains as ``finetune`` says; ``clone`` keeps
        the parameter, so every fit starts from it; the fitted model no longer needs the file.
    finetune : "all", "head" or int k >= 1, default="all"
        What ``fit`` trains from ``pretrained`` weights: every weight; only the classifier
        (its LayerNorm and B-cos layer: fastest, the backbone's features as they are); or the
        last k transformer blocks and the classifier. Without ``pretrained``: "all".
    logit_bias : float or None, default=None
        Fixed logit bias (None: log(p/(1-p)) with p = 1/n_classes, as log(1/999) in the
        released models).
    image_size : "auto", None or int, default="auto"
        The inputs. None: images as given, an array ``(n, H, W[, C])`` of the training size and
        channels. An int s: any images (arrays of any size, lists of differently sized arrays,
        PIL images, file paths), converted to RGB: those of s × s pixels as they are, the
        others' shorter side resized to round(s·8/7) and centre-cropped to s × s (the ImageNet
        evaluation transform, :func:`~interpretable.datasets.eval_crops`);
        explanations are maps of the crops (``explanation.images``) and
        ``explanation.crop_boxes`` gives each crop's box in its source image. "auto": 224
        (the released models' transform) for a released architecture or ``pretrained``
        weights, else None.
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
    module_ : BcosSimpleViT
        The fitted network (:class:`~interpretable.nn.bcos.BcosSimpleViT`).
    architecture_ : dict
        Its arguments: the sizes, classes, input channels and image size, and whether it is a
        B-cosified conventional ViT.
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
    BcosViTClassifier : The holistically explainable B-cos ViT.
    ViTClassifier : The conventional ViT, trained here or taken from torchvision / timm.

    Notes
    -----
    From ``pretrained`` weights the new classifier learns at 5 × ``lr`` (1e-2 by default), the
    other trained layers at ``lr``. Training uses binary cross-entropy on sigmoid outputs,
    computed stably from the logits, as the ``bcos`` package trains its v2 models: targets
    1/n_classes for the other classes, whose logit is then the logit bias, which a B-cos
    classifier reaches (its logits are bounded by the norm of its input, so one-hot targets,
    which ask for unbounded negative logits, leave a new classifier almost unable to learn).
    Inference runs in batches of at most ``batch_size`` images, fewer when an explanation of
    the batch would need more than about 1 GiB (CPU) or half the free GPU memory.

    The default explanation is exact: the contribution maps ``W(x)ᵀ_k ⊙ x``
    (:class:`~interpretable.estimators.methods.BcosContributions`); ``bias`` holds the
    logit bias plus the contribution of the positional embedding.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosSimpleViTClassifier
    >>> X = np.random.default_rng(0).random((8, 16, 16, 3), dtype=np.float32)
    >>> arch = dict(dim=8, depth=1, heads=2, mlp_dim=16, patch_size=8)
    >>> clf = BcosSimpleViTClassifier(arch, max_epochs=1, random_state=0).fit(X, [0, 1] * 4)
    >>> explanation = clf.explain(X[:2])
    >>> explanation.values.shape  # (n, H, W): the contribution of every pixel
    (2, 16, 16)
    >>> bool(abs(explanation.completeness_error).max() < 1e-3)  # exact: sums to the logit
    True
    """

    saved_as = "BcosSimpleViTClassifier"

    #: the explanation methods it offers, its default first
    explainers = (BcosContributions(), *VisionTransformerClassifier.explainers)

    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints,
        "architecture": [None, str, dict],
        "pretrained": [None, str, os.PathLike],
        "finetune": [StrOptions({"all", "head"}), Interval(Integral, 1, None, closed="left")],
        "logit_bias": [Interval(Real, None, None, closed="neither"), None],
        "warmup": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, architecture: str | dict[str, Any] | None = None, *,
                 pretrained: str | os.PathLike[str] | None = None,
                 finetune: Literal["all", "head"] | int = "all", logit_bias: float | None = None,
                 image_size: int | Literal["auto"] | None = "auto",
                 zoom_out: tuple[float, float] | None = None,
                 zoom_out_probability: float = 0.5, lr: float = 2e-3,
                 lr_decay_at: float | None = 0.6, warmup: float | Literal["auto"] = "auto",
                 max_epochs: int = 15, batch_size: int = 32, optimizer: str = "adam",
                 weight_decay: float = 0.0, device: str | torch.device = "auto",
                 random_state: int | np.random.RandomState | None = None, verbose: int = 0,
                 class_weight: str | dict[Any, float] | None = None,
                 callbacks: list[Callback | tuple[str, Callback]] | None = None,
                 validation_fraction: float | None = None, early_stopping: bool = False,
                 n_iter_no_change: int = 5, warm_start: bool = False,
                 precision: str = "float32", inference_precision: str = "float32",
                 accelerator: Accelerator | None = None):
        self.architecture = architecture
        self.pretrained = pretrained
        self.finetune = finetune
        self.logit_bias = logit_bias
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
    def from_pretrained(cls, name_or_path: str | os.PathLike[str], *,
                        architecture: str | dict[str, Any] | None = None,
                        classes: Sequence[Hashable] | None = None, download: bool = False,
                        **params: Any) -> BcosSimpleViTClassifier:
        """Build a fitted classifier from a released ImageNet model or a ``.pth`` checkpoint.

        ``predict`` gives ImageNet class names, ``explain`` exact contribution maps of the
        crops the model sees (``image_size="auto"``: its 224-px evaluation transform; images
        of 224 × 224 pixels are taken as they are). The checkpoint goes in as a fit does: a
        refused one leaves the estimator as it was.

        Parameters
        ----------
        name_or_path : str or os.PathLike
            A name of :data:`~interpretable.nn.bcos.PRETRAINED`, read from the torch hub
            cache, or a ``.pth`` file in the ``bcos`` key layout (``architecture`` says which
            network unless its file name is a released one).
        architecture : None, str or dict, default=None
            The network, as the ``architecture`` parameter.
        classes : sequence or None, default=None
            The labels of the checkpoint's classifier rows, in row order (None: the 1,000
            ImageNet class names of
            :func:`~interpretable.datasets.imagenet_class_names`). ``classes_`` holds
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
        BcosSimpleViTClassifier
            The fitted classifier.

        Examples
        --------
        A checkpoint of a tiny v2 ViT (a released name such as
        ``"vitc_ti_patch1_14"`` works the same way once downloaded):

        >>> import numpy as np, torch
        >>> from interpretable import BcosSimpleViTClassifier
        >>> from interpretable.nn.bcos import to_bcos_state_dict
        >>> arch = dict(dim=8, depth=1, heads=2, mlp_dim=16, patch_size=8)
        >>> X = np.random.default_rng(0).random((4, 16, 16, 3), dtype=np.float32)
        >>> tiny = BcosSimpleViTClassifier(arch, max_epochs=1, random_state=0)
        >>> torch.save(to_bcos_state_dict(tiny.fit(X, [0, 1, 0, 1]).module_), "tiny.pth")
        >>> clf = BcosSimpleViTClassifier.from_pretrained("tiny.pth", architecture=arch,
        ...                                               classes=["cat", "dog"], image_size=16)
        >>> clf.classes_
        array(['cat', 'dog'], dtype='<U3')
        """
        if pretrained_format(name_or_path) != "bcos":
            raise ValueError(f"{name_or_path} holds a conventional ViT, which must be "
                             "fine-tuned to become B-cos: BcosSimpleViTClassifier(pretrained="
                             "..., architecture={'heads': h}).fit(X, y) (or, as it is, "
                             "ViTClassifier.from_pretrained).")
        estimator = cls(architecture=architecture, pretrained=name_or_path, **params)
        return fit_transactionally(
            estimator, lambda work, *_: work._adopt_checkpoint(classes, download),
            None, None, None)

    def _adopt_checkpoint(self, classes, download: bool) -> None:
        """Fitted state of the checkpoint ``pretrained`` as it is (its ImageNet classifier)."""
        self._validate_parameters()
        self._start_fit()
        crop = self._crop_size()
        side = crop or RELEASED_CROP
        self._resolved_backbone = self._resolve_backbone()
        module = read_pretrained(self.pretrained, self._backbone(), (side, side), download)
        self.classes_ = imagenet_head(module, classes)
        self.n_channels_, self.image_shape_, self.crop_size_ = 3, (side, side), crop
        self._prepare_fit()
        if self.logit_bias is not None:
            module.logit_bias = float(self.logit_bias)
        self.module_ = module.to(self.device_).eval()
        self.history_ = []

    # ------------------------------------------------------------------ architecture
    def _resolve_backbone(self) -> dict:
        """The v2 backbone dict (see :mod:`.pretrained`); a B-cosified model continued by
        ``warm_start`` has the fitted sizes (no file read)."""
        self._check_network()
        fitted = self.architecture_ if self._continues() else None
        if fitted is not None and fitted["bcosified"]:
            return conventional_backbone(self.architecture, "the fitted model is a B-cosified "
                                         "conventional ViT", lambda heads: fitted)
        return resolve_architecture(self.architecture, self.pretrained)

    def _backbone(self) -> dict:
        """The backbone of the fit under way, resolved once (a checkpoint is read once)."""
        return self._resolved_backbone

    def _check_params(self) -> None:
        """The architecture itself is resolved at fit (:meth:`_check_network`): a loaded
        model's ``pretrained`` file may be gone, or a path, which config.json does not hold
        (it loads as None)."""
        super()._check_params()
        if self.architecture == "holistic":
            raise ValueError("architecture='holistic' is the network of BcosViTClassifier; "
                             "BcosSimpleViTClassifier takes a released name or a dict of sizes.")

    def _check_network(self) -> None:
        """What a fit needs: a network to build, and ``pretrained`` weights to ``finetune``."""
        if self.architecture is None and self.pretrained is None:
            raise ValueError("BcosSimpleViTClassifier needs architecture= (a released name of "
                             "interpretable.nn.bcos.PRETRAINED or a dict of BcosSimpleViT "
                             "sizes) or pretrained= (weights to start from).")
        if self.finetune != "all" and self.pretrained is None:
            raise ValueError(f"finetune={self.finetune!r} trains part of pretrained weights; "
                             "without pretrained= use finetune='all'.")

    def _crop_size(self):
        if self.image_size != "auto":
            return self.image_size
        released = self.pretrained is not None or isinstance(self.architecture, str)
        return RELEASED_CROP if released else None

    def _token_stride(self, channels):
        return v2_token_stride(self._backbone(), channels), "the architecture's patch and stem"

    def _build_module(self) -> nn.Module:
        return BcosSimpleViT(**{**self.architecture_,
                                "image_size": tuple(self.architecture_["image_size"])})

    def _criterion(self):
        return OneHotBCE("uniform")

    def _encode(self, X):
        return encode_image(torch.as_tensor(X).permute(0, 3, 1, 2))  # channels-last memory

    # ------------------------------------------------------------------ fitting
    def _fit(self, X, y, sample_weight=None):
        self._resolved_backbone = self._resolve_backbone()  # on the fit's working copy
        return super()._fit(X, y, sample_weight)

    def _prepare_fit(self) -> None:
        backbone = self._backbone()
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
        phase: dict[str, Any] = {"lr": self.lr}
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
        if not isinstance(architecture, dict):
            raise ValueError(f"architecture_ must be a dict, got {architecture!r}.")
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
        self.architecture_ = {**check_backbone(backbone, bcosified), **fitted,
                              "logit_bias": bias, "bcosified": bcosified}
