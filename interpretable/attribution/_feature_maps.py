"""GradCAM and captum's layer methods at any layer of an image classifier, DeepLIFT and the
pixel gradient: what the package's wrappers of torchvision and timm classifiers
(:class:`~interpretable.nn.LibraryImageModel`) are explained with besides the
captum methods of :func:`~interpretable.attribution.attribute_pixels`.

* :func:`layer_gradcam`: GradCAM at a layer's output, upsampled to the image;
* :func:`layer_attribution`: captum ``LayerIntegratedGradients`` or
  ``LayerGradientXActivation`` at a layer's spatial output, summed over its channels and
  spread over the image so that the map keeps their sum (:func:`spread_cells`); layer
  integrated gradients sum to the logit minus the logit with the layer's output at its value
  for the baseline image;
* :func:`pixel_deeplift`: captum ``DeepLift`` where it is exact
  (:func:`~interpretable.attribution.deeplift_refusal` says why not elsewhere);
* :func:`pixel_gradient`: the pixel gradient's norm over the channels.

They hook a copy of the network whose hooks are its own
(:func:`~interpretable.attribution.own_hooks_copy`,
:func:`~interpretable.attribution.deeplift_copy`): the fitted network is never
changed, so several threads may explain with it at once.
"""
from __future__ import annotations

import difflib
import warnings
from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from interpretable.attribution._hooked import deeplift_copy, deeplift_refusal, own_hooks_copy
from interpretable.attribution._images import image_targets
from interpretable.attribution._tokens import _layer_swapped_logit
from interpretable.nn import as_channels_first, logits_of, map_layout

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["layer_attribution", "layer_gradcam", "pixel_deeplift", "pixel_gradient",
           "spread_cells"]

#: the methods of :func:`layer_attribution`
LAYER_METHODS = ("integrated_gradients", "input_x_gradient")


def named_layer(network: nn.Module, name, owner: str = "the model") -> nn.Module:
    """The submodule ``name`` of ``network`` (as its ``named_modules()`` names it); ValueError
    naming close names and a few of its modules otherwise."""
    modules = dict(network.named_modules())
    if isinstance(name, str) and name and name in modules:
        return modules[name]
    names = [n for n in modules if n]
    close = difflib.get_close_matches(name, names, n=3) if isinstance(name, str) else []
    shown = names[:6] + (["..."] if len(names) > 6 else [])
    raise ValueError(f"layer={name!r} is not a module of {owner}"
                     + (f"; did you mean {' or '.join(map(repr, close))}?" if close else "")
                     + f" Its modules ({len(names)}): {shown}; choose one whose output is a "
                     "feature map of the image.")


