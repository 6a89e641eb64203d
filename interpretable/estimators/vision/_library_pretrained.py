"""The weights and recipe of
:class:`~interpretable.estimators.vision.ImageClassifier`: which torchvision or
timm architecture a model, a state dict or a file holds (:func:`resolve_recipe`, checked key
by key, shape by shape on the meta device before anything is allocated), the evaluation preset
of its images (:func:`image_preset`), the check that a rebuilt model computes what the given
one does (:func:`check_rebuilt`), the weights a fit starts from (:func:`start_weights`) and
loading them with their version metadata (:func:`load_into`).
Files are read with ``torch.load(weights_only=True)`` or as safetensors: no code runs.
"""
from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Mapping

import torch
from torch import nn

from interpretable.estimators.vision._pretrained import read_weights
from interpretable.nn import (
    build_model,
    check_options,
    fixed_input_size,
    head_keys,
    import_library,
    libraries_with,
    library_of,
    listed_keys,
    split_architecture,
    state_shapes,
)

__all__: list[str] = []  # the checkpoint plumbing of ImageClassifier

#: ImageNet's normalisation, the default of both libraries' presets
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)


def source_state(source) -> Mapping[str, torch.Tensor]:
    """The tensors of ``pretrained``: a model's state dict, a state dict as it is, or a file's
    (``.safetensors``, else ``torch.load(weights_only=True)``)."""
    if isinstance(source, nn.Module):
        return source.state_dict()
    if isinstance(source, Mapping):
        bad = [k for k, v in source.items()
               if not isinstance(k, str) or not isinstance(v, torch.Tensor)]
        if bad:
            raise ValueError(f"a state dict maps names to tensors; {listed_keys(map(str, bad))} "
                             "do not.")
        return source
    return read_weights(source)


def _named_in_object(model: nn.Module, library: str) -> list[str]:
    """The names a library model object may have been built by: timm's
    ``pretrained_cfg["architecture"]``, or the torchvision builders of its class's module."""
    if library == "timm":
        cfg = getattr(model, "pretrained_cfg", None) or {}
        name = cfg.get("architecture") if isinstance(cfg, Mapping) else None
        return [name] if isinstance(name, str) else []
    tv = import_library("torchvision")
    module = type(model).__module__
    return [n for n in tv.models.list_models(module=tv.models)
            if tv.models.get_model_builder(n).__module__ == module]


def _mismatch(state_sizes: Mapping, expected: Mapping, skip=()) -> list[str]:
    """What differs between two ``{name: shape}`` maps (``skip``: keys left out)."""
    missing = sorted(set(expected) - set(state_sizes) - set(skip))
    unexpected = sorted(set(state_sizes) - set(expected) - set(skip))
    shapes = [f"{k} {state_sizes[k]} (expected {expected[k]})"
              for k in sorted(set(expected) & set(state_sizes) - set(skip))
              if tuple(state_sizes[k]) != tuple(expected[k])]
    problems = []
    if missing:
        problems.append(f"missing keys: {listed_keys(missing)}")
    if unexpected:
        problems.append(f"unexpected keys: {listed_keys(unexpected)}")
    if shapes:
        problems.append(f"mis-shaped: {listed_keys(shapes)}")
    return problems


def _outputs(state_sizes: Mapping, heads: list[str]) -> int | None:
    """The number of classes a state dict's classifier has (its head keys' first side)."""
    sides = {state_sizes[k][0] for k in heads if k in state_sizes and state_sizes[k]}
    return sides.pop() if len(sides) == 1 else None


