"""Explainers of the text classifiers: token attributions assembled into a
:class:`~interpretable.explanation.TokenExplanation`.

* ``"inherent"`` (:class:`MeanEmbeddingContributions`): the exact per-token contributions of
  the mean-embedding classifier;
* ``"attention"`` / ``"vanilla"``: the attention weights of the model (SEAT's vanilla
  attention ``w`` for ``"vanilla"``);
* ``"gradient"``, ``"integrated_gradients"``, ``"input_x_gradient"``: captum through the
  embedding layer (:func:`~interpretable.attribution.attribute_tokens`); with
  ``layer="<module name>"`` (a name of ``estimator.module_.named_modules()`` whose output has
  one vector per token) integrated gradients and input × gradient attribute to that layer's
  output instead (captum ``LayerIntegratedGradients``, ``LayerGradientXActivation``: gradient
  × activation), summed over its hidden axis per token (at the embedding module itself they
  are the methods at the embeddings);
* ``"smoothgrad"``: SmoothGrad, captum ``NoiseTunnel`` over ``Saliency`` (the gradient
  averaged over ``nt_samples`` noisy copies of the embeddings, its L2 norm per token;
  ``nt_type`` ``"smoothgrad_sq"`` / ``"vargrad"``: the mean square / variance);
  ``"smoothgrad_integrated_gradients"``: ``NoiseTunnel`` over integrated gradients;
  ``"gradient_shap"``: captum ``GradientShap`` from the ``baseline`` (or a tuple of them: the
  distribution its ``n_samples`` draws pick from). The noise has standard deviation
  ``stdevs`` (SmoothGrad's default None: 15 % of the spread of each text's embeddings); every
  text draws from its own generator seeded by ``random_state``;
* ``"deeplift"``: captum ``DeepLift`` from the ``baseline``, offered where it is exact (the
  mean-embedding classifier: its attributions sum to the logit minus the baseline's logit)
  and refused elsewhere, naming the operations of the network that prevent it
  (:func:`~interpretable.attribution.deeplift_blockers`);
* ``"occlusion"`` (leave-one-out), ``"lime"``, ``"kernel_shap"``: captum's perturbation
  methods over the tokens, each token replaced by the baseline's embedding (one feature per
  token; ``n_samples`` coalitions per text for LIME and Kernel SHAP, seeded by
  ``random_state``);
* ``"detached_gradient"``: the diversity-LSTM authors' gradient × embedding of the class
  probability with the attention held constant.

``baseline`` (integrated gradients, GradientSHAP, DeepLIFT and the perturbation methods) is
the reference the tokens move to: ``"zeros"`` (default) the all-zero embedding, ``"pad"`` the
padding token's embedding and ``"mask"`` the mask token's (``[MASK]`` / ``<mask>``; a
ValueError where the tokenizer has none) at every real position, the start and end tokens of
a word-piece tokenizer (``[CLS]`` / ``[SEP]``, ``<s>`` / ``</s>``) kept as they are.
Integrated gradients (also at a layer: there the logit with the layer's output at its
baseline value), Kernel SHAP, GradientSHAP (the mean over its baselines) and DeepLIFT report
the logit and, as ``bias``, the logit at the baseline: ``completeness_error`` measures how far
their sum is from the difference.

DeepLIFT and the layer methods hook into the network while they run (captum's way); they run
on a copy of the network's modules that shares its weights
(:func:`~interpretable.attribution.own_hooks_copy`), so the fitted model is never
hooked and several threads may explain it at once.

The post-hoc methods and attention accept ``embedding_offset (n, T, E)``, added to the token
embeddings (perturbation metrics call :meth:`Explainer.explain` with it; the baselines are not
offset).
"""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interpretable.attribution import (
    PERTURBATION_METHODS,
    attribute_tokens,
    deeplift_refusal,
    find_layer,
    own_hooks_copy,
)
from interpretable.estimators.core._attributions import explained_classes
from interpretable.estimators.core._explainer import Attributions, Explainer
from interpretable.explanation import TokenExplanation
from interpretable.nn import explained_logits, logits_of
from interpretable.preprocessing import PAD_TOKEN, WordPieceEncoder

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._encoded import EncodedInputs
    from interpretable.estimators.core._inference import BatchedInference
    from interpretable.estimators.text._attention import AttentionClassifierBase
    from interpretable.estimators.text._base import TextClassifierBase
    from interpretable.estimators.text._embedding_bag import EmbeddingBagClassifier

