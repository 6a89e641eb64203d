"""Post-hoc token attributions through the embedding layer (captum), captum-style: one call
over a forward function of the embeddings.

Token scores reduce the embedding axis: ``"gradient"`` is the L2 norm of ∂logit/∂e_t (saliency,
non-negative); ``"input_x_gradient"`` and ``"integrated_gradients"`` are summed over the
embedding axis (signed; integrated gradients satisfy completeness against their baseline, by
default the all-zero embedding).

The perturbation methods replace token embeddings by the ``baseline``'s, a group of tokens at
a time (``groups``; default: every real token alone), and share a group's attribution
equally among its tokens (a group's tokens sum to it):

* ``"occlusion"`` (leave-one-out): captum ``FeatureAblation``, the drop of the logit when the
  group is replaced, all groups of a batch evaluated together;
* ``"lime"``: captum ``Lime`` (its Lasso surrogate and exponential cosine kernel) on
  ``n_samples`` random coalitions per sample;
* ``"kernel_shap"``: captum ``KernelShap`` on ``n_samples`` coalitions per sample; Shapley
  values, so they sum to the logit minus the baseline's logit (approximately).

The coalitions of a sample are drawn from a generator of its own seeded with
``random_state``: a text's explanation does not depend on its batch, and threads do not share
a random stream.
"""
from __future__ import annotations

import functools
from contextlib import nullcontext
from numbers import Integral
from typing import Callable, NamedTuple, Optional

import torch

__all__ = ["TokenAttributions", "attribute_tokens"]

GRADIENT_METHODS = ("gradient", "integrated_gradients", "input_x_gradient")
PERTURBATION_METHODS = ("occlusion", "lime", "kernel_shap")
#: embeddings evaluated per forward pass inside the perturbation methods (bounds their memory)
_INTERNAL_BATCH = 4096
#: token positions per forward and backward pass inside integrated gradients: the
#: activations kept for the backward pass grow with it; measured on MiniLM (CPU, one thread),
#: 8k tokens is as fast as 64k with a tenth of the memory (2 GiB against 17 GiB)
_IG_TOKENS_PER_PASS = 8192


class TokenAttributions(NamedTuple):
    """Token attributions of a batch, as :func:`attribute_tokens` returns them.

    Parameters
    ----------
    scores : torch.Tensor of shape (B, T)
        The attributions, zero where ``mask`` is False.
    baseline_logit : torch.Tensor of shape (B,) or None
        The target logit at the baseline (integrated gradients and Kernel SHAP, whose scores
        sum to the logit minus it; else None).

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution.text import TokenAttributions
    >>> TokenAttributions(scores=torch.zeros(1, 3), baseline_logit=None).scores.shape
    torch.Size([1, 3])
    """
    scores: torch.Tensor
    baseline_logit: Optional[torch.Tensor]


def _check_count(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def _generator(seed: Optional[int]) -> torch.Generator:
    """A CPU generator seeded with ``seed`` (None: fresh entropy)."""
    generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(seed))
    return generator


@functools.cache
def _seeded_samplers() -> dict:
    """captum's ``Lime`` and ``KernelShap`` drawing their coalitions from a generator of their
    own, seeded afresh for every sample (captum's samplers draw from the global generator);
    defined at the first use, as captum is imported lazily."""
    from captum.attr import KernelShap, Lime

    class SeededLime(Lime):
        def __init__(self, forward_func, seed):
            super().__init__(forward_func, perturb_func=self.coalitions)
            self.seed = seed

        def coalitions(self, original_inp, **kwargs):
            """captum's default: every feature kept with probability 1/2."""
            generator = _generator(self.seed)
            size = (1, kwargs["num_interp_features"])
            while True:
                yield torch.randint(0, 2, size, generator=generator).to(original_inp.device)

    class SeededKernelShap(KernelShap):
        def __init__(self, forward_func, seed):
            super().__init__(forward_func)
            self.seed = seed

        def kernel_shap_perturb_generator(self, original_inp, **kwargs):
            """captum's: all features, none, then k of them (k ~ the Shapley kernel)."""
            generator = _generator(self.seed)
            n, device = kwargs["num_interp_features"], original_inp.device
            probs = kwargs["num_select_distribution"].probs
            yield torch.ones(1, n, dtype=torch.long, device=device)
            yield torch.zeros(1, n, dtype=torch.long, device=device)
            while True:
                k = int(torch.multinomial(probs, 1, generator=generator))
                chosen = torch.randperm(n, generator=generator)[:k]
                yield torch.zeros(1, n, dtype=torch.long).index_fill_(1, chosen, 1).to(device)

    return {"lime": SeededLime, "kernel_shap": SeededKernelShap}


