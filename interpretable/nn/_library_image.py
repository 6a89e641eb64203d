"""Any torchvision or timm image classifier as it is: the library's own module, rebuilt by name
and run in eval mode behind the package's interface::

    forward(x (B, 3, H, W) normalised images) -> logits (B, C)

An architecture is a *recipe*: the library (``"torchvision"`` or ``"timm"``), the model's name
there (a torchvision classification builder, ``torchvision.models.get_model(name)``, or a timm
model name, ``timm.create_model(name)``) and the builder's further arguments (plain JSON
values). :func:`build_model` rebuilds it with ``num_classes`` outputs and no weights (nothing is
downloaded; arguments that would read a file or download are refused), so a saved model is its
recipe and its weights, never code.

:func:`find_feature_map` finds where GradCAM reads a network: its last spatial feature map
(see there); :func:`map_layout` tells how a layer's output lies on the image grid. torchvision
and timm are imported when first needed (neither is a dependency of the package).
"""
from __future__ import annotations

import importlib
import math
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from interpretable.nn._losses import logits_of

if TYPE_CHECKING:
    from torch.nn.modules.module import _IncompatibleKeys

__all__ = ["LibraryImageModel", "find_feature_map", "map_layout"]

LIBRARIES = ("torchvision", "timm")
#: builder arguments the estimator sets (``num_classes``) or that would read weights, download
#: or change what a module is (refused in a recipe's options)
RESERVED_OPTIONS = frozenset({
    "num_classes", "weights", "weights_backbone", "progress", "pretrained", "pretrained_cfg",
    "pretrained_cfg_overlay", "pretrained_strict", "checkpoint_path", "cache_dir",
    "features_only", "scriptable", "exportable", "no_jit", "model_args", "kwargs"})
#: the layouts of a feature map: channels first, channels last, tokens (prefix tokens first)
LAYOUTS = ("NCHW", "NHWC", "tokens")
#: at most this many tokens before the patch tokens (class, distillation, register tokens)
MAX_PREFIX_TOKENS = 16


def import_library(library: str):
    """The ``torchvision`` or ``timm`` package (ValueError for another name, ImportError saying
    what to install where it is missing)."""
    if library not in LIBRARIES:
        raise ValueError(f"the library must be one of {list(LIBRARIES)}, got {library!r}.")
    try:
        return importlib.import_module(library)
    except ImportError as exc:
        raise ImportError(f"this model needs {library} (pip install {library}): {exc}") from exc


def library_of(model: nn.Module) -> str | None:
    """``"torchvision"`` or ``"timm"``: the package whose class ``model`` is, else None."""
    root = type(model).__module__.partition(".")[0]
    return root if root in LIBRARIES else None


def check_options(options, what: str = "architecture_options") -> dict:
    """A checked copy of builder arguments: a dict of str to JSON values (None, bool, int,
    float, str and lists of them; tuples become lists), none of :data:`RESERVED_OPTIONS`."""
    if options is None:
        return {}
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"{what} must be None or a dict of argument names to values, got "
                         f"{options!r}.")

    def plain(value, depth=0):
        if value is None or isinstance(value, (bool, int, str)):
            return value
        if isinstance(value, float):
            if not math.isfinite(value):
                raise ValueError(f"{what} holds the non-finite number {value!r}.")
            return value
        if isinstance(value, (list, tuple)) and depth < 4:
            return [plain(v, depth + 1) for v in value]
        raise ValueError(f"{what} holds {value!r} ({type(value).__name__}): the builder's "
                         "arguments must be None, numbers, strings or lists of them (what a "
                         "saved model can store).")

    reserved = sorted(set(options) & RESERVED_OPTIONS)
    if reserved:
        raise ValueError(f"{what} sets {reserved}: the estimator sets num_classes from the "
                         "labels and never loads weights by name (pass the model, its state "
                         "dict or a file as the weights).")
    return {k: plain(v) for k, v in options.items()}


def builder_names(library: str) -> list[str]:
    """The classification models ``library`` builds by name: torchvision's classification
    builders (``torchvision.models.list_models(module=torchvision.models)``) or every timm
    model name."""
    package = import_library(library)
    if library == "torchvision":
        return list(package.models.list_models(module=package.models))
    return list(package.list_models())