__all__ = ["TokenExplainer", "MeanEmbeddingContributions", "Attention", "VanillaAttention",
           "Gradient", "IntegratedGradients", "InputXGradient", "Occlusion", "Lime", "KernelShap",
           "SmoothGrad", "SmoothGradIntegratedGradients", "GradientShap", "DeepLift",
           "DetachedGradient"]

#: the token baselines of integrated gradients and the perturbation methods
BASELINES = ("zeros", "pad", "mask")
#: the mask tokens of the BERT lineage's tokenizers (BERT, DistilBERT, ELECTRA; RoBERTa,
#: XLM-RoBERTa, CamemBERT)
MASK_TOKENS = ("[MASK]", "<mask>")


def _optional(fields: dict, name: str):
    return np.asarray(fields[name], dtype=np.float64) if name in fields else None


class TokenExplainer(Explainer):
    """Token attributions of a text classifier (``values (B, t)`` over the batch's tokens).

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.estimators.methods import get_explainer
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
    >>> from interpretable.estimators.methods import TokenExplainer
    >>> isinstance(get_explainer(clf, "gradient"), TokenExplainer)
    True
    """

    def assemble(self, estimator: TextClassifierBase, encoded: EncodedInputs,
                 fields: dict[str, list[Any]], **options: Any) -> TokenExplanation:
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
        >>> from interpretable.estimators.methods import get_explainer
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
                    for v, u in zip(fields["values"], encoded.units, strict=True)],
            target=classes[np.asarray(fields["target"], dtype=np.int64)],
            prediction=classes[logits.argmax(1).numpy()],
            method=self.name, logit=_optional(fields, "logit"), bias=_optional(fields, "bias"),
            n_steps=_optional(fields, "n_steps"),
            queries=encoded.queries, inputs=encoded.texts,
            proba=torch.softmax(logits, 1).numpy(), classes=classes,
            class_independent=self.class_independent)

    def embedded(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                 embedding_offset: ArrayLike | None = None) -> torch.Tensor:
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
        >>> from interpretable.estimators.methods import get_explainer
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

    def attribute(self, estimator: EmbeddingBagClassifier, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, contrast: torch.Tensor | None = None
                  ) -> Attributions:
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

    def attribute(self, estimator: AttentionClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None
                  ) -> Attributions:
        with torch.no_grad():
            embedded = None if embedding_offset is None else \
                self.embedded(estimator, batch, embedding_offset)
            out = estimator.forward_batch(batch, embedded=embedded, view=self.view)
        return Attributions(values=out.attention, logits=out.logits,
                            target=explained_classes(out.logits, target))


def _baseline_ids(estimator, baseline: str) -> tuple[int, torch.Tensor]:
    """The token id the "pad" / "mask" baseline puts at every real position, and the ids it
    keeps (the special tokens a word-piece tokenizer puts before and after a text)."""
    encoder = estimator.text_encoder_
    if isinstance(encoder, WordPieceEncoder):
        settings = encoder.settings_
        kept = [t for t in settings["prefix"] + settings["suffix"] if t is not None]
        pad = settings["pad_token"]
    else:
        kept, pad = [], PAD_TOKEN
    names = [pad] if baseline == "pad" else list(MASK_TOKENS)
    ids, _ = encoder.encode_tokens([names, kept])
    # the rows are padded to the longer of names and kept: names' ids are the first len(names)
    found = [int(i) for i, name in zip(ids[0][: len(names)], names, strict=True)
             if encoder.index_to_token_[i] == name]
    if not found:
        wanted = (f"a padding token ({pad!r})" if baseline == "pad" else
                  f"a mask token ({' or '.join(MASK_TOKENS)})")
        other = "'mask' or 'zeros'" if baseline == "pad" else "'pad' or 'zeros'"
        raise ValueError(f"baseline={baseline!r} needs {wanted}; the tokenizer of "
                         f"{type(estimator).__name__} has none: use baseline={other}.")
    return found[0], torch.as_tensor(ids[1][: len(kept)])


