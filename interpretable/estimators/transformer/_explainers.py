"""Explainers of the fine-tuned BERT-family text classifiers
(:mod:`interpretable.estimators.transformer`), assembled into a
:class:`~interpretable.explanation.WordPieceExplanation`:

* ``"inherent"`` (:class:`BcosTextContributions`, B-cos models only, their default): the exact
  contribution ``W(x)_t · word_t`` of every word piece to the explained logit, one forward and
  one backward pass per batch; the share of the position and token-type embeddings,
  ``Σ_t W(x)_t · (position_t + type_t)``, is part of ``bias`` and kept as ``position_type``,
  so ``sum(values) + bias == logit`` (``completeness_error``: ~1e-7 in float32, ~1e-16 with
  ``dtype="float64"``);
* ``"attention"`` (:class:`BertAttention`): the last layer's head-averaged attention of the
  pooled position(s) (the ``[CLS]`` row, or the mean of the real tokens' rows);
* ``"rollout"`` (:class:`BertRollout`): attention rollout (Abnar & Zuidema, 2020), ``(A + I) / 2``
  of the head-averaged attention multiplied through the layers, then the pooled rows.

* ``"occlusion"`` (leave-one-out, :class:`BertOcclusion`), ``"lime"`` (:class:`BertLime`),
  ``"kernel_shap"`` (:class:`BertKernelShap`): the perturbation methods of
  :mod:`interpretable.estimators.methods` at either ``level``: at ``"word"`` the pieces
  of a word are replaced together (one feature), each piece holds an equal share of the
  word's attribution, so the word's value is the word's own, and ``[CLS]`` / ``[SEP]`` are
  never replaced.

* ``"gradient"`` (:class:`BertGradient`), ``"integrated_gradients"``
  (:class:`BertIntegratedGradients`), ``"input_x_gradient"`` (:class:`BertInputXGradient`),
  ``"smoothgrad"`` (:class:`BertSmoothGrad`), ``"smoothgrad_integrated_gradients"``
  (:class:`BertSmoothGradIntegratedGradients`), ``"gradient_shap"``
  (:class:`BertGradientShap`): the gradient methods of
  :mod:`interpretable.estimators.methods` at either ``level``. Integrated gradients
  (also through the noise tunnel), input × gradient and GradientSHAP are additive, so a
  word's value is the sum of its pieces' (integrated gradients and GradientSHAP stay complete
  at word level); the saliency ``"gradient"`` and ``"smoothgrad"``, L2 norms per piece, give
  a word the L2 norm of its pieces' vectors together, ``sqrt(Σ_pieces norm²)``. Integrated
  gradients and input × gradient take ``layer="<module name>"`` (e.g.
  ``"encoder.bert.encoder.layer.3"`` of the conventional classifier, ``"layers.3"`` of the
  B-cos one): captum's layer integrated gradients and gradient × activation at that layer's
  output, summed over its hidden axis per piece.

DeepLIFT is not offered: the encoders' LayerNorm, GELU and softmax attention are operations
captum's DeepLift has no exact rule for (``explain(method="deeplift")`` names them).

Both attention methods are class-independent. The ``"pad"`` and ``"mask"`` baselines of
integrated gradients and the perturbation methods keep ``[CLS]`` and ``[SEP]`` (``<s>`` /
``</s>``) as they are.

``level`` (the methods above): ``"piece"`` (default) explains the model's tokens,
``[CLS]``, the word pieces and ``[SEP]`` of ``estimator.encode(X)`` (what the faithfulness
metrics perturb); ``"word"`` sums the pieces of every word of the original text (words are
whitespace-separated runs and single punctuation characters; unknown words are one
``[UNK]`` piece; the saliency ``"gradient"`` takes their norm) and moves ``[CLS]`` and
``[SEP]`` into ``bias`` (exact methods, integrated gradients and Kernel SHAP) or leaves them
out (attention, gradient, input × gradient, occlusion, LIME). At both levels ``offsets`` /
``to_frame()``'s ``char_start`` and ``char_end`` are the tokenizer's exact character spans
(``-1`` / <NA> for ``[CLS]`` and ``[SEP]``). A text longer than the model's ``max_length`` is
explained as the model saw it: ``truncated`` counts the pieces cut off, and ``to_html()``
flags it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import torch

from interpretable.estimators.core._attributions import explained_classes
from interpretable.estimators.core._explainer import Attributions, Explainer
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
from interpretable.explanation import (
    WordPieceExplanation,  # defined here before: pickles name this path
)
from interpretable.nn import explained_logits

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.transformer._base import PieceClassifierBase
    from interpretable.estimators.transformer._estimators import BcosTextClassifier

__all__ = [
    "BcosTextContributions",
    "BertAttention",
    "BertExplainer",
    "BertGradient",
    "BertGradientShap",
    "BertInputXGradient",
    "BertIntegratedGradients",
    "BertKernelShap",
    "BertLime",
    "BertOcclusion",
    "BertRollout",
    "BertSmoothGrad",
    "BertSmoothGradIntegratedGradients",
]

LEVELS = ("piece", "word")


def _word_level(values, bias, pieces, text: str, norm: bool = False):
    """Piece values ``(T,)`` -> (word units, word values ``(W,)``, bias plus the ``[CLS]`` /
    ``[SEP]`` values (None stays None), word spans); ``norm``: the values are norms and a
    word's is ``sqrt(Σ value²)`` over its pieces instead of the sum."""
    words = pieces.words
    real = words >= 0
    weights = values[real] ** 2 if norm else values[real]
    pooled = np.bincount(words[real], weights=weights, minlength=len(pieces.spans))
    units = [text[start:end] for start, end in pieces.spans]
    return (units, np.sqrt(pooled) if norm else pooled,
            None if bias is None else bias + values[~real].sum(), pieces.spans)