def _known(library: str, name: str) -> bool:
    package = import_library(library)
    if library == "torchvision":
        return name in builder_names(library)
    base = name.partition(".")[0]  # a pretrained tag (".a1_in1k") names weights, not a model
    return package.is_model(base)


def split_architecture(architecture: str) -> tuple[str | None, str]:
    """``(library or None, name)`` of ``"torchvision:name"``, ``"timm:name"`` or ``"name"``."""
    if not isinstance(architecture, str) or not architecture.strip():
        raise ValueError(f"architecture must be a model name, got {architecture!r}.")
    library, colon, name = architecture.partition(":")
    if not colon:
        return None, architecture
    if library not in LIBRARIES or not name:
        raise ValueError(f"architecture={architecture!r}: qualify a name as 'torchvision:name' "
                         "or 'timm:name'.")
    return library, name


def libraries_with(name: str, library: str | None = None) -> list[str]:
    """The libraries (torchvision first) that build a model called ``name``; ValueError when
    none does (naming close names)."""
    candidates = [library] if library is not None else list(LIBRARIES)
    found = []
    for lib in candidates:
        try:
            if _known(lib, name):
                found.append(lib)
        except ImportError:
            if library is not None:
                raise
    if not found:
        import difflib

        close = []
        for lib in candidates:
            try:
                close += [f"{lib}:{n}" for n in difflib.get_close_matches(
                    name.partition(".")[0], builder_names(lib), n=3)]
            except ImportError:
                continue
        where = " or ".join(candidates)
        raise ValueError(f"{where} builds no classification model called {name!r}"
                         + (f"; did you mean {', '.join(close)}?" if close else "."))
    return found


def build_model(library: str, name: str, options: Mapping | None, num_classes: int
                ) -> nn.Module:
    """The library's ``name`` model with ``num_classes`` outputs, randomly initialised (on the
    current default device: ``torch.device("meta")`` builds shapes only), in eval mode.

    Parameters
    ----------
    library : {"torchvision", "timm"}
        Where the model comes from.
    name : str
        A torchvision classification builder or a timm model name.
    options : mapping or None
        Further arguments of the builder (:func:`check_options`).
    num_classes : int
        The classifier's outputs.

    Returns
    -------
    torch.nn.Module
        The library's module, in eval mode.
    """
    options = check_options(options)
    if isinstance(num_classes, bool) or not isinstance(num_classes, int) or num_classes < 1:
        raise ValueError(f"num_classes must be a positive integer, got {num_classes!r}.")
    libraries_with(name, library)
    package = import_library(library)

    def build():
        if library == "torchvision":
            return package.models.get_model(name, weights=None, num_classes=num_classes,
                                            **options)
        return package.create_model(name, pretrained=False, num_classes=num_classes,
                                    **options)

    try:
        try:
            model = build()
        except (NotImplementedError, RuntimeError):
            if torch.get_default_device().type != "meta":
                raise
            with torch.device("cpu"):  # a builder that reads tensors it made (RegNet's
                model = build().to("meta")  # widths): built on the CPU, then shapes only
    except (TypeError, ValueError, AssertionError, NotImplementedError, RuntimeError) as exc:
        raise ValueError(f"{library} cannot build {name!r} with {options or 'no options'} "
                         f"and num_classes={num_classes}: {type(exc).__name__}: {exc}") from exc
    return model.eval()


def state_shapes(state: Mapping[str, torch.Tensor]) -> dict[str, tuple]:
    """``{name: shape}`` of a state dict."""
    return {k: tuple(v.shape) for k, v in state.items()}


def head_keys(library: str, name: str, options: Mapping | None) -> list[str]:
    """The state-dict keys whose shape follows the number of classes (the classifier's), found
    by building the model on the meta device with 2 and 3 outputs."""
    with torch.device("meta"):
        two, three = (state_shapes(build_model(library, name, options, k).state_dict())
                      for k in (2, 3))
    return sorted(k for k in two if two[k] != three.get(k))