def layer_gradcam(model: nn.Module, x: torch.Tensor, target: torch.Tensor | int | Sequence[int],
                  layer: str, *, network: nn.Module | None = None,
                  grid: tuple[int, int] | None = None,
                  prefer_channels_last: bool = False) -> torch.Tensor:
    """Compute GradCAM (Selvaraju et al., 2017) at a layer, upsampled to the image.

    With ``A (B, C, h, w)`` the layer's output on the image grid: channel weights = the
    spatial mean of ``∂y_target/∂A``, map = ReLU(Σ_c weight_c · A_c), upsampled bilinearly
    (``align_corners=False``) to ``(H, W)``: captum's ``LayerGradCam`` with
    ``relu_attributions=True`` followed by ``LayerAttribution.interpolate(..., "bilinear")``.
    A channels-last output ``(B, h, w, C)`` has its channels moved first, a token output
    ``(B, N, D)`` its patch tokens (after the class and other prefix tokens) laid on ``grid``
    (see :func:`~interpretable.nn.map_layout`). A layer run several times in a
    forward pass is read at its last run.

    Parameters
    ----------
    model : torch.nn.Module
        ``forward(x) -> logits (B, K)`` (or a tuple starting with them), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        The model's inputs.
    target : torch.Tensor of shape (B,)
        The explained classes.
    layer : str
        The layer's name in ``network``.
    network : torch.nn.Module or None, default=None
        The module whose ``named_modules()`` names ``layer`` (a submodule of ``model``;
        None: ``model``).
    grid : tuple of 2 int or None, default=None
        The patch grid, for a token output.
    prefer_channels_last : bool, default=False
        A 4-d output that could be either layout is channels last.

    Returns
    -------
    torch.Tensor of shape (B, H, W)
        The maps.

    Raises
    ------
    ValueError
        If ``layer`` names no module, or its output is no map of the image.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import layer_gradcam
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
    ...                           torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    ...                           torch.nn.Linear(4, 2)).eval()
    >>> x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> layer_gradcam(net, x, torch.tensor([0, 1]), "1").shape
    torch.Size([2, 8, 8])
    """
    target = image_targets(x, target)
    twin = own_hooks_copy(model)
    inner = twin if network is None else _twin_of(model, twin, network)
    part = named_layer(inner, layer)
    kept: list[torch.Tensor] = []

    def keep(module, args, output):
        if not isinstance(output, torch.Tensor):
            raise ValueError(f"layer={layer!r} returns {type(output).__name__}, not a tensor: "
                             "choose a layer whose output is a feature map.")
        leaf = output.detach().requires_grad_(True)
        kept.append(leaf)
        return leaf.clone()  # later in-place operations (a functional ReLU) leave it intact

    part.register_forward_hook(keep)
    with torch.enable_grad():
        logits = logits_of(twin(x.detach()))
        if not kept:
            raise ValueError(f"layer={layer!r} does not run in the model's forward pass.")
        activation = kept[-1]
        grads, = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), activation,
                                     allow_unused=True)
    if grads is None:
        grads = torch.zeros_like(activation)
    size = tuple(x.shape[-2:])
    layout = map_layout(activation.shape, size, grid, prefer_channels_last) \
        if activation.dim() > 2 and activation.shape[0] == len(x) else None
    if layout is None:
        raise ValueError(f"layer={layer!r} outputs shape {tuple(activation.shape)}, no map of "
                         f"the {size[0]} x {size[1]} image: GradCAM needs (B, C, h, w), "
                         "(B, h, w, C) or patch tokens (B, N, D)"
                         + ("" if grid is None else f" on the {grid[0]} x {grid[1]} grid")
                         + ".")
    activation, grads = (as_channels_first(t.detach(), *layout, grid)
                         for t in (activation, grads))
    weights = grads.mean((2, 3), keepdim=True)
    cam = (weights * activation).sum(1, keepdim=True).clamp_min(0)
    return F.interpolate(cam, size=size, mode="bilinear", align_corners=False)[:, 0]


def _twin_of(model: nn.Module, twin: nn.Module, network: nn.Module) -> nn.Module:
    """The copy of ``network`` (a submodule of ``model``) inside ``twin``
    (:func:`~interpretable.attribution.own_hooks_copy` of ``model``)."""
    if network is model:
        return twin
    copies = dict(twin.named_modules())
    for name, module in model.named_modules():
        if module is network:
            return copies[name]
    raise ValueError("network must be a submodule of model.")


def pixel_gradient(model: nn.Module, x: torch.Tensor,
                   target: torch.Tensor | int | Sequence[int]) -> torch.Tensor:
    """Compute the L2 norm over the channels of the target logit's gradient at the pixels.

    As captum's ``Saliency`` with ``abs=False``, then the norm over the channels.

    Parameters
    ----------
    model : torch.nn.Module
        ``forward(x) -> logits (B, K)`` (or a tuple starting with them), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        The model's inputs.
    target : torch.Tensor of shape (B,)
        The explained classes.

    Returns
    -------
    torch.Tensor of shape (B, H, W)
        The maps.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import pixel_gradient
    >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2))
    >>> pixel_gradient(net, torch.zeros(1, 3, 2, 2), torch.tensor([1])).shape
    torch.Size([1, 2, 2])
    """
    target = image_targets(x, target)
    x = x.detach().requires_grad_(True)
    with torch.enable_grad():
        logits = logits_of(model(x))
        grads, = torch.autograd.grad(logits.gather(1, target[:, None]).sum(), x)
    return grads.norm(dim=1)


def spread_cells(cells: torch.Tensor, size: Sequence[int]) -> torch.Tensor:
    """Spread the values of a map's cells over the image's pixels, keeping their sum.

    The bilinear upsampling of ``cells`` (``align_corners=False``, as GradCAM's) divided, cell
    by cell, by the weight the upsampling gives that cell over the image, so that the pixels
    carry their cells' attributions: the map sums to ``cells``' sum. Where the image's sides
    are multiples of the map's (a 7 × 7 map of a 224-pixel image) it is the upsampled map
    times ``h w / (H W)``.

    Parameters
    ----------
    cells : torch.Tensor of shape (B, h, w)
        The cells' values, ``h <= H`` and ``w <= W``.
    size : tuple of 2 int
        The image's ``(H, W)``.

    Returns
    -------
    torch.Tensor of shape (B, H, W)
        The pixels' values.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import spread_cells
    >>> cells = torch.tensor([[[1.0, 2.0], [3.0, 4.0]]])
    >>> pixels = spread_cells(cells, (5, 7))
    >>> pixels.shape, round(float(pixels.sum()), 4)
    (torch.Size([1, 5, 7]), 10.0)
    """
    size = tuple(size)

    def upsampled(values):
        return F.interpolate(values[:, None], size=size, mode="bilinear",
                             align_corners=False)[:, 0]

    unit = torch.ones((1, *cells.shape[-2:]), dtype=cells.dtype, device=cells.device,
                      requires_grad=True)
    with torch.enable_grad():
        weight, = torch.autograd.grad(upsampled(unit).sum(), unit)
    return upsampled(cells / weight)