class BertExplainer(Explainer):
    """Token attributions of a BERT-family text classifier, per word piece or per word.

    ``level="piece"`` (the default) explains the model's tokens: ``[CLS]``, the word pieces
    and ``[SEP]`` of ``estimator.encode(X)``. ``level="word"`` pools the pieces of every word
    of the original text (their sum, or for the saliency methods the L2 norm of their norms)
    and moves ``[CLS]`` and ``[SEP]`` into ``bias`` or leaves them out (see
    :mod:`interpretable.estimators.methods`). The explanation is a
    :class:`~interpretable.explanation.WordPieceExplanation`.

    Examples
    --------
    >>> from interpretable import BertTextClassifier
    >>> from interpretable.estimators.methods import BertExplainer, get_explainer
    >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
    ...           "num_attention_heads": 2, "intermediate_size": 16,
    ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
    ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = BertTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
    ...                          random_state=0).fit(X, ["pos", "pos", "neg", "neg"])
    >>> explainer = get_explainer(clf)  # the default, "attention"
    >>> isinstance(explainer, BertExplainer)
    True
    >>> explainer.explain(clf, ["good film"], level="word").units
    [['good', 'film']]
    """

    #: whether the piece values are norms, pooled into a word's by the L2 norm (else summed)
    norm_values: ClassVar[bool] = False

    def prepare(self, estimator: PieceClassifierBase, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, *, level: str = "piece",
                **options: Any) -> dict[str, Any]:
        """Check ``level`` and the method's other options before anything is computed.

        Parameters
        ----------
        estimator : fitted BERT-family text classifier
            The explained estimator.
        encoded : EncodedInputs
            The encoded texts (``estimator.encode(X)``).
        target : torch.Tensor of shape (n_samples,) or None
            The explained classes (None: the predicted ones).
        level : {"piece", "word"}, default="piece"
            Explain the model's word pieces or the words of the original texts.
        **options
            The method's other options.

        Returns
        -------
        dict
            The options, ``level`` included.

        Raises
        ------
        ValueError
            If ``level`` is neither ``"piece"`` nor ``"word"``.

        Examples
        --------
        >>> from interpretable import BertTextClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
        ...           "num_attention_heads": 2, "intermediate_size": 16,
        ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = BertTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
        ...                          random_state=0).fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "attention"
        >>> explainer.prepare(clf, clf.encode(["good film"]), None, level="word")
        {'level': 'word'}
        """
        if level not in LEVELS:
            raise ValueError(f"level must be one of {list(LEVELS)}, got {level!r}.")
        return {"level": level, **super().prepare(estimator, encoded, target, **options)}

    def assemble(self, estimator: PieceClassifierBase, encoded: EncodedInputs,
                 fields: dict[str, list[Any]], *, level: str = "piece",
                 **options: Any) -> WordPieceExplanation:
        """Build the explanation of the encoded texts from the fields of their attributions.

        Parameters
        ----------
        estimator : fitted BERT-family text classifier
            The explained estimator.
        encoded : EncodedInputs
            The encoded texts (``estimator.encode(X)``), with their word-piece alignments.
        fields : dict of str to list
            Every field of :class:`Attributions` as a list with one entry per text, in input
            order.
        level : {"piece", "word"}, default="piece"
            The units: the model's tokens, or the words of the texts (the values of a word's
            pieces pooled; ``[CLS]`` and ``[SEP]`` moved into ``bias`` or left out).
        **options
            The method's other options.

        Returns
        -------
        WordPieceExplanation
            The explanation (``explain`` calls this last).

        Examples
        --------
        >>> from interpretable import BertTextClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> config = {"vocab_size": 30522, "hidden_size": 8, "num_hidden_layers": 1,
        ...           "num_attention_heads": 2, "intermediate_size": 16,
        ...           "max_position_embeddings": 32, "type_vocab_size": 2, "layer_norm_eps": 1e-12,
        ...           "hidden_dropout_prob": 0.1, "attention_probs_dropout_prob": 0.1}
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = BertTextClassifier(checkpoint=config, max_length=16, max_epochs=1,
        ...                          random_state=0).fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "attention"
        >>> encoded = clf.encode(["good film"])
        >>> _, batch = next(clf.iter_batches(encoded.inputs))
        >>> part = explainer.attribute(clf, batch, None)
        >>> fields = {name: list(value.detach().cpu().numpy())
        ...           for name, value in part.fields().items()}
        >>> explainer.assemble(clf, encoded, fields, level="word").units
        [['good', 'film']]
        """
        logits = torch.as_tensor(np.stack(fields["logits"]), dtype=torch.float64)
        bias = fields.get("bias")
        aligned = encoded.alignments  # the word pieces encode aligned with the texts
        units, values, biases, spans = [], [], [], []
        for i, (tokens, text, pieces) in enumerate(zip(encoded.units, encoded.texts, aligned,
                                                       strict=True)):
            row = np.asarray(fields["values"][i][: len(tokens)], dtype=np.float64)
            row_bias = None if bias is None else float(bias[i])
            if level == "word":
                parts = _word_level(row, row_bias, pieces, text, self.norm_values)
            else:
                parts = tokens, row, row_bias, pieces.offsets
            for column, part in zip((units, values, biases, spans), parts, strict=True):
                column.append(part)
        classes = estimator.classes_
        return WordPieceExplanation(
            units=units, values=values,
            target=classes[np.asarray(fields["target"], dtype=np.int64)],
            prediction=classes[logits.argmax(1).numpy()], method=self.name,
            class_independent=self.class_independent,
            logit=None if "logit" not in fields else np.asarray(fields["logit"], np.float64),
            bias=None if bias is None else np.asarray(biases, dtype=np.float64),
            inputs=encoded.texts, proba=torch.softmax(logits, 1).numpy(), classes=classes,
            level=level, spans=[np.asarray(s, dtype=np.int64).reshape(-1, 2) for s in spans],
            position_type=None if "position_type" not in fields
            else np.asarray(fields["position_type"], dtype=np.float64),
            n_steps=None if "n_steps" not in fields
            else np.asarray(fields["n_steps"], dtype=np.float64),
            truncated=np.array([pieces.dropped for pieces in aligned], dtype=np.int64))


