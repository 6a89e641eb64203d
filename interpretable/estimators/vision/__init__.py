"""Vision transformers, one estimator per network: the holistic B-cos ViT (:mod:`.bcos_vit`),
the B-cos v2 ViT, pretrained or B-cosified (:mod:`.bcos_simple_vit`, its checkpoints in
:mod:`.pretrained`), and the conventional ViT (:mod:`.vit`); the image-batch base they share
(:mod:`.base`), augmentation and the pixel-level explanation methods (:mod:`.explainers`)."""
from .base import SizedVisionTransformerClassifier, VisionTransformerClassifier
from .bcos_simple_vit import BcosSimpleViTClassifier
from .bcos_vit import BcosViTClassifier
from .vit import ViTClassifier

__all__ = ["BcosViTClassifier", "BcosSimpleViTClassifier", "ViTClassifier",
           "VisionTransformerClassifier", "SizedVisionTransformerClassifier"]
