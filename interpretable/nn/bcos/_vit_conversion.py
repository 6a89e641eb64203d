"""B-cosification of conventional Vision Transformers (Arya, Rao, Böhle & Schiele,
"B-cosification: Transforming Deep Neural Networks to be Inherently Interpretable", NeurIPS
2024): a torchvision or timm ``VisionTransformer`` becomes a
:class:`~interpretable.nn.bcos.BcosSimpleViT` with ``bcosified=True``.

The recipe, in two steps:

1. :func:`bcosify_vit`, the function-preserving start. Every linear layer becomes a B-cos
   layer with B = 1, its weights as they are and its bias kept (a plain linear layer), GELU
   becomes ``x · Φ(x)`` with the gate a dynamic weight, LayerNorm keeps its affine parameters.
   The input is the B-cos encoding ``[x, 1 - x]`` of images in [0, 1] instead of
   ``(x - mean) / std``: the patch embedding's weights ``W`` (D, 3, p, p) become
   ``[W / 2σ, -W / 2σ]`` (D, 6, p, p) and its bias gains ``Σ W (1/2 - μ) / σ``, so the
   converted network computes the original's logits exactly (up to rounding).
2. :func:`vit_finetuning_start`, the start of fine-tuning: every bias removed (the normalisation's
   mean, folded into the first bias, goes with it) and B raised to 2 at once, the choice of the
   paper's ViT models (``bcos/experiments/ImageNet/vit_bcosification``: ``fix_b``, no
   ``use_bias``), which the authors' code trains with the (uniform off-label) binary
   cross-entropy and a fixed logit bias. The network is then dynamic linear without any
   constant term but the class token, the positional embedding and the logit bias.

State dicts are told apart by :func:`checkpoint_format` and checked key by key, shape by
shape, against the architecture built on the meta device before any memory is allocated.
"""
from __future__ import annotations

import copy
import math
import re
from collections.abc import Mapping, Sequence

import torch
from torch import nn

from interpretable.nn.bcos._layers import BcosLinear
from interpretable.nn.bcos._simple_vit import BcosLayerNorm, BcosSimpleViT
from interpretable.nn.bcos._zoo import HEAD_KEY, check_state

__all__ = ["bcosify_vit", "vit_finetuning_start"]

#: the state-dict layouts :func:`checkpoint_format` tells apart, with a key each one has
FORMATS = {"bcos": HEAD_KEY, "torchvision": "conv_proj.weight",
           "timm": "patch_embed.proj.weight"}
#: the input normalisation of torchvision's ImageNet weights
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_BLOCK = {"torchvision": re.compile(r"encoder\.layers\.encoder_layer_(\d+)\."),
          "timm": re.compile(r"blocks\.(\d+)\.")}
#: per block: our module, torchvision's, timm's
_BLOCK_MODULES = (("attn.norm", "ln_1", "norm1"),
                  ("attn.to_out", "self_attention.out_proj", "attn.proj"),
                  ("ff.net.norm", "ln_2", "norm2"),
                  ("ff.net.linear1", "mlp.0", "mlp.fc1"),
                  ("ff.net.linear2", "mlp.3", "mlp.fc2"))


def checkpoint_format(state_dict: Mapping[str, torch.Tensor]) -> str:
    """The layout of a state dict: ``"bcos"`` (a B-cos v2 release checkpoint),
    ``"torchvision"`` or ``"timm"`` (a conventional ``VisionTransformer``); ValueError for
    anything else."""
    for name, key in FORMATS.items():
        if key in state_dict:
            return name
    raise ValueError("cannot tell the format of the state dict: it has none of the keys "
                     f"{sorted(FORMATS.values())} (B-cos release, torchvision and timm "
                     "VisionTransformer layouts)")


def conventional_key_map(fmt: str, depth: int) -> dict[str, str]:
    """Our state-dict key (a B-cosified :class:`BcosSimpleViT` of ``depth`` blocks) -> the
    key of the same tensor in a ``fmt`` (``"torchvision"`` or ``"timm"``) state dict."""
    tv = fmt == "torchvision"
    keys = {"class_token": "class_token" if tv else "cls_token",
            "pos_embedding": "encoder.pos_embedding" if tv else "pos_embed"}
    modules = {"to_patch_embedding.linear": "conv_proj" if tv else "patch_embed.proj",
               "linear_head.norm": "encoder.ln" if tv else "norm",
               "linear_head.linear": "heads.head" if tv else "head"}
    for i in range(depth):
        ours, theirs = f"transformer.encoder_{i}.", \
            f"encoder.layers.encoder_layer_{i}." if tv else f"blocks.{i}."
        for module, tv_name, timm_name in _BLOCK_MODULES:
            modules[ours + module] = theirs + (tv_name if tv else timm_name)
        if tv:  # nn.MultiheadAttention's packed q/k/v projection
            keys[ours + "attn.to_qkv.weight"] = theirs + "self_attention.in_proj_weight"
            keys[ours + "attn.to_qkv.bias"] = theirs + "self_attention.in_proj_bias"
        else:
            modules[ours + "attn.to_qkv"] = theirs + "attn.qkv"
    for ours, theirs in modules.items():
        keys[ours + ".weight"], keys[ours + ".bias"] = theirs + ".weight", theirs + ".bias"
    return keys


