"""Explainers of the text classifiers: token attributions assembled into a
:class:`~interpretable.explanation.TokenExplanation`.

* ``"inherent"`` (:class:`MeanEmbeddingContributions`): the exact per-token contributions of
  the mean-embedding classifier;
* ``"attention"`` / ``"vanilla"``: the attention weights of the model (SEAT's vanilla
  attention ``w`` for ``"vanilla"``);
* ``"gradient"``, ``"integrated_gradients"``, ``"input_x_gradient"``: captum through the
  embedding layer (:func:`~interpretable.attribution.text.attribute_tokens`);
* ``"occlusion"`` (leave-one-out), ``"lime"``, ``"kernel_shap"``: captum's perturbation
  methods over the tokens, each token replaced by the baseline's embedding (one feature per
  token; ``n_samples`` coalitions per text for LIME and Kernel SHAP, seeded by
  ``random_state``);
* ``"detached_gradient"``: the diversity-LSTM authors' gradient × embedding of the class
  probability with the attention held constant.

``baseline`` (integrated gradients and the perturbation methods) is the reference the tokens
move to: ``"zeros"`` (default) the all-zero embedding, ``"pad"`` the padding token's embedding
and ``"mask"`` the mask token's (``[MASK]`` / ``<mask>``; a ValueError where the tokeniser has
none) at every real position, the start and end tokens of a word-piece tokeniser (``[CLS]`` /
``[SEP]``, ``<s>`` / ``</s>``) kept as they are. Integrated gradients and Kernel SHAP report the
logit and, as ``bias``, the logit at the baseline: ``completeness_error`` measures how far
their sum is from the difference.

The post-hoc methods and attention accept ``embedding_offset (n, T, E)``, added to the token
embeddings (perturbation metrics call :meth:`Explainer.explain` with it; the baselines are not
offset).
"""

from __future__ import annotations

import numpy as np
import torch

from ...attribution.text import attribute_tokens
from ...explanation import TokenExplanation
from ...nn.losses import explained_logits, logits_of
from ...text import WordPieceEncoder
from ...text.encoding import PAD_TOKEN
from ..core.attributions import explained_classes
from ..core.explainer import Attributions, Explainer

__all__ = ["TokenExplainer", "MeanEmbeddingContributions", "Attention", "VanillaAttention",
           "Gradient", "IntegratedGradients", "InputXGradient", "Occlusion", "Lime", "KernelShap",
           "DetachedGradient"]

#: the token baselines of integrated gradients and the perturbation methods
BASELINES = ("zeros", "pad", "mask")
#: the mask tokens of the BERT lineage's tokenisers (BERT, DistilBERT, ELECTRA; RoBERTa,
#: XLM-RoBERTa, CamemBERT)
MASK_TOKENS = ("[MASK]", "<mask>")


def _optional(fields: dict, name: str):
    return np.asarray(fields[name], dtype=np.float64) if name in fields else None


class TokenExplainer(Explainer):
    """Token attributions of a text classifier (``values (B, t)`` over the batch's tokens).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.explainers import get_explainer
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.estimators.explainers import TokenExplainer
    >>> isinstance(get_explainer(clf, "gradient"), TokenExplainer)
    True
    """

    def assemble(self, estimator, encoded, fields, **options) -> TokenExplanation:
        """Build the explanation of the encoded samples from the fields of their attributions.

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        encoded : EncodedInputs
            The encoded samples (``estimator.encode(X)``).
        fields : dict of str to list
            Every field of :class:`Attributions` as a list with one entry per sample, in input
            order.
        **options
            The method's options.

        Returns
        -------
        TokenExplanation
            The explanation.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "inherent"
        >>> encoded = clf.encode(["good film"])
        >>> _, batch = next(clf.iter_batches(encoded.inputs))
        >>> part = explainer.attribute(clf, batch, None)
        >>> fields = {name: list(value.detach().cpu().numpy())
        ...           for name, value in part.fields().items()}
        >>> explainer.assemble(clf, encoded, fields).units
        [['good', 'film']]
        """
        logits = torch.as_tensor(np.stack(fields["logits"]), dtype=torch.float64)
        classes = estimator.classes_
        return TokenExplanation(
            units=encoded.units,
            values=[np.asarray(v[: len(u)], dtype=np.float64)
                    for v, u in zip(fields["values"], encoded.units)],
            target=classes[np.asarray(fields["target"], dtype=np.int64)],
            prediction=classes[logits.argmax(1).numpy()],
            method=self.name, logit=_optional(fields, "logit"), bias=_optional(fields, "bias"),
            queries=encoded.queries, inputs=encoded.texts,
            proba=torch.softmax(logits, 1).numpy(), classes=classes,
            class_independent=self.class_independent)

    def embedded(self, estimator, batch: dict, embedding_offset=None) -> torch.Tensor:
        """Return the batch's token embeddings (detached), plus the offset if given.

        Parameters
        ----------
        estimator : fitted text classifier
            The explained estimator.
        batch : dict of str to torch.Tensor
            One batch from ``estimator.iter_batches``.
        embedding_offset : array-like of shape (B, T, E) or None, default=None
            Added to the embeddings (cut to the batch's length).

        Returns
        -------
        torch.Tensor of shape (B, t, E)
            The embeddings.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.explainers import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf)  # the default, "inherent"
        >>> encoded = clf.encode(["good film"])
        >>> _, batch = next(clf.iter_batches(encoded.inputs))
        >>> get_explainer(clf, "gradient").embedded(clf, batch).shape
        torch.Size([1, 2, 8])
        """
        embedded = estimator.embed(batch).detach()
        if embedding_offset is not None:
            offset = torch.as_tensor(embedding_offset)[:, : embedded.shape[1]]
            embedded = embedded + offset.to(embedded)
        return embedded


