"""B-cosify a conventional network you already have: one call for the text encoders of the BERT
lineage (``transformers``), for conventional Vision Transformers (torchvision, timm) and for
torchvision ResNets and DenseNets.

:func:`bcosify` returns the B-cos network at the start the recipes fine-tune from:

* a ``transformers`` BERT / RoBERTa / XLM-RoBERTa / CamemBERT / DistilBERT / ELECTRA model (base
  or with a task head) becomes a :class:`~interpretable.nn.bcos.BcosBertClassifier` with
  a new ``n_classes`` classifier (B-cos LM, Wang et al., TMLR 2025); its defaults here are the
  function-preserving point of B-cosification (``b=1``, the checkpoint's row norms as gains):
  the encoder then computes the original encoder with its biases removed;
* a torchvision or timm ``VisionTransformer`` (or its state dict) becomes a B-cosified
  :class:`~interpretable.nn.bcos.BcosSimpleViT` computing the original's logits
  (:func:`~interpretable.nn.bcos.bcosify_vit`; fine-tuning starts from
  :func:`~interpretable.nn.bcos.vit_finetuning_start`).
* a torchvision ``ResNet`` (or its state dict) becomes a B-cosified
  :class:`~interpretable.nn.bcos.BcosResNet` computing the original's logits
  (:func:`~interpretable.nn.bcos.bcosify_resnet`; fine-tuning starts from
  :func:`~interpretable.nn.bcos.cnn_finetuning_start`);
* a torchvision ``DenseNet`` (or its state dict) becomes a B-cosified
  :class:`~interpretable.nn.bcos.BcosDenseNet` computing the original's logits
  (:func:`~interpretable.nn.bcos.bcosify_densenet`; fine-tuning starts from the
  same :func:`~interpretable.nn.bcos.cnn_finetuning_start`).

Either network is dynamic linear: its explanations (``contributions``) are exact. The
estimators do the same from a checkpoint folder or file and fine-tune:
``BcosTextClassifier(checkpoint=folder)``, ``BcosSimpleViTClassifier(pretrained=file,
architecture=...)``.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from torch import nn

if TYPE_CHECKING:
    import torch

    from interpretable.nn.bcos._bert import EncoderConfig

__all__ = ["bcosify"]


def bcosify(model: nn.Module | Mapping[str, torch.Tensor], n_classes: int | None = None, *,
            config: EncoderConfig | Mapping[str, Any] | None = None,
            **options: Any) -> nn.Module:
    """Convert a conventional network into its B-cos network.

    Parameters
    ----------
    model : nn.Module or mapping of str to torch.Tensor
        A ``transformers`` encoder of the BERT lineage (or its state dict, with ``config``), or
        a torchvision / timm ``VisionTransformer``, a torchvision ``ResNet`` or ``DenseNet`` (or
        its state dict).
    n_classes : int or None, default=None
        Text: the classes of the new classifier (required). Vision: None (the network's own
        head is converted).
    config : transformers config, dict or None, default=None
        The config of a text encoder's state dict (a model object brings its own).
    **options
        Text: :class:`~interpretable.nn.bcos.BcosBertClassifier`'s arguments (defaults
        here ``b=1.0``, ``row_gains=True``); vision:
        :func:`~interpretable.nn.bcos.bcosify_vit`'s (``num_heads``, ``mean``,
        ``std``, ...), :func:`~interpretable.nn.bcos.bcosify_resnet`'s or
        :func:`~interpretable.nn.bcos.bcosify_densenet`'s.

    Returns
    -------
    nn.Module
        The B-cos network, its ``contributions`` exact.

    Raises
    ------
    TypeError
        If ``model`` is neither kind, or ``n_classes`` does not suit it.
    ValueError
        If the checkpoint does not convert (unsupported family or layout, missing or
        mis-shaped weights; the message names it).

    Examples
    --------
    >>> import torch, transformers
    >>> from interpretable.nn.bcos import bcosify
    >>> config = transformers.RobertaConfig(vocab_size=40, hidden_size=8, num_hidden_layers=1,
    ...                                     num_attention_heads=2, intermediate_size=16,
    ...                                     max_position_embeddings=20, pad_token_id=1)
    >>> roberta = transformers.AutoModel.from_config(config)  # yours: from_pretrained(folder)
    >>> model = bcosify(roberta, n_classes=2).eval()
    >>> tokens = torch.tensor([[0, 5, 6, 2]])
    >>> c = model.contributions(tokens, target=1)
    >>> bool(torch.allclose(c.pieces.sum(1) + c.position_type + c.bias, c.logits[:, 1]))
    True
    """
    if _is_text_encoder(model, config):
        if n_classes is None:
            raise TypeError("a text encoder needs n_classes, the size of its new classifier")
        from interpretable.nn.bcos._bert import BcosBertClassifier

        return BcosBertClassifier.from_bert(model, config, n_classes,
                                            **{"b": 1.0, "row_gains": True, **options})
    if isinstance(model, (nn.Module, Mapping)):
        if n_classes is not None or config is not None:
            raise TypeError("a ViT, ResNet or DenseNet keeps its own head: pass neither "
                            "n_classes nor config")
        from interpretable.nn.bcos._cnn_conversion import (
            bcosify_densenet,
            bcosify_resnet,
            is_densenet_state,
            is_resnet_state,
        )
        from interpretable.nn.bcos._vit_conversion import bcosify_vit

        state = model if isinstance(model, Mapping) else model.state_dict()
        convert = bcosify_resnet if is_resnet_state(state) else \
            bcosify_densenet if is_densenet_state(state) else bcosify_vit
        return convert(model, **options)
    raise TypeError("model must be a transformers text encoder of the BERT lineage, a "
                    "torchvision / timm VisionTransformer, a torchvision ResNet or DenseNet, or "
                    "the state dict of one, got "
                    f"{type(model).__name__}")


def _is_text_encoder(model, config) -> bool:
    """A ``transformers`` model (it has a config with a ``model_type``) or a state dict given
    with its config."""
    if isinstance(model, Mapping):
        return config is not None
    return isinstance(model, nn.Module) and hasattr(getattr(model, "config", None),
                                                    "model_type")
