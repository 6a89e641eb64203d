"""What captum's hooking methods need from a network: a copy whose hooks are its own, the
check that DeepLIFT's rules cover every operation, and layers by name.

captum's DeepLift and its layer methods (``LayerIntegratedGradients``,
``LayerGradientXActivation``) register hooks on the network's modules while they run. A hook
on a fitted model would reach every forward pass of it, another thread's too; the explainers
run them on :func:`own_hooks_copy`, a copy of the module tree that shares the parameters and
buffers but not the hooks.

captum's DeepLift replaces the gradient of the non-linear ``torch.nn`` modules it has rules
for (ReLU, ELU, LeakyReLU, Sigmoid, Tanh, Softplus, Softmax, max pooling) by its multipliers;
every other operation keeps its plain gradient. That is exact for linear maps and wrong for
the rest (a functional softmax, GELU, LayerNorm, an LSTM's gates, products of inputs as in
attention): the attributions silently stop summing to ``f(x) − f(baseline)``. Its max-pooling
rule is not exact either: it unpools each window's change onto the position of the window's
maximum, so windows that overlap (a ResNet stem's 3 × 3 pooling with stride 2) overwrite
each other's shares, and a window whose maximum sits where the input equals the baseline
(the zeros of a ReLU) loses its share. :func:`deeplift_blockers` lists the modules of a
network that would do any of that, so that DeepLIFT is offered only where it is exact and
refused, by name, elsewhere. A module whose own ``forward`` is linear in its inputs (apart
from its submodules) declares it with the class attribute ``deeplift_linear = True``; the
library modules known to be so are named in :data:`LIBRARY_LINEAR`.

captum's DeepLift keeps each hooked module's input and output of the forward pass on the
module, so a module must run once per pass and not in place; torchvision's ResNet blocks run
one ReLU twice, in place. :func:`deeplift_copy` is the copy of a network on which it runs: each
run of such a module has its own, not in place.
"""
from __future__ import annotations

import copy
import difflib

import torch
from torch import nn

__all__ = ["LIBRARY_LINEAR", "deeplift_blockers", "deeplift_copy", "deeplift_refusal",
           "find_layer", "own_hooks_copy"]

#: torch modules whose forward is linear in their input (DeepLIFT's gradient is exact there)
_LINEAR = (nn.Linear, nn.Embedding, nn.EmbeddingBag, nn.Identity, nn.Flatten, nn.Unflatten,
           nn.Dropout, nn.Dropout1d, nn.Dropout2d, nn.Dropout3d, nn.AlphaDropout,
           nn.Conv1d, nn.Conv2d, nn.Conv3d, nn.ConvTranspose1d, nn.ConvTranspose2d,
           nn.AvgPool1d, nn.AvgPool2d, nn.AvgPool3d, nn.AdaptiveAvgPool1d, nn.AdaptiveAvgPool2d,
           nn.Sequential, nn.ModuleList, nn.ModuleDict, nn.ZeroPad1d, nn.ZeroPad2d)
#: the classes of torchvision and timm whose own forward is linear in its inputs apart from
#: their submodules (convolutions, batch norms, residual sums, flattening), read from their
#: source: ``"module.QualifiedName"``
LIBRARY_LINEAR = frozenset({
    "torchvision.models.resnet.ResNet", "torchvision.models.resnet.BasicBlock",
    "torchvision.models.resnet.Bottleneck", "torchvision.models.regnet.RegNet",
    "torchvision.models.regnet.ResBottleneckBlock"})
#: what keeps DeepLIFT from being exact, by kind of module, most specific first
_REASONS = {
    "recurrent": "a recurrent layer: its gates' sigmoid and tanh run inside one fused kernel, "
                 "out of reach of DeepLIFT's rules",
    "norm": "normalisation divides by the input's own standard deviation, for which DeepLIFT "
            "has no rule",
    "attention": "attention multiplies input-dependent softmax weights with input-dependent "
                 "values: DeepLIFT's rules do not cover products of inputs",
    "bcos": "a B-cos layer scales its linear map by the input's cosine similarity with its "
            "weights: a product of inputs",
    "maxpool": "captum's max-pooling rule unpools each window's change onto one position: "
               "overlapping windows overwrite each other's shares and a window whose maximum "
               "lies where the input equals the baseline loses its share",
    "activation": "an activation captum's DeepLift has no rule for",
    "custom": "its forward is not declared linear (deeplift_linear): functional calls in it "
              "(torch.softmax, F.gelu, products of inputs, ...) would pass plain gradients",
}


