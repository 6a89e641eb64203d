"""captum's noise methods with per-sample random draws: the noise tunnel (SmoothGrad,
SmoothGrad², VarGrad) over a captum attribution, and GradientSHAP.

captum's ``NoiseTunnel`` and ``GradientShap`` draw their noise, baselines and interpolation
points from the global random generators (torch's and numpy's) for a whole batch, so an
explanation would depend on its batch and on what other threads draw. Here every sample
draws from a generator of its own, seeded with ``random_state`` (the same seed for every
sample, as the perturbation methods do; None: fresh entropy), in an order that does not
depend on the batch: a sample's interpolation points and baseline choices first, then its
noise, drawn along the first axis after the sample's (token positions, image channels), so
that a longer padding only appends draws. What is computed with the draws is captum's:

* :func:`noise_tunnel` is ``NoiseTunnel.attribute`` — every sample repeated ``nt_samples``
  times plus Gaussian noise, the wrapped captum method on the noisy copies (a chunk of copies
  at a time), then the mean (``"smoothgrad"``), the mean of squares (``"smoothgrad_sq"``) or
  the variance (``"vargrad"``) over the copies;
* :func:`gradient_shap` is ``GradientShap.attribute`` — the expectation over the draws of
  ``(x + ε − b) ⊙ ∂f/∂x`` at ``b + α (x + ε − b)``, ``b`` drawn from the sample's baselines,
  ``α ~ U(0, 1)``, ``ε ~ N(0, stdevs²)`` — with captum's gradients.

The tests compare both with captum's classes given the same draws.
"""
from __future__ import annotations

from collections.abc import Callable
from numbers import Real
from typing import Any, NamedTuple

import torch

__all__ = ["Draws", "draw", "gradient_shap", "noise_tunnel", "seeded_generator"]

#: captum's noise tunnel types
NT_TYPES = ("smoothgrad", "smoothgrad_sq", "vargrad")


def seeded_generator(seed: int | None) -> torch.Generator:
    """Return a CPU generator seeded with ``seed`` (None: fresh entropy).

    Parameters
    ----------
    seed : int or None
        The seed.

    Returns
    -------
    torch.Generator
        The generator.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import seeded_generator
    >>> a = torch.rand(2, generator=seeded_generator(0))
    >>> torch.equal(a, torch.rand(2, generator=seeded_generator(0)))
    True
    """
    generator = torch.Generator()
    if seed is None:
        generator.seed()
    else:
        generator.manual_seed(int(seed))
    return generator


class Draws(NamedTuple):
    """The random draws of a batch, one generator per sample (see :func:`draw`).

    Parameters
    ----------
    noise : torch.Tensor of shape (B, n, ...)
        The noise of each sample's ``n`` copies (already scaled by its standard deviation).
    alphas : torch.Tensor of shape (B, n)
        GradientSHAP's interpolation points, in [0, 1).
    picks : torch.Tensor of shape (B, n)
        GradientSHAP's choice of baseline for each copy (an index into the sample's ``K``
        baselines).

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import draw
    >>> draws = draw(2, 3, (4, 5), stdevs=0.1, random_state=0)
    >>> draws.noise.shape, draws.alphas.shape, draws.picks.shape
    (torch.Size([2, 3, 4, 5]), torch.Size([2, 3]), torch.Size([2, 3]))
    """
    noise: torch.Tensor
    alphas: torch.Tensor
    picks: torch.Tensor


def _check_stdevs(stdevs, n_samples: int):
    if isinstance(stdevs, torch.Tensor):
        if stdevs.shape != (n_samples,) or not bool(torch.isfinite(stdevs).all()) or \
                bool((stdevs < 0).any()):
            raise ValueError("stdevs must hold one finite non-negative standard deviation per "
                             "sample.")
        return stdevs.double()
    if isinstance(stdevs, bool) or not isinstance(stdevs, Real) or not stdevs >= 0 or \
            stdevs == float("inf"):
        raise ValueError(f"stdevs must be a non-negative number, got {stdevs!r}.")
    return torch.full((n_samples,), float(stdevs), dtype=torch.float64)


