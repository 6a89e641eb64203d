"""Occlusion, LIME and Kernel SHAP over many samples at once: captum's computations, with the
perturbed inputs of every sample of a batch evaluated together in padded forward passes.

A sample's input is split into features (``features``: the feature of every element, ``-1``
where the element is never replaced); a *coalition* keeps some features and replaces the
others by the ``baseline``'s values. Per sample:

* ``"occlusion"`` (captum ``FeatureAblation``): feature ``f``'s attribution is the drop of
  the target logit when ``f`` alone is replaced, ``y(x) - y(x without f)``;
* ``"lime"`` (captum ``Lime`` with its defaults): ``n_samples`` coalitions, each feature kept
  with probability 1/2, weighted by the exponential kernel ``exp(-d² / 2)`` of the cosine
  distance ``d`` between the flattened input and the perturbed input; the attributions are
  the coefficients of scikit-learn's ``Lasso(alpha=0.01)`` fitted to the target logits
  (captum's ``SkLearnLasso``);
* ``"kernel_shap"`` (captum ``KernelShap``): the coalition of every feature, the empty one,
  then ``n_samples - 2`` coalitions of ``k`` features, ``k`` drawn from the Shapley kernel
  ``(F - 1) / (k (F - k))`` and the ``k`` features uniformly; the attributions are the
  coefficients of scikit-learn's ``LinearRegression`` with weight 10⁶ on the first two
  (captum's ``SkLearnLinearRegression``), so that they sum to ``y(x) - y(baseline)``
  (approximately), solved in float64 where captum solves in float32. With one feature its
  value is that difference exactly (as occlusion).

Given the same coalitions (:func:`draw_coalitions`), the attributions equal captum's ``attribute``
called on each sample alone (Kernel SHAP's to captum's float32 rounding). What differs is the
cost: the coalitions of all samples are drawn at once, every distinct coalition of a sample is
evaluated once (Kernel SHAP's sampler repeats the small and the large coalitions often), and the
perturbed inputs of several samples share each forward pass (at most ``rows_per_pass`` rows;
padded sequences of one length per pass, cut to it), where captum evaluates one sample's
perturbations at a time, each built and weighted in Python.

Every sample draws its coalitions from a generator of its own seeded with ``random_state``:
its attributions do not depend on the batch it is in, and threads share no random stream.
"""
from __future__ import annotations

from collections.abc import Callable
from numbers import Integral

import numpy as np
import torch

from interpretable.attribution._noise import seeded_generator

__all__ = ["PERTURBATION_METHODS", "draw_coalitions", "perturbation_attributions"]

PERTURBATION_METHODS = ("occlusion", "lime", "kernel_shap")
#: captum's defaults: LIME's Lasso penalty and kernel width, Kernel SHAP's weight of the full
#: and the empty coalitions
LASSO_ALPHA = 0.01
KERNEL_WIDTH = 1.0
KERNEL_SHAP_ENDPOINT_WEIGHT = 1e6


def draw_coalitions(method: str, n_features: int, n_samples: int,
                    random_state: int | None = 0) -> torch.Tensor:
    """Draw the coalitions of one sample: True where a feature is kept.

    Parameters
    ----------
    method : {"occlusion", "lime", "kernel_shap"}
        ``"occlusion"``: every feature left out once (deterministic, ``n_features`` rows);
        ``"lime"``: every feature kept with probability 1/2; ``"kernel_shap"``: all features,
        none, then ``k`` features (``k`` from the Shapley kernel, the features uniformly).
    n_features : int
        The sample's number of features ``F`` (at least 1).
    n_samples : int
        Coalitions to draw (LIME and Kernel SHAP).
    random_state : int or None, default=0
        Seed of the sample's generator (None: fresh entropy).

    Returns
    -------
    torch.Tensor of shape (n_samples, F) or (F, F) for occlusion
        Bool coalitions.

    Examples
    --------
    >>> from interpretable.attribution import draw_coalitions
    >>> draw_coalitions("kernel_shap", 4, 5)[:2].int().tolist()
    [[1, 1, 1, 1], [0, 0, 0, 0]]
    >>> draw_coalitions("occlusion", 3, 0).int().tolist()
    [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    """
    if method == "occlusion":
        return ~torch.eye(n_features, dtype=torch.bool)
    generator = seeded_generator(random_state)
    if method == "lime":
        return torch.randint(0, 2, (n_samples, n_features), generator=generator).bool()
    rows = torch.ones(n_samples, n_features, dtype=torch.bool)
    if n_samples > 1:
        rows[1] = False
    if n_samples > 2:
        sizes = torch.arange(n_features, dtype=torch.float64)
        kernel = (n_features - 1) / (sizes * (n_features - sizes))
        kernel[0] = 0.0  # k in 1 .. F - 1
        k = torch.multinomial(kernel, n_samples - 2, replacement=True, generator=generator)
        order = torch.rand(n_samples - 2, n_features, generator=generator).argsort(1)
        rows[2:] = order.argsort(1) < k[:, None]  # the k features of lowest rank
    return rows


