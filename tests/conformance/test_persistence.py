"""Safe save / load, table-driven over every estimator in ``cases.CASES``: save
stores what was fitted, atomically; load refuses corrupt, edited or foreign files with an error
naming the field or tensor, before allocating what a hostile config asks for."""

import copy
import errno
import functools
import json
import operator
import re
from pathlib import Path

import numpy as np
import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from conformance.cases import _sentiment
from interpretable import AttentionTextClassifier, EmbeddingBagClassifier
from interpretable.estimators.core import _model_folder as model_folder, _persistence as persistence
from interpretable.estimators.core._base import NeuralEstimator

CONFIG = "config.json"
WEIGHTS = re.compile(r"weights-[0-9a-f]{16}\.safetensors")
HUGE = 10**9


@pytest.fixture(scope="module")
def fitted(fitted_case):
    _, est, _, _, X_test = fitted_case
    return est, X_test


@pytest.fixture(scope="module")
def foreign():
    """Another model: a small EmbeddingBagClassifier of a different size."""
    X, y, _ = _sentiment(n=20, seed=1)
    return EmbeddingBagClassifier(embed_dim=5, max_epochs=1, random_state=0).fit(X, y)


def _weights(path) -> Path:
    """The weights file that the model folder's config.json names."""
    return path / json.loads((path / CONFIG).read_text())["weights"]


def _model_files(path) -> dict:
    """The files of a model folder, the weights under one name whatever their file's name."""
    files = _files(path)
    weights = _weights(path).name
    config = {**json.loads(files.pop(CONFIG)), "weights": "current"}
    return {**{"weights" if name == weights else name: data for name, data in files.items()},
            CONFIG: config}


