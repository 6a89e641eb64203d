"""Offline datasets and synthetic generators (never downloads)."""

# ``__all__`` is the public API; the names imported ``as`` themselves serve the
# package's other layers only
from interpretable.datasets._images import (
    CropBox,
    eval_crops,
    eval_transform,
    imagenet_class_names,
    load_image_folder,
    read_image,
    read_images,
)
from interpretable.datasets._loaders import (
    load_digits_images,
    load_glove,
    load_minilm,
    load_mnist_5k,
    load_rotten_tomatoes,
    load_shakespeare,
    load_trec,
    shakespeare_plays,
)
from interpretable.datasets._packages import (
    MissingDataError,
    data_status as data_status,
    install_command as install_command,
    package_file as package_file,
)
from interpretable.datasets._synthetic import (
    make_babi_task1,
    make_colored_shapes,
    make_image_grid,
    make_parentheses,
    make_planted_evidence_texts,
)
from interpretable.datasets._textures import (
    make_textured_digit_grids,
    make_textured_digits,
    sample_photos as sample_photos,
)

__all__ = [
    "load_rotten_tomatoes", "load_trec", "load_glove", "load_mnist_5k", "load_digits_images",
    "load_shakespeare", "shakespeare_plays", "load_minilm", "load_image_folder", "read_image",
    "read_images", "eval_crops", "eval_transform", "CropBox", "imagenet_class_names",
    "make_babi_task1", "make_colored_shapes", "make_image_grid", "make_parentheses",
    "make_planted_evidence_texts", "make_textured_digits", "make_textured_digit_grids",
    "MissingDataError",
]