def _real_tokens(batch: dict, length: int) -> torch.Tensor:
    lengths = batch["lengths"]
    return torch.arange(length, device=lengths.device)[None] < lengths[:, None]


class MeanEmbeddingContributions(TokenExplainer):
    """Exact contributions ``W_c e(x_t) / T`` of every token to the logit of class ``c``; with
    the bias ``b_c`` they reproduce the logit (``completeness_error``).

    contrast : None, "mean" or a label: explain the logit minus the mean logit or another
        class's logit (the difference of the contributions, exact as well)."""

    name = "inherent"

    def attribute(self, estimator, batch, target, *, contrast=None) -> Attributions:
        module = estimator.module_
        with torch.no_grad():
            contributions = module.token_contributions(batch["tokens"], batch["lengths"])
            logits = estimator.forward_batch(batch)
        t = explained_classes(logits, target)
        bias = module.output.bias.detach().expand_as(logits)
        return Attributions(values=explained_logits(contributions, t, contrast), logits=logits,
                            target=t, logit=explained_logits(logits, t, contrast),
                            bias=explained_logits(bias, t, contrast))


class Attention(TokenExplainer):
    """The model's attention weights (class-independent: the same for every target)."""

    name = "attention"
    class_independent = True
    per_sample_options = ("embedding_offset",)

    def attribute(self, estimator, batch, target, *, embedding_offset=None) -> Attributions:
        with torch.no_grad():
            embedded = None if embedding_offset is None else \
                self.embedded(estimator, batch, embedding_offset)
            out = estimator.forward_batch(batch, embedded=embedded, view=self.view)
        return Attributions(values=out.attention, logits=out.logits,
                            target=explained_classes(out.logits, target))


def _baseline_ids(estimator, baseline: str) -> tuple[int, torch.Tensor]:
    """The token id the "pad" / "mask" baseline puts at every real position, and the ids it
    keeps (a word-piece tokeniser's start and end tokens)."""
    encoder = estimator.text_encoder_
    if isinstance(encoder, WordPieceEncoder):
        settings = encoder.settings_
        kept, pad = [settings["cls_token"], settings["sep_token"]], settings["pad_token"]
    else:
        kept, pad = [], PAD_TOKEN
    names = [pad] if baseline == "pad" else list(MASK_TOKENS)
    ids, _ = encoder.encode_tokens([names, kept])
    found = [int(i) for i, name in zip(ids[0], names) if encoder.index_to_token_[i] == name]
    if not found:
        raise ValueError(f"baseline='mask' needs a mask token ({' or '.join(MASK_TOKENS)}); "
                         f"the tokeniser of {type(estimator).__name__} has none: use "
                         "baseline='pad' or 'zeros'.")
    return found[0], torch.as_tensor(ids[1][: len(kept)])


