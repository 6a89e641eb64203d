"""Digits on natural textures: a localisation set where no pixel is black by construction.

Every image is a random crop of one of scikit-learn's bundled sample photos
(``sklearn.datasets.load_sample_images``: china.jpg, flower.jpg), resized to the image size,
with one digit glyph alpha-blended onto it in a random color that contrasts with the local
background. Grids of such images (one class per cell) are the grid pointing game's setting
without a black background, which would favour attributions taken against a black baseline
(integrated gradients from black, Input×Gradient) by zeroing the background for free.
"""
from __future__ import annotations

import functools

import numpy as np
import torch
from sklearn.utils import Bunch, check_random_state
from torch.nn import functional as F

from interpretable.datasets._images import resize_shorter_side
from interpretable.datasets._synthetic import make_image_grid

__all__ = ["make_textured_digit_grids", "make_textured_digits"]

LUMINANCE = np.array([0.299, 0.587, 0.114], dtype=np.float32)


@functools.lru_cache(maxsize=1)
def sample_photos() -> tuple[np.ndarray, ...]:
    """scikit-learn's bundled sample photos as float32 (H, W, 3) arrays in [0, 1]."""
    from sklearn.datasets import load_sample_images

    return tuple((image / 255.0).astype(np.float32) for image in load_sample_images().images)