def draw(n_inputs: int, n_copies: int, shape: tuple, *, stdevs: float | torch.Tensor = 0.0,
         n_baselines: int = 1, random_state: int | None = 0) -> Draws:
    """Draw each sample's interpolation points, baseline choices and noise.

    Every sample draws from a generator of its own seeded with ``random_state``: first
    ``n_copies`` points ``α ~ U(0, 1)``, then ``n_copies`` baseline indices, then the noise,
    position by position along ``shape[0]`` (a sample's draws at the first positions are the
    same whatever ``shape[0]``: a batch's padding does not change them).

    Parameters
    ----------
    n_inputs : int
        The samples ``B``.
    n_copies : int
        The draws per sample ``n``.
    shape : tuple of int
        The shape of one sample (e.g. ``(T, E)`` or ``(C, H, W)``).
    stdevs : float or torch.Tensor of shape (B,), default=0.0
        The standard deviation of the noise, one for all samples or one per sample.
    n_baselines : int, default=1
        The baselines ``K`` each sample draws from.
    random_state : int or None, default=0
        The seed of every sample's generator (None: fresh entropy).

    Returns
    -------
    Draws
        ``noise (B, n, *shape)``, ``alphas (B, n)``, ``picks (B, n)``.

    Raises
    ------
    ValueError
        If ``stdevs`` is not a non-negative number or one per sample.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import draw
    >>> short = draw(1, 4, (3, 2), stdevs=1.0).noise
    >>> padded = draw(1, 4, (5, 2), stdevs=1.0).noise   # two more positions
    >>> torch.equal(short, padded[:, :, :3])
    True
    """
    sigma = _check_stdevs(stdevs, n_inputs)
    noise = torch.zeros((n_inputs, n_copies, *shape))
    alphas = torch.empty(n_inputs, n_copies)
    picks = torch.empty(n_inputs, n_copies, dtype=torch.long)
    seeded = None  # with a seed every sample's generator draws the same: drawn once
    for i in range(n_inputs):
        if seeded is None:
            generator = seeded_generator(random_state)
            draws = (torch.rand(n_copies, generator=generator),
                     torch.randint(n_baselines, (n_copies,), generator=generator),
                     _standard_normal(generator, n_copies, shape) if sigma[i] > 0 else None)
            if random_state is not None and bool((sigma > 0).all()):
                seeded = draws
        else:
            draws = seeded
        alphas[i], picks[i] = draws[0], draws[1]
        if draws[2] is not None:
            noise[i] = draws[2] * float(sigma[i])
    return Draws(noise, alphas, picks)


def _standard_normal(generator: torch.Generator, n_copies: int, shape: tuple) -> torch.Tensor:
    """``(n, *shape)`` standard normal draws by Box-Muller from uniforms drawn position by
    position along ``shape[0]`` (torch's uniform draws are sequential, its normal ones are
    not: a longer ``shape[0]`` only appends draws)."""
    uniform = torch.rand((shape[0], 2, n_copies, *shape[1:]), generator=generator)
    radius = torch.sqrt(-2 * torch.log1p(-uniform[:, 0]))
    return (radius * torch.cos(2 * torch.pi * uniform[:, 1])).transpose(0, 1)


def _repeated(value, copies: int, n_inputs: int, *, always: bool = False):
    """A per-sample argument for ``copies`` copies of each of the ``n_inputs`` samples, as
    captum's noise tunnel expands it: ``repeat_interleave`` along the sample axis; a target
    or baseline of one row (or a non-tensor) as it is, an additional forward argument
    (``always``) every time."""
    if isinstance(value, torch.Tensor) and value.dim() > 0 and \
            (always or (len(value) == n_inputs and n_inputs > 1)):
        return value.repeat_interleave(copies, dim=0)
    return value


