"""Pixel attributions behind one call: ``attribute_pixels(model, x, target, method)``.

``model`` is a module with ``forward(x) -> logits``, ``forward_with_attention(x) -> (logits,
[attention (B, heads, N, N)] per layer)``, ``forward_features(x) -> (final token map
(B, D, h, w), attentions)``, ``forward_head(token map) -> logits`` and ``grid_size`` (token
grid); both :class:`~interpretable.nn.bcos.BcosViT` and
:class:`~interpretable.nn.ViT` qualify. All methods return (B, H, W) pixel maps. No method
changes the model (no hooks, no flags), so several threads may explain with one model at once.

* ``"inherent"``: B-cos contribution maps ``W(x)ᵀ_k ⊙ x`` summed over channels (exact).
* ``"rollout"``: attention rollout (Abnar & Zuidema, 2020), ``(A + I)`` row-normalised.
* ``"final_attention"``: head-averaged attention of the last layer.
* ``"gradsam"``: GradSAM (Barkan et al., 2021): mean over layers and heads of ``A ⊙ ReLU(∂y/∂A)``.
* ``"gradcam"``: GradCAM on the final token map (as captum ``LayerGradCam`` with
  ``relu_attributions=True``).
* ``"input_x_gradient"``: captum ``InputXGradient``.
* ``"integrated_gradients"``: captum ``IntegratedGradients``, 32 steps, from ``baseline`` (an
  encoded image broadcastable to x; None: the all-zero input). The estimators pass the
  encoding of a black image, ``(0, 1)`` per channel for B-cos models: the all-zero *encoding*
  is degenerate for them (B-cos networks are positively homogeneous, so IG from 0 equals
  Input×Gradient exactly, at ``n_steps`` times the cost); the estimators also offer a constant
  image and a Gaussian-blurred copy (:func:`gaussian_blur`).
* ``"smoothgrad"``: SmoothGrad (Smilkov et al., 2017), captum ``NoiseTunnel`` over
  ``Saliency``: the gradient averaged over ``nt_samples`` copies of the image with Gaussian
  noise of standard deviation ``stdevs`` (None: 15 % of the spread, max − min, of each encoded
  image), its L2 norm over the channels (``nt_type="smoothgrad_sq"`` / ``"vargrad"``: the
  mean square / variance of the gradients);
* ``"gradient_shap"``: captum ``GradientShap``, the mean over ``n_samples`` draws of
  ``(x + ε − b) ⊙ ∂y/∂x`` at a uniformly random point between a baseline ``b`` (drawn from
  the ``baseline`` images: one, or ``(B, K, C, H, W)``, ``K`` per image) and the image,
  summed over the channels; ``ε`` has standard deviation ``stdevs`` (None: 0, captum's
  default). Both draw from a generator per image seeded with ``random_state``
  (:mod:`interpretable.attribution`).
* ``"occlusion"``: captum ``Occlusion``, a ``window`` × ``window`` square (all channels;
  default: one token's patch) replaced by the ``baseline`` every ``stride`` pixels (default:
  ``window``, the windows tile the image; the last windows of a row or column may be cut by
  the border); a pixel's value is the mean drop of the logit over the windows covering it.
  Where the windows tile the image, every window of every image is evaluated in shared
  forward passes (:mod:`interpretable.attribution`), else by captum;
* ``"lime"`` and ``"kernel_shap"``: captum ``Lime`` / ``KernelShap`` with the tiling windows as
  features (patches of ``window`` pixels), ``n_samples`` coalitions per image drawn from a
  generator of its own seeded with ``random_state``, computed by
  :mod:`interpretable.attribution` (equal to captum's on the same coalitions);
  every pixel of a patch holds the patch's coefficient, as captum returns it (Kernel SHAP's
  patch values sum to the logit minus the baseline's logit).

Token-level maps (attention methods, GradCAM) are averaged over the query tokens (for models
that mean-pool the tokens) or taken from the class token's row (for models with a class token,
as B-cosified conventional ViTs: its score is dropped) and upsampled bilinearly to the image
size.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.nn import functional as F

from interpretable.nn import explained_logits
from interpretable.nn.bcos import explanation_mode

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["attribute_pixels", "gradcam", "inherent", "inherent_terms", "patch_features"]

PIXEL_METHODS = ("inherent", "rollout", "final_attention", "gradsam", "gradcam", "input_x_gradient",
           "integrated_gradients", "occlusion", "smoothgrad", "gradient_shap", "lime",
           "kernel_shap")
#: encoded pixel values per forward pass of the perturbation methods (without
#: ``internal_batch_size``): 341 images of 64 × 64, 27 of 224 × 224
_PIXELS_PER_PASS = 2 ** 22
#: SmoothGrad's default noise: this fraction of the spread (max - min) of each encoded image
NOISE_LEVEL = 0.15


def image_targets(x: torch.Tensor, target) -> torch.Tensor:
    """``target`` as one class index per image of ``x (B, C, H, W)`` (a single one broadcast);
    ValueError on another shape or count."""
    if x.dim() != 4:
        raise ValueError(f"x must have shape (B, C, H, W), got {tuple(x.shape)}.")
    target = torch.as_tensor(target, device=x.device).long().reshape(-1)
    if target.numel() == 1 and len(x) > 1:
        target = target.expand(len(x))
    if len(target) != len(x):
        raise ValueError(f"target has {len(target)} entries for {len(x)} inputs.")
    return target


def _patch_scores(matrix: torch.Tensor, grid_size) -> torch.Tensor:
    """(B, N, N) token-to-token scores -> (B, h·w) scores of the patch tokens: the mean over
    the query rows, or with a class token first (N = h·w + 1) its row without itself."""
    if matrix.shape[-1] == grid_size[0] * grid_size[1] + 1:
        return matrix[:, 0, 1:]
    return matrix.mean(1)


def _to_pixels(tokens: torch.Tensor, grid_size, image_size) -> torch.Tensor:
    """(B, h·w) token scores -> (B, H, W) by bilinear upsampling of the (h, w) token grid."""
    maps = tokens.reshape(len(tokens), 1, *grid_size)
    return F.interpolate(maps, size=tuple(image_size), mode="bilinear",
                         align_corners=False)[:, 0]


def inherent(model: torch.nn.Module, x: torch.Tensor,
             target: torch.Tensor | int | Sequence[int] | None = None,
             contrast: torch.Tensor | None = None
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Compute the exact B-cos contributions in one forward and one backward pass.

    ``contributions.sum((1, 2)) + model.logit_bias`` equals the target logits (with
    ``contrast``: the target logits minus the contrast-weighted logits, and the logit bias's
    share ``model.logit_bias * (1 - contrast.sum(1))``).

    Parameters
    ----------
    model : torch.nn.Module
        A fitted B-cos ViT (``estimator.module_``), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        Encoded images.
    target : torch.Tensor of shape (B,) or None, default=None
        The explained classes (None: the predicted ones).
    contrast : torch.Tensor of shape (B, K) or None, default=None
        Weights over the classes whose weighted logits are subtracted from the target's
        (``1/K`` each: the mean logit); see :func:`~interpretable.nn._losses.explained_logits`.

    Returns
    -------
    contributions : torch.Tensor of shape (B, H, W)
        The contribution maps.
    weights : torch.Tensor of shape (B, C, H, W)
        The rows ``W(x)`` of the explained logits (or logit differences).
    logits : torch.Tensor of shape (B, K)
        The logits.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from interpretable import BcosViTClassifier
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, device="cpu").fit(X, [0, 1])
    >>> x = clf.encode(X).inputs["x"]  # the encoded images (B, C, H, W)
    >>> from interpretable.attribution import inherent
    >>> contributions, weights, logits = inherent(clf.module_, x)
    >>> explained = logits.max(1).values
    >>> torch.allclose(contributions.sum((1, 2)) + clf.module_.logit_bias, explained, atol=1e-4)
    True
    """
    if not hasattr(model, "term_logits"):
        raise ValueError("method='inherent' needs a B-cos model (dynamic linear); "
                         f"{type(model).__name__} is not one.")
    if target is not None:
        target = image_targets(x, target)
    x = x.detach().requires_grad_(True)
    with explanation_mode(constant_parameters=True), torch.enable_grad():
        logits: torch.Tensor = model(x)
        if target is None:
            target = logits.argmax(1)
        weights, = torch.autograd.grad(explained_logits(logits, target, contrast).sum(), x)
    return (weights * x).sum(1).detach(), weights, logits.detach()