def _sklearn_digits() -> tuple[np.ndarray, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    return (digits.images / 16.0).astype(np.float32), digits.target.astype(np.int64)


def _texture(rng: np.random.RandomState, size: int) -> np.ndarray:
    """A random square crop (1/8 to 1/2 of the shorter side) of a random sample photo,
    randomly mirrored, resized to (size, size, 3)."""
    photos = sample_photos()
    photo = photos[rng.randint(len(photos))]
    h, w = photo.shape[:2]
    side = rng.randint(min(h, w) // 8, min(h, w) // 2 + 1)
    top, left = rng.randint(h - side + 1), rng.randint(w - side + 1)
    crop = torch.from_numpy(photo[top:top + side, left:left + side]).permute(2, 0, 1)
    texture = resize_shorter_side(crop, size).clamp(0, 1).permute(1, 2, 0).numpy()
    return texture[:, ::-1] if rng.rand() < 0.5 else texture


def _blend(image: np.ndarray, color, alpha: np.ndarray) -> np.ndarray:
    """``color`` over ``image`` (h, w, 3) with opacity ``alpha`` (h, w)."""
    return image * (1 - alpha[..., None]) + np.asarray(color, np.float32) * alpha[..., None]


def make_textured_digits(n_samples: int = 500, size: int = 32, digit_size: int | None = None,
                         glyphs: tuple | None = None,
                         random_state: int | np.random.RandomState | None = None) -> Bunch:
    """Generate digits pasted at random positions onto natural-texture crops.

    Each glyph is resized to ``digit_size`` and drawn in a random color, dark on bright
    texture and bright on dark texture (each channel in [0.1, 0.35] or [0.65, 0.9]: never
    black), with an outline in the opposite shade.

    Parameters
    ----------
    n_samples : int, default=500
        Images.
    size : int, default=32
        Their side.
    digit_size : int or None, default=None
        The digits' side (None: 3/4 of ``size``).
    glyphs : tuple of (ndarray, ndarray) or None, default=None
        (images (m, h, w) in [0, 1], labels (m,)): the digit shapes used as alpha masks (e.g.
        :func:`~interpretable.datasets.load_mnist_5k`'s); None: scikit-learn's 8×8 digits.
    random_state : int, RandomState or None, default=None
        Seeds the images.

    Returns
    -------
    Bunch
        ``data`` float32 (n, size, size, 3) in [0, 1], ``target`` (n,), ``mask`` bool
        (n, size, size) (the digit's pixels, alpha > 0.5).

    Examples
    --------
    >>> from interpretable.datasets import make_textured_digits
    >>> digits = make_textured_digits(n_samples=3, size=16, random_state=0)
    >>> digits.data.shape, digits.target.shape
    ((3, 16, 16, 3), (3,))
    """
    if not isinstance(size, (int, np.integer)) or size < 8:
        raise ValueError(f"size must be an integer >= 8, got {size!r}")
    digit_size = int(digit_size or (3 * size) // 4)
    if not 4 <= digit_size <= size:
        raise ValueError(f"digit_size must be between 4 and size={size}, got {digit_size}")
    if not isinstance(n_samples, (int, np.integer)) or n_samples < 1:
        raise ValueError(f"n_samples must be a positive integer, got {n_samples!r}")
    shapes, labels = _sklearn_digits() if glyphs is None else map(np.asarray, glyphs)
    if shapes.ndim != 3 or len(shapes) != len(labels):
        raise ValueError("glyphs must be (images (m, h, w), labels (m,)), got shapes "
                         f"{shapes.shape} and {labels.shape}")
    rng = check_random_state(random_state)
    chosen = rng.randint(len(shapes), size=n_samples)
    alphas = F.interpolate(torch.as_tensor(shapes[chosen], dtype=torch.float32)[:, None],
                           size=(digit_size, digit_size), mode="bilinear",
                           align_corners=False, antialias=True)[:, 0]
    alphas = (2 * alphas - 0.5).clamp(0, 1)  # sharper edges than the upsampled glyph
    width = max(1, digit_size // 24)  # outline in the opposite shade, about 4% of the digit
    outlines = F.max_pool2d(alphas[:, None], 2 * width + 1, stride=1, padding=width)[:, 0]
    outlines = outlines.numpy()
    alphas = alphas.numpy()
    data = np.empty((n_samples, size, size, 3), dtype=np.float32)
    masks = np.zeros((n_samples, size, size), dtype=bool)
    for i, (alpha, outline) in enumerate(zip(alphas, outlines, strict=True)):
        image = _texture(rng, size)
        top, left = rng.randint(size - digit_size + 1, size=2)
        window = (slice(top, top + digit_size), slice(left, left + digit_size))
        background = float(image[window].mean((0, 1)) @ LUMINANCE)
        hue = rng.uniform(size=3).astype(np.float32)
        dark = background > 0.5
        color = (0.1 if dark else 0.65) + 0.25 * hue
        image[window] = _blend(_blend(image[window], 0.85 if dark else 0.15, outline), color,
                               alpha)
        data[i] = image
        masks[i][window] = alpha > 0.5
    return Bunch(data=data, target=labels[chosen], mask=masks)


def make_textured_digit_grids(n_grids: int = 100, grid: int = 2, size: int = 32,
                              digit_size: int | None = None, glyphs: tuple | None = None,
                              random_state: int | np.random.RandomState | None = None) -> Bunch:
    """Generate ``grid × grid`` grids of textured digits, one distinct class per cell.

    The digits are those of :func:`make_textured_digits`; cells are drawn as in
    :func:`~interpretable.datasets.make_image_grid`.

    Parameters
    ----------
    n_grids : int, default=100
        Grid images.
    grid : int, default=2
        Cells per side.
    size : int, default=32
        The side of a cell.
    digit_size : int or None, default=None
        The digits' side (None: 3/4 of ``size``).
    glyphs : tuple of (ndarray, ndarray) or None, default=None
        The digit shapes, as in :func:`make_textured_digits`.
    random_state : int, RandomState or None, default=None
        Seeds the images.

    Returns
    -------
    Bunch
        ``data`` float32 (n_grids, grid·size, grid·size, 3), ``cell_labels`` (n_grids, grid²)
        (row-major cells), ``mask`` bool (n_grids, grid·size, grid·size) (digit pixels of all
        cells) and ``grid``.

    Examples
    --------
    >>> from interpretable.datasets import make_textured_digit_grids
    >>> grids = make_textured_digit_grids(n_grids=2, size=16, random_state=0)
    >>> grids.data.shape, grids.cell_labels.shape
    ((2, 32, 32, 3), (2, 4))
    """
    rng = check_random_state(random_state)
    cells = grid * grid
    singles = make_textured_digits(n_grids * cells, size, digit_size, glyphs, rng)
    grids = make_image_grid(singles.data, singles.target, grid, n_grids, rng)
    tiles = singles.mask[grids.cell_index].reshape(n_grids, grid, grid, size, size)
    mask = tiles.transpose(0, 1, 3, 2, 4).reshape(n_grids, grid * size, grid * size)
    return Bunch(data=grids.data, cell_labels=grids.cell_labels, mask=mask, grid=grid)
