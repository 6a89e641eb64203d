"""Attention text classifier (encoder + additive attention + linear decoder) with sklearn's API.

``AttentionTextClassifier`` is the vanilla attention model of Jain & Wallace (2019) used as the
baseline of Mohankumar et al. (2020) and Hu et al. (SEAT, 2023). ``DiversityLSTMClassifier`` and
``SEATClassifier`` build on it through these protected hooks:

* ``_criterion()`` -> ``nn.Module`` called as ``criterion(AttentionOutput, y)`` during training
  (override to add regularisers; the default is cross-entropy on the logits);
* ``_encode_inputs(X) -> dict`` of CPU tensors (``tokens``, ``lengths`` [, ``query``,
  ``query_lengths``]) for validated input ``X``;
* ``_batch_outputs(batch, attention=None, embedded=None) -> AttentionOutput`` on a batch dict;
* ``_embed_batch(batch) -> (B, T, E)`` embeddings (for gradient attributions / perturbations);
* ``_iter_outputs(inputs, grad=False)`` -> ``(rows, batch, AttentionOutput, query_state)`` over
  mini-batches trimmed to their longest text (used by the analyses in
  :mod:`interpretable.metrics.attention_analysis`);
* ``_tokens(X) -> (tokens, queries | None)``: the tokens the model sees, for explanations.
"""
from __future__ import annotations

import numbers

import numpy as np
import torch
from torch import nn

from ..attribution.text import ATTRIBUTION_METHODS, embedding_attributions
from ..explanation import TokenExplanation
from ..nn.attention import AttentionOutput, AttentionTextModule, conicity
from ..nn.losses import OutputCrossEntropy
from ..nn.recurrent import RECURRENT_KINDS
from .text_base import TextClassifierBase

__all__ = ["AttentionTextClassifier", "EXPLAIN_METHODS", "trim_padding"]

EXPLAIN_METHODS = ("attention", *ATTRIBUTION_METHODS)


def trim_padding(batch: dict) -> dict:
    """Cut ``tokens`` / ``query`` of a batch dict to the batch's longest real length."""
    out = dict(batch)
    for ids, lengths in (("tokens", "lengths"), ("query", "query_lengths")):
        if ids in out:
            out[ids] = out[ids][:, : max(int(out[lengths].max()), 1)]
    return out


def _trim_collate(items):
    """DataLoader collate: stack, then trim padding (training batches run only real steps)."""
    X, y = torch.utils.data.default_collate(items)
    return trim_padding(X), y


def _positive_int(value, name):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


