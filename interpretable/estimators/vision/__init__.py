"""Image classifiers, one estimator per network: the holistic B-cos ViT (:mod:`.bcos_vit`),
the B-cos v2 ViT, pretrained or B-cosified (:mod:`.bcos_simple_vit`, its checkpoints in
:mod:`.pretrained`), the conventional ViT (:mod:`.vit`) and the B-cos ResNet, v2 or B-cosified
(:mod:`.bcos_resnet`, its checkpoints in :mod:`.resnet_pretrained`, its exact explanation in
:mod:`.resnet_explainers`), and any torchvision or timm classifier as it is
(:mod:`.library_model`, its weights in :mod:`.library_pretrained`, its own methods in
:mod:`.library_explainers`); the image-batch base they share (:mod:`.base`), augmentation and
the pixel-level explanation methods (:mod:`.explainers`)."""
from interpretable.estimators.vision.base import (
           SizedVisionTransformerClassifier,
           VisionTransformerClassifier,
)
from interpretable.estimators.vision.bcos_resnet import BcosResNetClassifier
from interpretable.estimators.vision.bcos_simple_vit import BcosSimpleViTClassifier
from interpretable.estimators.vision.bcos_vit import BcosViTClassifier
from interpretable.estimators.vision.library_model import ImageClassifier
from interpretable.estimators.vision.vit import ViTClassifier

__all__ = ["BcosViTClassifier", "BcosSimpleViTClassifier", "BcosResNetClassifier",
           "ImageClassifier", "ViTClassifier", "VisionTransformerClassifier",
           "SizedVisionTransformerClassifier"]