def _shape(state: Mapping[str, torch.Tensor], key: str, ndim: int) -> tuple[int, ...]:
    """The shape of ``state[key]``, which must be an ``ndim``-d tensor."""
    if key not in state:
        raise ValueError(f"the state dict does not fit a VisionTransformer: missing keys: {key}")
    shape = tuple(state[key].shape)
    if len(shape) != ndim:
        raise ValueError(f"the state dict does not fit a VisionTransformer: {key} has shape "
                         f"{shape}, expected {ndim} dimensions")
    return shape


def _architecture(state: Mapping[str, torch.Tensor], fmt: str,
                  given: Mapping[str, object]) -> dict:
    """The :class:`BcosSimpleViT` arguments of a conventional ViT: ``given`` ones, the others
    read off the shapes of the state dict (the number of heads must be given)."""
    keys = conventional_key_map(fmt, 1)
    dim, channels, patch, _ = _shape(state, keys["to_patch_embedding.linear.weight"], 4)
    if channels != 3:
        raise ValueError(f"the patch embedding takes {channels} channels; B-cosification "
                         "takes RGB models (3)")
    depth = 1 + max((int(m.group(1)) for k in state if (m := _BLOCK[fmt].match(k))),
                    default=-1)
    positions = _shape(state, keys["pos_embedding"], 3)[1] - 1
    side = math.isqrt(positions)
    found = dict(dim=dim, depth=depth, heads=None, patch_size=patch,
                 mlp_dim=_shape(state, keys["transformer.encoder_0.ff.net.linear1.weight"], 2)[0],
                 num_classes=_shape(state, keys["linear_head.linear.weight"], 2)[0],
                 image_size=side * patch)
    architecture = {**found, **given}
    if architecture["heads"] is None:
        raise ValueError("a state dict does not say its number of attention heads: pass "
                         "them (num_heads=, or architecture={'heads': ...}) or the model object")
    if "image_size" not in given and side * side != positions:
        raise ValueError(f"{positions} positions are not a square token grid: pass the image "
                         "size in architecture=")
    return architecture


#: keys of timm / torchvision variants the conversion does not compute, with their names
_VARIANT_KEYS = {"reg_token": "register tokens (reg_tokens)", ".ls1.": "layer scale (init_values)",
                 ".q_norm.": "q/k norms (qk_norm)", "fc_norm.": "average pooling (fc_norm)",
                 "norm_pre.": "a pre-norm (pre_norm)", "attn_pool.": "attention pooling",
                 "heads.pre_logits.": "a pre-logits layer (representation_size)"}


def _variants(model: nn.Module | None, state: Mapping[str, torch.Tensor], fmt: str
              ) -> list[str]:
    """What a ``fmt`` model (object or None) or its state dict has beyond the plain ViT."""
    found = {name for key in state for part, name in _VARIANT_KEYS.items()
             if key.startswith(part) or part.startswith(".") and part in key}
    if fmt == "timm" and "cls_token" not in state:
        found.add("no class token (class_token=False)")
    if model is not None and getattr(model, "global_pool", "token") != "token":
        found.add(f"global_pool={model.global_pool!r} pooling")
    if getattr(model, "no_embed_class", False):
        found.add("positions without the class token's (no_embed_class)")
    return sorted(found)


def read_conventional(model_or_state_dict: nn.Module | Mapping[str, torch.Tensor], *,
                      architecture: Mapping[str, object] | None = None
                      ) -> tuple[str, Mapping[str, torch.Tensor], dict]:
    """The layout, state dict and sizes of a conventional ViT.

    Parameters
    ----------
    model_or_state_dict : nn.Module or mapping of str to torch.Tensor
        A torchvision or timm ``VisionTransformer`` or its state dict.
    architecture : mapping or None, default=None
        Sizes it must have (``heads``, needed for a state dict; others are read off the
        shapes: ``dim``, ``depth``, ``mlp_dim``, ``patch_size``, ``num_classes``,
        ``image_size``).

    Returns
    -------
    layout : {"torchvision", "timm"}
    state_dict : mapping of str to torch.Tensor
    sizes : dict
        The :class:`BcosSimpleViT` sizes above.

    Raises
    ------
    ValueError
        For a B-cos release, an unknown layout, a variant it does not compute (register
        tokens, layer scale, q/k norms, no class token, other pooling: named), or a missing
        number of heads.
    """
    state, model = model_or_state_dict, None
    given = dict(architecture or {})
    if isinstance(state, nn.Module):
        model, state = state, state.state_dict()
        given.setdefault("heads", _num_heads(model))
    fmt = checkpoint_format(state)
    if fmt == "bcos":
        raise ValueError("this is a B-cos release checkpoint, already B-cos: load it with "
                         "interpretable.nn.bcos.load_checkpoint")
    variants = _variants(model, state, fmt)
    if variants:
        raise ValueError(f"the {fmt} VisionTransformer has {', '.join(variants)}: only the "
                         "plain ViT (class token, learned positions, pre-norm blocks, head on "
                         "the class token) is supported")
    return fmt, state, _architecture(state, fmt, given)


