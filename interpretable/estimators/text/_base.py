"""Shared machinery of the text classifiers: encoding, labels, embeddings, training and the
embedding-level forward used by every explainer and metric."""

from __future__ import annotations

import functools
from collections.abc import Hashable, Sequence
from numbers import Integral
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from sklearn.base import clone

from interpretable._validation import check_targets, check_text_inputs
from interpretable.estimators.core._base import TABULAR_CHECKS, EncodedInputs
from interpretable.estimators.core._classifier import TABULAR_CLASSIFIER_CHECKS, NeuralClassifier
from interpretable.estimators.text._explainers import (
    Gradient,
    GradientShap,
    InputXGradient,
    IntegratedGradients,
    KernelShap,
    Lime,
    Occlusion,
    SmoothGrad,
    SmoothGradIntegratedGradients,
)
from interpretable.nn import OutputCrossEntropy
from interpretable.utils import HasMethods, Interval, StrOptions

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._explainer import Explainer
    from interpretable.explanation import TokenExplanation

__all__ = ["TextClassifierBase", "VocabularyClassifierBase"]


def _text_encoders() -> dict:
    """The text encoder classes a saved model may name (the text package and its tokenizer
    are imported when first used, not with the estimators)."""
    from interpretable.preprocessing import TextEncoder, WordPieceEncoder

    return {cls.__name__: cls for cls in (TextEncoder, WordPieceEncoder)}


def resolve_embeddings(embeddings):
    """``"glove-50"`` → the offline GloVe ``KeyedVectors``; a ``KeyedVectors`` is returned as is;
    ``None`` means learned from scratch."""
    if isinstance(embeddings, str):
        from interpretable.datasets import load_glove

        return load_glove(50)
    return embeddings


def trim_padding(batch: dict) -> dict:
    """Cut ``tokens`` / ``query`` of a batch dict to the batch's longest real length."""
    out = dict(batch)
    for ids, lengths in (("tokens", "lengths"), ("query", "query_lengths")):
        if ids in out:
            out[ids] = out[ids][:, : max(int(out[lengths].max()), 1)]
    return out


def trim_collate(items):
    """DataLoader collate: stack, then trim padding (training batches run only real steps)."""
    X, y = torch.utils.data.default_collate(items)
    return trim_padding(X), y


