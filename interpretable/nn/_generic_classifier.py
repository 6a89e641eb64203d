"""Any ``transformers`` sequence classifier as it is: the module that
``AutoModelForSequenceClassification`` loads, run in eval mode on the package's batches, behind
the interface of the package's text networks::

    forward(tokens (B, T), lengths (B,), embedded=None) -> logits (B, C)

The model receives the token ids and the attention mask, as ``transformers`` runs it, so it
pools as it does itself: the first token's state (BERT-style heads, DeBERTa, ALBERT), the mean
of the real tokens' (ModernBERT's ``classifier_pooling="mean"``) or a decoder's last token that
is not padding (GPT-2, Llama, Qwen2, ...). ``embedded (B, T, E)`` replaces the output of its
input embedding layer (``get_input_embeddings()``, what ``inputs_embeds`` takes) in that call
only: gradient attributions and embedding perturbations act where the model reads its tokens.
The replacement travels in a context variable of the calling thread, read by a forward hook
installed once at construction: no call sets anything on the shared module, and concurrent
calls from several threads never see each other's embeddings.

Batches are right-padded (``lengths``); a model whose head reads a padding position of a
right-padded batch (one that pools the last position whatever it holds, as XLNet does) runs
on left-padded rows (``padding_side="left"``): :meth:`GenericSequenceClassifier.head_reads`
tells which positions the head reads. Needs the ``bert`` extra (``transformers``).
"""
from __future__ import annotations

import contextvars
import warnings

import torch
from torch import nn

from interpretable.nn._bert_encoder import load_sequence_classifier, quiet_loading
from interpretable.nn._sequence_classifier import check_single_label

#: the embeddings that replace an input embedding layer's output in the current call:
#: ``[layer, token ids, embeddings, used]``, set by the calling thread only
_REPLACED = contextvars.ContextVar("interpretable_replaced_embeddings", default=None)
#: config fields that do not describe the network (dropped from a stored config)
_NOT_STRUCTURE = ("id2label", "label2id", "num_labels", "auto_map", "_name_or_path",
                  "transformers_version", "architectures", "torch_dtype", "dtype",
                  "_attn_implementation_autoset")
#: how the head pools the final states, as :meth:`GenericSequenceClassifier.head_reads` shows
POOLINGS = ("cls", "mean", "last")


def _replace_output(layer, args, output):
    """Forward hook of the input embedding layer: its output replaced by the embeddings of
    the current call where it embeds the call's ids (time-major too, as XLNet embeds them);
    another use of the layer in the same call (e.g. an encoder-decoder's decoder, on shifted
    ids) reads its own embeddings."""
    replacement = _REPLACED.get()
    if replacement is None or replacement[0] is not layer or not args:
        return None
    ids, tokens, embedded = args[0], replacement[1], replacement[2]
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        return None
    if ids.shape == tokens.shape and torch.equal(ids, tokens):
        replacement[3] = True
        return embedded
    if ids.shape == tokens.shape[::-1] and torch.equal(ids, tokens.T):
        replacement[3] = True
        return embedded.transpose(0, 1)
    return None


