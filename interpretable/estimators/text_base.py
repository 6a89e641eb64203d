"""Shared machinery of the text classifiers: encoding, labels, embeddings, prediction."""

from __future__ import annotations

import numpy as np
import torch

from .._validation import check_targets, check_text_inputs
from ..explanation import TokenExplanation
from ..nn.losses import logits_of
from ..text.encoding import TextEncoder
from .base import NeuralClassifier

__all__ = ["TextClassifierBase", "resolve_embeddings"]


def resolve_embeddings(embeddings):
    """``"glove-50"`` → the offline GloVe ``KeyedVectors``; a ``KeyedVectors`` is returned as is;
    ``None`` means learned from scratch."""
    if embeddings is None:
        return None
    if isinstance(embeddings, str):
        if embeddings not in ("glove-50", "glove"):
            raise ValueError(f"embeddings must be 'glove-50', a KeyedVectors or None, got {embeddings!r}.")
        from ..datasets import load_glove

        return load_glove(50)
    if hasattr(embeddings, "key_to_index") and hasattr(embeddings, "vector_size"):
        return embeddings
    raise TypeError(
        f"embeddings must be 'glove-50', a gensim KeyedVectors or None, got {type(embeddings).__name__}."
    )


class TextClassifierBase(NeuralClassifier):
    """Base of the text classifiers.

    Inputs are a list of str, or of ``(text, query)`` pairs when the model supports them
    (``_supports_pairs``). Subclasses implement ``_build_module()`` whose output is the logits
    or a tuple starting with them, and may override ``decision_function``.

    Fitted attributes: ``encoder_`` (:class:`~interpretable.text.TextEncoder`), ``classes_``,
    ``pair_input_`` (bool), ``embedding_init_`` (float32 ``(V, E)`` or None, used only while
    building the module), ``module_``, ``history_``, ``device_``.
    """

    _supports_pairs = False

    # ---------------------------------------------------------------- data preparation
    def _text_encoder(self) -> TextEncoder:
        return TextEncoder(
            lowercase=getattr(self, "lowercase", True),
            min_freq=getattr(self, "min_freq", 1),
            max_vocab=getattr(self, "max_vocab", None),
            max_len=getattr(self, "max_len", None),
        )

    def _split_inputs(self, X, *, fitting: bool):
        texts, queries = check_text_inputs(X)
        is_pair = queries is not None
        if is_pair and not self._supports_pairs:
            raise ValueError(f"{type(self).__name__} does not take (text, query) pairs; pass a list of str.")
        if not fitting and is_pair != self.pair_input_:
            kind = "(text, query) pairs" if self.pair_input_ else "plain texts"
            raise ValueError(f"this model was fitted on {kind}; got the other kind of input.")
        return texts, queries

    def _encode_with_tokens(self, X, *, fitting: bool = False):
        """Validate and encode ``X``. Returns ``(inputs, tokens)``: a dict of CPU tensors for
        ``module.forward`` (``tokens (n, T)``, ``lengths (n,)`` and, for pairs, ``query``,
        ``query_lengths``) and the token lists as the model sees them."""
        if not fitting:
            self._check_fitted()
        texts, queries = self._split_inputs(X, fitting=fitting)
        tokens = self.encoder_.tokenize_many(texts)
        ids, lengths = self.encoder_.encode_tokens(tokens)
        inputs = {"tokens": torch.from_numpy(ids), "lengths": torch.from_numpy(lengths)}
        if queries is not None:
            q_ids, q_lengths = self.encoder_.encode_tokens(self.encoder_.tokenize_many(queries))
            inputs.update(query=torch.from_numpy(q_ids), query_lengths=torch.from_numpy(q_lengths))
        return inputs, tokens

    def _encode_inputs(self, X, *, fitting: bool = False) -> dict:
        """Validate and encode ``X`` into the dict of CPU tensors for ``module.forward``."""
        return self._encode_with_tokens(X, fitting=fitting)[0]

    def _prepare_fit(self, X, y):
        """Validate ``X, y``, fit the vocabulary and labels, resolve embeddings.

        Returns ``(inputs, y_tensor, seed)`` ready for :meth:`_fit_net`.
        """
        seed = self._start_fit()
        texts, queries = self._split_inputs(X, fitting=True)
        y = check_targets(y, n_samples=len(texts))
        self.pair_input_ = queries is not None
        self.encoder_ = self._text_encoder().fit(texts + (queries or []))
        self.classes_, y_index = np.unique(y, return_inverse=True)
        vectors = resolve_embeddings(getattr(self, "embeddings", None))
        self.embedding_init_ = (
            None if vectors is None else self.encoder_.embedding_matrix(vectors, random_state=seed)
        )
        inputs = self._encode_inputs(X, fitting=True)
        targets = torch.from_numpy(y_index.astype(np.int64))
        return inputs, targets, seed

    @property
    def n_classes_(self) -> int:
        return len(self.classes_)

    @property
    def embed_dim_(self) -> int:
        if self.embedding_init_ is not None:
            return int(self.embedding_init_.shape[1])
        return int(getattr(self, "embed_dim", 50))

    # ---------------------------------------------------------------- prediction
    def decision_function(self, X) -> np.ndarray:
        """Logits ``(n, n_classes)``."""
        inputs = self._encode_inputs(X)
        return np.concatenate(
            [logits_of(out).detach().cpu().numpy() for _, out in self._forward_batches(inputs)]
        )

    # ---------------------------------------------------------------- explanation helpers
    def _target_indices(self, target, logits: np.ndarray) -> np.ndarray:
        """Class indices to explain: the predicted class (``target=None``), one label for all
        samples, or one label per sample."""
        indices = self._class_indices(target, len(logits))
        return logits.argmax(axis=1) if indices is None else indices

    def _token_explanation(self, tokens, values, target_idx, logits, method, bias=None,
                           explained_logit=None, queries=None) -> TokenExplanation:
        """Build a :class:`TokenExplanation` from padded ``values`` ``(n, L)``."""
        return TokenExplanation(
            tokens=tokens,
            attributions=[np.asarray(v[: len(t)], dtype=np.float64) for v, t in zip(values, tokens)],
            target=self.classes_[target_idx],
            prediction=self.classes_[logits.argmax(axis=1)],
            method=method,
            logit=explained_logit,
            bias=bias,
            queries=queries,
        )

    # ---------------------------------------------------------------- persistence
    def _get_fitted_state(self) -> dict:
        return {
            "encoder": self.encoder_.get_state(),
            "classes": self.classes_,
            "pair_input": self.pair_input_,
            "embed_dim": self.embed_dim_,
        }

    def _set_fitted_state(self, state: dict) -> None:
        self.encoder_ = TextEncoder.from_state(state["encoder"])
        self.classes_ = np.asarray(state["classes"])
        self.pair_input_ = bool(state["pair_input"])
        # the weights are loaded after the module is built; a zero init of the right shape
        self.embedding_init_ = np.zeros(
            (len(self.encoder_.index_to_token_), state["embed_dim"]), dtype=np.float32
        )
