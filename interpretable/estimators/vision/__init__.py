"""Image classifiers, one estimator per network: the holistic B-cos ViT, the B-cos v2 ViT
(pretrained or B-cosified), the conventional ViT, the B-cos ResNet (v2 or B-cosified) and any
torchvision or timm classifier as it is, over the image-batch bases they share
(:class:`VisionTransformerClassifier`, :class:`SizedVisionTransformerClassifier`,
:class:`EncodedImages`)."""

from interpretable.estimators.vision._base import (
    INFERENCE_MEMORY,
    EncodedImages,
    SizedVisionTransformerClassifier,
    VisionTransformerClassifier,
)
from interpretable.estimators.vision._bcos_resnet import (
    BcosResNetClassifier,
)
from interpretable.estimators.vision._bcos_simple_vit import (
    BcosSimpleViTClassifier,
)
from interpretable.estimators.vision._bcos_vit import (
    BcosViTClassifier,
)
from interpretable.estimators.vision._library_model import (
    ImageClassifier,
)
from interpretable.estimators.vision._vit import (
    ViTClassifier,
)

__all__ = [
    "BcosViTClassifier", "BcosSimpleViTClassifier", "BcosResNetClassifier", "ImageClassifier",
    "ViTClassifier", "VisionTransformerClassifier", "SizedVisionTransformerClassifier",
    "EncodedImages", "INFERENCE_MEMORY",
]