def own_hooks_copy(module: nn.Module) -> nn.Module:
    """Return a copy of a module tree that shares its parameters and buffers, not its hooks.

    Every module of the tree is copied (shallowly: its tensors are the original's) with hook
    dictionaries of its own, holding the original's hooks: what is registered on the copy
    while captum runs never reaches the original's forward passes.

    Parameters
    ----------
    module : torch.nn.Module
        The network.

    Returns
    -------
    torch.nn.Module
        The copy.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import own_hooks_copy
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2))
    >>> twin = own_hooks_copy(net)
    >>> _ = twin[0].register_forward_hook(lambda module, inputs, output: output * 0)
    >>> twin[0].weight is net[0].weight, len(net[0]._forward_hooks)
    (True, 0)
    """
    twin = copy.copy(module)
    for name, value in vars(module).items():
        if "hook" in name and isinstance(value, dict):
            vars(twin)[name] = type(value)(value)
    vars(twin)["_modules"] = {name: None if child is None else own_hooks_copy(child)
                              for name, child in module._modules.items()}
    return twin


class _EachRun(nn.Module):
    """Runs its ``k``-th module at its ``k``-th call of a forward pass (counted modulo their
    number): in a :func:`deeplift_copy`, the place of a module that the network runs several
    times per pass."""

    #: its own forward runs one of its modules
    deeplift_linear = True

    def __init__(self, runs):
        super().__init__()
        self.runs = nn.ModuleList(runs)
        self.calls = 0

    def forward(self, *args, **kwargs):
        module = self.runs[self.calls % len(self.runs)]
        self.calls += 1
        return module(*args, **kwargs)


def deeplift_copy(module: nn.Module, *inputs: torch.Tensor) -> nn.Module:
    """Return a copy of a network whose modules with a DeepLIFT rule run once, not in place.

    captum's DeepLift hooks the modules it has rules for (ReLU, Sigmoid, max pooling, ...)
    and keeps each one's input and output of the pass on the module: one that the network
    runs twice per pass (torchvision's ResNet blocks run one ReLU after each of their two
    convolutions) would be left with one run's values, and an in-place one overwrites its
    input. The copy is :func:`own_hooks_copy`'s (the parameters shared, the hooks its own) in
    which each such module is not in place and, where a forward pass of ``inputs`` runs it
    ``n > 1`` times, is replaced by ``n`` copies of it run in turn: the same function, each
    run a module of its own. The network is not changed.

    Parameters
    ----------
    module : torch.nn.Module
        The network, in eval mode.
    *inputs : torch.Tensor
        Inputs of one forward pass (a sample suffices: the runs are counted on it).

    Returns
    -------
    torch.nn.Module
        The copy.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import deeplift_copy
    >>> class Twice(torch.nn.Module):
    ...     def __init__(self):
    ...         super().__init__()
    ...         self.linear, self.relu = torch.nn.Linear(2, 2), torch.nn.ReLU(inplace=True)
    ...     def forward(self, x):
    ...         return self.relu(self.linear(self.relu(x)))
    >>> net, x = Twice(), torch.randn(3, 2)
    >>> twin = deeplift_copy(net, x)
    >>> [type(m).__name__ for m in twin.relu.runs], net.relu.inplace, twin.relu.runs[0].inplace
    (['ReLU', 'ReLU'], True, False)
    >>> torch.equal(twin(x), net(x.clone()))
    True
    """
    from captum.attr._core.deep_lift import SUPPORTED_NON_LINEAR

    twin = own_hooks_copy(module)
    hooked = [part for part in twin.modules() if type(part) in SUPPORTED_NON_LINEAR]
    runs = {id(part): 0 for part in hooked}

    def count(part, args, output):
        runs[id(part)] += 1

    handles = [part.register_forward_hook(count) for part in hooked]
    try:
        with torch.no_grad():
            twin(*inputs)
    finally:
        for handle in handles:
            handle.remove()
    for parent in list(twin.modules()):
        for name, child in list(parent._modules.items()):
            if child is None or id(child) not in runs:
                continue
            copies = [own_hooks_copy(child) for _ in range(max(1, runs[id(child)]))]
            for run in copies:
                if getattr(run, "inplace", False):
                    run.inplace = False
            parent._modules[name] = copies[0] if len(copies) == 1 else _EachRun(copies)
    return twin


def _forward_owner(cls: type) -> type:
    """The class whose ``forward`` a module of class ``cls`` runs."""
    return next((klass for klass in cls.__mro__ if "forward" in vars(klass)), cls)


