"""One vision estimator per network: models saved or pickled by the former three-in-one
``BcosViTClassifier`` load as the class that holds their network now (a B-cos v2 or
B-cosified ViT as :class:`BcosSimpleViTClassifier`, the holistic ViT as
:class:`BcosViTClassifier` with ``warmup="auto"`` read as 0.0), with identical predictions; a
refused checkpoint leaves nothing half-built."""
import copyreg
import json
import pickle
import shutil

import numpy as np
import pytest
import torch

from interpretable import BcosSimpleViTClassifier, BcosViTClassifier
from interpretable.estimators.core.model_folder import CONFIG_FILE
from interpretable.estimators.core.persistence import to_jsonable
from interpretable.estimators.core.state import estimator_state
from interpretable.nn.bcos.zoo import to_bcos_state_dict

#: the parameters of the former BcosViTClassifier.__init__, in its order (the holistic
#: network's, then the v2 network's, then training's)
OLD_PARAMS = (
    "patch_size", "embed_dim", "depth", "num_heads", "mlp_ratio", "stem_channels",
    "attention_prior", "b", "max_out", "scale_factor", "output_scale", "logit_bias",
    "stem_stride", "architecture", "pretrained", "finetune", "image_size", "zoom_out",
    "zoom_out_probability", "lr", "lr_decay_at", "warmup", "max_epochs", "batch_size",
    "optimizer", "weight_decay", "device", "random_state", "verbose", "class_weight",
    "callbacks", "validation_fraction", "early_stopping", "n_iter_no_change", "warm_start",
    "precision", "inference_precision", "accelerator")
#: the former defaults of the parameters neither class has kept as they were
OLD_DEFAULTS = {"architecture": None, "pretrained": None, "finetune": "all", "warmup": "auto"}
#: the old module of both classes (redirected by interpretable._compat)
OLD_MODULE = "interpretable.estimators.vision.estimators"

TINY = dict(dim=8, depth=1, heads=2, mlp_dim=16, patch_size=8)
HOLISTIC = dict(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,))


def _data(n=8, seed=0):
    X = np.random.default_rng(seed).random((n, 16, 16, 3), dtype=np.float32)
    return X, np.arange(n) % 2


@pytest.fixture(scope="module")
def v2():
    return BcosSimpleViTClassifier(TINY, max_epochs=1, random_state=0, device="cpu").fit(*_data())


@pytest.fixture(scope="module")
def holistic():
    return BcosViTClassifier(**HOLISTIC, max_epochs=1, random_state=0,
                             device="cpu").fit(*_data())


def _old_params(estimator) -> dict:
    """``estimator``'s parameters as the former BcosViTClassifier held them: every one of
    :data:`OLD_PARAMS`, those this class lacks at their former defaults."""
    holistic_defaults = BcosViTClassifier().get_params()
    params = {**holistic_defaults, **OLD_DEFAULTS, **estimator.get_params(deep=False)}
    if isinstance(estimator, BcosViTClassifier) and estimator.warmup == 0.0:
        params["warmup"] = "auto"  # the former default, no warm-up without pretrained
    assert set(params) == set(OLD_PARAMS)
    return {k: params[k] for k in OLD_PARAMS}


def _old_fitted(estimator) -> dict:
    fitted = estimator._get_fitted_state()
    return {**fitted, "architecture_": fitted.get("architecture_")}  # None: the holistic ViT


def _as_old_folder(estimator, path):
    """Save ``estimator`` and rewrite its config.json the way the former class wrote it."""
    estimator.save(path)
    config_file = path / CONFIG_FILE
    config = json.loads(config_file.read_text())
    params = {k: v for k, v in _old_params(estimator).items()
              if k not in config["dropped_params"]}  # those JSON cannot hold (a Path)
    config.update(estimator="BcosViTClassifier", params=to_jsonable(params),
                  fitted=to_jsonable(_old_fitted(estimator)))
    config_file.write_text(json.dumps(config, indent=1))
    return path


class _OldPickle:
    """Pickles as the former class did: its module path, its name and its state."""

    def __init__(self, state):
        self.state = state

    def __reduce__(self):
        return copyreg.__newobj__, (BcosViTClassifier,), self.state


