"""Regression tests of failures found by fuzzing the entry points, each fixed where it was:
special files in a model folder, pickle / save round trips that were not bit-identical, lone
surrogates in BERT texts, empty batches through the crop path."""

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import torch
from conformance.cases import CASES

from fuzz.conftest import examples, fixed_seed  # noqa: F401  (the profile is loaded)

CASE = {case.name: case for case in CASES}


def _fit(name):
    case = CASE[name]
    X, y, X_test = case.data()
    return case.make().fit(X, y), X_test


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    est, _ = _fit("EmbeddingBagClassifier")
    path = tmp_path_factory.mktemp("saved") / "model"
    est.save(path)
    return type(est), path


def _in_subprocess(code, timeout=120):
    """Run ``code`` in a fresh interpreter and return what it printed; fails (instead of
    hanging) if it blocks: a library may block in native code holding the GIL, which no
    thread-based timeout survives."""
    try:
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=timeout, env={**os.environ, "OMP_NUM_THREADS": "1"})
    except subprocess.TimeoutExpired:
        pytest.fail(f"blocked for {timeout} s: {code}")
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def _copy(path, tmp_path):
    target = tmp_path / "model"
    target.mkdir()
    for f in path.iterdir():
        (target / f.name).write_bytes(f.read_bytes())
    return target


def _weights(folder):
    return next(folder.glob("weights-*.safetensors"))


_LOAD = """
import sys
from interpretable import EmbeddingBagClassifier
try:
    EmbeddingBagClassifier.load(sys.argv[1] if len(sys.argv) > 1 else {folder!r})
except Exception as exc:
    print(type(exc).__name__, exc)
"""


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
@pytest.mark.parametrize("which", ["config", "weights"])
def test_load_refuses_a_named_pipe_without_blocking(saved, tmp_path, which):
    _, path = saved
    folder = _copy(path, tmp_path)
    special = folder / "config.json" if which == "config" else _weights(folder)
    special.unlink()
    os.mkfifo(special)
    printed = _in_subprocess(_LOAD.format(folder=str(folder)))
    assert printed.startswith("OSError"), printed
    assert special.name in printed and "named pipe" in printed


@pytest.mark.parametrize("which", ["config", "weights"])
def test_load_refuses_a_folder_named_like_a_model_file(saved, tmp_path, which):
    cls, path = saved
    folder = _copy(path, tmp_path)
    special = folder / "config.json" if which == "config" else _weights(folder)
    special.unlink()
    special.mkdir()
    with pytest.raises(OSError, match=f"{special.name}.*|.*folder"):
        cls.load(folder)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero")
def test_load_refuses_a_device_linked_as_config(saved, tmp_path):
    cls, path = saved
    folder = _copy(path, tmp_path)
    (folder / "config.json").unlink()
    (folder / "config.json").symlink_to("/dev/zero")
    with pytest.raises(OSError, match="character device"):
        cls.load(folder)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_an_image_path_that_is_a_named_pipe_is_refused(tmp_path):
    fifo = tmp_path / "image.png"
    os.mkfifo(fifo)
    printed = _in_subprocess(f"""
from interpretable.datasets import read_images
try:
    read_images([{str(fifo)!r}])
except Exception as exc:
    print(type(exc).__name__, exc)
""")
    assert printed.startswith("ValueError") and "named pipe" in printed, printed


def test_seat_vanilla_attention_round_trips_bit_identically(tmp_path):
    """The vanilla attention was frozen in the fitted model but not in the rebuilt one, and
    torch's matmul picks other kernels by requires_grad: the last bit differed."""
    est, X_test = _fit("SEATClassifier-seat")
    est.save(tmp_path / "m")
    expected = est.explain(X_test, method="vanilla").to_frame()
    for other in (pickle.loads(pickle.dumps(est)), type(est).load(tmp_path / "m")):
        assert other.explain(X_test, method="vanilla").to_frame().equals(expected)
        flags = {n: p.requires_grad for n, p in other.module_.named_parameters()}
        assert flags == {n: p.requires_grad for n, p in est.module_.named_parameters()}


@pytest.fixture(scope="module")
def bcos_text():
    return _fit("BcosTextClassifier")[0]


@pytest.mark.parametrize("text", ["caf\udce9", "\udce9", "a \ud83d\ude00 b", "x\udfff\ud800y"])
def test_lone_surrogates_read_as_unknown_characters(bcos_text, text):
    clean = "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in text)
    np.testing.assert_array_equal(bcos_text.predict_proba([text]),
                                  bcos_text.predict_proba([clean]))
    explanation = bcos_text.explain([text])
    assert explanation.to_frame() is not None
    pieces = bcos_text.text_encoder_.align(text) if hasattr(bcos_text, "text_encoder_") else None
    if pieces is not None:  # offsets index the original text
        for start, end in pieces.offsets[1:-1]:
            assert 0 <= start < end <= len(text)


def test_other_text_estimators_accept_lone_surrogates():
    est, _ = _fit("EmbeddingBagClassifier")
    assert est.predict_proba(["caf\udce9 great"]).shape == (1, 2)


@pytest.fixture(scope="module")
def pretrained(tmp_path_factory):
    """A tiny v2 checkpoint loaded with the default 224-pixel crops."""
    from interpretable import BcosSimpleViTClassifier
    from interpretable.nn.bcos._simple_vit import BcosSimpleViT
    from interpretable.nn.bcos._zoo import to_bcos_state_dict

    torch.manual_seed(0)
    model = BcosSimpleViT(dim=8, depth=1, heads=2, mlp_dim=8, patch_size=32, num_classes=1000,
                          image_size=224)
    path = tmp_path_factory.mktemp("checkpoint") / "tiny.pth"
    torch.save(to_bcos_state_dict(model), path)
    return BcosSimpleViTClassifier.from_pretrained(path, architecture=dict(
        dim=8, depth=1, heads=2, mlp_dim=8, patch_size=32), device="cpu")


@pytest.mark.parametrize("empty", [np.zeros((0, 40, 56, 3), np.uint8),
                                   np.zeros((0, 40, 56), np.float32), [], ()],
                         ids=["array", "grey", "list", "tuple"])
@pytest.mark.parametrize("method", ["predict", "predict_proba", "decision_function", "explain"])
def test_empty_batches_through_the_crop_path(pretrained, empty, method):
    assert pretrained.crop_size_ == 224
    with pytest.raises(ValueError, match="X is empty: at least one image is required"):
        getattr(pretrained, method)(empty)