def resolve_recipe(architecture, options, source=None) -> tuple[dict, int | None]:
    """The checked recipe ``{"library", "name", "options"}`` of a model and the number of its
    outputs (None without weights).

    ``architecture``: ``"torchvision:name"``, ``"timm:name"``, ``"name"`` (torchvision's
    builder of that name, else timm's; with weights, the library whose model they fit) or
    None (a model object names itself: timm's ``pretrained_cfg["architecture"]``, or the
    torchvision builder of its class whose weights it fits). ``source``: the weights (a model,
    a state dict) or None. Every candidate is built on the meta device and compared with the
    weights, key by key, shape by shape; a ValueError names the differences."""
    options = check_options(options)
    library, name = (None, None) if architecture is None else split_architecture(architecture)
    own = library_of(source) if isinstance(source, nn.Module) else None
    if isinstance(source, nn.Module) and own is None:
        raise ValueError(f"{type(source).__module__}.{type(source).__name__} is neither a "
                         "torchvision nor a timm model: ImageClassifier runs those (pass its "
                         "state dict with architecture='torchvision:name' or 'timm:name' if "
                         "one of them builds it).")
    if own is not None:
        if library not in (None, own):
            raise ValueError(f"the model is a {own} model, not a {library} one "
                             f"(architecture={architecture!r}).")
        library = own
    if name is None:
        if own is None:
            raise ValueError("pass architecture= (a torchvision builder or a timm model name, "
                             "e.g. 'torchvision:resnet50' or 'timm:convnext_tiny'): a state "
                             "dict does not say which network it is.")
        names = _named_in_object(source, own)
        if not names:
            raise ValueError(f"cannot tell which {own} model {type(source).__name__} is: pass "
                             "architecture= its name.")
        candidates = [(own, n) for n in names]
    else:
        candidates = [(lib, name) for lib in libraries_with(name, library)]
    if source is None:
        lib, found = candidates[0]
        return {"library": lib, "name": found, "options": options}, None
    sizes = state_shapes(source_state(source))
    problems = {}
    for lib, found in candidates:
        for tried in _option_sets(options, source, lib):
            try:
                heads = head_keys(lib, found, tried)
                outputs = _outputs(sizes, heads)
                if outputs is None:
                    problems[f"{lib}:{found}"] = [f"no classifier weights {listed_keys(heads)}"]
                    continue
                with torch.device("meta"):
                    expected = state_shapes(build_model(lib, found, tried, outputs).state_dict())
            except ValueError as exc:
                problems.setdefault(f"{lib}:{found}", [str(exc)])
                continue
            differences = _mismatch(sizes, expected)
            if not differences:
                return {"library": lib, "name": found, "options": tried}, outputs
            problems[f"{lib}:{found}"] = differences
    shown = "; ".join(f"{k}: {', '.join(v)}" for k, v in list(problems.items())[:3])
    raise ValueError(f"the weights fit no model of {[f'{lib}:{n}' for lib, n in candidates][:5]}"
                     f" built with {options or 'no options'} ({shown}): pass architecture= "
                     "its name and architecture_options= the further arguments it was built "
                     "with (e.g. timm's img_size, depths).")


def _option_sets(options: dict, source, library: str) -> list[dict]:
    """The builder arguments to try: for a model object of a fixed input size (learned
    positions) that ``options`` does not give, that size first (torchvision's
    ``image_size``, timm's ``img_size``), then ``options`` as they are."""
    fixed = fixed_input_size(source) if isinstance(source, nn.Module) else None
    key = "image_size" if library == "torchvision" else "img_size"
    if fixed is None or key in options:
        return [options]
    return [{**options, key: fixed}, options]


def image_preset(recipe: Mapping, model: nn.Module | None = None) -> dict:
    """The evaluation preset of the recipe's images: ``crop`` (the model's input side: its
    fixed size, else the weights' crop), ``resize`` (the shorter side before the centre crop),
    ``mean`` and ``std``; torchvision's from the builder's default weights' transforms
    (``resize_size`` 256 where they name none), timm's from
    ``timm.data.resolve_model_data_config`` (resize ``floor(crop / crop_pct)``). ``model``:
    the model object (its own preset), else one built on the meta device."""
    library, name, options = recipe["library"], recipe["name"], recipe["options"]
    if model is None:
        with torch.device("meta"):
            model = build_model(library, name, options, 2)
    package = import_library(library)
    mean, std = IMAGENET_MEAN, IMAGENET_STD
    if library == "timm":
        config = package.data.resolve_model_data_config(model)
        crop = int(config["input_size"][-1])
        pct = float(config.get("crop_pct") or 0.875)
        mean, std = tuple(config["mean"]), tuple(config["std"])
    else:
        crop, resize = 224, 256
        try:
            keywords = package.models.get_model_weights(name).DEFAULT.transforms.keywords
            crop = int(keywords.get("crop_size", crop))
            resize = int(keywords.get("resize_size", resize))
            mean, std = keywords.get("mean", mean), keywords.get("std", std)
        except (ValueError, AttributeError, KeyError):
            pass
        pct = crop / resize
    fixed = fixed_input_size(model)
    crop = fixed or crop
    return {"crop": crop, "resize": max(crop, math.floor(crop / pct + 1e-6)),
            "mean": tuple(float(v) for v in mean), "std": tuple(float(v) for v in std)}


