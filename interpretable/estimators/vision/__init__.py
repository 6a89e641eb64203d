"""Vision transformers: the B-cos ViT and the conventional ViT, the image-batch base
(:mod:`.base`), the B-cos ViT's training hooks (:mod:`.hooks`), pretrained B-cos checkpoints
(:mod:`.pretrained`), augmentation and the pixel-level explanation methods
(:mod:`.explainers`)."""
from .base import VisionTransformerClassifier
from .estimators import BcosViTClassifier, ViTClassifier

__all__ = ["BcosViTClassifier", "ViTClassifier", "VisionTransformerClassifier"]