def _num_heads(model: nn.Module) -> int:
    """The attention heads of a torchvision or timm ``VisionTransformer`` object."""
    if hasattr(model, "encoder"):
        return model.encoder.layers[0].self_attention.num_heads
    return model.blocks[0].attn.num_heads


def _converted(ours: str, tensor: torch.Tensor, shape: torch.Size, patch_weight: torch.Tensor,
               mean: torch.Tensor, std: torch.Tensor) -> torch.Tensor:
    """A conventional ViT's tensor as our parameter ``ours`` of ``shape``: the patch
    embedding (weight ``patch_weight`` (D, 3, p, p)) takes ``[x, 1 - x]`` instead of
    ``(x - mean) / std`` (its bias takes the difference; float64 arithmetic), the class token
    and positions lose their batch dimension."""
    w = patch_weight.double() / std[:, None, None]
    if ours == "to_patch_embedding.linear.weight":
        return torch.cat([w / 2, -w / 2], 1).permute(0, 2, 3, 1).reshape(shape)
    if ours == "to_patch_embedding.linear.bias":
        return tensor.double() + (w * (0.5 - mean)[:, None, None]).sum((1, 2, 3))
    return tensor.reshape(shape)


def bcosify_vit(model_or_state_dict: nn.Module | Mapping[str, torch.Tensor], *,
                num_heads: int | None = None, architecture: Mapping[str, object] | None = None,
                mean: Sequence[float] = IMAGENET_MEAN, std: Sequence[float] = IMAGENET_STD,
                logit_bias: float = 0.0) -> BcosSimpleViT:
    """Convert a conventional ViT into a B-cosified :class:`BcosSimpleViT` with its function.

    Parameters
    ----------
    model_or_state_dict : nn.Module or mapping of str to torch.Tensor
        A torchvision ``VisionTransformer`` or timm ``VisionTransformer`` (class-token pooling,
        no register tokens, layer scale or q/k norms), or the state dict of one.
    num_heads : int or None, default=None
        Attention heads per block (None: the model object's or ``architecture``'s; a state dict
        needs one of them).
    architecture : mapping or None, default=None
        :class:`BcosSimpleViT` sizes the checkpoint must have (``dim``, ``depth``, ``heads``,
        ``mlp_dim``, ``patch_size``, ``image_size``, ``num_classes``; missing ones are read off
        the state dict, the image size from a square grid of learned positions).
    mean, std : sequence of 3 floats, default=ImageNet's
        The input normalisation the original model was trained with (torchvision's ImageNet
        weights: the defaults).
    logit_bias : float, default=0.0
        The converted model's fixed logit bias (0: the original's logits).

    Returns
    -------
    BcosSimpleViT
        In eval mode, in the checkpoint's floating dtype on CPU, with B = 1 and every bias:
        ``model(encode_image(x)) == original((x - mean) / std)`` for images x in [0, 1]
        (B, 3, H, W).

    Raises
    ------
    ValueError
        For a B-cos release or unknown layout, missing, unexpected or mis-shaped keys (named),
        non-floating or non-finite tensors, or a missing number of heads.
    """
    given = dict(architecture or {})
    if num_heads is not None:
        given.setdefault("heads", num_heads)
    fmt, state, kwargs = read_conventional(model_or_state_dict, architecture=given)
    with torch.device("meta"):
        model = BcosSimpleViT(**kwargs, in_channels=6, logit_bias=logit_bias, bcosified=True,
                              b=1.0, bias=True)
    key_map = conventional_key_map(fmt, kwargs["depth"])
    expected = {"class_token": (1, 1, kwargs["dim"]),
                "pos_embedding": (1, *model.pos_embedding.shape),
                "to_patch_embedding.linear.weight": (kwargs["dim"], 3, kwargs["patch_size"],
                                                     kwargs["patch_size"])}
    meta_state = model.state_dict()
    check_state(state, {theirs: torch.Size(expected.get(ours, meta_state[ours].shape))
                        for ours, theirs in key_map.items()}, f"the {fmt} state dict")
    patch_weight = state[key_map["to_patch_embedding.linear.weight"]]
    mean, std = (torch.as_tensor(v, dtype=torch.float64) for v in (mean, std))
    converted = {ours: _converted(ours, state[theirs], meta_state[ours].shape, patch_weight,
                                  mean, std)
                 for ours, theirs in key_map.items()}
    model.to_empty(device="cpu").to(patch_weight.dtype).load_state_dict(converted)
    return model.eval()


def vit_finetuning_start(model: BcosSimpleViT, b: float = 2.0) -> BcosSimpleViT:
    """A copy of a B-cosified ``model`` without biases and with exponent ``b``: the start of
    the recipe's fine-tuning (B = 2 at once, every bias removed). ``model`` is unchanged."""
    start = copy.deepcopy(model)
    for module in start.modules():
        if isinstance(module, (BcosLinear, BcosLayerNorm, nn.Linear)):
            module.bias = None
        if isinstance(module, BcosLinear):
            module.b = float(b)
    return start