def _old_pickle(estimator) -> bytes:
    state = estimator_state(estimator)
    old = _old_params(estimator)
    state.update(estimator="BcosViTClassifier", params=old)
    if "fitted" in state:
        state.update(fitted=_old_fitted(estimator), fitted_params={
            **old, **{k: v for k, v in estimator.fitted_params_.items() if k != "warmup"}})
    data = pickle.dumps(_OldPickle(state), protocol=0)  # text: the class path is a line
    new_path = f"c{BcosViTClassifier.__module__}\nBcosViTClassifier\n".encode()
    assert data.count(new_path) == 1
    return data.replace(new_path, f"c{OLD_MODULE}\nBcosViTClassifier\n".encode())


def _same_model(loaded, estimator):
    X = _data(6, seed=1)[0]
    np.testing.assert_array_equal(loaded.decision_function(X), estimator.decision_function(X))
    np.testing.assert_array_equal(loaded.predict(X), estimator.predict(X))
    np.testing.assert_array_equal(loaded.explain(X[:2]).values, estimator.explain(X[:2]).values)


# ---------------------------------------------------------------------------- saved folders
@pytest.mark.parametrize("load_with", [BcosViTClassifier, BcosSimpleViTClassifier])
def test_an_old_v2_folder_loads_as_bcos_simple_vit(v2, tmp_path, load_with):
    path = _as_old_folder(v2, tmp_path / "old")
    config = json.loads((path / CONFIG_FILE).read_text())
    assert config["estimator"] == "BcosViTClassifier" and "embed_dim" in config["params"]
    loaded = load_with.load(path, device="cpu")
    assert type(loaded) is BcosSimpleViTClassifier
    assert loaded.get_params() == v2.get_params()  # warmup "auto" kept: it means 0.1 or 0
    assert loaded.architecture_ == v2.architecture_
    _same_model(loaded, v2)
    resaved = loaded.save(tmp_path / "new")  # saved again under its new name
    assert json.loads((resaved / CONFIG_FILE).read_text())["estimator"] == \
        "BcosSimpleViTClassifier"


def test_an_old_fine_tuned_folder_loads_as_bcos_simple_vit(v2, tmp_path):
    """Decided by the fitted network too: a model fine-tuned from a checkpoint path, which
    config.json cannot hold (``pretrained`` and ``architecture`` both None at load)."""
    checkpoint = tmp_path / "tiny.pth"
    torch.save(to_bcos_state_dict(v2.module_), checkpoint)
    tuned = BcosSimpleViTClassifier(TINY, pretrained=checkpoint, finetune="head", image_size=None,
                                    max_epochs=1, random_state=0, device="cpu").fit(*_data())
    path = _as_old_folder(tuned, tmp_path / "old")
    config = json.loads((path / CONFIG_FILE).read_text())
    assert "pretrained" in config["dropped_params"]
    config["params"]["architecture"] = None
    (path / CONFIG_FILE).write_text(json.dumps(config))
    loaded = BcosViTClassifier.load(path, device="cpu")
    assert type(loaded) is BcosSimpleViTClassifier and loaded.finetune == "head"
    assert loaded.architecture is None and loaded.pretrained is None
    _same_model(loaded, tuned)


def test_an_old_holistic_folder_loads_as_bcos_vit_without_warmup(holistic, tmp_path):
    path = _as_old_folder(holistic, tmp_path / "old")
    config = json.loads((path / CONFIG_FILE).read_text())
    assert config["params"]["warmup"] == "auto" and config["params"]["architecture"] is None
    assert config["fitted"]["architecture_"] is None
    loaded = BcosViTClassifier.load(path, device="cpu")
    assert type(loaded) is BcosViTClassifier
    assert loaded.warmup == 0.0 and loaded.get_params() == holistic.get_params()
    assert not hasattr(loaded, "architecture_")
    _same_model(loaded, holistic)
    with pytest.raises(ValueError, match="not a known BcosSimpleViTClassifier"):
        BcosSimpleViTClassifier.load(path, device="cpu")


# ---------------------------------------------------------------------------- pickles
def test_an_old_v2_pickle_loads_as_bcos_simple_vit(v2):
    data = _old_pickle(v2)
    assert OLD_MODULE.encode() in data and b"embed_dim" in data
    loaded = pickle.loads(data)
    assert type(loaded) is BcosSimpleViTClassifier
    assert loaded.get_params() == v2.get_params()
    assert loaded.fitted_params_ == v2.fitted_params_
    assert loaded.architecture_ == v2.architecture_
    _same_model(loaded, v2)
    again = pickle.loads(pickle.dumps(loaded))  # pickled again under its new name
    assert type(again) is BcosSimpleViTClassifier
    assert estimator_state(again)["estimator"] == "BcosSimpleViTClassifier"


