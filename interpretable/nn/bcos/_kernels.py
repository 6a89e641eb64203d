"""How the B-cos layers of :mod:`interpretable.nn.bcos` compute: the choice between the
reference computation and the fused one, and the kernels the fused one uses.

Implementations (a layer's ``implementation=``, or :func:`bcos_implementation` for the calls of
one thread; every one gives the same outputs and the same explanation-mode gradients, up to
floating-point rounding):

* ``"reference"``: one operation per term of the formula (with ``γ`` folded into the weights,
  the norms from one reduction each, no power for B = 2 and no MaxOut for ``max_out=1``);
* ``"fused"``: the same elementwise operations on the faster matrix product of the device
  (oneDNN's inner product for large products on CPU where it beats MKL, :func:`linear`, with
  gradients computed only where the backward pass needs them), linear layers on 2-d rows (no
  autograd copies of views around their in-place steps), and, for predictions on CPU, MaxOut
  and the scale over cache-sized blocks of the output
  (:func:`~interpretable.nn.bcos._layers.bcos_epilogue`);
* ``"compiled"``: ``"fused"`` with MaxOut and the ``|cos|^(B-1)`` scale compiled by
  ``torch.compile`` into one elementwise kernel per layer; where compilation is unavailable (no
  compiler, no Triton, an unsupported platform) it computes as ``"fused"``;
* ``"auto"`` (the default): ``"compiled"`` on CUDA (where B-cos networks are bound by kernel
  launches); elsewhere ``"fused"`` for inference (without autograd, or in explanation mode:
  measured faster than ``"reference"`` on CPU; the compiled epilogue was not, see
  ``benchmarks/bench_bcos_package.py``) and ``"reference"`` when autograd differentiates the
  dynamic weights too (training, post-hoc gradients), so that fits reproduce earlier versions'
  rounding (``tests/test_compatibility.py``).

Nothing here is a mutable switch: the choice is made per call from the module's constructor
argument and the calling thread's context, so explaining and predicting in several threads
never interfere.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
import types
import warnings
from collections.abc import Callable, Iterator

import torch
from torch.nn import functional as F

__all__ = ["bcos_implementation"]

IMPLEMENTATIONS = ("auto", "reference", "fused", "compiled")
_IMPLEMENTATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "bcos_implementation", default=None)

#: multiply-accumulates (rows · in · out) from which oneDNN's inner product beats the default
#: CPU GEMM (MKL) on one thread: 1.0-2.9x above 2^23 on an AMD EPYC (AVX-512, MKL 2024.2,
#: oneDNN 3.x), slower below 2^22 (its larger fixed cost)
ONEDNN_MIN_MACS = 1 << 23


def _cpu_vendor() -> str:
    """The CPU's vendor string (``"GenuineIntel"``, ``"AuthenticAMD"``, ...; ``""`` unknown)."""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("vendor_id"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


#: the dtypes whose large CPU products go to oneDNN's inner product rather than ``F.linear``.
#: float32 only off Intel: MKL's sgemm, which ``F.linear`` calls, is 1.03-1.11x faster than
#: oneDNN on an Intel Xeon with AMX (every ViT-Ti / MiniLM shape, one thread) and up to 2.9x
#: slower on an AMD EPYC, where MKL does not take its fastest kernels
ONEDNN_DTYPES = ((torch.bfloat16,) if _cpu_vendor() == "GenuineIntel"
                 else (torch.float32, torch.bfloat16))


def check_implementation(name: str) -> str:
    if name not in IMPLEMENTATIONS:
        raise ValueError(f"implementation must be one of {IMPLEMENTATIONS}, got {name!r}")
    return name


@contextlib.contextmanager
def bcos_implementation(name: str) -> Iterator[None]:
    """Compute every B-cos layer with implementation ``name`` in this thread (overrides the
    layers' own ``implementation``); other threads are unaffected."""
    token = _IMPLEMENTATION.set(check_implementation(name))
    try:
        yield
    finally:
        _IMPLEMENTATION.reset(token)


def resolve_implementation(own: str, x: torch.Tensor, explaining: bool) -> str:
    """``"reference"``, ``"fused"`` or ``"compiled"`` for an input ``x``: the thread's choice
    (:func:`bcos_implementation`) if any, else the layer's ``own``; ``"auto"`` by device and
    by whether autograd differentiates the dynamic weights (grad mode outside explanation
    mode)."""
    name = _IMPLEMENTATION.get() or own
    if name != "auto":
        return name
    if x.device.type == "cuda":
        return "compiled"
    return "reference" if torch.is_grad_enabled() and not explaining else "fused"