class BcosTextContributions(BertExplainer):
    """The exact B-cos contributions of the word pieces; ``bias`` holds the position /
    token-type share (``position_type``) and the fixed logit bias. ``dtype="float64"``
    explains a float64 copy of the model (completeness to ~1e-16). ``contrast="mean"`` or a
    label explains the logit minus the mean logit or another class's logit, as exactly."""

    name = "inherent"
    dtypes = ("float32", "float64")
    per_sample_options = ("embedding_offset",)

    def attribute(self, estimator: BcosTextClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  contrast: torch.Tensor | None = None,
                  embedding_offset: ArrayLike | None = None) -> Attributions:
        """(``level`` is applied by :meth:`assemble`; ``contrast (B, C)``: the weights of the
        subtracted logits; ``embedding_offset (B, T, E)`` is added to the word-piece
        embeddings, for the stability metrics: the explanation of the perturbed input, as
        exact.)"""
        chosen = None if target is None else torch.as_tensor(target)
        embedded = None
        if embedding_offset is not None:
            with torch.no_grad():
                embedded = estimator.embed(batch)
                offset = torch.as_tensor(embedding_offset)[:, : embedded.shape[1]]
                embedded = embedded + offset.to(embedded)
        c = estimator.module_.contributions(batch["tokens"], batch["lengths"], chosen,
                                            contrast=contrast, embedded=embedded)
        return Attributions(values=c.pieces, logits=c.logits, target=c.target,
                            logit=explained_logits(c.logits, c.target, contrast),
                            bias=c.bias + c.position_type,
                            extras={"position_type": c.position_type})


