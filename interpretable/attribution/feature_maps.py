"""GradCAM at any layer of an image classifier, and the pixel gradient: what the package's
wrappers of torchvision and timm classifiers
(:class:`~interpretable.nn.library_image.LibraryImageModel`) are explained with besides the
captum methods of :func:`~interpretable.attribution.vision.attribute`.

:func:`layer_gradcam` reads a layer's output through a forward hook registered on a copy of
the network whose hooks are its own (:func:`~interpretable.attribution.hooked.own_hooks_copy`):
the fitted network is never changed, so several threads may explain with it at once.
"""
from __future__ import annotations

import difflib

import torch
from torch import nn
from torch.nn import functional as F

from ..nn.library_image import as_channels_first, map_layout
from ..nn.losses import logits_of
from .hooked import own_hooks_copy
from .vision import image_targets

__all__ = ["layer_gradcam", "pixel_gradient"]


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


def layer_gradcam(model: nn.Module, x: torch.Tensor, target, layer: str, *, network=None,
                  grid=None, prefer_channels_last: bool = False) -> torch.Tensor:
    """Compute GradCAM (Selvaraju et al., 2017) at a layer, upsampled to the image.

    With ``A (B, C, h, w)`` the layer's output on the image grid: channel weights = the
    spatial mean of ``∂y_target/∂A``, map = ReLU(Σ_c weight_c · A_c), upsampled bilinearly
    (``align_corners=False``) to ``(H, W)``: captum's ``LayerGradCam`` with
    ``relu_attributions=True`` followed by ``LayerAttribution.interpolate(..., "bilinear")``.
    A channels-last output ``(B, h, w, C)`` has its channels moved first, a token output
    ``(B, N, D)`` its patch tokens (after the class and other prefix tokens) laid on ``grid``
    (see :func:`~interpretable.nn.library_image.map_layout`). A layer run several times in a
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
    >>> from interpretable.attribution.feature_maps import layer_gradcam
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
    (:func:`~interpretable.attribution.hooked.own_hooks_copy` of ``model``)."""
    if network is model:
        return twin
    copies = dict(twin.named_modules())
    for name, module in model.named_modules():
        if module is network:
            return copies[name]
    raise ValueError("network must be a submodule of model.")


def pixel_gradient(model: nn.Module, x: torch.Tensor, target) -> torch.Tensor:
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
    >>> from interpretable.attribution.feature_maps import pixel_gradient
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