def check_rebuilt(original: nn.Module, rebuilt: nn.Module, side: int) -> None:
    """Compare the given model and its rebuild (same weights) on a seeded random batch of
    ``side`` × ``side`` images, both in eval mode (the original's modes are restored): a
    ValueError where they differ, i.e. the recipe misses an argument the model was built
    with."""
    device = next(original.parameters(), torch.zeros(())).device
    dtype = next(original.parameters(), torch.zeros(())).dtype
    x = torch.randn(2, 3, side, side, generator=torch.Generator().manual_seed(0))
    modes = {m: m.training for m in original.modules()}
    try:
        original.eval()
        with torch.no_grad():
            expected = original(x.to(device, dtype))
    finally:
        for module, mode in modes.items():
            module.training = mode
    expected = (expected[0] if isinstance(expected, tuple) else expected).float().cpu()
    with torch.no_grad():
        got = rebuilt(x.to(next(rebuilt.parameters()).device)).float().cpu()
    scale = float(expected.abs().max()) if expected.numel() else 1.0
    if got.shape != expected.shape or not torch.allclose(got, expected, rtol=1e-4,
                                                         atol=1e-4 * max(1.0, scale)):
        gap = (got - expected).abs().max() if got.shape == expected.shape else "shape"
        raise ValueError(f"the model rebuilt from its recipe computes other logits than the "
                         f"given one (largest difference {gap}): pass architecture_options= "
                         "the arguments it was built with.")


def load_into(network: nn.Module, state: Mapping[str, torch.Tensor], strict: bool = True,
              source: Mapping | None = None) -> nn.Module:
    """Load ``state`` into ``network``, with the version metadata of ``source`` (the state
    dict it was made from) where it has any, else the network's own: some modules read it
    (torchvision's MNASNet), and a safetensors file or a dict made anew has none."""
    metadata = getattr(source if source is not None else state, "_metadata", None)
    ordered = OrderedDict(state)
    ordered._metadata = metadata if metadata is not None else network.state_dict()._metadata
    network.load_state_dict(ordered, strict=strict)
    return network


def check_weights(state: Mapping[str, torch.Tensor], expected: Mapping[str, tuple], what,
                  skip=()) -> None:
    """Every key of ``expected`` (``{name: shape}``, but ``skip``) in ``state`` with its shape,
    no other, floating tensors finite; a ValueError naming ``what``."""
    problems = _mismatch(state_shapes(state), expected, skip)
    if problems:
        raise ValueError(f"{what} does not fit the architecture: " + "; ".join(problems))
    bad = [k for k in expected if k not in skip and state[k].is_floating_point()
           and not torch.isfinite(state[k]).all()]
    if bad:
        raise ValueError(f"{what} holds NaN or infinite values in {listed_keys(bad)}.")


def start_weights(recipe: Mapping, pretrained, n_classes: int) -> dict:
    """The weights a fit starts from: those of ``pretrained`` but its classifier's (the new
    classifier has ``n_classes`` outputs), checked against the recipe's model first."""
    heads = head_keys(recipe["library"], recipe["name"], recipe["options"])
    with torch.device("meta"):
        expected = state_shapes(build_model(recipe["library"], recipe["name"],
                                            recipe["options"], n_classes).state_dict())
    state = source_state(pretrained)
    check_weights(state, expected, "pretrained", skip=heads)
    start = OrderedDict((k, v) for k, v in state.items() if k not in heads)
    metadata = getattr(state, "_metadata", None)
    if metadata is not None:
        start._metadata = metadata
    return start
