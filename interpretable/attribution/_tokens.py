"""Post-hoc token attributions through the embedding layer (captum), captum-style: one call
over a forward function of the embeddings.

Token scores reduce the embedding axis: ``"gradient"`` is the L2 norm of ∂logit/∂e_t (saliency,
non-negative); ``"input_x_gradient"`` and ``"integrated_gradients"`` are summed over the
embedding axis (signed; integrated gradients satisfy completeness against their baseline, by
default the all-zero embedding).

The noise methods (:mod:`interpretable.attribution`: captum's computations, every
sample's random draws from a generator of its own seeded with ``random_state``):

* ``"smoothgrad"``: captum ``NoiseTunnel`` over ``Saliency`` (SmoothGrad, Smilkov et al.,
  2017: the gradient averaged over ``nt_samples`` noisy copies of the embeddings; with
  ``nt_type="smoothgrad_sq"`` the mean squared gradient, ``"vargrad"`` its variance), reduced
  as ``"gradient"`` is (the L2 norm over the embedding axis);
* ``"smoothgrad_integrated_gradients"``: ``NoiseTunnel`` over ``IntegratedGradients`` (the
  baseline stays where it is), summed over the embedding axis;
* ``"gradient_shap"``: captum ``GradientShap``, ``n_samples`` draws of ``(x + ε − b) ⊙ ∂f/∂x``
  at a random point of the segment from a baseline ``b`` (one of the sample's baselines: a
  distribution) to the input, summed over the embedding axis; with ``stdevs=0`` they sum to
  the logit minus the mean baseline logit, in expectation.

The noise is Gaussian with standard deviation ``stdevs`` (None: for the noise tunnel 15 % of
the spread, max − min, of each sample's real token embeddings, as SmoothGrad recommends; for
GradientSHAP 0, captum's default).

``"deeplift"``: captum ``DeepLift`` from the baseline; ``forward`` must then be a module
whose non-linearities DeepLIFT's rules cover (:func:`~interpretable.attribution._hooked.
deeplift_blockers`), where its attributions sum to the logit minus the baseline's logit; it is
refused elsewhere, naming the operations that prevent it.

Layer attribution: with ``layer`` (a module that runs once inside ``forward``, one vector
per token), ``"integrated_gradients"`` is captum ``LayerIntegratedGradients`` and
``"input_x_gradient"`` captum ``LayerGradientXActivation`` (gradient × activation) at that
layer's output, summed over its hidden axis per token. Layer integrated gradients move only the
layer's output to its value at the baseline, the rest of the network seeing the input: they
sum to the logit minus the logit with the layer's output at its baseline value, the
``baseline_logit`` (the baseline's logit where every path from the embeddings runs through the
layer, as through an encoder layer).

The perturbation methods replace token embeddings by the ``baseline``'s, a group of tokens at
a time (``groups``; default: every real token alone), and share a group's attribution
equally among its tokens (a group's tokens sum to it):

* ``"occlusion"`` (leave-one-out): captum ``FeatureAblation``'s values, the drop of the logit
  when the group is replaced;
* ``"lime"``: captum ``Lime``'s (its Lasso surrogate and exponential cosine kernel, the
  distance over the text's real tokens) on ``n_samples`` random coalitions per sample;
* ``"kernel_shap"``: captum ``KernelShap``'s on ``n_samples`` coalitions per sample; Shapley
  values, so they sum to the logit minus the baseline's logit (approximately).

They are computed by :func:`~interpretable.attribution.perturbation_attributions`:
given the same coalitions they equal captum's, with the perturbed texts of a whole batch
evaluated together, each distinct coalition once. The coalitions of a sample are drawn from a
generator of its own seeded with ``random_state``: a text's explanation does not depend on its
batch, and threads do not share a random stream.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from contextlib import nullcontext
from numbers import Integral, Real
from typing import NamedTuple

import torch

from interpretable.attribution._hooked import deeplift_refusal
from interpretable.attribution._noise import NT_TYPES, draw, gradient_shap, noise_tunnel
from interpretable.attribution._perturbation import PERTURBATION_METHODS, perturbation_attributions

__all__ = ["TokenAttributions", "attribute_tokens"]

GRADIENT_METHODS = ("gradient", "integrated_gradients", "input_x_gradient")
NOISE_METHODS = ("smoothgrad", "smoothgrad_integrated_gradients", "gradient_shap")
DEEPLIFT_METHODS = ("deeplift",)
#: the methods that take a ``layer``
LAYER_METHODS = ("integrated_gradients", "input_x_gradient")
#: the methods whose scores sum to the logit minus ``baseline_logit``
COMPLETE_METHODS = ("integrated_gradients", "kernel_shap", "gradient_shap", "deeplift")
#: ``n_steps="auto"``: the first quadrature, and the most steps a sample may take
AUTO_FIRST_STEPS = 16
AUTO_MAX_STEPS = 512
#: the noise tunnel's default noise: this fraction of the spread (max - min) of each sample's
#: real token embeddings (SmoothGrad's recommendation: 10 to 20 %)
NOISE_LEVEL = 0.15
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
        The target logit at the baseline (integrated gradients, Kernel SHAP, DeepLIFT; for
        GradientSHAP the mean over the baselines; for layer integrated gradients the logit
        with the layer's output at the baseline), whose scores sum to the logit minus it;
        else None.
    steps : torch.Tensor of shape (B,) or None, default=None
        With ``n_steps="auto"``: the integration steps each sample used.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import TokenAttributions
    >>> TokenAttributions(scores=torch.zeros(1, 3), baseline_logit=None).scores.shape
    torch.Size([1, 3])
    """
    scores: torch.Tensor
    baseline_logit: torch.Tensor | None
    steps: torch.Tensor | None = None