def _own_hooks(estimator):
    """A copy of the estimator whose network is :func:`own_hooks_copy`'s (same weights, hooks
    of its own): what captum hooks while it runs never reaches the fitted model."""
    twin = copy.copy(estimator)
    twin.module_ = own_hooks_copy(estimator.module_)
    return twin


def _embedding_module(estimator, batch: dict):
    """The module of the estimator's network whose output ``estimator.embed`` returns (None
    if it returns something else)."""
    outputs = []
    handles = [module.register_forward_hook(
        lambda module, inputs, output: outputs.append((module, output)))
        for module in estimator.module_.modules()]
    try:
        with torch.no_grad():
            embedded = estimator.embed(batch)
    finally:
        for handle in handles:
            handle.remove()
    return next((module for module, output in outputs if output is embedded), None)


class _Network(torch.nn.Module):
    """An estimator's network as a module of the token embeddings, ``(embedded,
    *batch.values()) -> logits``: what captum's DeepLift hooks (its submodules are the
    network's)."""

    #: its own forward only runs the network (whose modules DeepLIFT's check inspects)
    deeplift_linear = True

    def __init__(self, estimator, keys: list, view: str):
        super().__init__()
        self.network = estimator.module_
        self.estimator, self.keys, self.view = estimator, keys, view

    def forward(self, embedded, *args):
        return logits_of(self.estimator.forward_batch(dict(zip(self.keys, args, strict=True)),
                                                      embedded=embedded, view=self.view))


