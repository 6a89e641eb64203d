"""The real torchvision and timm for the vision tests (test-only).

``make install`` puts them into ``<venv>/real-vision`` (``--no-deps``), outside the venv's
packages, since ``transformers`` imports any torchvision it finds; :func:`real_vision` puts that
folder on ``sys.path``.

PyPI's torchvision wheels beside the CPU build of torch carry compiled operators of a CUDA
build, which do not load: ``import torchvision`` then fails in ``_meta_registrations``, which
registers fake kernels for ``torchvision::nms`` and ``torchvision::qnms`` whether or not the
operators were loaded. Declaring those two schemas (no kernel: calling them raises) lets the
pure-Python models import. Nothing is declared where the compiled operators load.

>>> torchvision, timm = real_vision()
>>> torchvision.models.VisionTransformer(image_size=16, patch_size=8, num_layers=1, num_heads=1,
...                                      hidden_dim=8, mlp_dim=8).heads.head.out_features
1000
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

__all__ = ["real_vision", "torchvision_vit", "timm_vit"]

#: the schemas torchvision's fake kernels need, as its compiled library declares them
_SCHEMAS = ("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor",
            "qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
_declared = []  # the Library holding the schemas (alive as long as the process)
#: where ``make install`` puts them
FOLDER = Path(sys.prefix) / "real-vision"


def _torchvision():
    if FOLDER.is_dir() and str(FOLDER) not in sys.path and "torchvision" not in sys.modules:
        sys.path.append(str(FOLDER))
    try:
        import torchvision
    except ImportError as exc:
        pytest.skip(f"torchvision cannot be imported: {exc}")
    except RuntimeError as exc:
        if "torchvision::" not in str(exc) or _declared:
            raise
        for name in [m for m in sys.modules if m.partition(".")[0] == "torchvision"]:
            del sys.modules[name]  # the failed, partial import
        library = torch.library.Library("torchvision", "DEF")
        for schema in _SCHEMAS:
            library.define(schema)
        _declared.append(library)
        import torchvision
    return torchvision


def real_vision():
    """``(torchvision, timm)``, the real packages; skips the test (saying why) where
    torchvision or timm cannot be imported."""
    try:
        torchvision = _torchvision()
        return torchvision, pytest.importorskip("timm", reason="timm cannot be imported")
    finally:  # imported packages stay; processes started later (Dask workers) must not find
        if str(FOLDER) in sys.path:  # torchvision, which transformers would import there
            sys.path.remove(str(FOLDER))


def _seeded(build, seed):
    """``build()`` with the torch RNG seeded (the global one left as it was): the same model
    whatever ran before."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build().eval()


def torchvision_vit(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                    mlp_dim=64, num_classes=3, seed=0):
    """A random tiny ``torchvision.models.VisionTransformer`` in eval mode."""
    torchvision, _ = real_vision()
    return _seeded(lambda: torchvision.models.VisionTransformer(
        image_size=image_size, patch_size=patch_size, num_layers=num_layers,
        num_heads=num_heads, hidden_dim=hidden_dim, mlp_dim=mlp_dim,
        num_classes=num_classes), seed)


def timm_vit(img_size=32, patch_size=8, depth=2, num_heads=2, embed_dim=32, mlp_ratio=2.0,
             num_classes=3, seed=0, **options):
    """A random tiny timm ``VisionTransformer`` in eval mode (``options``: its further
    arguments, e.g. ``reg_tokens=1``)."""
    _, timm = real_vision()
    return _seeded(lambda: timm.models.vision_transformer.VisionTransformer(
        img_size=img_size, patch_size=patch_size, depth=depth, num_heads=num_heads,
        embed_dim=embed_dim, mlp_ratio=mlp_ratio, num_classes=num_classes, **options), seed)
