"""Image inputs for pretrained models (datasets.images) and the textured-digit localisation set
(datasets.textures)."""
import numpy as np
import pytest
import torch
from PIL import Image

from interpretable.datasets._images import (
    CropBox,
    eval_crops,
    eval_transform,
    imagenet_class_names,
    load_image_folder,
    read_image,
    read_images,
    resize_shorter_side,
)
from interpretable.datasets._textures import make_textured_digit_grids, make_textured_digits


def _photo(h=60, w=90, seed=0) -> np.ndarray:
    return np.random.RandomState(seed).randint(0, 256, (h, w, 3), dtype=np.uint8)


def test_read_image_accepts_arrays_pil_and_files(tmp_path):
    array = _photo()
    expected = array.astype(np.float32) / 255
    path = tmp_path / "photo.png"
    Image.fromarray(array).save(path)
    for source in (array, expected, torch.from_numpy(expected), Image.fromarray(array), path,
                   str(path)):
        image = read_image(source)
        assert image.dtype == np.float32 and image.shape == (60, 90, 3)
        np.testing.assert_allclose(image, expected, atol=1e-7)
    grey = read_image(array[..., 0])
    assert grey.shape == (60, 90, 3) and np.array_equal(grey[..., 0], grey[..., 2])
    assert read_image(Image.fromarray(array).convert("L")).shape == (60, 90, 3)


def test_read_image_refuses_what_it_cannot_read(tmp_path):
    with pytest.raises(ValueError, match="4 channels"):
        read_image(np.zeros((8, 8, 4), np.uint8))
    with pytest.raises(ValueError, match=r"looks channels-first \(C, H, W\)"):
        read_image(np.zeros((3, 8, 8), np.float32))
    with pytest.raises(ValueError, match=r"must lie in \[0, 1\]"):
        read_image(np.full((8, 8, 3), 2.0))
    with pytest.raises(TypeError, match="got int"):
        read_image(3)
    with pytest.raises(FileNotFoundError, match="no image file"):
        read_image(tmp_path / "absent.png")
    broken = tmp_path / "broken.jpg"
    broken.write_bytes(b"not an image")
    with pytest.raises(ValueError, match="cannot decode"):
        read_image(broken)


def test_read_images_of_different_sizes():
    images = read_images([_photo(20, 30), Image.fromarray(_photo(40, 10)), _photo(5, 5) / 255])
    assert [i.shape for i in images] == [(20, 30, 3), (40, 10, 3), (5, 5, 3)]
    assert len(read_images(np.zeros((4, 8, 8, 3), np.uint8))) == 4
    with pytest.raises(TypeError, match="for one image pass"):
        read_images("photo.png")
    with pytest.raises(ValueError, match="non-empty"):
        read_images([])
    with pytest.raises(ValueError, match=r"X\[1\] has 4 channels"):
        read_images([_photo(), np.zeros((8, 8, 4), np.uint8)])


def test_resize_follows_torchvision_sizes_and_pil_values():
    photo = _photo(427, 640)
    resized = resize_shorter_side(torch.from_numpy(photo).permute(2, 0, 1).float() / 255, 256)
    assert resized.shape == (3, 256, 383)  # int(256 * 640 / 427) = 383
    # torchvision resizes PIL images with PIL's (antialiased) bilinear filter: uint8 rounding
    pil = np.asarray(Image.fromarray(photo).resize((383, 256), Image.BILINEAR)) / 255
    assert np.abs(resized.permute(1, 2, 0).numpy() - pil).max() <= 1.5 / 255
    assert resize_shorter_side(resized, 256) is resized


def test_eval_transform_crops_the_centre_and_returns_its_box():
    photo = _photo(300, 500)
    crop, box = eval_transform(photo)
    assert crop.shape == (3, 224, 224) and crop.dtype == torch.float32
    assert crop.min() >= 0 and crop.max() <= 1
    # resized to 256 × 426: rows 16..240, columns 101..325 (torchvision's rounding)
    scale_h, scale_w = 300 / 256, 500 / 426
    assert box == CropBox(16 * scale_h, 101 * scale_w, 240 * scale_h, 325 * scale_w)
    same, same_box = eval_transform(photo[:256, :256], resize_size=256, crop_size=256)
    assert torch.equal(same, torch.from_numpy(photo[:256, :256] / 255).float().permute(2, 0, 1))
    assert same_box == (0, 0, 256, 256)
    crops, boxes = eval_crops([photo, _photo(224, 224)], resize_size=224, crop_size=224)
    assert crops.shape == (2, 3, 224, 224) and boxes[1] == (0, 0, 224, 224)
    with pytest.raises(ValueError, match="crop_size <= resize_size"):
        eval_transform(photo, resize_size=200, crop_size=224)


def test_load_image_folder(tmp_path):
    for name, count in (("cat", 2), ("dog", 3)):
        (tmp_path / name / "sub").mkdir(parents=True)
        for i in range(count):
            Image.fromarray(_photo(8, 8, i)).save(tmp_path / name / f"{i}.PNG")
    Image.fromarray(_photo(8, 8)).save(tmp_path / "dog" / "sub" / "deep.jpg")
    (tmp_path / "dog" / "notes.txt").write_text("not an image")
    paths, labels = load_image_folder(tmp_path)
    assert list(labels) == ["cat"] * 2 + ["dog"] * 4
    assert all(p.endswith((".PNG", ".jpg")) for p in paths)
    assert len(read_images(paths)) == 6
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="empty holds no files"):
        load_image_folder(tmp_path)
    with pytest.raises(NotADirectoryError):
        load_image_folder(tmp_path / "absent")


def test_imagenet_class_names():
    names = imagenet_class_names()
    assert len(names) == len(set(names)) == 1000
    assert (names[0], names[1], names[999]) == ("tench", "goldfish", "toilet tissue")


def test_textured_digits():
    data = make_textured_digits(40, size=32, random_state=0)
    assert data.data.shape == (40, 32, 32, 3) and data.data.dtype == np.float32
    assert data.data.min() >= 0 and data.data.max() <= 1
    assert data.mask.shape == (40, 32, 32) and 0 < data.mask.mean() < 0.5
    assert set(data.target) <= set(range(10))
    digit_pixels = data.data[data.mask]
    assert digit_pixels.max(axis=1).min() > 0.05  # no black digits
    again = make_textured_digits(40, size=32, random_state=0)
    assert np.array_equal(again.data, data.data) and np.array_equal(again.target, data.target)
    glyphs = (np.eye(6, dtype=np.float32)[None].repeat(4, 0), np.array([0, 1, 2, 3]))
    custom = make_textured_digits(5, size=16, glyphs=glyphs, random_state=0)
    assert set(custom.target) <= {0, 1, 2, 3}
    with pytest.raises(ValueError, match="digit_size must be between 4 and size=16"):
        make_textured_digits(5, size=16, digit_size=20)


def test_textured_digit_grids():
    grids = make_textured_digit_grids(6, grid=2, size=16, random_state=0)
    assert grids.data.shape == (6, 32, 32, 3) and grids.cell_labels.shape == (6, 4)
    assert all(len(set(row)) == 4 for row in grids.cell_labels)
    assert grids.mask.shape == (6, 32, 32)
    cells = grids.mask.reshape(6, 2, 16, 2, 16).any(axis=(2, 4))
    assert cells.all()  # every cell holds its digit