def _rolled(x: torch.Tensor, shift: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    """``x`` with each row ``b`` rolled by ``shift[b]`` along ``dims`` (gathered, so gradients
    flow): the right-padded row becomes left-padded for ``shift = T - length`` and back for
    ``-shift``."""
    size = x.shape[dims[0]]
    for dim in dims:
        index = (torch.arange(size, device=x.device)[None] - shift[:, None]) % size
        view = [index.shape[0]] + [1] * (x.dim() - 1)
        view[dim] = size
        x = x.gather(dim, index.view(view).expand_as(x))
    return x


def structure_config(config) -> dict:
    """The fields of a ``transformers`` config (object or dict) that rebuild its network: all
    but its labels, its provenance and remote-code pointers (``auto_map``)."""
    fields = config if isinstance(config, dict) else config.to_dict()
    return {k: v for k, v in fields.items() if k not in _NOT_STRUCTURE}


class GenericSequenceClassifier(nn.Module):
    """A ``transformers`` ``...ForSequenceClassification`` behind the package's interface.

    Build with :meth:`from_pretrained` (a local folder) or :meth:`from_config` (the structure
    alone, for a saved model's weights).

    Args:
        model: the ``transformers`` sequence classifier (single-label, two or more classes),
            best loaded with ``attn_implementation="eager"`` (the attention methods need the
            attention probabilities, which SDPA and flash attention do not return).
        padding_side: ``"right"``, or ``"left"`` for a head that reads the last position
            whatever it holds.
        pooling: where the head reads the final states, one of :data:`POOLINGS` (what the
            attention methods pool); see :meth:`head_reads`.
    """

    def __init__(self, model, padding_side: str = "right", pooling: str = "cls"):
        super().__init__()
        check_single_label(model.config)
        if padding_side not in ("right", "left") or pooling not in POOLINGS:
            raise ValueError(f"padding_side must be 'right' or 'left' and pooling one of "
                             f"{list(POOLINGS)}, got {padding_side!r} and {pooling!r}.")
        layer = model.get_input_embeddings()
        if not isinstance(layer, nn.Module):
            raise ValueError(f"{type(model).__name__} has no input embedding layer "
                             "(get_input_embeddings()).")
        for module in model.modules():  # e.g. rotary frequencies: saved with the weights, so
            for name, buffer in list(module.named_buffers(recurse=False)):  # that a structure-
                module.register_buffer(name, buffer, persistent=True)  # only build loads them
        model.config.use_cache = False  # a classifier caches no keys and values
        layer.register_forward_hook(_replace_output)
        self.model = model
        self.padding_side = padding_side
        self.pooling = pooling

    @classmethod
    def from_pretrained(cls, folder, *, config=None, padding_side: str = "right",
                        pooling: str = "cls", **options) -> GenericSequenceClassifier:
        """The sequence classifier in a local folder, in float32 with eager attention (never
        downloads, never runs code from a file); ``config``: its ``transformers`` config,
        already read; ``options``: of
        :func:`~interpretable.nn._bert_encoder.load_sequence_classifier` (``trained_head``,
        ``num_labels`` with ``ignore_mismatched_sizes``, ...)."""
        model = load_sequence_classifier(folder, config=config, tokenizer=False,
                                         attn_implementation="eager", dtype=torch.float32,
                                         **options)
        return cls(model, padding_side, pooling)

    @classmethod
    def from_config(cls, config: dict, n_classes: int, *, padding_side: str = "right",
                    pooling: str = "cls") -> GenericSequenceClassifier:
        """Randomly initialised, with the structure of a config dict (its ``model_type`` and
        the fields of :func:`structure_config`) and ``n_classes`` outputs; ValueError for a
        ``model_type`` that ``transformers`` does not know as a sequence classifier."""
        with quiet_loading() as tf:
            model_type = config.get("model_type")
            if model_type not in tf.CONFIG_MAPPING or model_type not in \
                    tf.models.auto.modeling_auto.MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES:
                raise ValueError(f"transformers has no sequence classifier of model_type "
                                 f"{model_type!r}.")
            fields = {k: v for k, v in structure_config(config).items() if k != "model_type"}
            structure = tf.CONFIG_MAPPING[model_type].from_dict({**fields,
                                                                 "num_labels": n_classes})
            model = tf.AutoModelForSequenceClassification.from_config(
                structure, attn_implementation="eager")
        return cls(model, padding_side, pooling)

    @property
    def output_layer(self) -> nn.Linear:
        """The last linear layer of the head whose rows are the classes."""
        n = self.model.config.num_labels
        base = {id(m) for m in self.model.base_model.modules()}
        layers = [m for m in self.model.modules() if isinstance(m, nn.Linear)
                  and id(m) not in base and m.out_features == n]
        if not layers:
            raise ValueError(f"{type(self.model).__name__} has no linear output layer of "
                             f"{n} rows outside its base model.")
        return layers[-1]

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Input embeddings: (B, T) ids -> (B, T, E), the output of the model's input
        embedding layer."""
        return self.model.get_input_embeddings()(tokens)

    def _run(self, tokens, lengths, embedded, **options):
        """The model's output on right-padded ``tokens`` (left-padded for it where
        ``padding_side="left"``), ``embedded`` replacing its input embeddings; returns the
        output and the shift of each row."""
        mask = torch.arange(tokens.shape[1], device=tokens.device)[None] < lengths[:, None]
        shift = (tokens.shape[1] - lengths) if self.padding_side == "left" else None
        if shift is not None:
            tokens, mask = _rolled(tokens, shift, (1,)), _rolled(mask, shift, (1,))
            if embedded is not None:
                embedded = _rolled(embedded, shift, (1,))
        arguments = {"input_ids": tokens.contiguous(), "attention_mask": mask.long(), **options}
        if embedded is None:
            return self.model(**arguments), shift
        replacement = [self.model.get_input_embeddings(), arguments["input_ids"], embedded,
                       False]
        token = _REPLACED.set(replacement)
        try:
            out = self.model(**arguments)
        finally:
            _REPLACED.reset(token)
        if not replacement[3]:
            raise RuntimeError(f"{type(self.model).__name__} did not embed its input ids with "
                               "its input embedding layer, so embeddings cannot replace them.")
        return out, shift

    def forward(self, tokens: torch.Tensor, lengths: torch.Tensor,
                embedded: torch.Tensor | None = None) -> torch.Tensor:
        return self._run(tokens, lengths, embedded)[0].logits

    def forward_with_attention(self, tokens: torch.Tensor, lengths: torch.Tensor,
                               embedded: torch.Tensor | None = None):
        """As :meth:`forward` -> (logits (B, C), [attention probabilities (B, heads, T, T)]
        per layer, positions as in ``tokens``); ValueError naming the model where it returns
        none (an attention implementation that computes no probabilities)."""
        out, shift = self._run(tokens, lengths, embedded, output_attentions=True)
        attentions = getattr(out, "attentions", None)
        size = (tokens.shape[0], tokens.shape[1], tokens.shape[1])
        if not attentions or not all(
                isinstance(a, torch.Tensor) and a.dim() == 4
                and (a.shape[0], *a.shape[2:]) == size for a in attentions):
            implementation = getattr(self.model.config, "_attn_implementation", None)
            raise ValueError(
                f"{type(self.model).__name__} returns no attention probabilities (attention "
                f"implementation {implementation!r}), which the attention methods need: load "
                "it with attn_implementation=\"eager\" (a model without attention, or whose "
                "attention is SDPA- or flash-only, has none to give).")
        if shift is not None:  # back in the positions of ``tokens``
            attentions = [_rolled(a, -shift, (2, 3)) for a in attentions]
        return out.logits, list(attentions)

    def head_reads(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor | None:
        """Which final states the head reads: ``(B, T)`` bool, where the gradient of the
        logits with respect to the base model's last hidden states is not zero (positions as
        in ``tokens``); None where the base model returns no states ``(B, T, H)``. Parameters
        are left as they are (no ``.grad`` is written)."""
        states = []

        def keep(module, args, output):
            hidden = output[0] if isinstance(output, (tuple, list)) \
                else getattr(output, "last_hidden_state", None)
            if isinstance(hidden, torch.Tensor):
                states.append(hidden)

        handle = self.model.base_model.register_forward_hook(keep)
        try:
            with torch.enable_grad():
                embedded = self.embed(tokens).detach().requires_grad_()
                logits, shift = self._run(tokens, lengths, embedded)
                logits = logits.logits
                if not states or states[-1].shape[:2] != tokens.shape \
                        or not states[-1].requires_grad:
                    return None
                grad, = torch.autograd.grad(logits.sum(), states[-1], allow_unused=True)
        finally:
            handle.remove()
        reads = torch.zeros(tokens.shape, dtype=torch.bool, device=tokens.device) \
            if grad is None else grad.abs().sum(-1) > 0
        return reads if shift is None else _rolled(reads, -shift, (1,))


def calibrate(module: GenericSequenceClassifier, tokens: torch.Tensor,
              lengths: torch.Tensor) -> GenericSequenceClassifier:
    """Set ``padding_side`` and ``pooling`` of a freshly built ``module`` (not yet shared)
    from what its head reads on the probe batch ``tokens (B, T)``, ``lengths (B,)`` (texts of
    different lengths, right-padded): right padding unless the head then reads a padding
    position and reads none with left padding; the pooling its reads show (the mean, with a
    warning, when they show none or cannot be seen). Returns ``module``."""
    name = type(module.model).__name__
    real = torch.arange(tokens.shape[1], device=tokens.device)[None] < lengths[:, None]
    for side in ("right", "left", "right"):
        module.padding_side = side
        reads = module.head_reads(tokens, lengths)
        if reads is None or not (reads & ~real).any():
            break
    else:
        warnings.warn(f"the head of {name} reads padding positions with right and left "
                      "padding alike: its outputs depend on how texts are batched.",
                      UserWarning, stacklevel=2)
    pooling = None if reads is None else pooling_of(reads, lengths)
    if pooling is None:
        warnings.warn(f"the head of {name} reads " + (
            "final states that its base model does not return" if reads is None else
            "positions that are neither the first, the last nor all real tokens") +
            ": the attention methods pool the mean of the real tokens' rows.", UserWarning,
            stacklevel=2)
    module.pooling = pooling or "mean"
    return module


def pooling_of(reads: torch.Tensor, lengths: torch.Tensor) -> str | None:
    """The pooling (one of :data:`POOLINGS`) that the head's reads ``(B, T)`` (from
    :meth:`GenericSequenceClassifier.head_reads` on right-padded rows) show, or None when
    they show none of them (e.g. a padding position is read)."""
    positions = torch.arange(reads.shape[1], device=reads.device)[None]
    real = positions < lengths[:, None]
    patterns = {"cls": positions == 0, "last": positions == lengths[:, None] - 1, "mean": real}
    for name in POOLINGS:
        if torch.equal(reads, patterns[name].expand_as(reads)):
            return name
    return None
