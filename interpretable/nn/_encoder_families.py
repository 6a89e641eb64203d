"""The encoder families of the BERT lineage that the text models convert and fine-tune: BERT,
RoBERTa / XLM-RoBERTa / CamemBERT, DistilBERT and ELECTRA, as ``transformers`` stores them.

Each :class:`EncoderFamily` says how its ``config.json`` names the encoder's sizes and where
its checkpoint keeps each weight. The package reads every family through this one table:

* :func:`encoder_options` turns a config (the dict of a ``config.json``) into the structure
  the networks take (:data:`OPTION_TYPES`: ``vocab_size``, ``hidden_size``, ``num_layers``,
  ...), checked, with a ``ValueError`` naming what is missing, mistyped or not convertible;
* :func:`checkpoint_key` gives the key, in the family's base-model state dict, of each
  parameter of :class:`~interpretable.nn.bcos.BcosBertClassifier`;
* :func:`usable_positions` the tokens per text the position table allows (RoBERTa's
  positions start after the pad id).

The families differ in little: DistilBERT has no token types, other key names and no pooler;
RoBERTa-style models count positions from ``pad_token_id + 1``; ELECTRA's embeddings may be
narrower than its hidden states (``embedding_size``, then a linear projection).
"""
from __future__ import annotations

from typing import NamedTuple

__all__ = ["EncoderFamily", "encoder_options"]

#: the structure every family's config becomes, with its types (the networks' arguments)
OPTION_TYPES = {"vocab_size": int, "hidden_size": int, "embedding_size": int, "num_layers": int,
                "num_heads": int, "intermediate_size": int, "max_positions": int,
                "type_vocab_size": int, "layer_norm_eps": float, "pad_token_id": int,
                "dropout": float, "attention_dropout": float, "position_offset": int}

# B-cos network parameter (one layer) -> key inside a BERT-style layer
_BERT_LAYER = {
    "attention.query.weight": "attention.self.query.weight",
    "attention.key.weight": "attention.self.key.weight",
    "attention.query.bias": "attention.self.query.bias",
    "attention.key.bias": "attention.self.key.bias",
    "attention.value.weight": "attention.self.value.weight",
    "attention.output.weight": "attention.output.dense.weight",
    "attention.norm.weight": "attention.output.LayerNorm.weight",
    "feed_forward.gate_bias": "intermediate.dense.bias",
    "feed_forward.intermediate.weight": "intermediate.dense.weight",
    "feed_forward.output.weight": "output.dense.weight",
    "feed_forward.norm.weight": "output.LayerNorm.weight",
}
_BERT_TOP = {
    "word_embeddings.weight": "embeddings.word_embeddings.weight",
    "position_embeddings.weight": "embeddings.position_embeddings.weight",
    "token_type_embeddings.weight": "embeddings.token_type_embeddings.weight",
    "embedding_norm.weight": "embeddings.LayerNorm.weight",
    "embedding_projection.weight": "embeddings_project.weight",
    "pooler.weight": "pooler.dense.weight",
}
_BERT_FIELDS = {"vocab_size": "vocab_size", "hidden_size": "hidden_size",
                "num_layers": "num_hidden_layers", "num_heads": "num_attention_heads",
                "intermediate_size": "intermediate_size",
                "max_positions": "max_position_embeddings",
                "type_vocab_size": "type_vocab_size", "layer_norm_eps": "layer_norm_eps",
                "pad_token_id": "pad_token_id", "dropout": "hidden_dropout_prob",
                "attention_dropout": "attention_probs_dropout_prob"}


class EncoderFamily(NamedTuple):
    """How one family's config and checkpoint name the encoder.

    model_types: the ``model_type`` values of its configs; fields: option -> config field;
    defaults: config field -> value when the config omits it; required: config field ->
    the only value that converts (e.g. ``hidden_act="gelu"``); layers: the prefix of layer
    ``i`` (``"encoder.layer.{}."``); layer_keys / top_keys: parameter -> checkpoint key;
    offset_positions: positions start at ``pad_token_id + 1`` (RoBERTa); pooler: the base
    model has a pooler (``add_pooling_layer``).
    """
    model_types: tuple
    fields: dict
    defaults: dict
    required: dict
    layers: str
    layer_keys: dict
    top_keys: dict
    offset_positions: bool = False
    pooler: bool = True


_BERT = EncoderFamily(
    model_types=("bert",), fields=_BERT_FIELDS,
    defaults={"pad_token_id": 0, "hidden_act": "gelu", "position_embedding_type": "absolute"},
    required={"hidden_act": "gelu", "position_embedding_type": "absolute"},
    layers="encoder.layer.{}.", layer_keys=_BERT_LAYER, top_keys=_BERT_TOP)