class _Captum(TokenExplainer):
    """Captum attributions of the explained logit to the token embeddings
    (:func:`~interpretable.attribution.attribute_tokens`)."""

    per_sample_options = ("embedding_offset",)

    def prepare(self, estimator: TextClassifierBase, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, **options: Any) -> dict[str, Any]:
        if options.get("layer") is not None and len(encoded):
            _, batch = next(estimator.iter_batches(encoded.inputs, 1))
            self.layer_output(estimator, batch, options["layer"])
        return super().prepare(estimator, encoded, target, **options)

    def baseline_embedding(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                           embedded: torch.Tensor, baseline: str | Sequence[str] = "zeros"
                           ) -> torch.Tensor:
        """The embeddings ``(B, T, E)`` of ``baseline``, one of :data:`BASELINES` (a tuple or
        list of them: ``(B, K, T, E)``, one per baseline)."""
        if isinstance(baseline, (tuple, list)) and self.name == "gradient_shap":
            if not baseline:
                raise ValueError("baseline must name at least one baseline.")
            return torch.stack([self.baseline_embedding(estimator, batch, embedded, b)
                                for b in baseline], 1)
        if not isinstance(baseline, str) or baseline not in BASELINES:
            several = " (or a tuple of them)" if self.name == "gradient_shap" else ""
            raise ValueError(f"baseline must be one of {list(BASELINES)}{several}, got "
                             f"{baseline!r}.")
        if baseline == "zeros":
            return torch.zeros_like(embedded)
        token, kept = _baseline_ids(estimator, baseline)
        tokens = batch["tokens"]
        replaced = _real_tokens(batch, tokens.shape[1]) & ~torch.isin(tokens,
                                                                      kept.to(tokens.device))
        with torch.no_grad():
            return estimator.embed({**batch, "tokens": tokens.masked_fill(replaced, token)}
                                   ).detach().to(embedded)

    def layer_forward(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor]
                      ) -> Callable[..., torch.Tensor]:
        """The forward function of a layer method, ``(embedded, *batch.values()) -> logits``,
        on ``estimator`` (an :func:`_own_hooks` copy), along which the embedding module (the
        module whose output ``estimator.embed`` returns) runs with the given embeddings as
        its output, so that it is one of the layers too: where the network does not run it
        when given embeddings, it is run here with its output replaced."""
        keys = list(batch)
        embedding = _embedding_module(estimator, batch)
        if embedding is not None:
            first = {k: v[:1] for k, v in batch.items()}
            with torch.no_grad():
                words = estimator.embed(first)
                calls = []
                handle = embedding.register_forward_hook(lambda *_: calls.append(1))
                try:
                    estimator.forward_batch(first, embedded=words, view=self.view)
                finally:
                    handle.remove()
            if calls:  # the network runs it, its output replaced by the embeddings given
                embedding = None
        current: dict[str, torch.Tensor] = {}
        if embedding is not None:
            embedding.register_forward_hook(lambda module, inputs, output: current["embedded"])

        def forward(embedded, *args):
            inputs = dict(zip(keys, args, strict=True))
            current["embedded"] = embedded
            words = embedded if embedding is None else estimator.embed(inputs)
            return logits_of(estimator.forward_batch(inputs, embedded=words, view=self.view))

        return forward

    def layer_output(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                     layer: str) -> None:
        """Check that ``layer`` names a module of the network that runs when the batch is
        explained and gives one vector per token (a ValueError saying what it is
        otherwise)."""
        owner = type(estimator).__name__
        twin = _own_hooks(estimator)
        module = find_layer(twin.module_, layer, owner)
        embedded = estimator.embed(batch).detach()
        forward = self.layer_forward(twin, batch)
        seen = []
        handle = module.register_forward_hook(lambda m, inputs, output: seen.append(output))
        try:
            with torch.no_grad():
                forward(embedded, *batch.values())
        finally:
            handle.remove()
        if len(seen) != 1:
            runs = ("does not run" if not seen else
                    f"runs {len(seen)} times in one forward pass (captum's layer methods "
                    "replace the output of one call)")
            raise ValueError(f"layer={layer!r} {runs} when {owner} is explained from its "
                             "token embeddings: choose a module that runs once in its forward "
                             "pass (the embedding module, or one after it).")
        output, length = seen[0], batch["tokens"].shape[1]
        if not isinstance(output, torch.Tensor) or output.dim() < 2 or \
                tuple(output.shape[:2]) != (len(batch["tokens"]), length):
            shape = (f"a tensor of shape {tuple(output.shape)}" if isinstance(output, torch.Tensor)
                     else f"a {type(output).__name__}")
            raise ValueError(f"layer={layer!r} gives {shape}, not one tensor with a row per "
                             f"token ({len(batch['tokens'])}, {length}, ...): choose a layer "
                             "whose output is (B, T, ...), e.g. the module around it or one "
                             "of its submodules.")

    def captum_attributions(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                            target: ArrayLike | None, *,
                            embedding_offset: ArrayLike | None = None,
                            baseline: str | Sequence[str] = "zeros", layer: str | None = None,
                            **settings: Any) -> Attributions:
        """The attributions of ``self.name`` (``settings``: the further keyword arguments of
        :func:`~interpretable.attribution.attribute_tokens`; ``layer``: a module name);
        logit and bias where the method is complete against its baseline."""
        keys = list(batch)

        def forward(embedded, *args):
            return logits_of(estimator.forward_batch(dict(zip(keys, args, strict=True)),
                                                     embedded=embedded, view=self.view))

        embedded = self.embedded(estimator, batch, embedding_offset)
        with torch.no_grad():
            logits = forward(embedded, *batch.values()).float()
        t = explained_classes(logits, target)
        module = None
        if layer is not None:  # (prepare checked that it runs and has a row per token)
            twin = _own_hooks(estimator)
            module = find_layer(twin.module_, layer, type(estimator).__name__)
            forward = self.layer_forward(twin, batch)
        elif self.name == "deeplift":
            forward = _Network(_own_hooks(estimator), keys, self.view)
        # the perturbation methods only run forward passes: in the predictions' precision
        precision = estimator.inference_autocast() if self.name in PERTURBATION_METHODS \
            else contextlib.nullcontext()
        with precision:
            result = attribute_tokens(
                forward, embedded, t, self.name, mask=_real_tokens(batch, embedded.shape[1]),
                additional_forward_args=tuple(batch.values()), layer=module,
                baseline=self.baseline_embedding(estimator, batch, embedded, baseline),
                **settings)
        exact = result.baseline_logit is not None
        return Attributions(values=result.scores, logits=logits, target=t,
                            logit=logits.gather(1, t[:, None])[:, 0] if exact else None,
                            bias=result.baseline_logit,
                            extras={} if result.steps is None else {"n_steps": result.steps})


