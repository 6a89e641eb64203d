"""The B-cos ResNet classifier, :class:`BcosResNetClassifier` (network
:class:`~interpretable.nn.bcos.BcosResNet`, or
:class:`~interpretable.nn.bcos.BcosDenseNet`): B-cos v2 ResNets and B-cosified
torchvision ResNets and DenseNets. Images as for the other vision estimators (:mod:`.base`; any
size), checkpoints read and checked by :mod:`.resnet_pretrained`."""
from __future__ import annotations

import math
import os
from numbers import Real
from typing import TYPE_CHECKING, Any, Literal

import torch
from torch import nn

from interpretable.estimators.core._training import fit_transactionally
from interpretable.estimators.vision._base import VisionTransformerClassifier
from interpretable.estimators.vision._bcos_simple_vit import AUTO_WARMUP, HEAD_LR_SCALE
from interpretable.estimators.vision._distillation import TEACHER_CONSTRAINTS, TeacherMixin
from interpretable.estimators.vision._pretrained import RELEASED_CROP
from interpretable.estimators.vision._resnet_explainers import BcosResNetContributions
from interpretable.estimators.vision._resnet_pretrained import (
    build_network,
    check_fitted_architecture,
    head_name,
    imagenet_classifier,
    imprint_classifier,
    network_sizes,
    pooled_features,
    pretrained_format,
    read_pretrained,
    resolve_architecture,
    set_trainable,
    start_from,
)
from interpretable.nn import OneHotBCE
from interpretable.nn.bcos import encode_image
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    from collections.abc import Hashable, Sequence

    import numpy as np
    from accelerate import Accelerator
    from sklearn.base import BaseEstimator
    from skorch.callbacks import Callback

__all__ = ["BcosResNetClassifier"]


