"""The subclass hooks of :class:`~interpretable.estimators.vision.estimators.BcosViTClassifier`:
which network it trains (the holistic ViT of the paper or a B-cos v2 ViT, see
:mod:`.pretrained`), how it builds and encodes for it, how it starts from pretrained weights
(imprinted classifier, trainable layers, learning rates and warm-up) and the fitted
architecture it saves and checks on load.
"""
from __future__ import annotations

import inspect
import math

import torch
from torch import nn

from ...nn.bcos.holistic_vit import BcosViT
from ...nn.bcos.layers import encode_image
from ...nn.bcos.simple_vit import BcosSimpleViT
from ...nn.losses import OneHotBCE
from .pretrained import (
    HOLISTIC,
    HOLISTIC_PARAMS,
    RELEASED_CROP,
    check_backbone,
    imprint_classifier,
    read_pretrained,
    resolve_architecture,
    set_trainable,
    start_from,
    v2_token_stride,
)

__all__ = ["AUTO_WARMUP", "HEAD_LR_SCALE", "BcosViTHooks"]

#: ``warmup="auto"`` from pretrained weights (0 from scratch)
AUTO_WARMUP = 0.1
#: learning rate of the new classifier on pretrained weights relative to ``lr`` (both chosen
#: on the stand-in of benchmarks/bench_finetune.py)
HEAD_LR_SCALE = 5.0


def _same(a, b) -> bool:
    sequences = (list, tuple)
    return list(a) == list(b) if isinstance(a, sequences) and isinstance(b, sequences) \
        else a == b


class BcosViTHooks:
    """The estimator hooks of :class:`~.estimators.BcosViTClassifier`.

    Placed before :class:`~interpretable.estimators.vision.base.VisionTransformerClassifier`
    in the bases, it reads the classifier's parameters (``architecture``, ``pretrained``,
    ``finetune``, ``warmup``, the holistic sizes) and sets the fitted ``architecture_`` (None
    for the holistic ViT, else the dict the B-cos v2 ViT is built from).

    See Also
    --------
    interpretable.estimators.vision.pretrained : Released names, backbones and fine-tuning helpers.
    """

    # ------------------------------------------------------------------ architecture
    def _backbone(self) -> str | dict:
        """:data:`~.pretrained.HOLISTIC` or the v2 backbone dict (see :mod:`.pretrained`)."""
        return resolve_architecture(self.architecture, self.pretrained)

    def _check_params(self) -> None:
        super()._check_params()
        if self.patch_size % self.stem_stride:
            raise ValueError(f"stem_stride={self.stem_stride} must divide "
                             f"patch_size={self.patch_size}.")
        if self._backbone() != HOLISTIC:
            defaults = inspect.signature(type(self).__init__).parameters
            changed = [k for k in HOLISTIC_PARAMS
                       if not _same(getattr(self, k), defaults[k].default)]
            if changed:
                raise ValueError(f"{changed} apply to the holistic architecture only; a B-cos "
                                 "v2 architecture takes its size from architecture= (leave "
                                 "them at their defaults).")

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
                       self.depth, self.num_heads, self.mlp_ratio, tuple(self.stem_channels),
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
        self.architecture_ = {**backbone, "num_classes": len(self.classes_),
                              "in_channels": 2 * self.n_channels_,
                              "image_size": list(self.image_shape_),
                              "logit_bias": self.logit_bias}

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
            return torch.cat([module.linear_head.norm(module.forward_features(
                self._encode(X[i:i + self.batch_size]))[0].flatten(2).mean(-1))
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
            if any(architecture.get(k) != v for k, v in fitted.items()) or not (
                    bias is None or isinstance(bias, (int, float)) and math.isfinite(bias)):
                raise ValueError(f"architecture_ {architecture!r} does not match the fitted "
                                 f"classes, channels and image size {fitted}.")
            backbone = {k: v for k, v in architecture.items() if k not in (*fitted, "logit_bias")}
            architecture = {**check_backbone(backbone), **fitted, "logit_bias": bias}
        self.architecture_ = architecture
