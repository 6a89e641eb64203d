"""Vision transformers: the B-cos ViT and the conventional ViT (:mod:`.estimators`), the
image-batch base they share (:mod:`.base`), pretrained B-cos checkpoints and fine-tuning
(:mod:`.pretrained`), augmentation and the pixel-level explanation methods
(:mod:`.explainers`)."""
from .base import VisionTransformerClassifier
from .estimators import BcosViTClassifier, ViTClassifier

__all__ = ["BcosViTClassifier", "ViTClassifier", "VisionTransformerClassifier"]
