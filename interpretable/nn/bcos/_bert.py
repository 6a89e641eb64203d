"""B-cos BERT classifier (B-cos LM, Wang et al., TMLR 2025): a pretrained BERT-family encoder
converted into a dynamic-linear network, then fine-tuned on the task.

The conversion, as in the authors' code:

* every bias is removed (Q/K/V, dense layers, LayerNorms, pooler, classifier; ``gate_biases``
  keeps those of Q, K and the GELU gate, which only shape dynamic weights);
* the attention output, intermediate and output dense layers, the pooler and the classifier
  are B-cos linear layers: unit-norm rows, exponent B, no MaxOut, no scale factor (γ = 1);
* Q, K and V stay plain (bias-free) linear maps; the softmax attention probabilities are a
  dynamic weight;
* GELU becomes ``x·Φ(x)`` with the gate ``Φ(x)`` a dynamic weight;
* every LayerNorm, the embedding one included, is bias-free with its scale ``1/σ`` a dynamic
  weight (the mean subtraction is linear and stays in ``W(x)``);
* the pooler (the ``[CLS]`` state, or the mean over real tokens) loses its tanh.

Inside :func:`~interpretable.nn.bcos.explanation_mode` the dynamic weights are constants, so
the logits are exactly linear in the summed embeddings ``s = word + position + token type``:
``logit = Σ_t W(x)_t·s_t + logit_bias``. One backward pass gives ``W(x)``;
:meth:`BcosBertClassifier.contributions` splits ``W(x)·s`` into the word-piece terms
``W(x)_t·word_t`` and one position/type term ``Σ_t W(x)_t·(position_t + type_t)``.

The embedding LayerNorm: the authors attribute at its output ``e_t = LN(s_t)`` (Input×Gradient
on ``e``), where the word and the position/type parts are already mixed. Here it is inside
``W(x)``: bias-free, with ``1/σ_t`` a constant, ``LN(s_t) = γ ⊙ (s_t - mean(s_t)) / σ_t`` is
linear in ``s_t`` token by token, so ``Σ_e ∂logit/∂e_t ⊙ e_t = W(x)_t·word_t +
W(x)_t·(position_t + type_t)`` exactly: the same per-token totals, split into the two parts.
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from numbers import Real
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.nn._encoder_families import checkpoint_key, encoder_family, encoder_options
from interpretable.nn._losses import explained_logits
from interpretable.nn._tensors import in_parameter_precision
from interpretable.nn.bcos._bert_layers import (
    BcosBertLayer,
    BertBcosLayerNorm,
    BertBcosLinear,
    unscaled_bcos_linear,
)
from interpretable.nn.bcos._layers import explanation_mode, parameter

if TYPE_CHECKING:
    import os

    class EncoderConfig(Protocol):
        """A ``transformers`` config (``PretrainedConfig``): its fields as a dict."""

        def to_dict(self) -> dict[str, Any]: ...

__all__ = ["BcosBertClassifier", "PieceContributions"]

#: how the sequence becomes one vector: the ``[CLS]`` state (the authors') or the mean
POOLINGS = ("cls", "mean")

class PieceContributions(NamedTuple):
    """Exact split of the explained logits:
    ``pieces.sum(1) + position_type + bias == logits.gather(1, target[:, None])[:, 0]``
    (with a ``contrast``: ``explained_logits(logits, target, contrast)``).

    pieces (B, T): ``Σ_e W(x)[t, e] · word_embedding[t, e]`` per word piece (0 on padding);
    position_type (B,): ``Σ_t Σ_e W(x)[t, e] · (position + token type embedding)[t, e]``;
    bias (B,): the fixed logit bias (its share of the contrast); logits (B, C): the logits of
    the same forward pass;
    target (B,): the explained classes.
    """
    pieces: torch.Tensor
    position_type: torch.Tensor
    bias: torch.Tensor
    logits: torch.Tensor
    target: torch.Tensor


def _check_exponent(value, name: str) -> float:
    """A B-cos exponent: a real number >= 1."""
    if not isinstance(value, Real) or isinstance(value, bool):
        raise TypeError(f"{name} must be a real number, got {value!r}")
    if value < 1:
        raise ValueError(f"{name} (a B-cos exponent) must be >= 1, got {value!r}")
    return float(value)


class BcosBertClassifier(nn.Module):
    """B-cos BERT sequence classifier: ``forward(tokens (B, T), lengths (B,)) -> logits (B, C)``.

    Build with :meth:`from_bert` / :meth:`from_pretrained` (converting a BERT-family
    checkpoint) or :meth:`from_config` (the structure of a BERT config, randomly initialised:
    rebuild a saved model, e.g. on the meta device, then ``load_state_dict``).

    Parameters
    ----------
    vocab_size, n_classes : int
        Sizes of the word-piece vocabulary and of the output.
    hidden_size, num_layers, num_heads, intermediate_size, max_positions : int
        The encoder's structure (BERT's fields).
    type_vocab_size : int, default=2
        Token types (0: none, DistilBERT).
    layer_norm_eps : float, default=1e-12
        BERT's LayerNorm epsilon.
    pad_token_id : int or None, default=0
        The padding id, whose embedding is not trained.
    embedding_size : int or None, default=None
        Width of the embeddings when narrower than the hidden states (ELECTRA: a bias-free
        projection follows); None: ``hidden_size``.
    position_offset : int, default=0
        Position of the first token (RoBERTa: ``pad_token_id + 1``).
    b : float or sequence of float, default=2.0
        The B-cos exponent of the encoder layers, one for all or one per layer.
    head_b : float or None, default=None
        The exponent of the pooler and the classifier (None: the last layer's).
    pooling : {"cls", "mean"}, default="cls"
        The ``[CLS]`` state (the authors' models) or the mean over real tokens, before the
        B-cos pooler.
    dropout, attention_dropout : float, default=0.1
        Training-time dropout of the hidden states and of the attention probabilities (BERT's
        ``hidden_dropout_prob`` and ``attention_probs_dropout_prob``).
    logit_bias : float, default=0.0
        A fixed constant added to every logit (0 in B-cos LM).
    matched : bool, default=False
        Scale every B-cos layer by the constant
        :func:`~interpretable.nn.bcos._bert_layers.alignment_gain`, keeping the pretrained
        scale (False: γ = 1, the authors').
    row_gains : bool, default=False
        Each row keeps a fixed gain (:meth:`from_bert` sets the checkpoint's row norms), as
        :class:`~interpretable.BcosTextClassifier`'s ``row_norms="pretrained"``.
    logit_scale : float > 0, default=1.0
        A constant factor of the logits; with ``learn_logit_scale``, trained from this value.
    learn_logit_scale : bool, default=False
        Train the logit scale.
    pooler : bool, default=True
        Keep a B-cos pooler; False: the classifier reads the pooling.
    gate_biases : bool, default=False
        As :class:`~interpretable.BcosTextClassifier`'s ``gate_biases``.
    """

    def __init__(self, vocab_size: int, n_classes: int, *, hidden_size: int = 384,
                 num_layers: int = 6, num_heads: int = 12, intermediate_size: int = 1536,
                 max_positions: int = 512, type_vocab_size: int = 2,
                 layer_norm_eps: float = 1e-12, pad_token_id: int | None = 0,
                 embedding_size: int | None = None, position_offset: int = 0,
                 b: float | Sequence[float] = 2.0, head_b: float | None = None,
                 pooling: str = "cls", dropout: float = 0.1, attention_dropout: float = 0.1,
                 logit_bias: float = 0.0, matched: bool = False, row_gains: bool = False,
                 logit_scale: float = 1.0, learn_logit_scale: bool = False,
                 pooler: bool = True, gate_biases: bool = False):
        super().__init__()
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size={hidden_size} must be divisible by "
                             f"num_heads={num_heads}")
        if pooling not in POOLINGS:
            raise ValueError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        layer_b = [_check_exponent(value, "b")
                   for value in (b if isinstance(b, Sequence) else [b] * num_layers)]
        if len(layer_b) != num_layers:
            raise ValueError(f"b must be a number or one per layer ({num_layers}), got "
                             f"{len(layer_b)} values")
        head_b = layer_b[-1] if head_b is None else _check_exponent(head_b, "head_b")
        if not (isinstance(logit_scale, Real) and 0 < logit_scale < float("inf")):
            raise ValueError(f"logit_scale must be a positive number, got {logit_scale!r}")
        self.pooling = pooling
        self.dropout = float(dropout)
        self.logit_bias = float(logit_bias)
        width = hidden_size if embedding_size is None else embedding_size
        self.position_offset = int(position_offset)
        self.word_embeddings = nn.Embedding(vocab_size, width, padding_idx=pad_token_id)
        self.position_embeddings = nn.Embedding(max_positions, width)
        self.token_type_embeddings = (nn.Embedding(type_vocab_size, width)
                                      if type_vocab_size else None)
        self.embedding_norm = BertBcosLayerNorm(width, layer_norm_eps)
        self.embedding_projection = (nn.Linear(width, hidden_size, bias=False)
                                     if width != hidden_size else None)
        self.layers = nn.ModuleList(
            BcosBertLayer(hidden_size, num_heads, intermediate_size, layer_b_i, layer_norm_eps,
                          self.dropout, float(attention_dropout), matched, row_gains,
                          gate_biases)
            for layer_b_i in layer_b)
        self.pooler = (unscaled_bcos_linear(hidden_size, hidden_size, head_b, matched, row_gains)
                       if pooler else None)
        self.classifier = unscaled_bcos_linear(hidden_size, n_classes, head_b, matched)
        self.logit_scale = float(logit_scale)  # learned: the parameter log_logit_scale
        self.log_logit_scale = (nn.Parameter(torch.tensor(math.log(logit_scale)))
                                if learn_logit_scale else None)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_config(cls, config: EncoderConfig | Mapping[str, Any], n_classes: int,
                    **options: Any) -> BcosBertClassifier:
        """Randomly initialised model with the structure of an encoder ``config`` of a
        supported family (:mod:`interpretable.nn`: a ``transformers``
        config or the dict of its ``config.json``; no ``model_type``: BERT); ``options`` are
        the other constructor arguments (dropout defaults to the config's)."""
        fields = config.to_dict() if hasattr(config, "to_dict") else dict(config)
        return cls(n_classes=n_classes, **{**encoder_options(fields), **options})

    @classmethod
    def from_bert(cls, bert: nn.Module | Mapping[str, torch.Tensor], config: Any,
                  n_classes: int, **options: Any) -> BcosBertClassifier:
        """Convert a checkpoint of a supported family (BERT, RoBERTa / XLM-RoBERTa,
        DistilBERT, ELECTRA): copy its embeddings, Q/K/V, dense, LayerNorm scale and pooler
        weights into a model of the checkpoint's floating dtype (biases are dropped; a
        checkpoint without a pooler keeps a random one); the classifier is new.

        Parameters
        ----------
        bert : transformers model or mapping of str to torch.Tensor
            A model of the family (base model or with a task head) or its state dict (keys
            with or without the ``bert.`` / ``roberta.`` / ... prefix).
        config : transformers config, dict or None
            Its config (None: ``bert.config`` of a model).
        n_classes : int
            Size of the new classifier.
        **options
            The other constructor arguments, as for :meth:`from_config`.

        Returns
        -------
        BcosBertClassifier
            The converted model.
        """
        if isinstance(bert, nn.Module):
            state, config = bert.state_dict(), bert.config if config is None else config
        elif isinstance(bert, Mapping):
            state = bert
        else:
            raise TypeError(f"bert must be a BERT-family model or its state dict, got "
                            f"{type(bert).__name__}")
        if config is None:
            raise ValueError("converting a state dict needs its encoder config")
        config = config.to_dict() if hasattr(config, "to_dict") else dict(config)
        family = encoder_family(config)
        source = _base_model_keys(state)
        dtype = next((v.dtype for v in source.values() if v.is_floating_point()), None)
        model = cls.from_config(config, n_classes, **options).to(dtype)
        with torch.no_grad():
            for name, param in model.named_parameters():
                key = checkpoint_key(family, name)
                if key is None or (name == "pooler.weight" and key not in source):
                    continue
                if key not in source:
                    raise ValueError(f"the {family} checkpoint has no {key!r} (for {name})")
                if source[key].shape != param.shape:
                    raise ValueError(f"{key!r} has shape {tuple(source[key].shape)}, "
                                     f"{name} needs {tuple(param.shape)}")
                param.copy_(source[key])
            for name, module in model.named_modules():  # row gains: the checkpoint's norms
                key = checkpoint_key(family, f"{name}.weight") \
                    if isinstance(module, BertBcosLinear) else None
                if key and key in source and module.row_gain is not None:
                    module.row_gain.copy_(torch.linalg.vector_norm(source[key].double(), dim=1))
        return model

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike[str], n_classes: int,
                        **options: Any) -> BcosBertClassifier:
        """Convert the encoder in a local ``transformers`` folder (never downloads)."""
        from interpretable.nn._bert_encoder import load_encoder

        return cls.from_bert(load_encoder(path, pooler=True), None, n_classes, **options)

    def anneal(self, progress: float) -> None:
        """Move every B-cos layer's exponent to ``1 + progress · (B - 1)`` with its gain
        (``progress`` in [0, 1]; 1 restores the model's exponents): B annealed from 1 while
        fine-tuning starts the converted network close to the pretrained one."""
        for module in self.modules():
            if isinstance(module, BertBcosLinear):
                module.anneal(progress)

    # -- steps -------------------------------------------------------------------------------
    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Word-piece embeddings, what explanations and gradient attributions attribute to:
        (B, T) ids -> (B, T, H)."""
        return self.word_embeddings(tokens)

    def position_type_embeddings(self, tokens: torch.Tensor,
                                 token_types: torch.Tensor | None = None) -> torch.Tensor:
        """Position + token-type embeddings: (B, T) -> (1, T, H), or (B, T, H) with
        ``token_types`` (B, T) (default: all type 0)."""
        length, start = tokens.shape[1], self.position_offset
        if start + length > self.position_embeddings.num_embeddings:
            raise ValueError(f"{length} tokens exceed the "
                             f"{self.position_embeddings.num_embeddings - start} positions")
        positions = self.position_embeddings.weight[start:start + length]
        if self.token_type_embeddings is None:
            if token_types is not None:
                raise ValueError("this encoder has no token types (type_vocab_size=0)")
            return positions.unsqueeze(0)
        if token_types is None:
            return (positions + self.token_type_embeddings.weight[0]).unsqueeze(0)
        return positions + self.token_type_embeddings(token_types)

    def padding_mask(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None,
                     attention_mask: torch.Tensor | None = None) -> torch.Tensor:
        """(B, T) bool, True on real tokens, from ``lengths`` (B,) (right padding) or an
        ``attention_mask`` (B, T) of 0/1 or bool (default: no padding)."""
        if tokens.dim() != 2:
            raise ValueError(f"tokens must have shape (B, T), got {tuple(tokens.shape)}")
        if lengths is not None and attention_mask is not None:
            raise ValueError("give lengths or attention_mask, not both")
        if lengths is not None:
            lengths = torch.as_tensor(lengths, device=tokens.device)
            if lengths.shape != tokens.shape[:1]:
                raise ValueError(f"lengths must have shape ({tokens.shape[0]},), got "
                                 f"{tuple(lengths.shape)}")
            if lengths.min() < 1 or lengths.max() > tokens.shape[1]:
                raise ValueError(f"lengths must lie in [1, {tokens.shape[1]}], got "
                                 f"{lengths.tolist()}")
            positions = torch.arange(tokens.shape[1], device=tokens.device)
            return positions < lengths[:, None]
        if attention_mask is None:
            return torch.ones_like(tokens, dtype=torch.bool)
        if attention_mask.shape != tokens.shape:
            raise ValueError(f"attention_mask must have the shape of tokens "
                             f"{tuple(tokens.shape)}, got {tuple(attention_mask.shape)}")
        mask = attention_mask.bool()
        if not mask.any(1).all():
            raise ValueError("every sample needs at least one real token")
        return mask

    def hidden_states(self, summed: torch.Tensor, mask: torch.Tensor,
                      need_probs: bool = True) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """Summed embeddings (B, T, H), mask (B, T) -> (hidden states (B, T, H),
        [attention probabilities (B, heads, T, T)] per layer); ``need_probs=False``: no
        probabilities (an empty list), fused attention where it computes the same."""
        x = self.embedding_norm(summed)
        if self.embedding_projection is not None:  # ELECTRA: narrower embeddings
            x = self.embedding_projection(x)
        x = F.dropout(x, self.dropout, self.training)
        mask_bias = torch.zeros(mask.shape, dtype=x.dtype, device=x.device)
        mask_bias = mask_bias.masked_fill_(~mask, torch.finfo(x.dtype).min)[:, None, None]
        attentions = []
        for layer in self.layers:
            x, probs = layer(x, mask_bias, need_probs)
            if need_probs:
                attentions.append(probs)
        return x, attentions

    def head(self, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Hidden states (B, T, H), mask (B, T) -> logits (B, C): pooling, B-cos pooler,
        B-cos classifier (both in the parameters' precision, also under autocast), fixed logit
        bias."""
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask.to(hidden.dtype).unsqueeze(-1)
            pooled = (hidden * weights).sum(1) / weights.sum(1)
        pooled = pooled if self.pooler is None else in_parameter_precision(self.pooler, pooled)
        pooled = F.dropout(pooled, self.dropout, self.training)
        scale = (self.logit_scale if self.log_logit_scale is None
                 else parameter(self.log_logit_scale).exp())
        return in_parameter_precision(self.classifier, pooled) * scale + self.logit_bias

    def forward_with_attention(self, tokens: torch.Tensor,
                               lengths: torch.Tensor | None = None, *,
                               attention_mask: torch.Tensor | None = None,
                               token_types: torch.Tensor | None = None,
                               embedded: torch.Tensor | None = None, need_probs: bool = True
                               ) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """As :meth:`forward` -> (logits (B, C), [attention probabilities (B, heads, T, T)]
        per layer), the latter for attention and rollout baselines."""
        mask = self.padding_mask(tokens, lengths, attention_mask)
        words = self.embed(tokens) if embedded is None else embedded
        summed = words + self.position_type_embeddings(tokens, token_types)
        hidden, attentions = self.hidden_states(summed, mask, need_probs)
        return self.head(hidden, mask), attentions

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None, *,
                attention_mask: torch.Tensor | None = None,
                token_types: torch.Tensor | None = None,
                embedded: torch.Tensor | None = None) -> torch.Tensor:
        """tokens (B, T) ids; ``lengths`` (B,) or ``attention_mask`` (B, T) mark the real
        tokens; ``token_types`` (B, T) (default 0); ``embedded`` (B, T, H) replaces
        ``embed(tokens)`` (gradient attributions, embedding perturbations). -> logits (B, C).
        """
        return self.forward_with_attention(tokens, lengths, attention_mask=attention_mask,
                                           token_types=token_types, embedded=embedded,
                                           need_probs=False)[0]

    # -- explanation -------------------------------------------------------------------------
    def contributions(self, tokens: torch.Tensor, lengths: torch.Tensor | None = None,
                      target: int | Sequence[int] | torch.Tensor | None = None, *,
                      attention_mask: torch.Tensor | None = None,
                      token_types: torch.Tensor | None = None,
                      contrast: torch.Tensor | None = None,
                      embedded: torch.Tensor | None = None) -> PieceContributions:
        """Exact B-cos explanation of the ``target`` logits (default: the predicted classes;
        an int or (B,) class indices), or with ``contrast (B, C)`` of the target logit minus
        the ``contrast``-weighted logits (:func:`~interpretable.nn._losses.explained_logits`):
        one forward and one backward pass in explanation mode; ``embedded`` (B, T, H) replaces
        the word-piece embeddings (e.g. perturbed ones: the explanation is as exact for them).
        The model is not changed; call it in eval mode (dropout is random)."""
        mask = self.padding_mask(tokens, lengths, attention_mask)
        with explanation_mode(constant_parameters=True), torch.enable_grad():
            words = (self.embed(tokens) if embedded is None else embedded).detach()
            position_type = self.position_type_embeddings(tokens, token_types).detach()
            summed = (words + position_type).requires_grad_()
            logits = self.head(self.hidden_states(summed, mask, need_probs=False)[0], mask)
            target = self._check_target(target, logits)
            weight, = torch.autograd.grad(explained_logits(logits, target, contrast).sum(),
                                          summed)
        return PieceContributions(
            pieces=(weight * words).sum(-1),
            position_type=(weight * position_type).sum((1, 2)),
            bias=explained_logits(logits.new_full(logits.shape, self.logit_bias).detach(),
                                  target, contrast),
            logits=logits.detach(), target=target)

    @staticmethod
    def _check_target(target, logits: torch.Tensor) -> torch.Tensor:
        """None, an int or (B,) class indices -> (B,) int64 class indices."""
        n, n_classes = logits.shape
        if target is None:
            return logits.detach().argmax(1)
        target = torch.as_tensor(target, device=logits.device)
        if target.is_floating_point() or target.dtype == torch.bool:
            raise TypeError(f"target must hold class indices, got dtype {target.dtype}")
        target = target.long().expand(n) if target.dim() == 0 else target.long()
        if target.shape != (n,):
            raise ValueError(f"target must be an int or have shape ({n},), got "
                             f"{tuple(target.shape)}")
        if target.min() < 0 or target.max() >= n_classes:
            raise ValueError(f"target must lie in [0, {n_classes}), got {target.tolist()}")
        return target


def _base_model_keys(state: Mapping) -> dict:
    """A state dict with the keys of the base model: a task model's ``bert.`` / ``roberta.``
    / ... prefix removed (the keys of its head are kept, unused)."""
    if any(key.startswith("embeddings.") for key in state):
        return dict(state)
    prefixes = {key.split(".", 1)[0] for key in state if key.split(".", 2)[1:2] == ["embeddings"]}
    return {key.split(".", 1)[1] if key.split(".", 1)[0] in prefixes else key: value
            for key, value in state.items()}