def inherent_terms(model: Any, x: torch.Tensor,
                   target: torch.Tensor | int | Sequence[int],
                   contrast: torch.Tensor | None = None) -> tuple[torch.Tensor, list[str]]:
    """Compute the exact contribution maps of every residual-stream term of a B-cos ViT.

    The terms are the token embedding, each (layer, head) and each MLP; their maps sum to the
    inherent contribution map.

    Parameters
    ----------
    model : torch.nn.Module
        A fitted B-cos ViT (``estimator.module_``), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        Encoded images.
    target : torch.Tensor of shape (B,)
        The explained classes.
    contrast : torch.Tensor of shape (B, K) or None, default=None
        Explain the target logit minus these weights' combination of the logits (see
        :func:`inherent`).

    Returns
    -------
    maps : torch.Tensor of shape (B, T, H, W)
        One map per term.
    names : list of str
        The T terms' names.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from interpretable import BcosViTClassifier
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, device="cpu").fit(X, [0, 1])
    >>> x = clf.encode(X).inputs["x"]  # the encoded images (B, C, H, W)
    >>> from interpretable.attribution import inherent_terms
    >>> maps, names = inherent_terms(clf.module_, x, torch.tensor([0, 1]))
    >>> maps.shape, names
    (torch.Size([2, 4, 8, 8]), ['tokens', 'layer0.head0', 'layer0.head1', 'layer0.mlp'])
    """
    target = image_targets(x, target)
    x = x.detach().requires_grad_(True)
    with explanation_mode(constant_parameters=True), torch.enable_grad():
        _, terms = model.term_logits(x)                       # (B, T, K)
        n_terms = terms.shape[1]
        selected = explained_logits(terms, target, contrast) * model.output_scale   # (B, T)
        # one backward pass per term (faster than a vmapped batched-gradient call here)
        grads = torch.stack([torch.autograd.grad(selected[:, t].sum(), x,
                                                 retain_graph=t < n_terms - 1)[0]
                             for t in range(n_terms)])
    maps = (grads * x.detach()).sum(2).transpose(0, 1)
    return maps.detach(), model.term_names()