def test_an_old_holistic_pickle_loads_as_bcos_vit_without_warmup(holistic):
    loaded = pickle.loads(_old_pickle(holistic))
    assert type(loaded) is BcosViTClassifier
    assert loaded.warmup == 0.0 and loaded.get_params() == holistic.get_params()
    assert loaded.fitted_params_ == holistic.fitted_params_
    _same_model(loaded, holistic)


def test_an_old_unfitted_pickle_loads_as_the_class_of_its_network():
    for estimator in (BcosSimpleViTClassifier("vitc_ti_patch1_14", max_epochs=3),
                      BcosViTClassifier(**HOLISTIC, max_epochs=3)):
        loaded = pickle.loads(_old_pickle(estimator))
        assert type(loaded) is type(estimator)
        assert loaded.get_params() == estimator.get_params()


# ---------------------------------------------------------------------------- refusals
def _bad_checkpoints(v2, folder):
    """Checkpoints that are refused, each a different way (file, keys, shapes, code)."""
    truncated = folder / "truncated.pth"
    good = folder / "good.pth"
    torch.save(to_bcos_state_dict(v2.module_), good)
    truncated.write_bytes(good.read_bytes()[:500])
    state = torch.load(good)
    mis_shaped = folder / "mis_shaped.pth"
    torch.save({k: torch.zeros(3, *v.shape[1:]) if v.dim() else v for k, v in state.items()},
               mis_shaped)
    missing = folder / "missing.pth"
    torch.save(dict(list(state.items())[1:]), missing)
    hostile = folder / "hostile.pth"
    torch.save({"0.x": _Exploit(folder / "pwned")}, hostile)
    text = folder / "notes.pth"
    text.write_text("not a checkpoint")
    return [truncated, mis_shaped, missing, hostile, text]


class _Exploit:
    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return shutil.copyfile, (__file__, self.marker)


def test_a_refused_checkpoint_leaves_the_fitted_model_as_it_was(v2, tmp_path):
    clf = pickle.loads(pickle.dumps(v2))
    X = _data(6, seed=1)[0]
    before = {k: v.clone() for k, v in clf.module_.state_dict().items()}
    module, architecture, history = clf.module_, dict(clf.architecture_), list(clf.history_)
    expected, explained = clf.decision_function(X), clf.explain(X[:2]).values
    for bad in _bad_checkpoints(v2, tmp_path):
        for finetune in ("all", "head"):
            with pytest.raises(ValueError):
                clf.set_params(pretrained=bad, finetune=finetune).fit(*_data())
            with pytest.raises(ValueError):
                BcosSimpleViTClassifier.from_pretrained(bad, architecture=TINY, classes=[0, 1],
                                                        image_size=16, device="cpu")
            assert clf.module_ is module and clf.architecture_ == architecture
            assert clf.history_ == history and clf.fitted_params_["pretrained"] is None
            assert all(torch.equal(v, before[k]) for k, v in clf.module_.state_dict().items())
            np.testing.assert_array_equal(clf.decision_function(X), expected)
            np.testing.assert_array_equal(clf.explain(X[:2]).values, explained)
    assert not (tmp_path / "pwned").exists()
    clf.set_params(pretrained=None, finetune="all")
    assert clf.fit(*_data()).architecture_ == architecture  # usable for a new fit, too


def test_bcos_simple_vit_needs_a_network_and_refuses_the_holistic_one():
    X, y = _data()
    with pytest.raises(ValueError, match=r"needs architecture= .* or pretrained="):
        BcosSimpleViTClassifier().fit(X, y)
    with pytest.raises(ValueError, match="the network of BcosViTClassifier"):
        BcosSimpleViTClassifier("holistic").fit(X, y)
    with pytest.raises(TypeError, match="architecture"):
        BcosViTClassifier(architecture=TINY)
    with pytest.raises(ValueError, match="warmup"):
        BcosViTClassifier(**HOLISTIC, warmup="auto").fit(X, y)