def _kind(module: nn.Module, supported) -> str | None:
    """The kind of obstacle a module is to DeepLIFT (a key of ``_REASONS``), or None."""
    cls = type(module)
    owner = _forward_owner(cls)
    if isinstance(module, (nn.modules.pooling._MaxPoolNd, nn.modules.pooling._AdaptiveMaxPoolNd)):
        return "maxpool"
    if cls in supported or owner in _LINEAR or owner is nn.Module or \
            vars(owner).get("deeplift_linear", False) or \
            f"{owner.__module__}.{owner.__qualname__}" in LIBRARY_LINEAR:
        return None  # (nn.Module's forward: a container never called)
    if isinstance(module, nn.modules.batchnorm._BatchNorm) and not module.training:
        return None  # an affine map in eval mode
    name = cls.__name__
    if isinstance(module, nn.RNNBase):
        return "recurrent"
    if name.endswith("Norm") or "LayerNorm" in name or "GroupNorm" in name:
        return "norm"
    if isinstance(module, nn.MultiheadAttention) or "Attention" in name:
        return "attention"
    if "Bcos" in name:
        return "bcos"
    if owner.__module__ == nn.modules.activation.__name__ or "GELU" in name or \
            "Activation" in name or "SiLU" in name:
        return "activation"
    return "custom"


def deeplift_blockers(module: nn.Module) -> list[str]:
    """List the modules that keep captum's DeepLift from being exact on a network.

    One entry per kind of obstacle (recurrent layers, normalisation, attention, B-cos layers,
    max pooling, activations without a DeepLIFT rule, modules whose forward is not declared
    linear), the
    first module of that kind, most specific kinds first.

    Parameters
    ----------
    module : torch.nn.Module
        The network.

    Returns
    -------
    list of str
        ``"name (Class): why"`` per kind; empty where DeepLIFT is exact.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import deeplift_blockers
    >>> deeplift_blockers(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU()))
    []
    >>> deeplift_blockers(torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.GELU()))
    ["1 (GELU): an activation captum's DeepLift has no rule for"]
    """
    from captum.attr._core.deep_lift import SUPPORTED_NON_LINEAR

    first: dict[str, str] = {}
    for name, part in module.named_modules():
        kind = _kind(part, SUPPORTED_NON_LINEAR)
        if kind is not None and kind not in first:
            first[kind] = f"{name or 'the network'} ({type(part).__name__}): {_REASONS[kind]}"
    return [first[kind] for kind in _REASONS if kind in first]


def deeplift_refusal(module: nn.Module, owner: str) -> str | None:
    """Say why captum's DeepLift would not be exact on a network (None: it is).

    Parameters
    ----------
    module : torch.nn.Module
        The network.
    owner : str
        Whose network it is (for the message).

    Returns
    -------
    str or None
        The reason, naming the operations that prevent it, or None.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import deeplift_refusal
    >>> print(deeplift_refusal(torch.nn.LSTM(2, 2), "MyModel"))  # doctest: +ELLIPSIS
    DeepLIFT ... MyModel's network has: the network (LSTM): a recurrent layer: ...
    """
    blockers = deeplift_blockers(module)
    if not blockers:
        return None
    return ("DeepLIFT (captum's DeepLift) is exact only on a network of linear maps and the "
            "non-linear torch.nn modules it has exact rules for (ReLU, ELU, LeakyReLU, Sigmoid, "
            "Tanh, Softplus, Softmax); on any other operation it passes the plain gradient or "
            "an inexact rule and its attributions no longer sum to f(x) - f(baseline). "
            f"{owner}'s network has: " + "; ".join(blockers))


def find_layer(module: nn.Module, name: str, owner: str) -> nn.Module:
    """Return the submodule ``name`` of a network (as ``named_modules()`` names it).

    Parameters
    ----------
    module : torch.nn.Module
        The network.
    name : str
        The layer's name.
    owner : str
        Whose network it is (for the message).

    Returns
    -------
    torch.nn.Module
        The layer.

    Raises
    ------
    ValueError
        If the network has no module of that name: the message lists a few of its modules
        and the closest names.

    Examples
    --------
    >>> import torch
    >>> from interpretable.attribution import find_layer
    >>> net = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.ReLU())
    >>> find_layer(net, "1", "net")
    ReLU()
    >>> find_layer(net, "2", "net")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: layer='2' is not a module of net's network; its modules: ['0', '1'] ...
    """
    modules = dict(module.named_modules())
    if isinstance(name, str) and name and name in modules:
        return modules[name]
    names = [n for n in modules if n]
    close = difflib.get_close_matches(name, names, n=3) if isinstance(name, str) else []
    shown = names[:8] + (["..."] if len(names) > 8 else [])
    raise ValueError(
        f"layer={name!r} is not a module of {owner}'s network; "
        + (f"did you mean {' or '.join(map(repr, close))}? " if close else "")
        + f"its modules: {shown} ({len(names)} in all: "
        "[name for name, _ in estimator.module_.named_modules()] lists them; a layer is "
        "attributed to per token, so choose one with an output (B, T, ...)).")