def _layer_layout(forward, part: nn.Module, x: torch.Tensor, layer: str,
                  prefer_channels_last: bool) -> str:
    """The layout (``"NCHW"`` or ``"NHWC"``) of ``part``'s output on the images ``x``;
    ValueError naming the layer where it does not run once per forward pass or its output is
    no spatial map of the image."""
    seen = []
    handle = part.register_forward_hook(lambda module, args, output: seen.append(output))
    try:
        with torch.no_grad():
            forward(x[:1])
    finally:
        handle.remove()
    if len(seen) != 1:
        runs = "does not run" if not seen else f"runs {len(seen)} times"
        raise ValueError(f"layer={layer!r} {runs} in the model's forward pass: captum's layer "
                         "methods replace the output of one run; choose a module that runs "
                         "once.")
    output, size = seen[0], tuple(x.shape[-2:])
    layout = map_layout(output.shape, size, None, prefer_channels_last) \
        if isinstance(output, torch.Tensor) and output.dim() == 4 else None
    if layout is None:
        shape = (f"shape {tuple(output.shape)}" if isinstance(output, torch.Tensor)
                 else f"a {type(output).__name__}")
        raise ValueError(f"layer={layer!r} outputs {shape}, no spatial map of the {size[0]} x "
                         f"{size[1]} image: the layer methods need one tensor (B, C, h, w) "
                         "(or (B, h, w, C) on a channels-last network); choose a convolutional "
                         "stage or block.")
    return layout[0]


def _baseline_of(x: torch.Tensor, baseline) -> torch.Tensor:
    return torch.zeros_like(x) if baseline is None else baseline.detach().to(x).expand_as(x)