def _check_count(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, Integral) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def _ablation(method: str, n_features: int) -> bool:
    """Whether a sample's attributions are occlusion's: for occlusion, and for Kernel SHAP
    with one feature (its Shapley value is the whole drop, which captum's sampler cannot
    draw: it needs two features)."""
    return method == "occlusion" or (method == "kernel_shap" and n_features == 1)


def _lime_weights(x: torch.Tensor, perturbed: torch.Tensor, compared: torch.Tensor
                  ) -> torch.Tensor:
    """captum's LIME weights ``exp(-d² / 2 w²)`` of rows ``(R, ...)``, ``d`` the cosine
    distance between a sample's flattened input ``x`` and its perturbed copy over the
    ``compared`` elements, computed in float32 as captum does; ``(R,)``."""
    x, perturbed = (x.float() * compared).flatten(1), (perturbed.float() * compared).flatten(1)
    cosine = torch.nn.functional.cosine_similarity(x, perturbed, dim=1)
    return torch.exp(-((1 - cosine) ** 2) / (2 * KERNEL_WIDTH ** 2))


def _evaluate(forward, inputs, baseline, features, coalitions, owners, target, args,
              rows_per_pass: int, lengths, compared) -> tuple:
    """The target logit ``(R,)`` of every coalition row ``coalitions (R, F_max)`` of the
    samples ``owners (R,)``, at most ``rows_per_pass`` perturbed inputs per forward pass (with
    ``lengths`` each pass holds rows of one length, cut to it); with ``compared`` (LIME) also
    their weights ``(R,)``, from the same perturbed inputs, else None."""
    out = torch.empty(len(owners), dtype=torch.float64, device=owners.device)
    weights = None if compared is None else torch.empty(len(owners), device=owners.device)
    if lengths is None:
        passes = torch.arange(len(owners), device=owners.device).split(rows_per_pass)
    else:  # rows of one length per pass: no padding is computed
        row_lengths = lengths[owners]
        passes = [chunk for length in row_lengths.unique().tolist()
                  for chunk in (row_lengths == length).nonzero()[:, 0].split(rows_per_pass)]
    for chosen in passes:
        rows = owners[chosen]
        index = features[rows]
        keep = coalitions[chosen].gather(1, index.clamp(min=0).flatten(1)).view_as(index) \
            | (index < 0)
        perturbed = torch.where(keep, inputs[rows], baseline[rows])
        if weights is not None:
            weights[chosen] = _lime_weights(inputs[rows], perturbed, compared[rows])
        extra = [a[rows] for a in args]
        if lengths is not None:
            cut = int(lengths[rows].max())
            perturbed = perturbed[:, :cut]
            extra = [a[:, :cut] if a.dim() > 1 and a.shape[1] == inputs.shape[1] else a
                     for a in extra]
        logits = forward(perturbed, *extra)
        out[chosen] = logits.double().gather(1, target[rows][:, None])[:, 0]
    return out, weights


def _surrogate(method: str, coalitions: torch.Tensor, logits: torch.Tensor,
               weights: torch.Tensor) -> np.ndarray:
    """The coefficients ``(F,)`` of captum's surrogate fitted to one sample's coalitions
    ``(n, F)``, their target logits ``(n,)`` and weights ``(n,)``: LIME's Lasso on float32
    arrays as captum passes them; Kernel SHAP's weighted least squares in float64 (its 10⁶
    weights make the float32 problem ill-conditioned: captum's solution moves by about 1 %
    of the logit with the last bits of the logits)."""
    from sklearn.linear_model import Lasso, LinearRegression

    dtype = np.float32 if method == "lime" else np.float64
    model = Lasso(alpha=LASSO_ALPHA) if method == "lime" else LinearRegression()
    model.fit(coalitions.numpy().astype(dtype), logits.numpy().astype(dtype),
              sample_weight=weights.numpy().astype(dtype))
    return np.asarray(model.coef_, dtype=np.float64).reshape(-1)