def gradcam(model: Any, x: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Compute GradCAM (Selvaraju et al., 2017) on the final token map of a vision transformer.

    With ``A`` (B, D, h, w) the final token map: channel weights = spatial mean of
    ``∂y_target/∂A``, map = ReLU(Σ_c weight_c · A_c). The map is computed once without
    autograd; only the head is differentiated. For a model with a class token (its final
    tokens (B, D, 1 + h·w)), whose head reads the class token alone, ``A`` is the patch
    tokens of the last block's first LayerNorm (``model.last_norm_forward``), the last layer
    whose patch tokens feed the class token (the usual ViT GradCAM recipe).

    Parameters
    ----------
    model : torch.nn.Module
        A fitted vision transformer (``estimator.module_``), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        Encoded images (``estimator.encode(X).inputs["x"]``).
    target : torch.Tensor of shape (B,)
        The explained classes.

    Returns
    -------
    torch.Tensor of shape (B, h, w)
        The maps, one value per token.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from interpretable import BcosViTClassifier
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, device="cpu").fit(X, [0, 1])
    >>> x = clf.encode(X).inputs["x"]  # the encoded images (B, C, H, W)
    >>> from interpretable.attribution import gradcam
    >>> gradcam(clf.module_, x, torch.tensor([0, 1])).shape
    torch.Size([2, 2, 2])
    """
    with torch.no_grad():
        token_map, _ = model.forward_features(x)
    with torch.enable_grad():
        if token_map.dim() == 3:  # the class token first: the last block's first LayerNorm
            token_map, logits = model.last_norm_forward(x)
        else:
            logits = model.forward_head(token_map.requires_grad_(True))
        grads, = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), token_map)
    token_map = token_map.detach()
    if token_map.dim() == 3:  # (B, 1 + h·w, D): the patch tokens' grid
        token_map, grads = (t[:, 1:].transpose(1, 2).unflatten(2, model.grid_size)
                            for t in (token_map, grads))
    weights = grads.mean((2, 3), keepdim=True)
    return (weights * token_map).sum(1).clamp_min(0)


def gaussian_blur(x: torch.Tensor, sigma: float) -> torch.Tensor:
    """Blur every channel with a Gaussian kernel of standard deviation ``sigma`` pixels.

    The kernel is normalised, spans ``±3 sigma`` and the borders are replicated, so blurring
    commutes with any per-channel affine encoding: the blur of an encoded image is the encoding
    of the blurred image.

    Parameters
    ----------
    x : torch.Tensor of shape (B, C, H, W)
        Images (encoded or not).
    sigma : float
        The standard deviation in pixels (> 0).

    Returns
    -------
    torch.Tensor of shape (B, C, H, W)
        The blurred images.

    Raises
    ------
    ValueError
        If ``sigma`` is not a positive number.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution._images import gaussian_blur
    >>> x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> blurred = gaussian_blur(x, sigma=2.0)
    >>> blurred.shape, bool(blurred.std() < x.std())
    (torch.Size([2, 3, 8, 8]), True)
    >>> torch.allclose(gaussian_blur(1 - x, sigma=2.0), 1 - blurred, atol=1e-6)
    True
    """
    if isinstance(sigma, bool) or not isinstance(sigma, (int, float)) or not sigma > 0:
        raise ValueError(f"sigma must be a positive number, got {sigma!r}.")
    radius = max(1, int(3 * sigma + 0.5))
    offsets = torch.arange(-radius, radius + 1, dtype=x.dtype, device=x.device)
    kernel = torch.exp(-0.5 * (offsets / sigma) ** 2)
    kernel = kernel / kernel.sum()
    channels = x.shape[1]
    out = F.pad(x, (radius, radius, 0, 0), mode="replicate")
    out = F.conv2d(out, kernel.expand(channels, 1, 1, -1), groups=channels)
    out = F.pad(out, (0, 0, radius, radius), mode="replicate")
    return F.conv2d(out, kernel[:, None].expand(channels, 1, -1, 1), groups=channels)


def _attentions(model, x, target=None):
    with torch.set_grad_enabled(target is not None):
        logits, attentions = model.forward_with_attention(x)
    if target is None:
        return attentions, None
    grads = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), attentions)
    return attentions, grads


def _rollout(attentions) -> torch.Tensor:
    result = None
    for attn in attentions:
        a = attn.mean(1)
        a = a + torch.eye(a.shape[-1], dtype=a.dtype, device=a.device)
        a = a / a.sum(-1, keepdim=True)
        result = a if result is None else a @ result
    return result


def _count(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}.")


def _check_seed(random_state) -> None:
    if random_state is not None and (isinstance(random_state, bool) or
                                     not isinstance(random_state, int) or random_state < 0):
        raise ValueError(f"random_state must be None or a non-negative integer, got "
                         f"{random_state!r}.")


def patch_features(x: torch.Tensor, window: int) -> torch.Tensor:
    """Return the patch of every pixel of the images, the same for every channel.

    The patches are ``window`` × ``window`` squares tiling the image row by row (those at the
    right and bottom borders may be cut), numbered 0, 1, ...

    Parameters
    ----------
    x : torch.Tensor of shape (B, C, H, W)
        The images.
    window : int
        The side of a patch in pixels.

    Returns
    -------
    torch.Tensor of shape (B, 1, H, W)
        The patch indices.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import patch_features
    >>> patch_features(torch.zeros(1, 3, 3, 4), 2)[0, 0].tolist()
    [[0, 0, 1, 1], [0, 0, 1, 1], [2, 2, 3, 3]]
    """
    height, width = x.shape[-2:]
    rows = torch.arange(height, device=x.device) // window
    columns = torch.arange(width, device=x.device) // window
    cells = rows[:, None] * (-(-width // window)) + columns[None]
    return cells.expand(len(x), 1, height, width)


def _noisy(model, x: torch.Tensor, target: torch.Tensor, method: str, baseline, *, nt_type,
           nt_samples, n_samples, stdevs, random_state, rows_per_pass) -> torch.Tensor:
    """SmoothGrad and GradientSHAP maps (B, H, W) (:mod:`interpretable.attribution`)."""
    from captum.attr import Saliency

    from interpretable.attribution._noise import NT_TYPES, draw, gradient_shap, noise_tunnel

    _count("nt_samples", nt_samples)
    _count("n_samples", n_samples)
    if nt_type not in NT_TYPES:
        raise ValueError(f"nt_type must be one of {list(NT_TYPES)}, got {nt_type!r}.")
    _check_seed(random_state)
    if stdevs is None:
        spread = x.flatten(1).amax(1) - x.flatten(1).amin(1)
        stdevs = 0.0 if method == "gradient_shap" else (NOISE_LEVEL * spread).double().cpu()
    elif isinstance(stdevs, bool) or not isinstance(stdevs, (int, float)) or \
            not 0 <= stdevs < float("inf"):
        raise ValueError(f"stdevs must be None or a non-negative number, got {stdevs!r}.")
    if method == "smoothgrad":
        noise = draw(len(x), nt_samples, tuple(x.shape[1:]), stdevs=stdevs,
                     random_state=random_state).noise
        grads = noise_tunnel(Saliency(model).attribute, x, noise, nt_type, target=target,
                             abs=False, rows_per_pass=rows_per_pass)
        return grads.norm(dim=1)
    baselines = torch.zeros_like(x)[:, None] if baseline is None else baseline.to(x)
    baselines = baselines if baselines.dim() == 5 else baselines[:, None]
    baselines = baselines.expand(len(x), *baselines.shape[1:])
    draws = draw(len(x), n_samples, tuple(x.shape[1:]), stdevs=stdevs,
                 n_baselines=baselines.shape[1], random_state=random_state)
    return gradient_shap(model, x, baselines, target, draws,
                         rows_per_pass=rows_per_pass).sum(1)


def attribute_pixels(model: Any, x: torch.Tensor,
                     target: torch.Tensor | int | Sequence[int], method: str = "inherent", *,
                     n_steps: int = 32,
              internal_batch_size: int | None = None,
              baseline: torch.Tensor | None = None, window: int | None = None,
              stride: int | None = None, nt_type: str = "smoothgrad", nt_samples: int = 10,
              n_samples: int = 10, stdevs: float | None = None,
              random_state: int | None = 0) -> torch.Tensor:
    """Compute pixel attributions of the ``target`` logits with one of :data:`PIXEL_METHODS`.

    Parameters
    ----------
    model : torch.nn.Module
        A fitted vision transformer (``estimator.module_``), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        Encoded images (``estimator.encode(X).inputs["x"]``).
    target : torch.Tensor of shape (B,)
        The explained classes.
    method : str, default="inherent"
        One of :data:`PIXEL_METHODS`.
    n_steps : int, default=32
        Integration steps of integrated gradients.
    internal_batch_size : int or None, default=None
        Integration steps evaluated at a time (None: all).
    baseline : torch.Tensor of shape (1 or B, C, H, W) or None, default=None
        The baseline of integrated gradients, occlusion, LIME, Kernel SHAP and GradientSHAP
        (None: zeros); for
        GradientSHAP also ``(1 or B, K, C, H, W)``: ``K`` baselines per image, the
        distribution its draws pick from.
    window : int or None, default=None
        Occlusion, LIME and Kernel SHAP: the side of the square window (patch) in pixels, at
        most the image's side (None: the model's token, ``H // grid_size[0]``).
    stride : int or None, default=None
        Occlusion: the step between windows in pixels (None: ``window``).
    nt_type : {"smoothgrad", "smoothgrad_sq", "vargrad"}, default="smoothgrad"
        SmoothGrad: the mean, mean square or variance of the noisy copies' gradients.
    nt_samples : int, default=10
        SmoothGrad: the noisy copies per image.
    n_samples : int, default=10
        GradientSHAP: the draws per image; LIME and Kernel SHAP: the coalitions per image.
    stdevs : float or None, default=None
        The standard deviation of the noise in the encoded pixel space (None: SmoothGrad 15 %
        of each image's spread, GradientSHAP 0).
    random_state : int or None, default=0
        The seed of every image's draws and coalitions (None: unseeded).

    Returns
    -------
    torch.Tensor of shape (B, H, W)
        The attributions.

    Examples
    --------
    >>> import numpy as np, torch
    >>> from interpretable import BcosViTClassifier
    >>> X = np.random.default_rng(0).random((2, 8, 8, 3), dtype=np.float32)
    >>> clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2,
    ...                         stem_channels=(4,), max_epochs=1, device="cpu").fit(X, [0, 1])
    >>> x = clf.encode(X).inputs["x"]  # the encoded images (B, C, H, W)
    >>> from interpretable.attribution import attribute_pixels
    >>> target = torch.tensor([0, 1])
    >>> attribute_pixels(clf.module_, x, target, method="integrated_gradients", n_steps=4).shape
    torch.Size([2, 8, 8])
    >>> attribute_pixels(clf.module_, x, target, method="occlusion", window=4, stride=2).shape
    torch.Size([2, 8, 8])
    >>> attribute_pixels(clf.module_, x, target, method="smoothgrad", nt_samples=4).shape
    torch.Size([2, 8, 8])
    """
    if method not in PIXEL_METHODS:
        raise ValueError(f"method={method!r} is not supported; choose one of "
                         f"{list(PIXEL_METHODS)}.")
    target = image_targets(x, target)
    x = x.detach()
    size = x.shape[-2:]
    if method == "inherent":
        return inherent(model, x, target)[0]
    if method in ("rollout", "final_attention"):
        attentions, _ = _attentions(model, x)
        matrix = _rollout(attentions) if method == "rollout" else attentions[-1].mean(1)
        return _to_pixels(_patch_scores(matrix.detach(), model.grid_size), model.grid_size,
                          size)
    if method == "gradsam":
        with torch.enable_grad():
            attentions, grads = _attentions(model, x, target)
        matrix = torch.stack([(a * g.clamp_min(0)).mean(1)
                              for a, g in zip(attentions, grads, strict=True)]).mean(0)
        return _to_pixels(_patch_scores(matrix.detach(), model.grid_size), model.grid_size,
                          size)
    if method == "gradcam":
        cam = gradcam(model, x, target)
        return F.interpolate(cam[:, None], size=tuple(size), mode="bilinear",
                             align_corners=False)[:, 0]
    import captum.attr as ca

    if method in ("smoothgrad", "gradient_shap"):
        return _noisy(model, x, target, method, baseline, nt_type=nt_type,
                      nt_samples=nt_samples, n_samples=n_samples, stdevs=stdevs,
                      random_state=random_state,
            rows_per_pass=internal_batch_size or max(len(x), _PIXELS_PER_PASS // x[0].numel()))
    baseline = torch.zeros_like(x) if baseline is None else baseline.to(x).expand_as(x)
    if method in ("occlusion", "lime", "kernel_shap"):
        if window is None:
            window = min(size[0] // model.grid_size[0], size[1] // model.grid_size[1])
        stride = window if stride is None else stride
        for name, value, most in (("window", window, min(size)), ("stride", stride, None)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1 or \
                    (most is not None and value > most):
                raise ValueError(f"{name} must be an integer in [1, {most or 'inf'}], got "
                                 f"{value!r}.")
        if stride != window and method != "occlusion":
            raise ValueError(f"method={method!r} takes patches that tile the image: stride "
                             f"must be None or the window ({window}), got {stride!r}.")
        if stride != window:
            with torch.no_grad():
                attr = ca.Occlusion(model).attribute(
                    x, sliding_window_shapes=(x.shape[1], window, window),
                    strides=(x.shape[1], stride, stride), baselines=baseline, target=target)
            return attr.mean(1)  # the same on every channel: the window spans them all
        from interpretable.attribution._perturbation import perturbation_attributions

        if method != "occlusion":
            _count("n_samples", n_samples)
            _check_seed(random_state)
        features = patch_features(x, window)
        scores = perturbation_attributions(
            method, model, x, baseline, target, features, n_samples=n_samples,
            random_state=random_state,
            rows_per_pass=internal_batch_size or max(len(x), _PIXELS_PER_PASS // x[0].numel()))
        return scores.to(x.device).gather(1, features.flatten(1)).view(len(x), *size).to(x.dtype)
    with torch.enable_grad():
        if method == "input_x_gradient":
            attr = ca.InputXGradient(model).attribute(x.clone().requires_grad_(), target=target)
        else:
            attr = ca.IntegratedGradients(model).attribute(
                x, baselines=baseline, target=target, n_steps=n_steps,
                internal_batch_size=internal_batch_size or len(x))
    return attr.sum(1).detach()