def _files(root) -> dict:
    """Every file under ``root`` (hidden ones too, recursively) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in Path(root).rglob("*") if p.is_file()}


# ---------------------------------------------------------------------------- save
def test_save_stores_the_fitted_parameters(fitted, tmp_path):
    est, X_test = fitted
    fitted_params = est.get_params(deep=False)
    changed = copy.copy(est)  # set_params on a copy: the fixture stays as fitted
    changed.set_params(**{k: v for k, v in dict(lr=0.5, max_epochs=3, embed_dim=6,
                                                hidden_size=6).items() if k in fitted_params})
    rng = torch.random.get_rng_state()
    loaded = type(est).load(changed.save(tmp_path / "model"), device="cpu")
    assert torch.equal(torch.random.get_rng_state(), rng)  # load draws no random numbers
    assert loaded.get_params(deep=False) == {**fitted_params, "device": "cpu"}
    np.testing.assert_array_equal(loaded.predict_proba(X_test), est.predict_proba(X_test))
    lock, config, weights = sorted(p.name for p in (tmp_path / "model").iterdir())
    assert (lock, config) == (".lock", CONFIG) and WEIGHTS.fullmatch(weights)


def test_save_over_a_model_replaces_it_whole(fitted, foreign, tmp_path):
    est, X_test = fitted
    path = foreign.save(tmp_path / "model")
    est.save(path)
    assert _model_files(path) == _model_files(est.save(tmp_path / "fresh"))
    loaded = NeuralEstimator.load(path, device="cpu")
    assert type(loaded) is type(est)
    np.testing.assert_array_equal(loaded.predict_proba(X_test), est.predict_proba(X_test))


def test_unstorable_fitted_state_is_refused_before_writing(tmp_path):
    X, y, _ = _sentiment(n=20)
    kept = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, y)
    path = kept.save(tmp_path / "model")
    before = _files(tmp_path)
    labels = np.char.encode(y.astype(str))  # bytes labels: JSON cannot hold them
    clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, labels)
    with pytest.raises(TypeError, match=r"fitted state\['classes'\].*dtype \|S3.*pickle"):
        clf.save(path)
    assert _files(tmp_path) == before


class _LinearEncoder(nn.Module):
    """A custom encoder: ``forward(embedded (B, T, E), mask) -> (B, T, 8)``."""

    output_size = 8

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, embedded, mask):
        return torch.tanh(self.proj(embedded))


def test_custom_encoder_module_is_refused_before_writing(tmp_path):
    X, y, _ = _sentiment(n=20)
    clf = AttentionTextClassifier(encoder=_LinearEncoder(), embed_dim=8, hidden_size=8,
                                  max_epochs=1, random_state=0).fit(X, y)
    with pytest.raises(TypeError, match=r"\['encoder'\] cannot be stored as JSON.*pickle"):
        clf.save(tmp_path / "model")
    assert list(tmp_path.iterdir()) == []


def test_save_refuses_a_folder_with_other_files(foreign, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        foreign.save(tmp_path)
    assert _files(tmp_path) == {"notes.txt": b"mine"}


def test_failed_switch_keeps_the_old_model(foreign, fitted, tmp_path, monkeypatch):
    """The rename that makes the new model current fails: the old one stays, whole."""
    est, _ = fitted
    path = foreign.save(tmp_path / "model")
    before = _files(tmp_path)

    def fail(src, dst):
        raise OSError(errno.EIO, "I/O error")

    monkeypatch.setattr(model_folder.os, "replace", fail)
    with pytest.raises(OSError, match=f"I/O error: '{re.escape(str(path))}'"):
        est.save(path)
    assert _files(tmp_path) == before


def test_module_state_outside_the_state_dict_is_refused(foreign, tmp_path, monkeypatch):
    build = EmbeddingBagClassifier._build_module

    def build_with_cache(self, embeddings=None):
        module = build(self, embeddings)
        module.register_buffer("cache", torch.zeros(3), persistent=False)
        return module

    monkeypatch.setattr(EmbeddingBagClassifier, "_build_module", build_with_cache)
    with pytest.raises(TypeError, match=r"outside the module's state_dict \(\['cache'\]\)"):
        foreign.save(tmp_path / "model")
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------- load
def _present(config, keys) -> bool:
    for key in keys:
        if not isinstance(config, dict) or key not in config:
            return False
        config = config[key]
    return True


def _field(config, keys):
    """The value at ``keys`` (the test is skipped where the estimator has no such field)."""
    if not _present(config, keys):
        pytest.skip(f"no field {'.'.join(keys)}")
    return functools.reduce(operator.getitem, keys, config)


def _with(config, keys, value):
    """A copy of ``config`` with the existing field at ``keys`` set to ``value``."""
    _field(config, keys)
    config = copy.deepcopy(config)
    functools.reduce(operator.getitem, keys[:-1], config)[keys[-1]] = value
    return config


def _first(config, *candidates):
    """The first of the field paths ``candidates`` that ``config`` has."""
    present = [keys for keys in candidates if _present(config, keys)]
    return present[0] if present else pytest.skip("no such field")


def _longer_vocabulary(config):
    keys = _first(config, ("fitted", "text_encoder", "index_to_token"), ("fitted", "symbols"))
    return _with(config, keys, _field(config, keys) + ["\u2603"])


# the v2 B-cos ViT's width is in its fitted architecture (its params.embed_dim is refused)
_SIZE = (("fitted", "embed_dim"), ("fitted", "architecture_", "dim"), ("params", "embed_dim"),
         ("params", "hidden_size"), ("fitted", "config", "hidden_size"),
         ("fitted", "config", "n_embd"))
# edit of the decoded config.json (a str replaces the whole file) -> pattern of the ValueError
CONFIG_EDITS = {
    "not an object": (lambda c: [c], "must hold a JSON object, got list"),
    "missing key": (lambda c: {k: v for k, v in c.items() if k != "fitted"},
                    r"missing keys \['fitted'\]"),
    "unknown estimator": (lambda c: {**c, "estimator": "NoSuchModel"}, "'NoSuchModel'"),
    "wrong format_version": (lambda c: {**c, "format_version": 99}, "format_version 99"),
    "unknown param": (lambda c: {**c, "params": {**c["params"], "bogus": 1}}, r"\['bogus'\]"),
    "missing param": (lambda c: {**c, "params": {k: v for k, v in c["params"].items()
                                                 if k != "lr"}}, r"\['lr'\]"),
    "negative lr": (lambda c: _with(c, ("params", "lr"), -1), "'lr' parameter"),
    "zero hidden_size": (lambda c: _with(c, ("params", "hidden_size"), 0),
                         "'hidden_size' parameter"),
    "doubled size": (lambda c: _with(c, _first(c, *_SIZE), 2 * _field(c, _first(c, *_SIZE))),
                     rf"tensor '[^']+' has shape \(.*\) in the weights file but {CONFIG} implies "
                     r"\(.*\) \(its shape follows "
                     r"(\[.*'(embed_dim_?|hidden_size)'|the fitted state)"),
    # the shapes are computed on the meta device (or overflow there), never allocated
    "huge size": (lambda c: _with(c, _first(c, *_SIZE), HUGE),
                  rf"implies \(.*{HUGE}|overflow"),
    "longer vocabulary": (_longer_vocabulary,
                          r"tensor '[^']+' has shape \((\d+), .* implies \((?!\1,)\d+, "),
    "max_len -1 in the encoder": (
        lambda c: _with(c, ("fitted", "text_encoder", "params", "max_len"), -1), "max_len"),
    "missing fitted field": (lambda c: {**c, "fitted": dict(list(c["fitted"].items())[1:])},
                             "invalid fitted state"),
    "deep nesting": (lambda c: '{"fitted": ' + "[" * 10**5 + "]" * 10**5 + "}",
                     "nested deeper than"),
    "not JSON": (lambda c: "{not json", "corrupt"),
    "weights outside the folder": (lambda c: {**c, "weights": "../model/weights.safetensors"},
                                   "weights must name a file weights-<16 hex digits>"),
}


@pytest.mark.parametrize("edit", CONFIG_EDITS, ids=str)
def test_edited_config_is_refused(fitted, tmp_path, edit):
    est, _ = fitted
    change, match = CONFIG_EDITS[edit]
    path = est.save(tmp_path / "model")
    config = change(json.loads((path / CONFIG).read_text()))
    (path / CONFIG).write_text(config if isinstance(config, str) else json.dumps(config))
    with pytest.raises(ValueError, match=match):
        type(est).load(path)


def _first_float(tensors):
    return next(k for k in sorted(tensors) if tensors[k].is_floating_point())


def _nan_weights(weights, foreign_path):
    tensors = load_file(weights)
    name = _first_float(tensors)
    tensors[name] = torch.full_like(tensors[name], float("nan"))
    save_file(tensors, weights)
    return rf"tensor '{re.escape(name)}' in the weights file holds NaN"


def _other_dtype(weights, foreign_path):
    tensors = load_file(weights)
    name = _first_float(tensors)
    tensors[name] = tensors[name].to(torch.float16)
    save_file(tensors, weights)
    return rf"tensor '{re.escape(name)}' has dtype torch.float16"


def _truncated(weights, foreign_path):
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    return "corrupt"


def _foreign(weights, foreign_path):
    weights.write_bytes(_weights(foreign_path).read_bytes())
    return "another model|tensor 'embedding.weight' has shape"


@pytest.mark.parametrize("edit", [_nan_weights, _other_dtype, _truncated, _foreign],
                         ids=lambda f: f.__name__.strip("_"))
def test_edited_weights_are_refused(fitted, foreign, tmp_path, edit):
    est, _ = fitted
    path = est.save(tmp_path / "model")
    match = edit(_weights(path), foreign.save(tmp_path / "foreign"))
    with pytest.raises(ValueError, match=match):
        type(est).load(path)


@pytest.mark.parametrize("missing", ["config", "weights"])
def test_missing_file(foreign, tmp_path, missing):
    path = foreign.save(tmp_path / "model")
    file = path / CONFIG if missing == "config" else _weights(path)
    file.unlink()
    with pytest.raises(FileNotFoundError, match=re.escape(file.name)):
        EmbeddingBagClassifier.load(path)


def test_load_bounds_the_config_size(foreign, tmp_path, monkeypatch):
    path = foreign.save(tmp_path / "model")
    monkeypatch.setattr(model_folder, "MAX_CONFIG_BYTES", 100)
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        EmbeddingBagClassifier.load(path)


def test_load_requires_the_estimator_class(foreign, tmp_path):
    path = foreign.save(tmp_path / "model")
    with pytest.raises(ValueError, match="'EmbeddingBagClassifier', which is not a known "
                                         "AttentionTextClassifier"):
        AttentionTextClassifier.load(path)


@pytest.mark.parametrize("value, match", [
    ({"__ndarray__": ["a"], "dtype": "<U1000000000000"}, "not accepted"),
    ({"__ndarray__": [1], "dtype": "V8"}, "not accepted"),
    ({"__ndarray__": [1], "dtype": {"names": ["a"]}}, "not accepted"),
    ({"__tuple__": [1], "extra": 2}, "malformed __tuple__"),
    ({"__items__": [[1, 2, 3]]}, "pairs"),
])
def test_from_jsonable_refuses_malformed_values(value, match):
    with pytest.raises(ValueError, match=match):
        persistence.from_jsonable(value)


def test_jsonable_round_trip_keeps_types():
    value = {"a": np.array([[1, 2]], dtype=np.int32), "b": (1, "x"), 3: np.float32(0.5),
             "__tuple__": [1], "c": np.array(["x", "yz"]), "d": np.array([1, "a"], dtype=object)}
    back = persistence.from_jsonable(json.loads(json.dumps(persistence.to_jsonable(value))))
    assert back.keys() == value.keys() and back["b"] == (1, "x") and back[3] == 0.5
    assert back["__tuple__"] == [1]
    for key in ("a", "c", "d"):
        assert back[key].dtype == value[key].dtype
        np.testing.assert_array_equal(back[key], value[key])