# ------------------------------------------------------------------------------ GEMM
def _onednn_linear_available() -> bool:
    return torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn,
                                                            "_linear_pointwise")


_ONEDNN = _onednn_linear_available()


def _onednn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
            ) -> torch.Tensor:
    """``x @ weight.T + bias`` by oneDNN's inner product (no autograd); x (n, in) -> (n, out)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _gradient_node(tensor: torch.Tensor | None):
    """The autograd node that receives ``tensor``'s gradient, or None."""
    if tensor is None or not tensor.requires_grad:
        return None
    return torch.autograd.graph.get_gradient_edge(tensor).node


def _executes(node) -> bool:
    """Whether the running backward pass executes ``node``, so that a gradient nobody asked
    for (the weights' when explaining) is never computed. True when autograd cannot tell (a
    leaf tensor inside ``torch.autograd.grad``)."""
    if node is None:
        return False
    try:
        return torch._C._will_engine_execute_node(node)
    except RuntimeError:
        return True


class _OneDnnLinear(torch.autograd.Function):
    """``x @ weight.T + bias`` for x (n, in) by oneDNN; the input gradient by oneDNN, the
    weight and bias gradients by ``torch.mm`` / ``sum``, each only when the backward pass needs
    it (all differentiable, for double backward)."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None
                ) -> torch.Tensor:
        ctx.save_for_backward(x, weight)
        ctx.nodes = tuple(map(_gradient_node, (x, weight, bias)))
        return _onednn(x, weight, bias)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        x, weight = ctx.saved_tensors
        x_node, weight_node, bias_node = ctx.nodes
        return (linear(grad, weight.t()) if _executes(x_node) else None,
                grad.t().mm(x) if _executes(weight_node) else None,
                grad.sum(0) if _executes(bias_node) else None)


def _use_onednn(x: torch.Tensor, weight: torch.Tensor) -> bool:
    return (_ONEDNN and x.device.type == "cpu" and x.dim() == 2 and x.dtype == weight.dtype
            and x.dtype in ONEDNN_DTYPES
            and not torch.is_autocast_enabled("cpu")
            and x.numel() * weight.shape[0] >= ONEDNN_MIN_MACS)


def linear(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None = None
           ) -> torch.Tensor:
    """``F.linear(x, weight, bias)`` by the faster GEMM: oneDNN for large products of the
    :data:`ONEDNN_DTYPES` on CPU outside autocast, ``F.linear`` otherwise.
    x: (n, in) (other ranks: ``F.linear``), weight: (out, in), bias: (out,) -> (n, out)."""
    if not _use_onednn(x, weight):
        return F.linear(x, weight, bias)
    if torch.is_grad_enabled() and any(t is not None and t.requires_grad
                                       for t in (x, weight, bias)):
        return _OneDnnLinear.apply(x, weight, bias)
    return _onednn(x, weight, bias)


# ------------------------------------------------------------------------------ compilation
_COMPILE_LOCK = threading.Lock()


def compiled(fn: Callable, name: str) -> Callable:
    """``fn`` through ``torch.compile`` (dynamic shapes), or ``fn`` itself from the first time
    compiling or running the compiled code fails on a device type (warned once; ``fn`` is pure,
    so the outputs are the same either way). ``torch.compile`` is imported and set up at the
    first call, and the first call per device type compiles under a lock (compilation is not
    thread-safe).

    The compiled function runs a copy of ``fn``'s code named ``name``: dynamo keeps its compiled
    variants (dtypes, strides, grad modes, constants) per code object, at most
    ``torch._dynamo.config.recompile_limit`` (8), so each use gets its own budget."""
    fn = types.FunctionType(fn.__code__.replace(co_name=name, co_qualname=name), fn.__globals__,
                            name, fn.__defaults__, fn.__closure__)
    state: dict = {}  # "compiled": the compiled function; device type -> whether it works

    @functools.wraps(fn)
    def call(*args, **kwargs):
        device = next(a.device.type for a in args if isinstance(a, torch.Tensor))
        if state.get(device) is False:
            return fn(*args, **kwargs)
        try:
            if device in state:
                return state["compiled"](*args, **kwargs)
            with _COMPILE_LOCK:
                if "compiled" not in state:
                    state["compiled"] = torch.compile(fn, dynamic=True)
                result = state["compiled"](*args, **kwargs)
        except Exception as err:  # noqa: BLE001 - any failure: the eager function
            warnings.warn(f"torch.compile of {name} failed on {device} "
                          f"({type(err).__name__}: {err}); computing eagerly",
                          RuntimeWarning, stacklevel=2)
            state[device] = False
            return fn(*args, **kwargs)
        state[device] = True
        return result

    return call
