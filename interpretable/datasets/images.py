"""Image inputs for pretrained models: readers for arrays, PIL images and files, an image-folder
lister, the ImageNet evaluation transform (resize the shorter side, centre crop) with the crop
box of every image, and the ImageNet class names. torch, numpy and PIL only (no torchvision).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from PIL import Image
from torch.nn import functional as F

from ..validation import check_images

__all__ = [
    "IMAGE_EXTENSIONS",
    "CropBox",
    "eval_crops",
    "eval_transform",
    "imagenet_class_names",
    "load_image_folder",
    "read_image",
    "read_images",
    "resize_shorter_side",
]

# torchvision.datasets.folder.IMG_EXTENSIONS
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


@functools.lru_cache(maxsize=1)
def imagenet_class_names() -> tuple[str, ...]:
    """The 1,000 ImageNet-1k class names in class-index order.

    ``imagenet_classes.txt`` was written once from torchvision 0.29.1's
    ``torchvision.models._meta._IMAGENET_CATEGORIES`` (the names torchvision's weights use;
    the two duplicated WordNet names are told apart as "crane bird" / "crane" and "maillot" /
    "maillot tank suit"), so no torchvision is needed at run time.
    """
    path = Path(__file__).with_name("imagenet_classes.txt")
    return tuple(path.read_text(encoding="utf-8").splitlines())


def read_image(image, what: str = "image") -> np.ndarray:
    """One image as float32 (H, W, 3) in [0, 1].

    ``image``: a file path (str or Path; decoded by PIL and converted to RGB), a PIL image, or
    an array (H, W), (H, W, 1) or (H, W, 3), uint8 in [0, 255] or float in [0, 1] (a torch
    tensor is read as such an array). Grey images are repeated over the three channels.
    """
    if isinstance(image, (str, Path)):
        try:
            with Image.open(image) as opened:
                image = opened.convert("RGB")
        except FileNotFoundError:
            raise FileNotFoundError(f"{what}: no image file at {image}") from None
        except OSError as exc:
            raise ValueError(f"{what}: cannot decode {image} as an image: {exc}") from None
    if isinstance(image, Image.Image):
        image = np.asarray(image.convert("RGB"))
    if isinstance(image, torch.Tensor):
        image = image.detach().cpu().numpy()
    if not isinstance(image, np.ndarray):
        raise TypeError(f"{what} must be a file path, a PIL image or an array, got "
                        f"{type(image).__name__}")
    if image.ndim not in (2, 3):
        raise ValueError(f"{what} must have shape (H, W) or (H, W, C), got {image.shape}")
    if image.ndim == 3 and image.shape[0] in (1, 3) and image.shape[-1] > 4:
        raise ValueError(f"{what} of shape {image.shape} looks channels-first (C, H, W); "
                         "images are channels-last (H, W, C): pass np.moveaxis(image, 0, -1)")
    pixels = check_images(image[None], what=what)[0]
    if pixels.shape[-1] == 1:
        return np.repeat(pixels, 3, axis=-1)
    if pixels.shape[-1] != 3:
        raise ValueError(f"{what} has {pixels.shape[-1]} channels; pass RGB (3) or grey (1) "
                         "images (drop or composite an alpha channel first)")
    return pixels


def _image_items(X) -> list:
    """The images of ``X`` (not yet read): an array's images, or the items of a sequence."""
    if isinstance(X, (str, Path, Image.Image)):
        raise TypeError("X must be a collection of images; for one image pass [X]")
    if isinstance(X, (np.ndarray, torch.Tensor)):
        if X.ndim not in (3, 4):
            raise ValueError(f"an image array must have shape (n, H, W[, C]), got "
                             f"{tuple(X.shape)}")
        return list(X)
    if hasattr(X, "tolist") and not isinstance(X, Sequence):  # a pandas Series of paths
        X = X.tolist()
    if not isinstance(X, Sequence) or len(X) == 0:
        raise ValueError("X must be a non-empty sequence of images")
    return list(X)


def read_images(X) -> list[np.ndarray]:
    """Images as a list of float32 (H_i, W_i, 3) arrays in [0, 1].

    ``X``: an array (n, H, W[, C]) (uint8 or float in [0, 1]), or a list (or pandas Series)
    of images of any sizes in any form :func:`read_image` accepts (paths, PIL images, arrays).
    """
    return [read_image(image, f"X[{i}]") for i, image in enumerate(_image_items(X))]