class _AttentionMaps(BertExplainer):
    """A class-independent map of the attention probabilities of every layer."""

    class_independent = True
    per_sample_options = ("embedding_offset",)

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None) -> Attributions:
        """(``level`` is applied by :meth:`assemble`; ``embedding_offset (B, T, E)`` is added
        to the word-piece embeddings, for the perturbation metrics.)"""
        with torch.no_grad():
            embedded = None
            if embedding_offset is not None:
                embedded = estimator.embed(batch)
                offset = torch.as_tensor(embedding_offset)[:, : embedded.shape[1]]
                embedded = embedded + offset.to(embedded)
            logits, attentions = estimator.forward_with_attention(batch, embedded=embedded)
            real = torch.arange(batch["tokens"].shape[1], device=logits.device)[None] \
                < batch["lengths"][:, None]
            weights = self.pooled(self.matrix([a.mean(1) for a in attentions]), real,
                                  estimator.module_.pooling)
        return Attributions(values=weights, logits=logits.float(),
                            target=explained_classes(logits, target))

    @staticmethod
    def pooled(matrix: torch.Tensor, real: torch.Tensor, pooling: str) -> torch.Tensor:
        """The rows ``(B, T)`` of ``matrix (B, T, T)`` that the classifier reads: the
        ``[CLS]`` row (``"cls"``), the last real token's (``"last"``, a decoder's), or the mean
        of the real tokens' rows (``"mean"``)."""
        if pooling == "cls":
            return matrix[:, 0]
        if pooling == "last":
            return matrix[torch.arange(matrix.shape[0], device=matrix.device), real.sum(1) - 1]
        weights = real.to(matrix.dtype)
        return (matrix * weights[:, :, None]).sum(1) / weights.sum(1, keepdim=True)

    def matrix(self, attentions: list) -> torch.Tensor:
        """Token-to-token weights ``(B, T, T)`` from the head-averaged attention of every
        layer."""
        raise NotImplementedError


class BertAttention(_AttentionMaps):
    """Head-averaged attention of the last layer, of the pooled position(s)."""

    name = "attention"

    def matrix(self, attentions: list) -> torch.Tensor:
        return attentions[-1]


class BertRollout(_AttentionMaps):
    """Attention rollout (Abnar & Zuidema, 2020): ``(A + I) / 2`` per layer, multiplied from
    the first layer up, of the pooled position(s)."""

    name = "rollout"

    def matrix(self, attentions: list) -> torch.Tensor:
        result = None
        for attention in attentions:
            eye = torch.eye(attention.shape[-1], dtype=attention.dtype, device=attention.device)
            mixed = (attention + eye) / 2
            result = mixed if result is None else mixed @ result
        return result


class _WordGroups(BertExplainer):
    """A perturbation method whose features are the pieces (``level="piece"``) or the words
    (``level="word"``: ``prepare`` adds ``words``, the word of every piece, -1 for ``[CLS]`` /
    ``[SEP]``, which are then never replaced)."""

    per_sample_options = ("embedding_offset", "words")

    def prepare(self, estimator: PieceClassifierBase, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, *, level: str = "piece",
                **options: Any) -> dict[str, Any]:
        options = super().prepare(estimator, encoded, target, level=level, **options)
        if level == "word":
            options["words"] = [pieces.words for pieces in encoded.alignments]
        return options

    @staticmethod
    def groups(batch: dict[str, torch.Tensor], words: Sequence[np.ndarray] | None
               ) -> torch.Tensor | None:
        """The feature of every piece ``(B, T)`` from the batch's ``words`` (None: None, each
        piece alone)."""
        if words is None:
            return None
        tokens = batch["tokens"]
        groups = torch.full(tokens.shape, -1, dtype=torch.long)
        for row, word in zip(groups, words, strict=True):
            row[: len(word)] = torch.as_tensor(word)
        return groups.to(tokens.device)


class BertOcclusion(_WordGroups, Occlusion):
    """Occlusion (leave-one-out) of every piece or, at ``level="word"``, of every word (its
    pieces replaced together by the ``baseline``)."""

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None, baseline: str = "zeros",
                  words: Sequence[np.ndarray] | None = None) -> Attributions:
        """(``level`` is applied by :meth:`assemble`, ``words`` set by :meth:`prepare`.)"""
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline,
                                        groups=self.groups(batch, words))


class BertLime(_WordGroups, Lime):
    """LIME over the pieces or, at ``level="word"``, the words (``n_samples`` coalitions per
    text, seeded by ``random_state``)."""

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None, baseline: str = "zeros",
                  n_samples: int = 200, random_state: int | None = 0,
                  words: Sequence[np.ndarray] | None = None) -> Attributions:
        """(``level`` is applied by :meth:`assemble`, ``words`` set by :meth:`prepare`.)"""
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline,
                                        n_samples=n_samples, random_state=random_state,
                                        groups=self.groups(batch, words))


