"""B-cos networks: the layers and explanation mode (:mod:`.layers`, fused kernels in
:mod:`.kernels`), the seed paper's holistic ViT (:mod:`.holistic_vit`), the B-cos authors'
simple ViT of their released checkpoints (:mod:`.simple_vit`, architectures in :mod:`.zoo`),
B-cosified conventional ViTs (:mod:`.vit_conversion`), B-cosified BERT-lineage encoders
(:mod:`.bert`, :mod:`.bert_layers`) and :func:`~.bcosify.bcosify`, one call for either."""
from interpretable.nn.bcos.bcosify import bcosify
from interpretable.nn.bcos.layers import (
           BcosConv2d,
           BcosLinear,
           bcos_implementation,
           dynamic_weight,
           encode_image,
           explaining,
           explanation_mode,
           parameter,
)

__all__ = ["BcosConv2d", "BcosLinear", "bcos_implementation", "bcosify", "dynamic_weight",
           "encode_image", "explaining", "explanation_mode", "parameter"]