def resize_shorter_side(images: torch.Tensor, size: int) -> torch.Tensor:
    """Bilinear, antialiased resize of (..., H, W) float images so that the shorter side is
    ``size``; the longer becomes ``int(size · long / short)`` (torchvision's ``Resize(size)``).
    """
    h, w = images.shape[-2:]
    short, long = min(h, w), max(h, w)
    long = int(size * long / short)
    new_size = (size, long) if h <= w else (long, size)
    if new_size == (h, w):
        return images
    batch = images.reshape(-1, 1, h, w)
    resized = F.interpolate(batch, size=new_size, mode="bilinear", align_corners=False,
                            antialias=True)
    return resized.reshape(*images.shape[:-2], *new_size)


class CropBox(NamedTuple):
    """The part of the source image a model saw, in source pixel coordinates (floats):
    rows ``top`` to ``bottom``, columns ``left`` to ``right`` (exclusive ends). An explanation
    map (crop, crop) resized to (bottom - top, right - left) and placed at (top, left) lies on
    the source pixels."""

    top: float
    left: float
    bottom: float
    right: float


def eval_transform(image, resize_size: int = 256, crop_size: int = 224, what: str = "image"
                   ) -> tuple[torch.Tensor, CropBox]:
    """The ImageNet evaluation transform: resize the shorter side to ``resize_size`` (bilinear,
    antialiased), then centre-crop ``crop_size`` (torchvision's rounding).

    image: anything :func:`read_image` accepts (``what`` names it in errors) -> (float32
    (3, crop_size, crop_size) in [0, 1], its :class:`CropBox` in the source image).
    """
    if not 0 < crop_size <= resize_size:
        raise ValueError(f"need 0 < crop_size <= resize_size, got crop_size={crop_size}, "
                         f"resize_size={resize_size}")
    pixels = torch.from_numpy(read_image(image, what)).permute(2, 0, 1)
    h, w = pixels.shape[-2:]
    resized = resize_shorter_side(pixels, resize_size).clamp_(0.0, 1.0)
    new_h, new_w = resized.shape[-2:]
    top = round((new_h - crop_size) / 2.0)
    left = round((new_w - crop_size) / 2.0)
    crop = resized[:, top:top + crop_size, left:left + crop_size].contiguous()
    scale_h, scale_w = h / new_h, w / new_w
    box = CropBox(top * scale_h, left * scale_w, (top + crop_size) * scale_h,
                  (left + crop_size) * scale_w)
    return crop, box


def eval_crops(X, resize_size: int = 256, crop_size: int = 224, channels_last: bool = False
               ) -> tuple[torch.Tensor, list[CropBox]]:
    """:func:`eval_transform` of every image of ``X`` (see :func:`read_images`), read one at a
    time (memory: the crops and one decoded image): (float32 (n, 3, crop_size, crop_size) in
    [0, 1], or (n, crop_size, crop_size, 3) with ``channels_last``; n crop boxes)."""
    items = _image_items(X)
    shape = (crop_size, crop_size, 3) if channels_last else (3, crop_size, crop_size)
    crops, boxes = torch.empty((len(items), *shape)), []
    for i, image in enumerate(items):
        crop, box = eval_transform(image, resize_size, crop_size, what=f"X[{i}]")
        crops[i] = crop.permute(1, 2, 0) if channels_last else crop
        boxes.append(box)
    return crops, boxes


def load_image_folder(path: str | Path, extensions: Sequence[str] = IMAGE_EXTENSIONS
                      ) -> tuple[list[str], np.ndarray]:
    """List an image-folder tree ``path/<class name>/**/<image>`` (torchvision's ImageFolder
    layout): (image paths, sorted by class then path; their class names (n,) str).

    Nothing is decoded, so large folders are cheap; pass the paths to :func:`read_images`,
    :func:`eval_crops` or an estimator. Files with other extensions (case-insensitive) are
    skipped; a class folder without images is a ValueError, as in torchvision.
    """
    root = Path(path)
    if not root.is_dir():
        raise NotADirectoryError(f"no image folder at {root}")
    suffixes = tuple(e.lower() for e in extensions)
    classes = sorted(d.name for d in root.iterdir() if d.is_dir())
    if not classes:
        raise ValueError(f"{root} has no class sub-folders (expected {root}/<class>/<image>)")
    paths, labels = [], []
    for name in classes:
        files = sorted(str(f) for f in (root / name).rglob("*")
                       if f.is_file() and f.suffix.lower() in suffixes)
        if not files:
            raise ValueError(f"class folder {root / name} holds no files with extensions "
                             f"{suffixes}")
        paths += files
        labels += [name] * len(files)
    return paths, np.array(labels)