def _chunks(n_copies: int, n_inputs: int, rows_per_pass: int):
    size = max(1, min(n_copies, rows_per_pass // max(n_inputs, 1)))
    for start in range(0, n_copies, size):
        yield slice(start, min(start + size, n_copies))


def noise_tunnel(attribute: Callable[..., torch.Tensor], inputs: torch.Tensor,
                 noise: torch.Tensor, nt_type: str = "smoothgrad", *,
                 rows_per_pass: int = 4096, **kwargs: Any) -> torch.Tensor:
    """Run captum's noise tunnel (``NoiseTunnel.attribute``) with the given noise.

    Parameters
    ----------
    attribute : callable
        A captum method's ``attribute`` (e.g. ``Saliency(forward).attribute``), called on the
        noisy copies with ``kwargs`` expanded to them.
    inputs : torch.Tensor of shape (B, ...)
        The inputs (detached).
    noise : torch.Tensor of shape (B, n, ...)
        The noise of each sample's ``n`` copies (:func:`draw`).
    nt_type : {"smoothgrad", "smoothgrad_sq", "vargrad"}, default="smoothgrad"
        The mean, the mean of the squares or the variance of the copies' attributions.
    rows_per_pass : int, default=4096
        At most this many copies (all samples together, at least one per sample) go to one
        call of ``attribute``.
    **kwargs
        Further arguments of ``attribute``: ``target``, ``additional_forward_args`` and
        ``baselines`` (one row per sample, or one row) are repeated for the copies as captum
        repeats them; the others are passed as they are.

    Returns
    -------
    torch.Tensor of shape (B, ...)
        The smoothed attributions.

    Raises
    ------
    ValueError
        If ``nt_type`` is unknown.

    Examples
    --------
    >>> import torch
    >>> from captum.attr import Saliency
    >>> from interpretable.attribution import draw, noise_tunnel
    >>> weights = torch.tensor([[1.0, -2.0], [0.5, 0.0]])
    >>> forward = lambda x: torch.tanh(x) @ weights.T
    >>> x = torch.zeros(2, 2)
    >>> noise = draw(2, 8, (2,), stdevs=0.5).noise
    >>> noise_tunnel(Saliency(forward).attribute, x, noise, target=torch.tensor([0, 1]),
    ...              abs=False).shape
    torch.Size([2, 2])
    """
    if nt_type not in NT_TYPES:
        raise ValueError(f"nt_type must be one of {list(NT_TYPES)}, got {nt_type!r}.")
    n_inputs, n_copies = noise.shape[:2]
    total = total_sq = None
    with torch.no_grad():
        for part in _chunks(n_copies, n_inputs, rows_per_pass):
            copies = part.stop - part.start
            noisy = (inputs[:, None] + noise[:, part].to(inputs)).flatten(0, 1)
            options = dict(kwargs)
            for name in ("target", "baselines"):
                if name in options:
                    options[name] = _repeated(options[name], copies, n_inputs)
            if "additional_forward_args" in options:
                options["additional_forward_args"] = tuple(
                    _repeated(a, copies, n_inputs, always=True)
                    for a in options["additional_forward_args"])
            with torch.enable_grad():
                attr = attribute(noisy.requires_grad_(), **options).detach()
            attr = attr.view(n_inputs, copies, *attr.shape[1:])
            total = attr.sum(1) if total is None else total + attr.sum(1)
            squares = attr.pow(2).sum(1)
            total_sq = squares if total_sq is None else total_sq + squares
    mean, mean_sq = total / n_copies, total_sq / n_copies
    if nt_type == "smoothgrad":
        return mean
    return mean_sq if nt_type == "smoothgrad_sq" else mean_sq - mean * mean


def gradient_shap(forward: Callable[..., torch.Tensor], inputs: torch.Tensor,
                  baselines: torch.Tensor, target: torch.Tensor, draws: Draws, *,
                  additional_forward_args: tuple = (),
                  rows_per_pass: int = 4096) -> torch.Tensor:
    """Compute captum's GradientSHAP (``GradientShap.attribute``) with the given draws.

    Parameters
    ----------
    forward : callable
        ``forward(inputs, *additional_forward_args) -> outputs (B, C)``.
    inputs : torch.Tensor of shape (B, ...)
        The inputs (detached).
    baselines : torch.Tensor of shape (B, K, ...)
        Each sample's ``K`` baselines, the distribution its draws pick from.
    target : torch.Tensor of shape (B,)
        The explained outputs.
    draws : Draws
        The draws (:func:`draw` with ``n_baselines=K``): copy ``j`` of sample ``i`` explains
        ``inputs[i] + noise[i, j]`` against ``baselines[i, picks[i, j]]`` at the point
        ``alphas[i, j]`` of the segment between them.
    additional_forward_args : tuple, default=()
        Further arguments of ``forward`` (tensors, sample axis first).
    rows_per_pass : int, default=4096
        At most this many copies (at least one per sample) per forward and backward pass.

    Returns
    -------
    torch.Tensor of shape (B, ...)
        The attributions, the mean over the copies; with ``stdevs=0`` they sum to
        ``f(x)`` minus the mean of ``f`` over the baselines, in expectation.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import draw, gradient_shap
    >>> weights = torch.tensor([[1.0, -2.0], [0.5, 3.0]])
    >>> forward = lambda x: x @ weights.T          # linear: GradientSHAP is exact
    >>> x = torch.tensor([[1.0, 2.0]])
    >>> attr = gradient_shap(forward, x, torch.zeros(1, 1, 2), torch.tensor([1]),
    ...                      draw(1, 5, (2,)))
    >>> attr
    tensor([[0.5000, 6.0000]])
    """
    from captum.attr import Saliency
    from captum.attr._core.gradient_shap import _scale_input

    n_inputs, n_copies = draws.alphas.shape
    rows = torch.arange(n_inputs, device=baselines.device)[:, None]
    total = None
    for part in _chunks(n_copies, n_inputs, rows_per_pass):
        copies = part.stop - part.start
        noisy = (inputs[:, None] + draws.noise[:, part].to(inputs)).flatten(0, 1)
        chosen = baselines[rows, draws.picks[:, part].to(baselines.device)].flatten(0, 1)
        alphas = draws.alphas[:, part].flatten().to(inputs)
        with torch.enable_grad():
            scaled = _scale_input(noisy, chosen.to(inputs), alphas)  # requires grad
            grads = Saliency(forward).attribute(
                scaled, target=_repeated(target, copies, n_inputs), abs=False,
                additional_forward_args=tuple(_repeated(a, copies, n_inputs, always=True)
                                              for a in additional_forward_args))
        attr = ((noisy - chosen.to(inputs)) * grads).detach()
        attr = attr.view(n_inputs, copies, *attr.shape[1:]).sum(1)
        total = attr if total is None else total + attr
    return total / n_copies