class _Captum(TokenExplainer):
    """Captum attributions of the explained logit to the token embeddings
    (:func:`~interpretable.attribution.text.attribute_tokens`)."""

    per_sample_options = ("embedding_offset",)

    def baseline_embedding(self, estimator, batch: dict, embedded: torch.Tensor,
                           baseline: str = "zeros") -> torch.Tensor:
        """The embeddings ``(B, T, E)`` of ``baseline``, one of :data:`BASELINES`."""
        if baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {list(BASELINES)}, got {baseline!r}.")
        if baseline == "zeros":
            return torch.zeros_like(embedded)
        token, kept = _baseline_ids(estimator, baseline)
        tokens = batch["tokens"]
        replaced = _real_tokens(batch, tokens.shape[1]) & ~torch.isin(tokens,
                                                                      kept.to(tokens.device))
        with torch.no_grad():
            return estimator.embed({**batch, "tokens": tokens.masked_fill(replaced, token)}
                                   ).detach().to(embedded)

    def captum_attributions(self, estimator, batch: dict, target, *, embedding_offset=None,
                            baseline: str = "zeros", **settings) -> Attributions:
        """The attributions of ``self.name`` (``settings``: the further keyword arguments of
        :func:`~interpretable.attribution.text.attribute_tokens`); logit and bias where the
        method is complete against its baseline."""
        keys = list(batch)

        def forward(embedded, *args):
            return logits_of(estimator.forward_batch(dict(zip(keys, args)), embedded=embedded,
                                                     view=self.view))

        embedded = self.embedded(estimator, batch, embedding_offset)
        with torch.no_grad():
            logits = forward(embedded, *batch.values()).float()
        t = explained_classes(logits, target)
        result = attribute_tokens(
            forward, embedded, t, self.name, mask=_real_tokens(batch, embedded.shape[1]),
            additional_forward_args=tuple(batch.values()),
            baseline=self.baseline_embedding(estimator, batch, embedded, baseline), **settings)
        exact = result.baseline_logit is not None
        return Attributions(values=result.scores, logits=logits, target=t,
                            logit=logits.gather(1, t[:, None])[:, 0] if exact else None,
                            bias=result.baseline_logit)


class Gradient(_Captum):
    """Saliency: the L2 norm of the gradient of the logit at every token embedding."""

    name = "gradient"

    def attribute(self, estimator, batch, target, *, embedding_offset=None) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset)


class IntegratedGradients(_Captum):
    """Integrated gradients from ``baseline`` (``"zeros"``, ``"pad"`` or ``"mask"``, see the
    module docstring; ``n_steps`` integration steps); the baseline's logit is the ``bias``, so
    ``completeness_error`` measures convergence."""

    name = "integrated_gradients"

    def attribute(self, estimator, batch, target, *, embedding_offset=None, n_steps=50,
                  baseline="zeros") -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, n_steps=n_steps,
                                        baseline=baseline)


class InputXGradient(Gradient):
    """Gradient × embedding, summed over the embedding axis."""

    name = "input_x_gradient"


class Occlusion(_Captum):
    """Occlusion, i.e. leave-one-out (captum ``FeatureAblation``): the drop of the logit when
    one token's embedding is replaced by the ``baseline``'s (``"zeros"``, ``"pad"`` or
    ``"mask"``)."""

    name = "occlusion"

    def attribute(self, estimator, batch, target, *, embedding_offset=None,
                  baseline="zeros") -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline)


class Lime(_Captum):
    """LIME (captum ``Lime``): a Lasso surrogate fitted to ``n_samples`` random coalitions of
    the tokens per text (the others replaced by the ``baseline``), seeded by
    ``random_state`` (None: unseeded)."""

    name = "lime"

    def attribute(self, estimator, batch, target, *, embedding_offset=None, baseline="zeros",
                  n_samples=200, random_state=0) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline,
                                        n_samples=n_samples, random_state=random_state)


class KernelShap(Lime):
    """Kernel SHAP (captum ``KernelShap``): Shapley values of the tokens estimated from
    ``n_samples`` coalitions per text, seeded by ``random_state``; they sum to the logit minus
    the ``baseline``'s logit (the ``bias``; ``completeness_error``)."""

    name = "kernel_shap"


class DetachedGradient(TokenExplainer):
    """The diversity-LSTM authors' "gradient" attribution: ``(∂p_c / ∂e_t) · e_t`` per token,
    ``p_c`` the softmax probability of the explained class with the attention weights held
    constant (detached), ``e_t`` the token embedding."""

    name = "detached_gradient"

    def attribute(self, estimator, batch, target) -> Attributions:
        keys = list(batch)

        def probabilities(embedded, *args):
            inputs = dict(zip(keys, args))
            with torch.no_grad():
                attention = estimator.forward_batch(inputs, embedded=embedded).attention
            return torch.softmax(estimator.forward_batch(inputs, embedded=embedded,
                                                         attention=attention).logits, 1)

        embedded = self.embedded(estimator, batch)
        with torch.no_grad():
            out = estimator.forward_batch(batch, embedded=embedded)
        t = explained_classes(out.logits, target)
        result = attribute_tokens(probabilities, embedded, t, "input_x_gradient",
                                  mask=out.mask, additional_forward_args=tuple(batch.values()))
        return Attributions(values=result.scores, logits=out.logits.float(), target=t)


class VanillaAttention(Attention):
    """SEAT's vanilla attention ``w`` (prediction and target refer to the vanilla model);
    only models trained with the paper's objective keep it."""

    name = "vanilla"
    view = "vanilla"