class LibraryImageModel(nn.Module):
    """A torchvision or timm image classifier behind the package's interface.

    ``forward(x)`` returns the logits ``(B, C)`` of the library's module ``model`` (the first
    output where it returns several, as torchvision's Inception does in training mode). Every
    buffer of ``model`` is registered as persistent, so that a network built on the meta
    device from its recipe loads them with the weights (e.g. timm's Swin attention masks).

    Parameters
    ----------
    model : torch.nn.Module
        The library's classifier.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn import LibraryImageModel
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.AdaptiveAvgPool2d(1),
    ...                           torch.nn.Flatten(), torch.nn.Linear(4, 2))
    >>> LibraryImageModel(net)(torch.zeros(1, 3, 8, 8)).shape
    torch.Size([1, 2])
    """

    #: its own forward passes the model's output on (DeepLIFT judges the model's modules)
    deeplift_linear = True

    def __init__(self, model: nn.Module):
        super().__init__()
        for module in model.modules():
            for name, buffer in list(module.named_buffers(recurse=False)):
                module.register_buffer(name, buffer, persistent=True)
        self.model = model

    def load_state_dict(self, state_dict: Any, strict: bool = True,
                        assign: bool = False) -> _IncompatibleKeys:
        """Load weights as ``nn.Module.load_state_dict`` does; a state dict without version
        metadata (a safetensors file, a dict made anew) gets the network's own, which some
        modules read (torchvision's MNASNet).

        Parameters
        ----------
        state_dict : mapping of str to torch.Tensor
            The weights.
        strict : bool, default=True
            Whether the keys must match exactly.
        assign : bool, default=False
            Whether the tensors replace the module's instead of being copied into them.

        Returns
        -------
        NamedTuple
            ``missing_keys`` and ``unexpected_keys``.

        Examples
        --------
        >>> import torch
        >>> from interpretable.nn import LibraryImageModel
        >>> net = LibraryImageModel(torch.nn.Linear(2, 2))
        >>> net.load_state_dict(dict(net.state_dict()))
        <All keys matched successfully>
        """
        if getattr(state_dict, "_metadata", None) is None:
            own = self.state_dict()._metadata
            state_dict = OrderedDict(state_dict)
            state_dict._metadata = own
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Return the logits ``(B, C)`` of normalised images ``x (B, 3, H, W)``.

        Parameters
        ----------
        x : torch.Tensor of shape (B, 3, H, W)
            Images normalised as the model was trained.

        Returns
        -------
        torch.Tensor of shape (B, C)
            The logits.

        Examples
        --------
        >>> import torch
        >>> from interpretable.nn import LibraryImageModel
        >>> net = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(12, 2))
        >>> LibraryImageModel(net)(torch.zeros(3, 3, 2, 2)).shape
        torch.Size([3, 2])
        """
        return logits_of(self.model(x))


def channels_last(model: nn.Module) -> bool:
    """Whether the model's feature maps are channels last (timm models whose ``output_fmt``
    is ``"NHWC"``, such as Swin; torchvision's Swin): what decides a square map whose channels
    equal its side."""
    return getattr(model, "output_fmt", None) == "NHWC" or \
        type(model).__name__ in ("SwinTransformer", "MaxVit")


def token_grid(model: nn.Module) -> tuple[int, int] | None:
    """The patch grid ``(h, w)`` of a model that works on patch tokens (timm's
    ``patch_embed.grid_size``, torchvision's ViT ``image_size // patch_size``), else None."""
    for embed in ("patch_embed", "stem"):  # timm's ViTs, Swin, ...; its MLP-Mixer
        grid = getattr(getattr(model, embed, None), "grid_size", None)
        if isinstance(grid, (tuple, list)) and len(grid) == 2:
            return int(grid[0]), int(grid[1])
    if type(model).__name__ == "VisionTransformer" and hasattr(model, "patch_size"):
        side = int(model.image_size) // int(model.patch_size)
        return side, side
    return None


def fixed_input_size(model: nn.Module) -> int | None:
    """The side of the square images a model with a fixed input size takes (learned positions,
    precomputed attention masks: timm's ``patch_embed.img_size`` unless its size is dynamic,
    torchvision's ViT ``image_size``), else None."""
    embed = getattr(model, "patch_embed", None)
    size = getattr(embed, "img_size", None)
    if size is not None and not getattr(model, "dynamic_img_size", False) \
            and not getattr(embed, "dynamic_img_pad", False):
        sides = tuple(size) if isinstance(size, (tuple, list)) else (size, size)
        if len(sides) == 2 and sides[0] == sides[1]:
            return int(sides[0])
    if type(model).__name__ == "VisionTransformer" and hasattr(model, "image_size"):
        return int(model.image_size)
    return None


def _proportional(rows: int, cols: int, image_size) -> bool:
    """Whether a ``rows x cols`` grid lies on an image of ``image_size (H, W)`` (each side a
    whole division of the image's, rounded either way)."""
    height, width = image_size
    if rows < 1 or cols < 1 or rows > height or cols > width:
        return False
    return abs(height / rows - width / cols) <= max(height / rows, width / cols) / 4


def map_layout(shape: Sequence[int], image_size: Sequence[int],
               grid: tuple[int, int] | None = None, prefer_channels_last: bool = False
               ) -> tuple[str, int] | None:
    """How a layer output of ``shape`` lies on an image of ``image_size (H, W)``.

    Parameters
    ----------
    shape : tuple of int
        The output's shape, batch first.
    image_size : tuple of 2 int
        The image's ``(H, W)``.
    grid : tuple of 2 int or None, default=None
        The patch grid of a model on patch tokens (:func:`token_grid`).
    prefer_channels_last : bool, default=False
        A 4-d output whose last two and middle two sides both fit the image is channels last.

    Returns
    -------
    tuple of (str, int) or None
        ``(layout, prefix)``: ``"NCHW"``, ``"NHWC"`` or ``"tokens"`` (with ``prefix`` tokens
        before the patch tokens), or None when it is no map of the image.

    Examples
    --------
    >>> from interpretable.nn import map_layout
    >>> map_layout((2, 512, 7, 7), (224, 224)), map_layout((2, 7, 7, 768), (224, 224))
    (('NCHW', 0), ('NHWC', 0))
    >>> map_layout((2, 197, 192), (224, 224), grid=(14, 14)), map_layout((2, 10), (224, 224))
    (('tokens', 1), None)
    """
    shape = tuple(shape)
    if len(shape) == 4:
        first = _proportional(shape[2], shape[3], image_size)
        last = _proportional(shape[1], shape[2], image_size)
        if first and last:
            return ("NHWC" if prefer_channels_last else "NCHW"), 0
        if first or last:
            return ("NCHW" if first else "NHWC"), 0
        return None
    if len(shape) == 3 and grid is not None:
        prefix = shape[1] - grid[0] * grid[1]
        if 0 <= prefix <= MAX_PREFIX_TOKENS:
            return "tokens", prefix
    return None


def as_channels_first(tensor: torch.Tensor, layout: str, prefix: int = 0, grid=None
                      ) -> torch.Tensor:
    """A layer output in ``layout`` (:func:`map_layout`) as a map ``(B, C, h, w)``: channels
    moved first, or the patch tokens (after ``prefix`` tokens) on their ``grid``."""
    if layout == "NCHW":
        return tensor
    if layout == "NHWC":
        return tensor.permute(0, 3, 1, 2)
    return tensor[:, prefix:].transpose(1, 2).unflatten(2, tuple(grid))


def _class_token_norm(model: nn.Module) -> str | None:
    """For a ViT whose head reads the class token alone: the first LayerNorm of its last
    block, the last layer whose patch tokens feed the class token (the package's ViT GradCAM
    recipe); else None."""
    names = [name for name, _ in model.named_modules()]
    if type(model).__name__ == "VisionTransformer" and library_of(model) == "torchvision":
        found = [n for n in names if n.startswith("encoder.layers.") and n.endswith(".ln_1")]
        return found[-1] if found else None
    if getattr(model, "global_pool", None) == "token" and \
            isinstance(getattr(model, "blocks", None), nn.Sequential) and len(model.blocks):
        last = f"blocks.{len(model.blocks) - 1}"
        for norm in ("norm1", "ln_1", "norm"):
            if f"{last}.{norm}" in names:
                return f"{last}.{norm}"
    return None


def find_feature_map(model: nn.Module, x: torch.Tensor) -> tuple[str | None, tuple | None]:
    """Find where GradCAM reads a network: ``(the layer's name, its grid (h, w))`` at the
    input ``x`` (a probe batch), or ``(None, None)`` where it has no spatial map.

    The layer is, in this order:

    * for a ViT whose head reads the class token alone (torchvision's ViT, timm's with
      ``global_pool="token"``, DeiT): the first LayerNorm of its last block (its patch
      tokens, reshaped to the patch grid);
    * the module whose output the global pooling reads: the pooling module (its class
      named ``...Pool...``) started last whose output has no spatial extent left and after
      which no module outputs a map of more than one cell (not a squeeze-excitation's pool),
      and the last module to finish with exactly its input as output (passing modules, such as
      ``nn.Identity`` or an in-place ReLU, skipped): ``layer4`` of a ResNet, ``features``
      of torchvision's ConvNeXt and EfficientNet, ``stages`` of timm's ConvNeXt, ``norm``
      of timm's Swin (channels last);
    * else the last module to finish with a map of the image (4-d, or tokens on the patch
      grid) of more than one cell: ``features`` of torchvision's DenseNet, whose pooling is
      functional.

    Forward hooks are set on ``model`` for the one pass and removed: call it on a network
    no other thread runs.

    Parameters
    ----------
    model : torch.nn.Module
        The library's classifier, in eval mode.
    x : torch.Tensor of shape (B, 3, H, W)
        A probe batch at the model's input size.

    Returns
    -------
    tuple
        ``(name or None, (h, w) or None)``.

    Examples
    --------
    >>> import torch
    >>> from interpretable.nn import find_feature_map
    >>> net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, stride=2), torch.nn.ReLU(),
    ...                           torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
    ...                           torch.nn.Linear(4, 2))
    >>> find_feature_map(net.eval(), torch.zeros(1, 3, 9, 9))
    ('1', (4, 4))
    """
    size = tuple(x.shape[-2:])
    grid = token_grid(model)
    prefer = channels_last(model)
    events: list[tuple] = []
    handles = []
    for name, module in model.named_modules():
        if not name:
            continue
        handles.append(module.register_forward_pre_hook(
            lambda m, args, name=name: events.append(("start", name, m, args))))
        handles.append(module.register_forward_hook(
            lambda m, args, out, name=name: events.append(("end", name, m, (args, out)))))
    try:
        with torch.no_grad():
            model(x)
    finally:
        for handle in handles:
            handle.remove()

    def grid_of(tensor):
        if not isinstance(tensor, torch.Tensor) or tensor.dim() < 3 \
                or tensor.shape[0] != x.shape[0]:
            return None
        layout = map_layout(tensor.shape, size, grid, prefer)
        if layout is None:
            return None
        return tuple(as_channels_first(tensor[:1], *layout, grid).shape[-2:])

    token_norm = _class_token_norm(model)
    if token_norm is not None and grid is not None:
        return token_norm, grid
    def spatial(tensor):
        found = grid_of(tensor)
        return found is not None and found[0] * found[1] > 1

    pooled = None
    for index, (kind, _name, module, args) in enumerate(events):
        if kind != "start" or "Pool" not in type(module).__name__ or not args \
                or not isinstance(args[0], torch.Tensor) or args[0].dim() != 4:
            continue
        out = next((e[3][1] for e in events[index:] if e[0] == "end" and e[2] is module),
                   None)
        later = (e[3][1] for e in events[index:] if e[0] == "end" and e[2] is not module)
        if isinstance(out, torch.Tensor) and (out.dim() == 2 or out.shape[-2:].numel() == 1
                                              or out.shape[1:3].numel() == 1) \
                and not any(spatial(o) for o in later):  # not a squeeze-excitation's pool
            pooled = (index, args[0])
    if pooled is not None:
        index, feature = pooled
        for _kind, name, module, (args, out) in (e for e in reversed(events[:index])
                                                 if e[0] == "end"):
            passing = bool(args) and out is args[0]
            if out is feature and not passing and "Pool" not in type(module).__name__:
                found = grid_of(out)
                if found is not None:
                    return name, found
                break
    for _kind, name, module, (args, out) in (e for e in reversed(events) if e[0] == "end"):
        if "Pool" in type(module).__name__ or (bool(args) and out is args[0]):
            continue
        if spatial(out):
            return name, grid_of(out)
    return None, None
