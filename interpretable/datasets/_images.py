"""Image inputs for pretrained models: readers for arrays, PIL images and files, an image-folder
lister, the ImageNet evaluation transform (resize the shorter side, centre crop) with the crop
box of every image, and the ImageNet class names. torch, numpy and PIL only (no torchvision).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
import torch
from PIL import Image
from torch.nn import functional as F

from interpretable._validation import check_images
from interpretable.utils import open_regular

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["CropBox", "eval_crops", "eval_transform", "imagenet_class_names", "load_image_folder",
           "read_image", "read_images"]

# torchvision.datasets.folder.IMG_EXTENSIONS
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")


@functools.lru_cache(maxsize=1)
def imagenet_class_names() -> tuple[str, ...]:
    """Return the 1,000 ImageNet-1k class names in class-index order.

    ``imagenet_classes.txt`` was written once from torchvision 0.29.1's
    ``torchvision.models._meta._IMAGENET_CATEGORIES`` (the names torchvision's weights use; the
    two duplicated WordNet names are told apart as "crane bird" / "crane" and "maillot" /
    "maillot tank suit"), so no torchvision is needed at run time.

    Returns
    -------
    tuple of str
        The names.

    Examples
    --------
    >>> from interpretable.datasets import imagenet_class_names
    >>> imagenet_class_names()[:3]
    ('tench', 'goldfish', 'great white shark')
    """
    path = Path(__file__).with_name("imagenet_classes.txt")
    return tuple(path.read_text(encoding="utf-8").splitlines())


def read_image(image: str | Path | Image.Image | torch.Tensor | ArrayLike,
               what: str = "image") -> np.ndarray:
    """Read one image as float32 ``(H, W, 3)`` in [0, 1].

    Grey images are repeated over the three channels.

    Parameters
    ----------
    image : str, Path, PIL image or array-like
        A file path (decoded by PIL and converted to RGB), a PIL image, or an array (H, W),
        (H, W, 1) or (H, W, 3), uint8 in [0, 255] or float in [0, 1] (a torch tensor is read as
        such an array).
    what : str, default="image"
        Names the image in errors.

    Returns
    -------
    ndarray of shape (H, W, 3)
        The image.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.datasets import read_image
    >>> read_image(np.full((2, 3), 255, np.uint8)).shape
    (2, 3, 3)
    """
    if isinstance(image, (str, Path)):
        try:
            with open_regular(image) as file, Image.open(file) as opened:  # no named pipes
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


_EMPTY = "X is empty: at least one image is required (a non-empty sequence or array)."


def _image_items(X) -> list:
    """The images of ``X`` (not yet read): an array's images, or the items of a sequence."""
    if isinstance(X, (str, Path, Image.Image)):
        raise TypeError("X must be a collection of images; for one image pass [X]")
    if isinstance(X, (np.ndarray, torch.Tensor)):
        if X.ndim not in (3, 4):
            raise ValueError(f"an image array must have shape (n, H, W[, C]), got "
                             f"{tuple(X.shape)}")
        if len(X) == 0:  # as check_images says it
            raise ValueError(_EMPTY)
        return list(X)
    if hasattr(X, "tolist") and not isinstance(X, Sequence):  # a pandas Series of paths
        X = X.tolist()
    if not isinstance(X, Sequence):
        raise ValueError("X must be a non-empty sequence of images")
    if len(X) == 0:
        raise ValueError(_EMPTY)
    return list(X)