def layer_attribution(model: nn.Module, x: torch.Tensor,
                      target: torch.Tensor | int | Sequence[int], layer: str,
                      method: str = "integrated_gradients", *, network: nn.Module | None = None,
                      baseline: torch.Tensor | None = None, n_steps: int = 32,
                      internal_batch_size: int | None = None, prefer_channels_last: bool = False
                      ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Attribute the target logits to a layer's spatial output with a captum layer method.

    ``"integrated_gradients"``: captum ``LayerIntegratedGradients`` (the layer's output moved
    along the straight line from its value for ``baseline`` to its value for ``x``, the rest
    of the network seeing ``x``); ``"input_x_gradient"``: captum
    ``LayerGradientXActivation`` (gradient × activation). Either is summed over the channels to
    an ``(h, w)`` map and spread over the image keeping its sum (:func:`spread_cells`). Layer
    integrated gradients sum to the logit minus ``baseline_logit``, the logit with the
    layer's output replaced by its value for ``baseline`` (the baseline's logit where every
    path from the pixels runs through the layer).

    Parameters
    ----------
    model : torch.nn.Module
        ``forward(x) -> logits (B, K)`` (or a tuple starting with them), in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        The model's inputs.
    target : torch.Tensor of shape (B,)
        The explained classes.
    layer : str
        The layer's name in ``network``.
    method : {"integrated_gradients", "input_x_gradient"}, default="integrated_gradients"
        The captum layer method.
    network : torch.nn.Module or None, default=None
        The module whose ``named_modules()`` names ``layer`` (a submodule of ``model``;
        None: ``model``).
    baseline : torch.Tensor of shape (1 or B, C, H, W) or None, default=None
        The baseline of integrated gradients (None: zeros).
    n_steps : int, default=32
        Integration steps of integrated gradients.
    internal_batch_size : int or None, default=None
        Integration steps evaluated at a time (None: all).
    prefer_channels_last : bool, default=False
        A 4-d output that could be either layout is channels last.

    Returns
    -------
    maps : torch.Tensor of shape (B, H, W)
        The attributions.
    baseline_logit : torch.Tensor of shape (B,) or None
        Integrated gradients: the target logit with the layer's output at its value for the
        baseline; None for ``"input_x_gradient"``.

    Raises
    ------
    ValueError
        If the method is unknown, ``layer`` names no module, does not run once per forward
        pass, or its output is no spatial map ``(B, C, h, w)`` of the image.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import layer_attribution
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
    ...                           torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    ...                           torch.nn.Linear(4, 2)).eval()
    >>> x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> maps, baseline_logit = layer_attribution(net, x, torch.tensor([0, 1]), "1")
    >>> logit = net(x).gather(1, torch.tensor([[0], [1]]))[:, 0]
    >>> maps.shape, torch.allclose(maps.sum((1, 2)), logit - baseline_logit, atol=1e-4)
    (torch.Size([2, 8, 8]), True)
    """
    from captum.attr import LayerGradientXActivation, LayerIntegratedGradients

    if method not in LAYER_METHODS:
        raise ValueError(f"method={method!r} has no layer version; choose one of "
                         f"{list(LAYER_METHODS)}.")
    target = image_targets(x, target)
    x = x.detach()
    baseline = _baseline_of(x, baseline)
    twin = own_hooks_copy(model)
    part = named_layer(twin if network is None else _twin_of(model, twin, network), layer)

    def forward(inputs):
        return logits_of(twin(inputs))

    layout = _layer_layout(forward, part, x, layer, prefer_channels_last)
    with torch.enable_grad():
        if method == "integrated_gradients":
            attr = LayerIntegratedGradients(forward, part).attribute(
                x, baselines=baseline, target=target, n_steps=n_steps,
                internal_batch_size=internal_batch_size or len(x))
        else:
            attr = LayerGradientXActivation(forward, part).attribute(x, target=target)
    maps = spread_cells(as_channels_first(attr.detach(), layout).sum(1), x.shape[-2:])
    if method != "integrated_gradients":
        return maps, None
    with torch.no_grad():
        return maps, _layer_swapped_logit(forward, part, x, baseline, target, ())


def pixel_deeplift(model: nn.Module, x: torch.Tensor, target: torch.Tensor | int | Sequence[int],
                   baseline: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Compute DeepLIFT (captum ``DeepLift``) from ``baseline``, summed over the channels.

    captum's rescale rule, computed on
    :func:`~interpretable.attribution.deeplift_copy` of the network, and only where
    captum's rules make it exact: the maps sum to the logit minus the baseline's logit.

    Parameters
    ----------
    model : torch.nn.Module
        ``forward(x) -> logits (B, K)``, in eval mode.
    x : torch.Tensor of shape (B, C, H, W)
        The model's inputs.
    target : torch.Tensor of shape (B,)
        The explained classes.
    baseline : torch.Tensor of shape (1 or B, C, H, W) or None, default=None
        The reference image (None: zeros).

    Returns
    -------
    maps : torch.Tensor of shape (B, H, W)
        The attributions.
    baseline_logit : torch.Tensor of shape (B,)
        The target logit at the baseline.

    Raises
    ------
    ValueError
        If DeepLIFT would not be exact on ``model`` (naming the operations that prevent it).

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import pixel_deeplift
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(),
    ...                           torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    ...                           torch.nn.Linear(4, 2)).eval()
    >>> x = torch.rand(2, 3, 8, 8, generator=torch.Generator().manual_seed(0))
    >>> maps, baseline_logit = pixel_deeplift(net, x, torch.tensor([0, 1]))
    >>> logit = net(x).gather(1, torch.tensor([[0], [1]]))[:, 0]
    >>> maps.shape, torch.allclose(maps.sum((1, 2)), logit - baseline_logit, atol=1e-5)
    (torch.Size([2, 8, 8]), True)
    """
    from captum.attr import DeepLift

    refusal = deeplift_refusal(model, type(model).__name__)
    if refusal is not None:
        raise ValueError(refusal)
    target = image_targets(x, target)
    x = x.detach()
    baseline = _baseline_of(x, baseline)
    twin = deeplift_copy(model, x[:1])
    with warnings.catch_warnings(), torch.enable_grad():  # captum says it hooks, every call
        warnings.filterwarnings("ignore", "Setting forward, backward hooks", UserWarning)
        attr = DeepLift(twin).attribute(x.clone().requires_grad_(True), baselines=baseline,
                                        target=target)
    with torch.no_grad():
        baseline_logit = logits_of(model(baseline)).gather(1, target[:, None])[:, 0]
    return attr.detach().sum(1), baseline_logit