def _check_count(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def _lengths(mask: torch.Tensor) -> torch.Tensor:
    """(B,) one past each sample's last real token: what follows is padding."""
    positions = torch.arange(1, mask.shape[1] + 1, device=mask.device)
    return (positions * mask).amax(1)


def _perturbation_scores(method: str, forward, embedded, baseline, target, groups, mask,
                         args, n_samples: int, random_state, rows_per_pass: int) -> torch.Tensor:
    """(B, T) token shares of the groups' attributions (:mod:`.perturbation`); ``groups``
    (B, T): -1 where a token is never replaced. LIME compares the real tokens only, as
    captum called on the text alone does."""
    attr = perturbation_attributions(
        method, forward, embedded, baseline, target, groups[..., None], n_samples=n_samples,
        random_state=random_state, additional_forward_args=args, rows_per_pass=rows_per_pass,
        compared=mask[..., None], lengths=_lengths(mask)).to(embedded.device)
    perturbed = groups >= 0
    features = groups.clamp(min=0)
    sizes = torch.zeros_like(attr).scatter_add_(1, features, perturbed.to(attr.dtype))
    return attr.gather(1, features) / sizes.gather(1, features).clamp(min=1) * perturbed


def _noise_stdevs(stdevs, embedded: torch.Tensor, mask: torch.Tensor, method: str):
    """The noise's standard deviation: a number, or None: per sample, NOISE_LEVEL times the
    spread of its real token embeddings (noise tunnel) or 0 (GradientSHAP)."""
    if stdevs is not None:
        if isinstance(stdevs, bool) or not isinstance(stdevs, Real) or not 0 <= stdevs < \
                float("inf"):
            raise ValueError(f"stdevs must be None or a non-negative number, got {stdevs!r}.")
        return float(stdevs)
    if method == "gradient_shap":
        return 0.0
    real = mask[..., None].expand_as(embedded)
    values = embedded.detach().float()
    spread = (values.masked_fill(~real, float("-inf")).flatten(1).amax(1)
              - values.masked_fill(~real, float("inf")).flatten(1).amin(1))
    return (NOISE_LEVEL * torch.nan_to_num(spread, nan=0.0, posinf=0.0, neginf=0.0)).cpu()


def _layer_scores(attr, embedded: torch.Tensor) -> torch.Tensor:
    """A layer attribution ``(B, T, ...)`` summed per token; refused when the layer's output
    is not one tensor with a row per token."""
    if not isinstance(attr, torch.Tensor) or attr.dim() < 2 or \
            tuple(attr.shape[:2]) != tuple(embedded.shape[:2]):
        shape = tuple(attr.shape) if isinstance(attr, torch.Tensor) else type(attr).__name__
        raise ValueError(f"the layer's output ({shape}) is not one tensor with one row per "
                         f"token {tuple(embedded.shape[:2])}: choose a layer whose output is "
                         "(B, T, ...).")
    return attr.flatten(2).sum(-1) if attr.dim() > 2 else attr


def _layer_swapped_logit(forward, layer: torch.nn.Module, embedded: torch.Tensor,
                         baseline: torch.Tensor, target: torch.Tensor, args: tuple):
    """The target logit of ``embedded`` with ``layer``'s output replaced by its output at
    ``baseline``: what layer integrated gradients sum to the logit minus (the baseline's
    logit when every path from the embeddings runs through the layer)."""
    recorded = []
    handle = layer.register_forward_hook(lambda module, inputs, output: recorded.append(output))
    try:
        forward(baseline, *args)
    finally:
        handle.remove()
    handle = layer.register_forward_hook(lambda module, inputs, output: recorded[0])
    try:
        return forward(embedded, *args).gather(1, target[:, None])[:, 0]
    finally:
        handle.remove()


def _next_steps(history: list, tolerance: float) -> int:
    """The steps of a sample's next quadrature from its ``history`` of (steps, error): twice
    the last at first, then where the error's geometric decay between the last two reaches
    ``tolerance``, 10 % beyond, at least 8 more and at most twice as many, rounded up to a
    multiple of 8 (so that samples share passes)."""
    steps, error = history[-1]
    if len(history) == 1 or error >= history[-2][1]:
        return 2 * steps
    previous, previous_error = history[-2]
    rate = (math.log(error) - math.log(previous_error)) / (steps - previous)
    wanted = steps + (math.log(tolerance) - math.log(error)) / rate
    return int(min(2 * steps, max(steps + 8, math.ceil(1.1 * wanted / 8) * 8)))


def _integrated_to_tolerance(forward, embedded, baseline, target, mask, args, rows: int,
                             tolerance: float, gap: torch.Tensor):
    """Integrated gradients (captum's Gauss-Legendre quadrature) per sample with the fewest
    steps of a sequence that bring ``|sum of scores - gap|`` under ``tolerance``: every
    sample starts at :data:`AUTO_FIRST_STEPS`; those above it are integrated again, batched
    by their next step count (:func:`_next_steps`), up to :data:`AUTO_MAX_STEPS`. Returns the
    scores (B, T) and the steps used (B,)."""
    from captum.attr import IntegratedGradients

    scores = torch.zeros(embedded.shape[:2], dtype=torch.float64, device=embedded.device)
    steps = torch.zeros(len(embedded), dtype=torch.long)
    histories = [[] for _ in range(len(embedded))]
    pending = {AUTO_FIRST_STEPS: list(range(len(embedded)))}
    while pending:
        n_steps = min(pending)
        rows_now = torch.tensor(pending.pop(n_steps), device=embedded.device)
        attr = IntegratedGradients(forward).attribute(
            embedded[rows_now], baselines=baseline[rows_now], target=target[rows_now],
            additional_forward_args=tuple(a[rows_now] for a in args), n_steps=n_steps,
            internal_batch_size=rows).sum(-1).detach().double() * mask[rows_now]
        errors = (attr.sum(1) - gap[rows_now]).abs().cpu().tolist()
        for row, sample, error in zip(attr, rows_now.tolist(), errors, strict=True):
            scores[sample], steps[sample] = row, n_steps
            histories[sample].append((n_steps, max(error, 1e-300)))
            if error > tolerance and n_steps < AUTO_MAX_STEPS:
                following = min(AUTO_MAX_STEPS, _next_steps(histories[sample], tolerance))
                pending.setdefault(following, []).append(sample)
    return scores, steps


def attribute_tokens(forward: Callable[..., torch.Tensor], embedded: torch.Tensor,
                     target: torch.Tensor, method: str = "integrated_gradients", *,
                     mask: torch.Tensor, additional_forward_args: tuple = (),
                     n_steps: int | str = 50, tolerance: float = 1e-4,
                     baseline: torch.Tensor | None = None,
                     groups: torch.Tensor | None = None, n_samples: int = 200,
                     random_state: int | None = 0, nt_type: str = "smoothgrad",
                     nt_samples: int = 10, stdevs: float | None = None,
                     layer: torch.nn.Module | None = None) -> TokenAttributions:
    """Attribute each sample's ``target`` logit to its tokens with a captum method.

    Parameters
    ----------
    forward : callable
        ``forward(embedded (B, T, E), *additional_forward_args) -> logits (B, C)``; for
        ``"deeplift"`` a ``torch.nn.Module`` (DeepLift hooks its non-linear submodules).
    embedded : torch.Tensor of shape (B, T, E)
        Embeddings (detached).
    target : torch.Tensor of shape (B,)
        Class indices whose logit is explained.
    method : str, default="integrated_gradients"
        One of :data:`GRADIENT_METHODS`, :data:`NOISE_METHODS`, :data:`DEEPLIFT_METHODS` or
        :data:`PERTURBATION_METHODS`.
    mask : torch.Tensor of shape (B, T)
        Bool, True on the real tokens.
    additional_forward_args : tuple, default=()
        Further arguments of ``forward`` (tensors, sample axis first).
    n_steps : int or "auto", default=50
        Integration steps of integrated gradients (also in the noise tunnel and at a layer);
        ``"auto"`` (integrated gradients at the embeddings): per sample, the fewest steps of a
        growing sequence (16, 32, then where the error's decay predicts the tolerance, up to
        512) whose completeness error ``|sum of scores - (logit - baseline_logit)|`` is at
        most ``tolerance``; only the samples above it are integrated again, batched.
    tolerance : float, default=1e-4
        ``n_steps="auto"``: the largest completeness error accepted, in logit units.
    baseline : torch.Tensor of shape (B, T, E) or (B, K, T, E) or None, default=None
        The reference embeddings of integrated gradients, DeepLIFT, GradientSHAP and the
        perturbation methods (None: all zero); ``(B, K, T, E)``: ``K`` baselines per sample,
        the distribution GradientSHAP draws from (the other methods need one); unused by
        the other methods.
    groups : torch.Tensor of shape (B, T) or None, default=None
        Perturbation methods: the feature of every token (0, 1, ... per sample; tokens of a
        feature are replaced together, -1: never replaced, also not in the baseline whose
        logit Kernel SHAP reports). None: every real token alone.
    n_samples : int, default=200
        Coalitions per sample of LIME and Kernel SHAP; draws per sample of GradientSHAP.
    random_state : int or None, default=0
        Seed of the random draws of LIME, Kernel SHAP and the noise methods (the same for
        every sample; None: unseeded).
    nt_type : {"smoothgrad", "smoothgrad_sq", "vargrad"}, default="smoothgrad"
        The noise tunnel's statistic of the noisy copies' attributions: their mean, mean
        square or variance.
    nt_samples : int, default=10
        The noise tunnel's noisy copies per sample.
    stdevs : float or None, default=None
        The standard deviation of the Gaussian noise of the noise methods (None: for the noise
        tunnel 15 % of the spread of each sample's real token embeddings, for GradientSHAP 0).
    layer : torch.nn.Module or None, default=None
        ``"integrated_gradients"`` and ``"input_x_gradient"``: attribute to this layer's
        output (a module that runs inside ``forward``, output ``(B, T, ...)``), summed per
        token (None: to the embeddings).

    Returns
    -------
    TokenAttributions
        The scores (B, T) and, for the methods complete against a baseline (integrated
        gradients, Kernel SHAP, GradientSHAP, DeepLIFT), the baseline logit.

    Raises
    ------
    ValueError
        If the method is unknown, an option is not valid, DeepLIFT would not be exact on
        ``forward`` (naming the operations that prevent it), or the layer's output has no row
        per token.
    TypeError
        If ``"deeplift"`` is given a ``forward`` that is not a module.

    Examples
    --------
    >>> import torch
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.attribution import attribute_tokens
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
    >>> attribute_tokens(lambda embedded: clf.forward_batch(batch, embedded=embedded),
    ...                  clf.embed(batch), torch.tensor([1]), "smoothgrad",
    ...                  mask=torch.ones(1, 2, dtype=torch.bool), nt_samples=4).scores.shape
    torch.Size([1, 2])
    """
    from captum.attr import (
        DeepLift,
        InputXGradient,
        IntegratedGradients,
        LayerGradientXActivation,
        LayerIntegratedGradients,
        Saliency,
    )

    methods = GRADIENT_METHODS + NOISE_METHODS + DEEPLIFT_METHODS + PERTURBATION_METHODS
    if method not in methods:
        raise ValueError(f"method={method!r} is not supported; choose one of {list(methods)}.")
    auto = isinstance(n_steps, str) and n_steps == "auto"
    if not auto:
        _check_count("n_steps", n_steps)
    elif method != "integrated_gradients" or layer is not None:
        raise ValueError(f"n_steps='auto' integrates to a tolerance: it is taken by "
                         f"method='integrated_gradients' without a layer, not by "
                         f"method={method!r}{' with a layer' if layer is not None else ''}.")
    if isinstance(tolerance, bool) or not isinstance(tolerance, Real) or \
            not 0 < tolerance < float("inf"):
        raise ValueError(f"tolerance must be a positive number, got {tolerance!r}.")
    _check_count("n_samples", n_samples)
    _check_count("nt_samples", nt_samples)
    if nt_type not in NT_TYPES:
        raise ValueError(f"nt_type must be one of {list(NT_TYPES)}, got {nt_type!r}.")
    if random_state is not None and (isinstance(random_state, bool) or
                                     not isinstance(random_state, Integral) or
                                     random_state < 0):
        raise ValueError(f"random_state must be None or a non-negative integer, got "
                         f"{random_state!r}.")
    if layer is not None and method not in LAYER_METHODS:
        raise ValueError(f"layer is taken by {list(LAYER_METHODS)}, not by method={method!r}.")
    embedded = embedded.detach()
    baseline = torch.zeros_like(embedded) if baseline is None else baseline.detach().to(embedded)
    baselines = baseline if baseline.dim() == embedded.dim() + 1 else baseline[:, None]
    if baselines.shape[1] > 1 and method != "gradient_shap":
        raise ValueError(f"method={method!r} takes one baseline per sample, got "
                         f"{baselines.shape[1]}.")
    baseline = baselines[:, 0]
    args = tuple(additional_forward_args)
    tokens = embedded.shape[1]
    rows = max(len(embedded), _IG_TOKENS_PER_PASS // tokens)  # embeddings per pass
    baseline_logit = None
    if method in PERTURBATION_METHODS:
        if groups is None:
            groups = torch.arange(embedded.shape[1], device=mask.device).expand(mask.shape)
        groups = groups.masked_fill(~mask, -1)
        baseline = torch.where(groups[..., None] >= 0, baseline, embedded)
        baselines = baseline[:, None]  # Kernel SHAP's baseline logit: of what was replaced
        with torch.no_grad():
            scores = _perturbation_scores(method, forward, embedded, baseline, target, groups,
                                          mask, args, n_samples, random_state, rows)
    else:
        if method == "deeplift":
            if not isinstance(forward, torch.nn.Module):
                raise TypeError("method='deeplift' needs forward to be a torch.nn.Module: "
                                "captum's DeepLift hooks its non-linear submodules.")
            refusal = deeplift_refusal(forward, type(forward).__name__)
            if refusal is not None:
                raise ValueError(refusal)
        if method in NOISE_METHODS:
            draws = draw(len(embedded), nt_samples if method != "gradient_shap" else n_samples,
                         tuple(embedded.shape[1:]),
                         stdevs=_noise_stdevs(stdevs, embedded, mask, method),
                         n_baselines=baselines.shape[1], random_state=random_state)
        embedded.requires_grad_(True)
        # cuDNN RNNs refuse backward in eval mode; the native kernels do not
        cudnn_off = (torch.backends.cudnn.flags(enabled=False)
                     if embedded.device.type == "cuda" else nullcontext())
        with cudnn_off, torch.enable_grad():
            if method == "gradient":
                attr = Saliency(forward).attribute(embedded, target=target, abs=False,
                                                   additional_forward_args=args)
                scores = attr.norm(dim=-1)
            elif method == "input_x_gradient" and layer is not None:
                scores = _layer_scores(LayerGradientXActivation(forward, layer).attribute(
                    embedded, target=target, additional_forward_args=args), embedded)
            elif method == "input_x_gradient":
                scores = InputXGradient(forward).attribute(
                    embedded, target=target, additional_forward_args=args).sum(-1)
            elif method == "integrated_gradients" and layer is not None:
                scores = _layer_scores(LayerIntegratedGradients(forward, layer).attribute(
                    embedded, baselines=baseline, target=target, additional_forward_args=args,
                    n_steps=n_steps, internal_batch_size=rows), embedded)
            elif auto:
                with torch.no_grad():
                    logit = forward(embedded.detach(), *args).gather(1, target[:, None])[:, 0]
                    baseline_logit = forward(baseline, *args).gather(1, target[:, None])[:, 0]
                scores, steps = _integrated_to_tolerance(
                    forward, embedded.detach(), baseline, target, mask, args, rows, tolerance,
                    (logit - baseline_logit).double())
            elif method == "integrated_gradients":
                scores = IntegratedGradients(forward).attribute(
                    embedded, baselines=baseline, target=target, additional_forward_args=args,
                    n_steps=n_steps, internal_batch_size=rows).sum(-1)
            elif method == "smoothgrad":
                scores = noise_tunnel(Saliency(forward).attribute, embedded.detach(),
                                      draws.noise, nt_type, rows_per_pass=rows, target=target,
                                      abs=False, additional_forward_args=args).norm(dim=-1)
            elif method == "smoothgrad_integrated_gradients":
                scores = noise_tunnel(IntegratedGradients(forward).attribute,
                                      embedded.detach(), draws.noise, nt_type,
                                      rows_per_pass=rows, target=target, baselines=baseline,
                                      additional_forward_args=args, n_steps=n_steps,
                                      internal_batch_size=rows).sum(-1)
            elif method == "gradient_shap":
                scores = gradient_shap(forward, embedded.detach(), baselines, target, draws,
                                       additional_forward_args=args,
                                       rows_per_pass=rows).sum(-1)
            else:  # deeplift
                with warnings.catch_warnings():  # captum says it hooks, every call
                    warnings.filterwarnings("ignore", "Setting forward, backward hooks",
                                            UserWarning)
                    scores = DeepLift(forward).attribute(
                        embedded, baselines=baseline, target=target,
                        additional_forward_args=args).sum(-1)
    if method == "integrated_gradients" and layer is not None:
        with torch.no_grad():
            baseline_logit = _layer_swapped_logit(forward, layer, embedded.detach(), baseline,
                                                  target, args)
    elif method in COMPLETE_METHODS and not auto:
        with torch.no_grad():
            baseline_logit = torch.stack([
                forward(baselines[:, k], *args).gather(1, target[:, None])[:, 0]
                for k in range(baselines.shape[1])]).mean(0)
    return TokenAttributions((scores.detach() * mask).double(),
                             None if baseline_logit is None else baseline_logit.float(),
                             steps if auto else None)