def read_images(X: ArrayLike | Sequence[str | Path | Image.Image | ArrayLike]
                ) -> list[np.ndarray]:
    """Read images as a list of float32 ``(H_i, W_i, 3)`` arrays in [0, 1].

    Parameters
    ----------
    X : array-like of shape (n, H, W[, C]) or sequence of images
        An array (uint8 or float in [0, 1]), or a list (or pandas Series) of images of any sizes
        in any form :func:`read_image` accepts (paths, PIL images, arrays).

    Returns
    -------
    list of ndarray of shape (H_i, W_i, 3)
        The images.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.datasets import read_images
    >>> [image.shape for image in read_images([np.zeros((4, 5)), np.zeros((2, 3, 3))])]
    [(4, 5, 3), (2, 3, 3)]
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
    """The part of the source image a model saw, in source pixel coordinates.

    Rows ``top`` to ``bottom``, columns ``left`` to ``right`` (exclusive ends). An explanation
    map (crop, crop) resized to (bottom - top, right - left) and placed at (top, left) lies on
    the source pixels.

    Parameters
    ----------
    top : float
        The first row of the crop.
    left : float
        The first column of the crop.
    bottom : float
        The row after the crop's last.
    right : float
        The column after the crop's last.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.datasets import eval_transform
    >>> _, box = eval_transform(np.zeros((40, 80, 3), np.uint8), resize_size=20, crop_size=20)
    >>> box
    CropBox(top=0.0, left=20.0, bottom=40.0, right=60.0)
    >>> box.bottom - box.top, box.right - box.left
    (40.0, 40.0)
    """

    top: float
    left: float
    bottom: float
    right: float


def eval_transform(image: str | Path | Image.Image | torch.Tensor | ArrayLike,
                   resize_size: int = 256, crop_size: int = 224, what: str = "image",
                   *, keep_crop_sized: bool = False) -> tuple[torch.Tensor, CropBox]:
    """Apply the ImageNet evaluation transform: resize the shorter side, then centre-crop.

    The resize is bilinear and antialiased; the crop follows torchvision's rounding.

    Parameters
    ----------
    image : str, Path, PIL image or array-like
        Anything :func:`read_image` accepts.
    resize_size : int, default=256
        The shorter side after resizing.
    crop_size : int, default=224
        The side of the centre crop.
    what : str, default="image"
        Names the image in errors.
    keep_crop_sized : bool, default=False
        Take an image of ``crop_size x crop_size`` pixels as it is (its box the whole image)
        instead of resizing and cropping it.

    Returns
    -------
    crop : torch.Tensor of shape (3, crop_size, crop_size)
        Float32 in [0, 1].
    box : CropBox
        The crop's box in the source image.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.datasets import eval_transform
    >>> crop, box = eval_transform(np.zeros((64, 64, 3), np.uint8), resize_size=32, crop_size=28)
    >>> crop.shape, box
    (torch.Size([3, 28, 28]), CropBox(top=4.0, left=4.0, bottom=60.0, right=60.0))
    """
    if not 0 < crop_size <= resize_size:
        raise ValueError(f"need 0 < crop_size <= resize_size, got crop_size={crop_size}, "
                         f"resize_size={resize_size}")
    pixels = torch.from_numpy(read_image(image, what)).permute(2, 0, 1)
    h, w = pixels.shape[-2:]
    if keep_crop_sized and h == w == crop_size:
        return pixels.contiguous(), CropBox(0.0, 0.0, float(h), float(w))
    resized = resize_shorter_side(pixels, resize_size).clamp_(0.0, 1.0)
    new_h, new_w = resized.shape[-2:]
    top = round((new_h - crop_size) / 2.0)
    left = round((new_w - crop_size) / 2.0)
    crop = resized[:, top:top + crop_size, left:left + crop_size].contiguous()
    scale_h, scale_w = h / new_h, w / new_w
    box = CropBox(top * scale_h, left * scale_w, (top + crop_size) * scale_h,
                  (left + crop_size) * scale_w)
    return crop, box


def eval_crops(X: ArrayLike | Sequence[str | Path | Image.Image | ArrayLike],
               resize_size: int = 256, crop_size: int = 224, channels_last: bool = False,
               *, keep_crop_sized: bool = False) -> tuple[torch.Tensor, list[CropBox]]:
    """Apply :func:`eval_transform` to every image, reading one at a time.

    Memory holds the crops and one decoded image.

    Parameters
    ----------
    X : array-like or sequence of images
        Anything :func:`read_images` accepts (paths, PIL images, arrays of any sizes).
    resize_size : int, default=256
        The shorter side after resizing.
    crop_size : int, default=224
        The side of the centre crop.
    channels_last : bool, default=False
        Return ``(n, crop_size, crop_size, 3)`` instead of channels first.
    keep_crop_sized : bool, default=False
        Take the images of ``crop_size x crop_size`` pixels as they are (their box the whole
        image) instead of resizing and cropping them.

    Returns
    -------
    crops : torch.Tensor of shape (n, 3, crop_size, crop_size)
        Float32 in [0, 1] (channels last with ``channels_last``).
    boxes : list of CropBox
        Each crop's box in its source image.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.datasets import eval_crops
    >>> images = [np.zeros((300, 400, 3), np.uint8), np.ones((64, 64), np.float32)]
    >>> crops, boxes = eval_crops(images, resize_size=32, crop_size=28)
    >>> crops.shape, boxes[1]
    (torch.Size([2, 3, 28, 28]), CropBox(top=4.0, left=4.0, bottom=60.0, right=60.0))
    >>> eval_crops([np.ones((28, 28))], resize_size=32, crop_size=28, keep_crop_sized=True)[1]
    [CropBox(top=0.0, left=0.0, bottom=28.0, right=28.0)]
    """
    items = _image_items(X)
    shape = (crop_size, crop_size, 3) if channels_last else (3, crop_size, crop_size)
    crops, boxes = torch.empty((len(items), *shape)), []
    for i, image in enumerate(items):
        crop, box = eval_transform(image, resize_size, crop_size, what=f"X[{i}]",
                                   keep_crop_sized=keep_crop_sized)
        crops[i] = crop.permute(1, 2, 0) if channels_last else crop
        boxes.append(box)
    return crops, boxes


def load_image_folder(path: str | Path, extensions: Sequence[str] = IMAGE_EXTENSIONS
                      ) -> tuple[list[str], np.ndarray]:
    """List an image-folder tree ``path/<class name>/**/<image>`` (torchvision's layout).

    Nothing is decoded, so large folders are cheap; pass the paths to :func:`read_images`,
    :func:`eval_crops` or an estimator. Files with other extensions (case-insensitive) are
    skipped.

    Parameters
    ----------
    path : str or Path
        The root folder.
    extensions : sequence of str, default=(".jpg", ".jpeg", ".png", ...)
        The image files' extensions (by default also ``.ppm``, ``.bmp``, ``.pgm``, ``.tif``,
        ``.tiff`` and ``.webp``).

    Returns
    -------
    paths : list of str
        The image paths, sorted by class then path.
    labels : ndarray of shape (n,)
        Their class names (str).

    Raises
    ------
    NotADirectoryError
        If ``path`` is not a folder.
    ValueError
        If it has no class folders, or a class folder holds no images (as in torchvision).

    Examples
    --------
    >>> import numpy as np
    >>> from pathlib import Path
    >>> from PIL import Image
    >>> from interpretable.datasets import load_image_folder
    >>> for name in ("cat", "dog"):
    ...     Path("pets", name).mkdir(parents=True, exist_ok=True)
    ...     Image.fromarray(np.zeros((4, 4, 3), np.uint8)).save(f"pets/{name}/1.png")
    >>> paths, labels = load_image_folder("pets")
    >>> labels
    array(['cat', 'dog'], dtype='<U3')
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
