"""Offline datasets and synthetic generators (never downloads)."""

from .packages import MissingDataError
from .loaders import (
    load_digits_images,
    load_glove,
    load_minilm,
    load_mnist_5k,
    load_rotten_tomatoes,
    load_shakespeare,
    shakespeare_plays,
)
from .synthetic import make_babi_task1, make_colored_shapes, make_image_grid, make_parentheses

__all__ = [
    "MissingDataError",
    "load_digits_images",
    "load_glove",
    "load_minilm",
    "load_mnist_5k",
    "load_rotten_tomatoes",
    "load_shakespeare",
    "shakespeare_plays",
    "make_babi_task1",
    "make_colored_shapes",
    "make_image_grid",
    "make_parentheses",
]