class BcosResNetClassifier(TeacherMixin, VisionTransformerClassifier):
    """B-cos ResNet classifier, B-cos v2 or B-cosified from torchvision (exact contribution maps).

    The B-cos v2 ResNets of the ``bcos`` package (Böhle et al.: B = 2, bias-free uncentered
    BatchNorms, no activations, a fixed logit bias) from scratch, fine-tuned from their ImageNet
    weights (``pretrained``) or as they are (:meth:`from_pretrained`); or a torchvision ResNet
    B-cosified (Arya et al., "B-cosification": ReLUs kept, biases removed, B = 2) and
    fine-tuned, or distilled (``teacher``), from its weights; the same for a torchvision
    DenseNet (DenseNet-121 / 161 / 169 / 201 layouts,
    :class:`~interpretable.nn.bcos.BcosDenseNet`). Every component is dynamic
    linear, so each logit is exactly ``W(x)·x + bias``.

    Parameters
    ----------
    architecture : None, a released name or a dict, default=None
        The network: a name of :data:`~interpretable.nn.bcos.PRETRAINED_RESNETS`
        (``"resnet18"``, ..., ``"resnet152"``), a dict ``{"block": "basic" or "bottleneck",
        "layers": [n1, n2, n3, n4][, "width": 64]}`` (e.g. a tiny one), a DenseNet's dict
        ``{"growth_rate": k, "block_config": [n1, ...][, "num_init_features": 64, "bn_size":
        4]}`` (torchvision's arguments; from scratch a B-cos DenseNet without ReLUs), or None:
        the network ``pretrained`` holds (its sizes are read off its shapes).
    pretrained : None, a released name or a path, default=None
        Start ``fit`` from these weights (a new classifier for the labels of y, trained as
        ``finetune`` says; every fit starts from them; the fitted model no longer needs the
        file): a released name (read from the torch hub cache), a ``.pth`` file in the
        ``bcos`` ResNet layout, or the state dict (``.pth``, ``.safetensors``) of a torchvision
        ``ResNet`` or ``DenseNet`` trained on ImageNet-normalised images, B-cosified
        (:func:`~interpretable.nn.bcos.bcosify_resnet`,
        :func:`~interpretable.nn.bcos.bcosify_densenet`) and fine-tuned from the
        recipe's start (no biases, B = 2, average pooling in the stem).
    finetune : {"all", "head"}, default="all"
        What ``fit`` trains from ``pretrained`` weights: every weight, or the classifier only
        (the backbone and its BatchNorm statistics as they are). Without ``pretrained``: "all".
    logit_bias : float or None, default=None
        Fixed logit bias (None: log(1/(n_classes - 1)), as in the released models).
    teacher : None, fitted classifier, str or path, default=None
        Distil from a conventional model (Hinton et al., 2015): a fitted classifier of the same
        images and classes (``predict_proba``) or the folder of one saved with ``save()``,
        read once per fit, shared by clones, never stored (``save`` and pickles hold None, a
        folder's path as the path). None: train on the labels alone.
    teacher_weight : float in [0, 1], default=0.5
        With a ``teacher``, the share of the loss that matches its softened probabilities
        (KL divergence, scaled by ``teacher_temperature ** 2``); the rest is cross-entropy
        with the labels.
    teacher_temperature : float > 0, default=2.0
        The temperature both the teacher's and the student's probabilities are softened with
        in the distillation term.
    image_size : "auto", None or int, default="auto"
        None: images as given, arrays ``(n, H, W[, C])`` of the training size. An int s: any
        images as RGB, s × s ones as they are, others resized to round(s·8/7) and centre-cropped
        (maps are of the crops). "auto": 224 for released or ``pretrained`` weights, else None.
    zoom_out : (low, high) or None, default=None
        Random zoom-out augmentation: each epoch a training image is (with
        ``zoom_out_probability``) shrunk by a factor from U[low, high] (0 < low <= high <= 1)
        and placed at random on a black canvas. None: none.
    zoom_out_probability : float, default=0.5
        Share of the training images zoomed out at each epoch (with ``zoom_out``).
    lr_decay_at : float or None, default=0.6
        The learning rate is divided by 10 after this fraction of ``max_epochs``; None keeps
        it constant.
    warmup : float in [0, 1) or "auto", default="auto"
        Share of the training steps over which the learning rate rises linearly to ``lr``
        (``lr_decay_at`` applies after it). "auto": 0.1 from ``pretrained`` weights, else 0.
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
    module_ : BcosResNet or BcosDenseNet
        The fitted network (:class:`~interpretable.nn.bcos.BcosResNet`,
        :class:`~interpretable.nn.bcos.BcosDenseNet`).
    architecture_ : dict
        Its arguments: the sizes (a ResNet's or a DenseNet's), classes, input channels and
        image size, the logit bias and whether it is a B-cosified torchvision network.
    image_shape_, n_channels_, crop_size_ : tuple of int, int, int or None
        ``(H, W)`` of the images the model sees, their channels, the crop side (None: images
        used as given).
    history_ : list of dict
        Per-epoch training record.

    See Also
    --------
    BcosSimpleViTClassifier : The B-cos v2 Vision Transformer, pretrained or B-cosified.

    Notes
    -----
    Training uses the ``bcos`` package's binary cross-entropy (targets 1/n_classes for the
    other classes; with a ``teacher``, the distillation loss). From ``pretrained`` weights the
    new classifier, imprinted with the centred class means of the pretrained features, learns
    at 5 × ``lr``. The default explanation is exact (``layer=`` explains a ResNet layer's
    input, :class:`~interpretable.estimators.methods.BcosResNetContributions`).

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import BcosResNetClassifier
    >>> X = np.random.default_rng(0).random((8, 16, 16, 3), dtype=np.float32)
    >>> arch = dict(block="basic", layers=[1, 1, 1, 1], width=4)
    >>> clf = BcosResNetClassifier(arch, max_epochs=1, random_state=0).fit(X, [0, 1] * 4)
    >>> explanation = clf.explain(X[:2])
    >>> explanation.values.shape  # (n, H, W): the contribution of every pixel
    (2, 16, 16)
    >>> bool(abs(explanation.completeness_error).max() < 1e-3)  # exact: sums to the logit
    True
    """

    saved_as = "BcosResNetClassifier"
    explainers = (BcosResNetContributions(), *(  # the pixel methods (a ResNet has no attention)
        e for e in VisionTransformerClassifier.explainers
        if e.name not in ("rollout", "final_attention", "gradsam")))
    _parameter_constraints = {
        **VisionTransformerClassifier._parameter_constraints, **TEACHER_CONSTRAINTS,
        "architecture": [None, str, dict],
        "pretrained": [None, str, os.PathLike],
        "finetune": [StrOptions({"all", "head"})],
        "logit_bias": [Interval(Real, None, None, closed="neither"), None],
        "warmup": [StrOptions({"auto"}), Interval(Real, 0, 1, closed="left")],
    }

    def __init__(self, architecture: str | dict[str, Any] | None = None, *,
                 pretrained: str | os.PathLike[str] | None = None, finetune: str = "all",
                 logit_bias: float | None = None,
                 teacher: BaseEstimator | str | os.PathLike[str] | None = None,
                 teacher_weight: float = 0.5, teacher_temperature: float = 2.0,
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
        self.teacher = teacher
        self.teacher_weight = teacher_weight
        self.teacher_temperature = teacher_temperature
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
                        classes: Sequence[Hashable] | None = None, download: bool = False,
                        **params: Any) -> BcosResNetClassifier:
        """Build a fitted classifier from a released B-cos v2 ResNet or a ``bcos`` checkpoint.

        ``predict`` gives ImageNet class names, ``explain`` exact contribution maps of the
        crops the model sees (``image_size="auto"``: its 224-px evaluation transform). The
        checkpoint goes in as a fit does: a refused one leaves the estimator as it was.

        Parameters
        ----------
        name_or_path : str or os.PathLike
            A released name (torch hub cache) or a ``.pth`` file in the ``bcos`` layout.
        classes : sequence or None, default=None
            The labels of the checkpoint's classifier rows, in row order (None: the 1,000
            ImageNet class names). ``classes_`` holds them sorted (the rows follow).
        download : bool, default=False
            Download a released model into the torch hub cache once (SHA-256 checked).
        **params
            Further parameters; ``pretrained`` is ``name_or_path`` (``fit`` fine-tunes it).

        Returns
        -------
        BcosResNetClassifier
            The fitted classifier.

        Examples
        --------
        >>> import numpy as np, torch
        >>> from interpretable import BcosResNetClassifier
        >>> from interpretable.nn.bcos import BcosResNet
        >>> from interpretable.nn.bcos import to_bcos_resnet_state_dict
        >>> tiny = BcosResNet(layers=(1, 1, 1, 1), width=4, num_classes=2)
        >>> torch.save(to_bcos_resnet_state_dict(tiny), "tiny_resnet.pth")
        >>> clf = BcosResNetClassifier.from_pretrained("tiny_resnet.pth", classes=["dog", "cat"],
        ...                                            image_size=32)
        >>> clf.classes_, clf.predict(np.zeros((1, 40, 40, 3), np.float32)).shape
        (array(['cat', 'dog'], dtype='<U3'), (1,))
        """
        estimator = cls(pretrained=name_or_path, **params)
        return fit_transactionally(
            estimator, lambda work, *_: work._adopt_checkpoint(classes, download),
            None, None, None)

    def _adopt_checkpoint(self, classes, download: bool) -> None:
        """Fitted state of the checkpoint ``pretrained`` as it is (its ImageNet classifier)."""
        self._validate_parameters()
        self._start_fit()
        crop = self._crop_size()
        side = crop or RELEASED_CROP
        self._resolved = resolve_architecture(self.architecture, self.pretrained)
        module, self.classes_ = imagenet_classifier(self.pretrained, side, classes, download)
        self.n_channels_, self.image_shape_, self.crop_size_ = 3, (side, side), crop
        self._prepare_fit()
        module.logit_bias = self._logit_bias()
        self.module_ = module.to(self.device_).eval()
        self.history_ = []

    # ------------------------------------------------------------------ architecture
    def _check_params(self) -> None:
        super()._check_params()
        if self.finetune != "all" and self.pretrained is None:
            raise ValueError(f"finetune={self.finetune!r} trains part of pretrained weights; "
                             "without pretrained= use finetune='all'.")

    def _crop_size(self):
        if self.image_size != "auto":
            return self.image_size
        released = self.pretrained is not None or isinstance(self.architecture, str)
        return RELEASED_CROP if released else None

    def _token_stride(self, channels):
        return 1, "any size"

    def _logit_bias(self) -> float:
        k = len(self.classes_)
        return float(self.logit_bias if self.logit_bias is not None
                     else -math.log(max(k - 1, 1)))

    def _build_module(self) -> nn.Module:
        return build_network(self.architecture_)

    def _criterion(self):
        return self._distilled(OneHotBCE("uniform"))

    def _encode(self, X):
        return encode_image(torch.as_tensor(X).permute(0, 3, 1, 2))  # channels-last memory

    # ------------------------------------------------------------------ fitting
    def _fit(self, X, y, sample_weight=None):
        self._resolved = dict(self.architecture_) if self._continues() else \
            resolve_architecture(self.architecture, self.pretrained)
        return super()._fit(X, y, sample_weight)

    def _prepare_fit(self) -> None:
        if self.pretrained is not None and self.n_channels_ != 3:
            raise ValueError(f"pretrained weights take RGB images; X has {self.n_channels_} "
                             "channel(s): pass image_size=... (grey images become RGB) or RGB "
                             "arrays.")
        bcosified = self.architecture_["bcosified"] if self._continues() else \
            self.pretrained is not None and pretrained_format(self.pretrained) != "bcos"
        sizes = network_sizes(self._resolved)
        self.architecture_ = {**sizes, "num_classes": len(self.classes_),
                              "in_channels": 2 * self.n_channels_,
                              "image_size": list(self.image_shape_),
                              "logit_bias": self._logit_bias(), "bcosified": bcosified}

    def _module_factory(self, X, y):
        """From ``pretrained`` weights: the backbone's, and a new classifier imprinted with the
        centred class means of the pretrained features of X."""
        source = None
        if self.pretrained is not None and not self._continues():
            source = read_pretrained(self.pretrained, self.image_shape_)
            features = pooled_features(source, X, self._encode, self.batch_size)

        def build():
            module = self._build_module()
            if source is not None:
                imprint_classifier(start_from(module, source), features, y)
            return set_trainable(module, self.finetune)

        return build

    def _phase(self, n_samples: int) -> dict:
        """The learning rates (the new classifier's on pretrained weights ×
        :data:`HEAD_LR_SCALE`) and their schedule (the teacher's probabilities: the mixin's)."""
        pretrained = self.pretrained is not None
        warmup = self.warmup if self.warmup != "auto" else AUTO_WARMUP * pretrained
        phase = {**super()._phase(n_samples), "lr": self.lr, "callbacks": self._callbacks(warmup)}
        if pretrained:
            phase["optimizer__param_groups"] = [(f"{head_name(self.architecture_)}.*",
                                                 {"lr": self.lr * HEAD_LR_SCALE})]
        return phase

    # ------------------------------------------------------------------ fitted state
    def _get_fitted_state(self) -> dict:
        return {**super()._get_fitted_state(), "architecture_": self.architecture_}

    def _set_fitted_state(self, state: dict) -> None:
        """The fitted architecture is checked on its own (the module is built from it)."""
        super()._set_fitted_state(state)
        self.architecture_ = check_fitted_architecture(
            state["architecture_"], {"num_classes": len(self.classes_),
                                     "in_channels": 2 * self.n_channels_,
                                     "image_size": list(self.image_shape_)})