#: the supported families, by name
FAMILIES = {
    "bert": _BERT,
    "roberta": _BERT._replace(model_types=("roberta", "xlm-roberta", "camembert"),
                              defaults={**_BERT.defaults, "pad_token_id": 1},
                              offset_positions=True),
    "electra": _BERT._replace(model_types=("electra",),
                              fields={**_BERT_FIELDS, "embedding_size": "embedding_size"},
                              pooler=False),
    "distilbert": EncoderFamily(
        model_types=("distilbert",),
        fields={"vocab_size": "vocab_size", "hidden_size": "dim", "num_layers": "n_layers",
                "num_heads": "n_heads", "intermediate_size": "hidden_dim",
                "max_positions": "max_position_embeddings", "pad_token_id": "pad_token_id",
                "dropout": "dropout", "attention_dropout": "attention_dropout"},
        defaults={"pad_token_id": 0, "activation": "gelu", "sinusoidal_pos_embds": False},
        required={"activation": "gelu"},
        layers="transformer.layer.{}.",
        layer_keys={
            "attention.query.weight": "attention.q_lin.weight",
            "attention.key.weight": "attention.k_lin.weight",
            "attention.query.bias": "attention.q_lin.bias",
            "attention.key.bias": "attention.k_lin.bias",
            "attention.value.weight": "attention.v_lin.weight",
            "attention.output.weight": "attention.out_lin.weight",
            "attention.norm.weight": "sa_layer_norm.weight",
            "feed_forward.gate_bias": "ffn.lin1.bias",
            "feed_forward.intermediate.weight": "ffn.lin1.weight",
            "feed_forward.output.weight": "ffn.lin2.weight",
            "feed_forward.norm.weight": "output_layer_norm.weight"},
        top_keys={k: v for k, v in _BERT_TOP.items()
                  if k in ("word_embeddings.weight", "position_embeddings.weight",
                           "embedding_norm.weight")},
        pooler=False),
}
#: DistilBERT's LayerNorms: transformers fixes their epsilon (the config has no field)
_FIXED = {"distilbert": {"layer_norm_eps": 1e-12, "type_vocab_size": 0}}


def encoder_family(config: dict) -> str:
    """The name (a key of :data:`FAMILIES`) of the family of a config dict: by its
    ``model_type`` ("bert" when it has none); ValueError listing the supported ones."""
    if not isinstance(config, dict):
        raise ValueError(f"an encoder config must be a dict, got {type(config).__name__}.")
    model_type = config.get("model_type", "bert")
    for name, family in FAMILIES.items():
        if model_type in family.model_types:
            return name
    supported = sorted(t for family in FAMILIES.values() for t in family.model_types)
    raise ValueError(f"cannot convert a {model_type!r} encoder: the supported model types "
                     f"are {supported}.")


def encoder_options(config: dict) -> dict:
    """The structure of the encoder a config dict (a ``config.json``) describes, as
    :data:`OPTION_TYPES` (``embedding_size`` defaults to ``hidden_size``; ``position_offset``
    is where position 0 lies in the table). ValueError naming a missing, mistyped or
    non-convertible field."""
    name = encoder_family(config)
    family = FAMILIES[name]
    fields = {**family.defaults, **config}
    for field, value in family.required.items():
        if fields[field] != value:
            raise ValueError(f"only {field}={value!r} converts (GELU is x·Φ(x), positions "
                             f"absolute), the {name} config has {field}={fields[field]!r}.")
    missing = sorted(field for field in family.fields.values() if field not in fields)
    if missing:
        raise ValueError(f"the {name} config lacks {missing}.")
    options = {**_FIXED.get(name, {}), **{k: fields[v] for k, v in family.fields.items()}}
    options.setdefault("embedding_size", options["hidden_size"])
    for option, kind in OPTION_TYPES.items():
        if option == "position_offset":
            continue
        value = options[option]
        if isinstance(value, bool) or not isinstance(value, (int, float) if kind is float
                                                     else kind):
            field = family.fields.get(option, option)
            raise ValueError(f"{name} config field {field!r} must be {kind.__name__}, got "
                             f"{value!r}.")
        if kind is int and value < (0 if option in ("pad_token_id", "type_vocab_size")
                                    else 1):
            raise ValueError(f"{name} config field {family.fields.get(option, option)!r} "
                             f"must be positive, got {value}.")
    if options["hidden_size"] % options["num_heads"]:
        raise ValueError(f"hidden_size={options['hidden_size']} must be divisible by the "
                         f"{options['num_heads']} attention heads.")
    options["position_offset"] = options["pad_token_id"] + 1 if family.offset_positions else 0
    if options["position_offset"] >= options["max_positions"]:
        raise ValueError(f"the {name} config leaves no positions: max_position_embeddings="
                         f"{options['max_positions']}, pad_token_id={options['pad_token_id']}.")
    return options


def usable_positions(config: dict) -> int:
    """Tokens per text (special tokens included) the position table of a config allows."""
    options = encoder_options(config)
    return options["max_positions"] - options["position_offset"]


def checkpoint_key(family: str, name: str) -> str | None:
    """The key, in a base model's state dict of ``family``, that the parameter ``name`` of
    :class:`~interpretable.nn.bcos.BcosBertClassifier` is converted from (None: a
    parameter the checkpoint does not have, e.g. the new classifier)."""
    spec = FAMILIES[family]
    if name.startswith("layers."):
        _, index, rest = name.split(".", 2)
        return spec.layers.format(index) + spec.layer_keys[rest]
    return spec.top_keys.get(name)