def perturbation_attributions(method: str, forward: Callable[..., torch.Tensor],
                              inputs: torch.Tensor, baseline: torch.Tensor,
                              target: torch.Tensor, features: torch.Tensor, *,
                              n_samples: int = 200, random_state: int | None = 0,
                              additional_forward_args: tuple = (), rows_per_pass: int = 256,
                              compared: torch.Tensor | None = None,
                              lengths: torch.Tensor | None = None) -> torch.Tensor:
    """Attribute each sample's ``target`` logit to its features by occlusion, LIME or Kernel SHAP.

    Every sample's perturbations are evaluated in shared forward passes.

    Parameters
    ----------
    method : {"occlusion", "lime", "kernel_shap"}
        The method (see the module docstring).
    forward : callable
        ``forward(inputs (R, ...), *additional_forward_args rows) -> logits (R, C)``.
    inputs : torch.Tensor of shape (B, ...)
        The explained inputs (e.g. token embeddings ``(B, T, E)`` or images ``(B, C, H, W)``).
    baseline : torch.Tensor of the shape of ``inputs``
        What a replaced feature's elements become.
    target : torch.Tensor of shape (B,)
        Class indices whose logit is explained.
    features : torch.Tensor of shape (B, ...), int
        The feature (0, 1, ... per sample) of every element, ``-1``: never replaced;
        broadcastable against ``inputs`` (e.g. ``(B, T, 1)`` for tokens, ``(B, 1, H, W)``
        for pixels across channels).
    n_samples : int, default=200
        Coalitions per sample of LIME and Kernel SHAP.
    random_state : int or None, default=0
        Seed of every sample's coalitions (the same for every sample; None: unseeded).
    additional_forward_args : tuple, default=()
        Further arguments of ``forward`` (tensors, sample axis first).
    rows_per_pass : int, default=256
        Perturbed inputs per forward pass (bounds the memory).
    compared : torch.Tensor or None, default=None
        LIME: the elements whose values its distance compares, broadcastable against
        ``inputs`` (e.g. the real tokens of a padded batch); None: all.
    lengths : torch.Tensor of shape (B,) or None, default=None
        Padded sequences: sample ``i``'s elements beyond ``lengths[i]`` along axis 1 (and
        those of the additional arguments with that axis) are padding, which ``forward``
        ignores; each forward pass then holds perturbed inputs of one length, cut to it (as if
        every sample were explained alone, without padding).

    Returns
    -------
    torch.Tensor of shape (B, F_max), float64
        The attribution of every feature (0 beyond a sample's features).

    Raises
    ------
    ValueError
        If the method is unknown or a count is not a positive integer.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import perturbation_attributions
    >>> weights = torch.tensor([[1.0, -2.0, 3.0], [0.0, 1.0, 0.0]])
    >>> forward = lambda x: x @ weights.T  # (R, 3) -> (R, 2) logits
    >>> x, features = torch.ones(1, 3), torch.tensor([[0, 1, 2]])
    >>> perturbation_attributions("occlusion", forward, x, torch.zeros(1, 3),
    ...                           torch.tensor([0]), features).tolist()
    [[1.0, -2.0, 3.0]]
    >>> shap = perturbation_attributions("kernel_shap", forward, x, torch.zeros(1, 3),
    ...                                  torch.tensor([0]), features, n_samples=32)
    >>> [round(v, 3) for v in shap[0].tolist()]  # a linear model: exact
    [1.0, -2.0, 3.0]
    """
    if method not in PERTURBATION_METHODS:
        raise ValueError(f"method={method!r} is not supported; choose one of "
                         f"{list(PERTURBATION_METHODS)}.")
    _check_count("n_samples", n_samples)
    _check_count("rows_per_pass", rows_per_pass)
    inputs, baseline = inputs.detach(), baseline.detach().to(inputs)
    features = features.to(device=inputs.device, dtype=torch.long)
    counts = (features.flatten(1).amax(1) + 1).clamp(min=0).tolist()
    width = max(counts, default=0)
    scores = torch.zeros(len(inputs), width, dtype=torch.float64)
    if width == 0:
        return scores
    # every sample's coalitions; each distinct one is evaluated once
    drawn, distinct, owners = [], [], []
    for i, count in enumerate(counts):
        if count == 0:
            drawn.append(None)
            continue
        rows = draw_coalitions("occlusion" if _ablation(method, count) else method, count,
                               n_samples, random_state)
        if _ablation(method, count):  # the full coalition first: the reference logit
            rows = torch.cat([torch.ones(1, count, dtype=torch.bool), rows])
        unique, inverse = torch.unique(rows, dim=0, return_inverse=True)
        drawn.append((rows, inverse, len(owners)))
        padded = torch.ones(len(unique), width, dtype=torch.bool)
        padded[:, :count] = unique
        distinct.append(padded)
        owners.extend([i] * len(unique))
    owners = torch.tensor(owners, dtype=torch.long, device=inputs.device)
    coalitions = torch.cat(distinct).to(inputs.device)
    if method == "lime":
        compared = torch.ones_like(inputs[:1], dtype=torch.bool).expand_as(inputs) \
            if compared is None else compared.to(inputs.device).expand_as(inputs)
    else:
        compared = None
    with torch.no_grad():
        logits, weights = _evaluate(
            forward, inputs, baseline, features, coalitions, owners, target,
            tuple(additional_forward_args), rows_per_pass,
            None if lengths is None else lengths.to(inputs.device), compared)
    logits, weights = logits.cpu(), None if weights is None else weights.cpu()
    for i, entry in enumerate(drawn):
        if entry is None:
            continue
        rows, inverse, first = entry
        values = logits[first + inverse]
        count = rows.shape[1]
        if _ablation(method, count):
            scores[i, :count] = values[0] - values[1:]
        elif method == "lime":
            scores[i, :count] = torch.from_numpy(
                _surrogate(method, rows, values, weights[first + inverse]))
        else:
            endpoints = torch.ones(len(rows), dtype=torch.float64)
            endpoints[:2] = KERNEL_SHAP_ENDPOINT_WEIGHT
            scores[i, :count] = torch.from_numpy(_surrogate(method, rows, values, endpoints))
    return scores