class Gradient(_Captum):
    """Saliency: the L2 norm of the gradient of the logit at every token embedding."""

    name = "gradient"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None
                  ) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset)


class IntegratedGradients(_Captum):
    """Integrated gradients from ``baseline`` (``"zeros"``, ``"pad"`` or ``"mask"``, see the
    module docstring; ``n_steps`` integration steps, or ``"auto"``: per text the fewest steps
    that bring the completeness error under ``tolerance`` logit units, reported as the
    explanation's ``n_steps``); the baseline's logit is the ``bias``, so
    ``completeness_error`` measures convergence. ``layer="<module name>"``: layer integrated
    gradients (captum ``LayerIntegratedGradients``) at that module's output, summed per
    token, complete as well."""

    name = "integrated_gradients"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  n_steps: int | str = 50, tolerance: float = 1e-4, baseline: str = "zeros",
                  layer: str | None = None) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, n_steps=n_steps,
                                        tolerance=tolerance, baseline=baseline, layer=layer)


class InputXGradient(_Captum):
    """Gradient × embedding, summed over the embedding axis; ``layer="<module name>"``:
    gradient × activation at that module's output (captum ``LayerGradientXActivation``),
    summed per token."""

    name = "input_x_gradient"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  layer: str | None = None) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, layer=layer)


class Occlusion(_Captum):
    """Occlusion, i.e. leave-one-out (captum ``FeatureAblation``): the drop of the logit when
    one token's embedding is replaced by the ``baseline``'s (``"zeros"``, ``"pad"`` or
    ``"mask"``)."""

    name = "occlusion"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  baseline: str = "zeros") -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline)


class Lime(_Captum):
    """LIME (captum ``Lime``): a Lasso surrogate fitted to ``n_samples`` random coalitions of
    the tokens per text (the others replaced by the ``baseline``), seeded by
    ``random_state`` (None: unseeded)."""

    name = "lime"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  baseline: str = "zeros", n_samples: int = 200, random_state: int | None = 0
                  ) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline,
                                        n_samples=n_samples, random_state=random_state)


class KernelShap(Lime):
    """Kernel SHAP (captum ``KernelShap``): Shapley values of the tokens estimated from
    ``n_samples`` coalitions per text, seeded by ``random_state``; they sum to the logit minus
    the ``baseline``'s logit (the ``bias``; ``completeness_error``)."""

    name = "kernel_shap"


class SmoothGrad(_Captum):
    """SmoothGrad (captum ``NoiseTunnel`` over ``Saliency``): the gradient of the logit
    averaged over ``nt_samples`` copies of the token embeddings with Gaussian noise of
    standard deviation ``stdevs`` (None: 15 % of the spread of each text's real token
    embeddings), its L2 norm per token; ``nt_type="smoothgrad_sq"`` or ``"vargrad"``: the
    mean square or the variance of the gradients instead. Every text draws its noise from a
    generator of its own seeded by ``random_state`` (None: unseeded)."""

    name = "smoothgrad"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  nt_type: str = "smoothgrad", nt_samples: int = 10, stdevs: float | None = None,
                  random_state: int | None = 0) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, nt_type=nt_type,
                                        nt_samples=nt_samples, stdevs=stdevs,
                                        random_state=random_state)