class BertKernelShap(BertLime, KernelShap):
    """Kernel SHAP over the pieces or, at ``level="word"``, the words (``n_samples``
    coalitions per text, seeded by ``random_state``); they sum to the logit minus the
    ``baseline``'s logit (``bias``)."""


class BertGradient(BertExplainer, Gradient):
    """Saliency per piece or, at ``level="word"``, per word: the L2 norm of the gradient at
    the word's pieces' embeddings together (the norm of their norms)."""

    norm_values = True

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None) -> Attributions:
        """(``level`` is applied by :meth:`assemble`.)"""
        return super().attribute(estimator, batch, target, embedding_offset=embedding_offset)


class BertInputXGradient(BertExplainer, InputXGradient):
    """Gradient × embedding per piece or, at ``level="word"``, summed over the word's
    pieces; ``layer="<module name>"``: gradient × activation at that layer's output."""

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None, layer: str | None = None
                  ) -> Attributions:
        """(``level`` is applied by :meth:`assemble`.)"""
        return super().attribute(estimator, batch, target, embedding_offset=embedding_offset,
                                 layer=layer)


class BertIntegratedGradients(BertExplainer, IntegratedGradients):
    """Integrated gradients per piece or, at ``level="word"``, summed over the word's pieces
    (``[CLS]`` / ``[SEP]`` join ``bias``, so ``completeness_error`` is the piece level's);
    ``layer="<module name>"``: layer integrated gradients at that layer's output."""

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None, n_steps: int | str = 50,
                  tolerance: float = 1e-4, baseline: str = "zeros", layer: str | None = None
                  ) -> Attributions:
        """(``level`` is applied by :meth:`assemble`.)"""
        return super().attribute(estimator, batch, target, embedding_offset=embedding_offset,
                                 n_steps=n_steps, tolerance=tolerance, baseline=baseline,
                                 layer=layer)


class BertSmoothGrad(BertExplainer, SmoothGrad):
    """SmoothGrad per piece or, at ``level="word"``, per word: the L2 norm of the smoothed
    gradient at the word's pieces' embeddings together."""

    norm_values = True

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None, nt_type: str = "smoothgrad",
                  nt_samples: int = 10, stdevs: float | None = None,
                  random_state: int | None = 0) -> Attributions:
        """(``level`` is applied by :meth:`assemble`.)"""
        return super().attribute(estimator, batch, target, embedding_offset=embedding_offset,
                                 nt_type=nt_type, nt_samples=nt_samples, stdevs=stdevs,
                                 random_state=random_state)


class BertSmoothGradIntegratedGradients(BertExplainer, SmoothGradIntegratedGradients):
    """Integrated gradients through a noise tunnel per piece or, at ``level="word"``, summed
    over the word's pieces."""

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None, n_steps: int | str = 20,
                  baseline: str = "zeros", nt_type: str = "smoothgrad", nt_samples: int = 10,
                  stdevs: float | None = None, random_state: int | None = 0) -> Attributions:
        """(``level`` is applied by :meth:`assemble`.)"""
        return super().attribute(estimator, batch, target, embedding_offset=embedding_offset,
                                 n_steps=n_steps, baseline=baseline, nt_type=nt_type,
                                 nt_samples=nt_samples, stdevs=stdevs,
                                 random_state=random_state)


class BertGradientShap(BertExplainer, GradientShap):
    """GradientSHAP per piece or, at ``level="word"``, summed over the word's pieces
    (``[CLS]`` / ``[SEP]`` join ``bias``: complete in expectation at both levels)."""

    def attribute(self, estimator: PieceClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, level: str = "piece",
                  embedding_offset: ArrayLike | None = None,
                  baseline: str | Sequence[str] = "zeros", n_samples: int = 10,
                  stdevs: float = 0.0, random_state: int | None = 0) -> Attributions:
        """(``level`` is applied by :meth:`assemble`.)"""
        return super().attribute(estimator, batch, target, embedding_offset=embedding_offset,
                                 baseline=baseline, n_samples=n_samples, stdevs=stdevs,
                                 random_state=random_state)


#: the post-hoc methods of the BERT-family classifiers, in the order they offer them (after
#: the B-cos classifier's exact ``"inherent"``)
POST_HOC = (BertAttention(), BertRollout(), BertGradient(), BertIntegratedGradients(),
            BertInputXGradient(), BertOcclusion(), BertLime(), BertKernelShap(),
            BertSmoothGrad(), BertSmoothGradIntegratedGradients(), BertGradientShap())