class AttentionTextClassifier(TextClassifierBase):
    """Text classifier with an additive attention layer over a recurrent (or custom) encoder.

    ``X`` is a list of texts, or a list of ``(text, query)`` pairs (NLI / QA style: the query's
    final state enters attention and decoder). Targets can be any hashable labels.

    Parameters
    ----------
    encoder : {"rnn", "lstm", "bilstm", "orthogonal"} or nn.Module
        Encoder of the texts (see :class:`interpretable.nn.attention.AttentionTextModule`).
    embeddings : "glove-50", gensim KeyedVectors or None
        Initial word vectors (``None``: learned from scratch with ``embed_dim``).
    embed_dim : int
        Embedding size when ``embeddings`` is None.
    hidden_size : int
        Encoder hidden size (per direction for "bilstm").
    attention_size : int or None
        Size of the attention layer (default: encoder output size).
    freeze_embeddings : bool
    dropout : float
        Dropout on encoder input and context vector.
    lowercase, min_freq, max_vocab, max_len :
        :class:`interpretable.text.TextEncoder` settings (``max_len`` truncates texts).
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose :
        See :class:`interpretable.estimators.base.NeuralEstimator`.

    Attributes
    ----------
    classes_ : ndarray of labels
    encoder_ : fitted :class:`~interpretable.text.TextEncoder` (shared by texts and queries)
    pair_input_ : bool, whether the model was fitted on (text, query) pairs
    module_ : :class:`~interpretable.nn.attention.AttentionTextModule`
    history_ : list of per-epoch dicts
    """

    _supports_pairs = True

    def __init__(self, *, encoder="lstm", embeddings=None, embed_dim=50, hidden_size=128,
                 attention_size=None, freeze_embeddings=False, dropout=0.0, lowercase=True,
                 min_freq=1, max_vocab=None, max_len=None, lr=1e-3, max_epochs=10, batch_size=64,
                 optimizer="adam", weight_decay=0.0, device="auto", random_state=None, verbose=0):
        super().__init__(lr=lr, max_epochs=max_epochs, batch_size=batch_size, optimizer=optimizer,
                         weight_decay=weight_decay, device=device, random_state=random_state,
                         verbose=verbose)
        self.encoder = encoder
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.hidden_size = hidden_size
        self.attention_size = attention_size
        self.freeze_embeddings = freeze_embeddings
        self.dropout = dropout
        self.lowercase = lowercase
        self.min_freq = min_freq
        self.max_vocab = max_vocab
        self.max_len = max_len

    # ------------------------------------------------------------------ hooks
    def _encoder_spec(self):
        """The ``encoder`` argument of :class:`AttentionTextModule` (subclasses map their own
        parameters onto it)."""
        return self.encoder

    def _criterion(self) -> nn.Module:
        """Training loss, called as ``criterion(AttentionOutput, y)``; override to add terms."""
        return OutputCrossEntropy()

    def _validate_params(self) -> None:
        spec = self._encoder_spec()
        if not (isinstance(spec, nn.Module) or spec in RECURRENT_KINDS):
            raise ValueError(f"encoder must be one of {RECURRENT_KINDS} or an nn.Module, got {spec!r}.")
        _positive_int(self.hidden_size, "hidden_size")
        _positive_int(self.embed_dim, "embed_dim")
        if self.attention_size is not None:
            _positive_int(self.attention_size, "attention_size")
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, numbers.Real) \
                or not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"dropout must be a float in [0, 1), got {self.dropout!r}.")

    def _build_module(self) -> AttentionTextModule:
        init = self.embedding_init_
        return AttentionTextModule(
            vocab_size=len(self.encoder_.index_to_token_), num_classes=self.n_classes_,
            embed_dim=self.embed_dim_, hidden_size=self.hidden_size, encoder=self._encoder_spec(),
            embeddings=None if init is None else torch.from_numpy(init),
            freeze_embeddings=self.freeze_embeddings, pair=self.pair_input_,
            dropout=self.dropout, attention_size=self.attention_size)

    # ------------------------------------------------------------------ data
    def _tokens(self, X):
        """Validated tokens the model sees: ``(tokens, query_tokens | None)``."""
        texts, queries = self._split_inputs(X, fitting=False)
        return (self.encoder_.tokenize_many(texts),
                None if queries is None else self.encoder_.tokenize_many(queries))

    def _encode_tokens(self, tokens, queries) -> dict:
        ids, lengths = self.encoder_.encode_tokens(tokens)
        out = {"tokens": torch.from_numpy(ids), "lengths": torch.from_numpy(lengths)}
        if queries is not None:
            qids, qlengths = self.encoder_.encode_tokens(queries)
            out.update(query=torch.from_numpy(qids), query_lengths=torch.from_numpy(qlengths))
        return out

    def _batch_outputs(self, batch: dict, attention=None, embedded=None) -> AttentionOutput:
        """Forward pass of a batch dict (moved to ``device_``) with optional overrides of the
        attention weights ``(B, T)`` and the embeddings ``(B, T, E)``."""
        batch = {k: v.to(self.device_) for k, v in batch.items()}
        return self.module_(**batch, attention=attention, embedded=embedded)

    def _embed_batch(self, batch: dict) -> torch.Tensor:
        """Embeddings ``(B, T, E)`` of a batch dict."""
        return self.module_.embed(batch["tokens"].to(self.device_))

    def _iter_outputs(self, inputs: dict, grad: bool = False, batch_size=None):
        """Yield ``(rows, batch, AttentionOutput, query_state)`` over mini-batches trimmed to
        their longest text (tensors on ``device_``)."""
        self._check_fitted()
        n = len(inputs["tokens"])
        step = batch_size or self.batch_size
        self.module_.eval()
        with torch.set_grad_enabled(grad):
            for start in range(0, n, step):
                rows = slice(start, min(start + step, n))
                batch = trim_padding({k: v[rows].to(self.device_) for k, v in inputs.items()})
                out, query_state = self.module_.forward_parts(**batch)
                yield rows, batch, out, query_state

    # ------------------------------------------------------------------ sklearn API
    def fit(self, X, y):
        """Fit on texts (or (text, query) pairs) ``X`` and labels ``y``."""
        self._validate_params()
        inputs, targets, seed = self._prepare_fit(X, y)
        self._fit_net(self._build_module, self._criterion(), inputs, targets, seed=seed,
                      iterator_train__collate_fn=_trim_collate)
        return self

    def _padded(self, inputs, field):
        """Concatenate ``out.<field>`` (B, t) over trimmed batches into ``(n, T)`` numpy."""
        T = inputs["tokens"].shape[1]
        return np.concatenate([_pad_cols(getattr(out, field).float().cpu().numpy(), T)
                               for _, _, out, _ in self._iter_outputs(inputs)])

    def decision_function(self, X) -> np.ndarray:
        """Logits ``(n, n_classes)``."""
        inputs = self._encode_inputs(X)
        return torch.cat([out.logits.float().cpu() for _, _, out, _ in self._iter_outputs(inputs)]).numpy()

    def attention(self, X) -> list:
        """Attention weights over each text's tokens: list of n arrays ``(T_i,)``."""
        inputs = self._encode_inputs(X)
        att = self._padded(inputs, "attention")
        return [att[i, :n] for i, n in enumerate(inputs["lengths"].tolist())]

    def hidden_conicity(self, X) -> np.ndarray:
        """Conicity of each sample's hidden states ``(n,)`` (Mohankumar et al., sec. 3.1)."""
        inputs = self._encode_inputs(X)
        return torch.cat([conicity(out.hidden, out.mask).float().cpu()
                          for _, _, out, _ in self._iter_outputs(inputs)]).numpy()

    def explain(self, X, target=None, method="attention", n_steps=50) -> TokenExplanation:
        """Explain predictions token by token.

        Parameters
        ----------
        X : texts or (text, query) pairs.
        target : None (the predicted class), one label, or one label per sample.
        method : "attention" (the model's attention weights; target-independent),
            "gradient" (‖∂logit/∂embedding‖), "input_x_gradient" or "integrated_gradients"
            (summed over the embedding; ``logit`` / ``bias`` carry the explained logit and the
            all-zero-embedding baseline logit, so ``completeness_error`` measures convergence).
        n_steps : integration steps for integrated gradients.

        Returns
        -------
        TokenExplanation (``queries`` holds the query tokens for pair inputs)
        """
        self._check_method(method, EXPLAIN_METHODS)
        self._check_fitted()
        tokens, queries = self._tokens(X)
        inputs = self._encode_tokens(tokens, queries)
        logits, att = [], []
        for _, _, out, _ in self._iter_outputs(inputs):
            logits.append(out.logits.float().cpu().numpy())
            att.append(_pad_cols(out.attention.float().cpu().numpy(), inputs["tokens"].shape[1]))
        logits = np.concatenate(logits)
        target_idx = self._target_indices(target, logits)
        if method == "attention":
            return self._token_explanation(tokens, np.concatenate(att), target_idx, logits, method,
                                           queries=queries)
        res = embedding_attributions(self, inputs, target_idx, method=method, n_steps=n_steps)
        ig = method == "integrated_gradients"
        return self._token_explanation(tokens, res.scores, target_idx, logits, method,
                                       bias=res.baseline_logit if ig else None,
                                       explained_logit=res.logit if ig else None, queries=queries)


def _pad_cols(a: np.ndarray, width: int) -> np.ndarray:
    """Right-pad a ``(B, t)`` array with zeros to ``(B, width)``."""
    return a if a.shape[1] == width else np.pad(a, ((0, 0), (0, width - a.shape[1])))
