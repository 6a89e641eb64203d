"""One vision estimator per network: :class:`BcosSimpleViTClassifier` holds the B-cos v2 and
B-cosified ViTs, :class:`BcosViTClassifier` the holistic one; each refuses the other's
parameters, and a refused checkpoint leaves nothing half-built."""
import pickle
import shutil

import numpy as np
import pytest
import torch

from interpretable import BcosSimpleViTClassifier, BcosViTClassifier
from interpretable.nn.bcos._zoo import to_bcos_state_dict

TINY = dict(dim=8, depth=1, heads=2, mlp_dim=16, patch_size=8)
HOLISTIC = dict(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,))


def _data(n=8, seed=0):
    X = np.random.default_rng(seed).random((n, 16, 16, 3), dtype=np.float32)
    return X, np.arange(n) % 2


@pytest.fixture(scope="module")
def v2():
    return BcosSimpleViTClassifier(TINY, max_epochs=1, random_state=0, device="cpu").fit(*_data())


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
