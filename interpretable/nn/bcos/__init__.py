"""B-cos networks: the layers and explanation mode (:class:`BcosLinear`, :class:`BcosConv2d`,
:func:`explanation_mode`), the seed paper's holistic ViT (:class:`BcosViT`), the B-cos authors'
simple ViT and ResNet of their released checkpoints (:class:`BcosSimpleViT`,
:class:`BcosResNet`, :data:`PRETRAINED`, :data:`PRETRAINED_RESNETS`) with their exact
explanations (:func:`vit_contributions`, :func:`resnet_contributions`), and B-cosification:
:func:`bcosify`, one call for BERT-lineage text encoders, conventional ViTs and torchvision
ResNets / DenseNets, or each recipe's two steps (:func:`bcosify_vit` then
:func:`vit_finetuning_start`; :func:`bcosify_resnet` / :func:`bcosify_densenet` then
:func:`cnn_finetuning_start`)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.nn.bcos._bcosify import (
    bcosify,
)
from interpretable.nn.bcos._bert import (
    BcosBertClassifier,
    PieceContributions,
)
from interpretable.nn.bcos._cnn_conversion import (
    RESNET_KEY as RESNET_KEY,
    bcosify_densenet,
    bcosify_resnet,
    cnn_finetuning_start,
    densenet_architecture,
    is_densenet_state as is_densenet_state,
    resnet_architecture,
)
from interpretable.nn.bcos._densenet import (
    BcosDenseNet,
)
from interpretable.nn.bcos._holistic_vit import (
    ATTENTION_PRIORS as ATTENTION_PRIORS,
    BcosViT,
)
from interpretable.nn.bcos._kernels import (
    bcos_implementation,
)
from interpretable.nn.bcos._layers import (
    BcosConv2d,
    BcosLinear,
    dynamic_weight,
    encode_image,
    explaining,
    explanation_mode,
    parameter,
)
from interpretable.nn.bcos._resnet import (
    BLOCKS as BLOCKS,
    RESNET_LAYERS,
    BcosBatchNorm2d,
    BcosResNet,
    ResNetContributions,
    resnet_contributions,
    spread_to_pixels,
)
from interpretable.nn.bcos._resnet_zoo import (
    PRETRAINED_RESNETS,
    PretrainedResNet,
    load_resnet_checkpoint,
    released_resnet as released_resnet,
    to_bcos_resnet_state_dict,
)
from interpretable.nn.bcos._simple_vit import (
    BcosSimpleViT,
    ViTContributions,
    token_stride as token_stride,
    vit_contributions,
)
from interpretable.nn.bcos._vit_conversion import (
    IMAGENET_MEAN as IMAGENET_MEAN,
    IMAGENET_STD as IMAGENET_STD,
    bcosify_vit,
    checkpoint_format as checkpoint_format,
    conventional_key_map as conventional_key_map,
    read_conventional as read_conventional,
    vit_finetuning_start,
)
from interpretable.nn.bcos._zoo import (
    PRETRAINED,
    PretrainedViT,
    bcos_key_map as bcos_key_map,
    build_model as build_model,
    checkpoint_path as checkpoint_path,
    download_checkpoint,
    load_checkpoint,
    read_state_dict as read_state_dict,
    to_bcos_state_dict,
)

__all__ = [
    "BcosLinear", "BcosConv2d", "bcos_implementation", "explanation_mode", "explaining",
    "dynamic_weight", "parameter", "encode_image", "bcosify", "PRETRAINED",
    "download_checkpoint", "load_checkpoint", "PretrainedViT", "to_bcos_state_dict",
    "PRETRAINED_RESNETS", "PretrainedResNet", "load_resnet_checkpoint",
    "to_bcos_resnet_state_dict", "BcosViT", "BcosSimpleViT", "vit_contributions",
    "ViTContributions", "BcosResNet", "BcosBatchNorm2d", "resnet_contributions",
    "ResNetContributions", "spread_to_pixels", "RESNET_LAYERS", "BcosDenseNet",
    "BcosBertClassifier", "PieceContributions", "bcosify_vit", "vit_finetuning_start",
    "bcosify_resnet", "cnn_finetuning_start", "resnet_architecture", "bcosify_densenet",
    "densenet_architecture",
]