class SmoothGradIntegratedGradients(_Captum):
    """Integrated gradients through a noise tunnel (captum ``NoiseTunnel`` over
    ``IntegratedGradients``): integrated gradients from ``baseline`` (``n_steps`` steps) of
    ``nt_samples`` noisy copies of the token embeddings (noise as for ``"smoothgrad"``),
    averaged (``nt_type``), summed over the embedding axis."""

    name = "smoothgrad_integrated_gradients"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  n_steps: int | str = 20, baseline: str = "zeros", nt_type: str = "smoothgrad",
                  nt_samples: int = 10, stdevs: float | None = None,
                  random_state: int | None = 0) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, n_steps=n_steps,
                                        baseline=baseline, nt_type=nt_type,
                                        nt_samples=nt_samples, stdevs=stdevs,
                                        random_state=random_state)


class GradientShap(_Captum):
    """GradientSHAP (captum ``GradientShap``): the mean over ``n_samples`` draws of
    ``(x + ε − b) ⊙ ∂logit/∂x`` at a uniformly random point between a baseline ``b`` and the
    token embeddings ``x`` (plus noise ``ε`` of standard deviation ``stdevs``), summed over the
    embedding axis. ``baseline``: one of ``"zeros"``, ``"pad"``, ``"mask"``, or a tuple of them
    (the distribution ``b`` is drawn from); the mean baseline logit is the ``bias``, which the
    attributions reach in expectation (``completeness_error``). Seeded by ``random_state``."""

    name = "gradient_shap"

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  baseline: str | Sequence[str] = "zeros", n_samples: int = 10,
                  stdevs: float = 0.0, random_state: int | None = 0) -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline,
                                        n_samples=n_samples, stdevs=stdevs,
                                        random_state=random_state)


class DeepLift(_Captum):
    """DeepLIFT (captum ``DeepLift``, rescale rule) from ``baseline``; its attributions sum to
    the logit minus the baseline's logit (the ``bias``). Offered where that holds: networks
    built from linear maps and the non-linear ``torch.nn`` modules DeepLIFT has rules for; on
    any other the method is refused, naming the operations that prevent it."""

    name = "deeplift"

    @classmethod
    def refusal(cls, estimator: BatchedInference | type[BatchedInference]) -> str | None:
        owner = estimator.__name__ if isinstance(estimator, type) else type(estimator).__name__
        module = None if isinstance(estimator, type) else getattr(estimator, "module_", None)
        if module is None:
            return ("DeepLIFT (captum's DeepLift) is offered where it is exact, on networks of "
                    "linear maps and the non-linear torch.nn modules it has rules for; "
                    f"{owner}'s network is not one (a fitted estimator names the operations "
                    "that prevent it)")
        return deeplift_refusal(module, owner)

    def prepare(self, estimator: TextClassifierBase, encoded: EncodedInputs,
                target: torch.Tensor | list[Any] | None, **options: Any) -> dict[str, Any]:
        refusal = self.refusal(estimator)
        if refusal is not None:
            raise ValueError(f"method='deeplift' does not explain {type(estimator).__name__}: "
                             f"{refusal}.")
        return super().prepare(estimator, encoded, target, **options)

    def attribute(self, estimator: TextClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None, *, embedding_offset: ArrayLike | None = None,
                  baseline: str = "zeros") -> Attributions:
        return self.captum_attributions(estimator, batch, target,
                                        embedding_offset=embedding_offset, baseline=baseline)


class DetachedGradient(TokenExplainer):
    """The diversity-LSTM authors' "gradient" attribution: ``(∂p_c / ∂e_t) · e_t`` per token,
    ``p_c`` the softmax probability of the explained class with the attention weights held
    constant (detached), ``e_t`` the token embedding."""

    name = "detached_gradient"

    def attribute(self, estimator: AttentionClassifierBase, batch: dict[str, torch.Tensor],
                  target: ArrayLike | None) -> Attributions:
        keys = list(batch)

        def probabilities(embedded, *args):
            inputs = dict(zip(keys, args, strict=True))
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