def _perturbation_scores(method: str, forward, embedded, baseline, target, groups, args,
                         n_samples: int, random_state) -> torch.Tensor:
    """(B, T) token shares of the groups' attributions; ``groups`` (B, T): -1 where
    ``baseline`` is ``embedded`` (never changed)."""
    from captum.attr import FeatureAblation

    perturbed = groups >= 0
    # unperturbed tokens join group 0; their baseline is their own embedding: never changed
    features = groups.clamp(min=0)
    feature_mask = features[..., None].expand_as(embedded)
    if method == "occlusion":
        attr = FeatureAblation(forward).attribute(
            embedded, baselines=baseline, target=target, additional_forward_args=args,
            feature_mask=feature_mask,
            perturbations_per_eval=max(1, _INTERNAL_BATCH // len(embedded)))
    else:  # one surrogate per sample, as captum fits them
        rows = []
        for i in range(len(embedded)):
            if method == "kernel_shap" and int(features[i].max()) == 0:
                # one feature's Shapley value is the whole difference f(x) - f(baseline),
                # which occlusion computes exactly (captum's sampler needs two features)
                explainer = FeatureAblation(forward)
                settings = {}
            else:
                explainer = _seeded_samplers()[method](forward, random_state)
                settings = {"n_samples": n_samples,
                            "perturbations_per_eval": min(n_samples, _INTERNAL_BATCH)}
            rows.append(explainer.attribute(
                embedded[i:i + 1], baselines=baseline[i:i + 1], target=target[i:i + 1],
                additional_forward_args=tuple(a[i:i + 1] for a in args),
                feature_mask=feature_mask[i:i + 1], **settings))
        attr = torch.cat(rows)
    sizes = torch.zeros(len(groups), int(features.max()) + 1, dtype=attr.dtype,
                        device=groups.device).scatter_add_(1, features, perturbed.to(attr.dtype))
    return attr[..., 0] / sizes.gather(1, features).clamp(min=1) * perturbed


def attribute_tokens(forward: Callable[..., torch.Tensor], embedded: torch.Tensor,
                     target: torch.Tensor, method: str = "integrated_gradients", *,
                     mask: torch.Tensor, additional_forward_args: tuple = (),
                     n_steps: int = 50, baseline: Optional[torch.Tensor] = None,
                     groups: Optional[torch.Tensor] = None, n_samples: int = 200,
                     random_state: Optional[int] = 0) -> TokenAttributions:
    """Attribute each sample's ``target`` logit to its tokens with a captum method.

    Parameters
    ----------
    forward : callable
        ``forward(embedded (B, T, E), *additional_forward_args) -> logits (B, C)``.
    embedded : torch.Tensor of shape (B, T, E)
        Embeddings (detached).
    target : torch.Tensor of shape (B,)
        Class indices whose logit is explained.
    method : str, default="integrated_gradients"
        One of :data:`GRADIENT_METHODS` or :data:`PERTURBATION_METHODS`.
    mask : torch.Tensor of shape (B, T)
        Bool, True on the real tokens.
    additional_forward_args : tuple, default=()
        Further arguments of ``forward`` (tensors, sample axis first).
    n_steps : int, default=50
        Integration steps of integrated gradients.
    baseline : torch.Tensor of shape (B, T, E) or None, default=None
        The reference embeddings of integrated gradients and the perturbation methods (None:
        all zero); unused by the other methods.
    groups : torch.Tensor of shape (B, T) or None, default=None
        Perturbation methods: the feature of every token (0, 1, ... per sample; tokens of a
        feature are replaced together, -1: never replaced, also not in the baseline whose
        logit Kernel SHAP reports). None: every real token alone.
    n_samples : int, default=200
        Coalitions per sample of LIME and Kernel SHAP.
    random_state : int or None, default=0
        Seed of the coalitions of LIME and Kernel SHAP (the same for every sample; None:
        unseeded).

    Returns
    -------
    TokenAttributions
        The scores (B, T) and, for integrated gradients and Kernel SHAP, the baseline logit.

    Raises
    ------
    ValueError
        If the method is unknown, or ``n_steps``, ``n_samples`` or ``random_state`` is not
        valid.

    Examples
    --------
    >>> import torch
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.attribution.text import attribute_tokens
    >>> clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, device="cpu")
    >>> clf = clf.fit(["good film", "bad film"], [1, 0])
    >>> _, batch = next(clf.iter_batches(clf.encode(["good film"]).inputs))
    >>> result = attribute_tokens(lambda embedded: clf.forward_batch(batch, embedded=embedded),
    ...                           clf.embed(batch), torch.tensor([1]),
    ...                           mask=torch.ones(1, 2, dtype=torch.bool), n_steps=8)
    >>> result.scores.shape, result.baseline_logit.shape
    (torch.Size([1, 2]), torch.Size([1]))
    >>> attribute_tokens(lambda embedded: clf.forward_batch(batch, embedded=embedded),
    ...                  clf.embed(batch), torch.tensor([1]), "kernel_shap",
    ...                  mask=torch.ones(1, 2, dtype=torch.bool), n_samples=16).scores.shape
    torch.Size([1, 2])
    """
    from captum.attr import InputXGradient, IntegratedGradients, Saliency

    if method not in GRADIENT_METHODS + PERTURBATION_METHODS:
        raise ValueError(f"method={method!r} is not supported; choose one of "
                         f"{list(GRADIENT_METHODS + PERTURBATION_METHODS)}.")
    _check_count("n_steps", n_steps)
    _check_count("n_samples", n_samples)
    if random_state is not None and (isinstance(random_state, bool) or
                                     not isinstance(random_state, Integral) or
                                     random_state < 0):
        raise ValueError(f"random_state must be None or a non-negative integer, got "
                         f"{random_state!r}.")
    embedded = embedded.detach()
    baseline = torch.zeros_like(embedded) if baseline is None else baseline.detach().to(embedded)
    args = tuple(additional_forward_args)
    baseline_logit = None
    if method in PERTURBATION_METHODS:
        if groups is None:
            groups = torch.arange(embedded.shape[1], device=mask.device).expand(mask.shape)
        groups = groups.masked_fill(~mask, -1)
        baseline = torch.where(groups[..., None] >= 0, baseline, embedded)
        with torch.no_grad():
            scores = _perturbation_scores(method, forward, embedded, baseline, target, groups,
                                          args, n_samples, random_state)
    else:
        embedded.requires_grad_(True)
        # cuDNN RNNs refuse backward in eval mode; the native kernels do not
        cudnn_off = (torch.backends.cudnn.flags(enabled=False)
                     if embedded.device.type == "cuda" else nullcontext())
        with cudnn_off, torch.enable_grad():
            if method == "gradient":
                attr = Saliency(forward).attribute(embedded, target=target, abs=False,
                                                   additional_forward_args=args)
                scores = attr.norm(dim=-1)
            elif method == "input_x_gradient":
                scores = InputXGradient(forward).attribute(
                    embedded, target=target, additional_forward_args=args).sum(-1)
            else:
                scores = IntegratedGradients(forward).attribute(
                    embedded, baselines=baseline, target=target, additional_forward_args=args,
                    n_steps=n_steps, internal_batch_size=max(
                        len(embedded), _IG_TOKENS_PER_PASS // embedded.shape[1]),
                ).sum(-1)
    if method in ("integrated_gradients", "kernel_shap"):
        with torch.no_grad():
            baseline_logit = forward(baseline, *args).gather(1, target[:, None])[:, 0]
    return TokenAttributions((scores.detach() * mask).double(), baseline_logit)