class TextClassifierBase(NeuralClassifier):
    """Base of the text classifiers.

    Inputs are a list of str, or of ``(text, query)`` pairs when the model supports them
    (``_supports_pairs``). Subclasses implement ``_fit`` (:class:`VocabularyClassifierBase`:
    a vocabulary learned from the texts), ``_build_module(embeddings)`` (an
    ``interpretable.nn`` module with ``embed(tokens)`` and ``forward(tokens, lengths, ...,
    embedded=None)`` returning the logits or a tuple starting with them) and ``_criterion()``.
    The token explainers of :mod:`interpretable.estimators.methods` apply to every
    text classifier (through :meth:`embed` and :meth:`forward_batch`).

    Fitted attributes: ``text_encoder_``, ``classes_``, ``pair_input_``, ``embed_dim_``,
    ``module_``, ``history_``, ``device_``.
    """

    #: the explanation methods it offers, its default first
    explainers = (Gradient(), IntegratedGradients(), InputXGradient(), Occlusion(), Lime(),
                  KernelShap(), SmoothGrad(), SmoothGradIntegratedGradients(), GradientShap())

    _supports_pairs = False
    _expected_failed_checks = {
        **dict.fromkeys(TABULAR_CHECKS + TABULAR_CLASSIFIER_CHECKS,
                        "fits on 2-d numeric data, which a text classifier refuses: it takes "
                        "texts (a 1-d sequence of str)"),
        "check_fit1d": "fits on a 1-d float array: a number is not a text, refused with a "
                       "TypeError where the check wants a ValueError",
    }
    #: model variants :meth:`forward_batch` can run (SEAT adds its vanilla attention)
    views: tuple[str, ...] = ("model",)

    if TYPE_CHECKING:  # BatchedInference.explain, whose explanations are token explanations here
        def explain(self, X: Sequence[str] | ArrayLike,
                    target: Hashable | ArrayLike | None = None, *,
                    contrast: Hashable | ArrayLike | None = None,
                    method: str | Explainer | None = None, batch_size: int | None = None,
                    **options: Any) -> TokenExplanation: ...

    # ---------------------------------------------------------------- hooks
    def _build_module(self, embeddings=None) -> torch.nn.Module:
        raise NotImplementedError

    def _initial_module(self, embeddings=None) -> torch.nn.Module:
        """The module training starts from (pretrained parts loaded); ``_build_module`` alone
        builds the structure that saved weights are loaded into."""
        return self._build_module(embeddings)

    def _criterion(self) -> torch.nn.Module:
        """Training loss, called as ``criterion(module_output, y)``."""
        return OutputCrossEntropy()

    # ---------------------------------------------------------------- inputs
    def _split_inputs(self, X, *, fitting: bool):
        """Texts and queries (None for plain texts); blank texts only outside ``fit``."""
        texts, queries = check_text_inputs(X, allow_blank=not fitting)
        is_pair = queries is not None
        if is_pair and not self._supports_pairs:
            raise ValueError(f"{type(self).__name__} does not take (text, query) pairs; "
                             "pass a list of str.")
        if not fitting and is_pair != self.pair_input_:
            kind = "(text, query) pairs" if self.pair_input_ else "plain texts"
            raise ValueError(f"this model was fitted on {kind}; got the other kind of input.")
        return texts, queries

    def _encode_texts(self, texts, queries) -> EncodedInputs:
        tokens, inputs = self._encoded(texts, "tokens", "lengths")
        query_tokens = None
        if queries is not None:
            query_tokens, query_inputs = self._encoded(queries, "query", "query_lengths")
            inputs.update(query_inputs)
            texts = list(zip(texts, queries, strict=True))
        return EncodedInputs(inputs, units=tokens, queries=query_tokens, texts=texts)

    def _encoded(self, texts, ids_key: str, lengths_key: str) -> tuple[list, dict]:
        """Tokens of ``texts`` and their ids / lengths tensors. A blank text (allowed when
        predicting) has no tokens; the module reads it as one padding token, so it is
        predicted from no evidence and explained by no unit."""
        encoder = self.text_encoder_
        blank = any(not text.strip() for text in texts)
        tokens = encoder.tokenize_many(texts, allow_blank=True) if blank \
            else encoder.tokenize_many(texts)
        ids, lengths = encoder.encode_tokens(tokens)
        ids, lengths = torch.from_numpy(ids), torch.from_numpy(lengths)
        return tokens, {ids_key: ids, lengths_key: lengths.clamp(min=1)}

    def encode(self, X: Sequence[str] | ArrayLike) -> EncodedInputs:
        """Validate and encode texts (or pairs) as module inputs.

        Parameters
        ----------
        X : sequence of str or of (str, str) pairs, of shape (n_samples,)
            Texts, or (text, query) pairs for a model fitted on pairs.

        Returns
        -------
        EncodedInputs
            ``inputs``: ``tokens (n, T)``, ``lengths (n,)`` [, ``query``, ``query_lengths``];
            ``units``: the tokens of each text.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> batch = clf.encode(["good film", "bad"])
        >>> batch.inputs["tokens"].shape, batch.units
        (torch.Size([2, 2]), [['good', 'film'], ['bad']])
        """
        self._check_fitted()
        return self._encode_texts(*self._split_inputs(X, fitting=False))

    def _trim_batch(self, batch: dict) -> dict:
        return trim_padding(batch)

    def _inference_order(self, inputs) -> torch.Tensor:
        return torch.argsort(inputs["lengths"], descending=True, stable=True)

    # ---------------------------------------------------------------- forward
    def embed(self, batch: dict) -> torch.Tensor:
        """Return the token embeddings of a batch of device tensors.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            One batch from :meth:`iter_batches` (``tokens (B, T)``, ...).

        Returns
        -------
        torch.Tensor of shape (B, T, E)
            The embeddings.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> _, batch = next(clf.iter_batches(clf.encode(["good film"]).inputs))
        >>> clf.embed(batch).shape
        torch.Size([1, 2, 8])
        """
        return self.module_.embed(batch["tokens"])

    def _check_view(self, view: str) -> None:
        if view not in self.views:
            raise ValueError(f"view={view!r} is not available for {type(self).__name__}; "
                             f"choose one of {list(self.views)}.")

    def forward_batch(self, batch: dict[str, torch.Tensor], *,
                      embedded: torch.Tensor | None = None, view: str = "model") -> Any:
        """Run the module on a batch, optionally on replaced embeddings.

        Parameters
        ----------
        batch : dict of str to torch.Tensor
            One batch from :meth:`iter_batches`.
        embedded : torch.Tensor of shape (B, T, E) or None, default=None
            Embeddings that replace the token embeddings (gradient methods).
        view : str, default="model"
            The model variant (one of ``views``).

        Returns
        -------
        object
            The module output (logits ``(B, n_classes)`` or a tuple starting with them).

        Raises
        ------
        ValueError
            If ``view`` is not one of ``views``.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)
        >>> _, batch = next(clf.iter_batches(clf.encode(["good film"]).inputs))
        >>> clf.forward_batch(batch, embedded=clf.embed(batch) * 0).shape
        torch.Size([1, 2])
        """
        self._check_view(view)
        return self.module_(**batch, embedded=embedded)

    # ---------------------------------------------------------------- persistence
    def _get_fitted_state(self) -> dict:
        return {
            "text_encoder": {"class": type(self.text_encoder_).__name__,
                             **self.text_encoder_.get_state()},
            "classes": self.classes_,
            "pair_input": self.pair_input_,
            "embed_dim": self.embed_dim_,
        }

    def _set_fitted_state(self, state: dict) -> None:
        encoder_state = dict(state["text_encoder"])
        self.text_encoder_ = _text_encoders()[encoder_state.pop("class")].from_state(encoder_state)
        self.classes_ = np.asarray(state["classes"])
        self.pair_input_ = bool(state["pair_input"])
        self.embed_dim_ = int(state["embed_dim"])


