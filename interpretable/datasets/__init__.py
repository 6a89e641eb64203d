"""Offline datasets and synthetic generators (never downloads)."""

from interpretable.datasets.images import (
    eval_crops,
    eval_transform,
    imagenet_class_names,
    load_image_folder,
    read_image,
    read_images,
)
from interpretable.datasets.loaders import (
    load_digits_images,
    load_glove,
    load_minilm,
    load_mnist_5k,
    load_rotten_tomatoes,
    load_shakespeare,
    load_trec,
    shakespeare_plays,
)
from interpretable.datasets.packages import MissingDataError
from interpretable.datasets.synthetic import (
    make_babi_task1,
    make_colored_shapes,
    make_image_grid,
    make_parentheses,
    make_planted_evidence_texts,
)
from interpretable.datasets.textures import make_textured_digit_grids, make_textured_digits

__all__ = [
    "MissingDataError",
    "eval_crops",
    "eval_transform",
    "imagenet_class_names",
    "load_image_folder",
    "read_image",
    "read_images",
    "load_digits_images",
    "load_glove",
    "load_minilm",
    "load_mnist_5k",
    "load_rotten_tomatoes",
    "load_shakespeare",
    "load_trec",
    "shakespeare_plays",
    "make_babi_task1",
    "make_colored_shapes",
    "make_image_grid",
    "make_parentheses",
    "make_planted_evidence_texts",
    "make_textured_digit_grids",
    "make_textured_digits",
]