class VocabularyClassifierBase(TextClassifierBase):
    """Base of the text classifiers that learn their vocabulary from the training texts
    (``text_encoder``, default :class:`~interpretable.preprocessing.TextEncoder`) and an embedding
    table of ``embed_dim`` (or pretrained ``embeddings``, ``freeze_embeddings``)."""

    _parameter_constraints = {
        **NeuralClassifier._parameter_constraints,
        "text_encoder": [HasMethods(["fit", "tokenize_many", "encode_tokens"]), None],
        "embeddings": [StrOptions({"glove-50"}), HasMethods(["get_vector"]), None],
        "embed_dim": [Interval(Integral, 1, None, closed="left")],
        "freeze_embeddings": ["boolean"],
    }

    def _default_text_encoder(self):
        return _text_encoders()["TextEncoder"]()

    def _fit(self, X, y, sample_weight=None):
        """Learn the vocabulary and classes (kept from the previous fit with ``warm_start``)
        and train."""
        seed = self._start_fit()
        continues = self._continues()
        texts, queries = self._split_inputs(X, fitting=not continues)
        y = check_targets(y, n_samples=len(texts))
        y_index = self._fit_labels(y)
        if continues:
            module_factory = self._warm_started(self._build_module)
        else:
            self.pair_input_ = queries is not None
            encoder = self.text_encoder if self.text_encoder is not None \
                else self._default_text_encoder()
            self.text_encoder_ = clone(encoder).fit(texts + (queries or []))
            vectors = resolve_embeddings(getattr(self, "embeddings", None))
            init = None if vectors is None else \
                self.text_encoder_.embedding_matrix(vectors, random_state=seed)
            self.embed_dim_ = int(self.embed_dim if init is None else init.shape[1])
            module_factory = functools.partial(self._initial_module, init)
        inputs = self._encode_texts(texts, queries).inputs
        self._fit_net(module_factory, self._criterion(), inputs,
                      torch.from_numpy(y_index.astype(np.int64)), seed=seed,
                      sample_weight=self._training_weights(y_index, sample_weight),
                      iterator_train__collate_fn=trim_collate,
                      iterator_valid__collate_fn=trim_collate)
