"""BcosSimpleViTClassifier(pretrained=<the state dict of a real torchvision or timm ViT>): only
the number of heads is given (every other size is read off the shapes), and every refusal says what
the checkpoint is (learned positions, a class token, the keys by name), never the B-cos v2
release models (``simple_vit_*``, ``vitc_*``, their sin-cos positions)."""
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from interpretable import BcosSimpleViTClassifier

sys.path.insert(0, str(Path(__file__).parent))
from _real_vision import real_vision, timm_vit, torchvision_vit  # noqa: E402

FIT = dict(architecture={"heads": 2}, max_epochs=1, batch_size=4, random_state=0,
           device="cpu")
#: what an error about a conventional checkpoint must not speak of
ZOO = ("simple_vit", "vitc_", "sin-cos", "released")


def _save(model, path):
    torch.save(model.state_dict(), path)
    return path


def _data(n=6, side=32, seed=0):
    X = np.random.default_rng(seed).random((n, side, side, 3), dtype=np.float32)
    return X, np.arange(n) % 2


def _refused(match, **params):
    """The error of fitting with ``params``: a ValueError matching ``match``, not of the zoo."""
    with pytest.raises(ValueError, match=match) as error:
        BcosSimpleViTClassifier(**{**FIT, **params}).fit(*_data(4))
    assert not any(word in str(error.value) for word in ZOO), error.value
    return str(error.value)


@pytest.mark.parametrize("package", ["torchvision", "timm"])
def test_the_number_of_heads_is_enough(package, tmp_path):
    """Depth, width, MLP, patch, classes and image size come from the shapes; timm's width 30
    is no multiple of 4, which the learned positions do not need (the sin-cos ones do)."""
    if package == "torchvision":
        model, dim, heads, image_size = torchvision_vit(), 32, 2, None
    else:
        model, dim, heads, image_size = timm_vit(embed_dim=30, num_heads=3), 30, 3, 32
    path = _save(model, tmp_path / "vit.pth")
    X, y = _data()
    clf = BcosSimpleViTClassifier(**{**FIT, "architecture": {"heads": heads}},
                                  pretrained=path, image_size=image_size).fit(X, y)
    assert {k: clf.architecture_[k] for k in ("dim", "depth", "heads", "mlp_dim", "patch_size",
                                              "stem_channels", "image_size", "bcosified")} == \
        dict(dim=dim, depth=2, heads=heads, mlp_dim=2 * dim, patch_size=8, stem_channels=(),
             image_size=[32, 32], bcosified=True)
    assert clf.explain(X[:2], dtype="float64").completeness_error.max() <= 1e-9
    loaded = BcosSimpleViTClassifier.load(clf.save(tmp_path / "saved"), device="cpu")
    np.testing.assert_array_equal(loaded.decision_function(X), clf.decision_function(X))


def test_errors_say_what_the_checkpoint_is_and_a_refusal_keeps_the_earlier_fit(tmp_path):
    path = _save(torchvision_vit(), tmp_path / "tv.pth")
    message = _refused(r"state dict of a conventional torchvision VisionTransformer \(learned "
                       r"positions, a class token\), which does not record its number of "
                       r"attention heads: pass architecture=\{'heads': h\}", pretrained=path,
                       architecture=None)
    assert message.endswith("not architecture=None.")
    with pytest.raises(ValueError, match=r"conventional torchvision VisionTransformer .* pass "
                                         r"architecture=\{'heads': h\} .*, not "
                                         r"architecture='simple_vit_ti_patch16_224'\.$"):
        BcosSimpleViTClassifier(**{**FIT, "architecture": "simple_vit_ti_patch16_224"},
                                pretrained=path).fit(*_data(4))  # the name is the user's word
    _refused(r"heads=3 must divide dim=32 \(the token width\)", pretrained=path,
             architecture={"heads": 3})
    _refused(r"no convolution stem; remove stem_channels", pretrained=path,
             architecture={"heads": 2, "stem_channels": (8,)})
    _refused(r"torchvision state dict does not fit the architecture: mis-shaped: .*"
             r"encoder\.layers\.encoder_layer_0\.mlp\.0\.weight \(64, 32\) "
             r"\(expected \(128, 32\)\)",
             pretrained=path, architecture={"heads": 2, "mlp_dim": 128}, image_size=32)
    state = torch.load(path)
    torch.save({k: v for k, v in state.items() if k != "encoder.ln.bias"}, tmp_path / "m.pth")
    _refused(r"missing keys: encoder\.ln\.bias", pretrained=tmp_path / "m.pth", image_size=32)
    torch.save({**state, "encoder.extra": torch.zeros(2)}, tmp_path / "x.pth")
    _refused(r"unexpected keys: encoder\.extra", pretrained=tmp_path / "x.pth", image_size=32)
    _refused(r"has a pre-logits layer \(representation_size\): only the plain ViT",
             pretrained=_save(real_vision()[0].models.VisionTransformer(
                 image_size=32, patch_size=8, num_layers=1, num_heads=2, hidden_dim=32,
                 mlp_dim=64, representation_size=8), tmp_path / "pre.pth"))
    _refused(r"timm VisionTransformer has register tokens \(reg_tokens\)",
             pretrained=_save(timm_vit(reg_tokens=1), tmp_path / "reg.pth"))
    with pytest.raises(ValueError, match=r"must be fine-tuned to become B-cos: .*"
                                         r"architecture=\{'heads': h\}"):
        BcosSimpleViTClassifier.from_pretrained(path)

    # 28-px images: the learned positions fix the size, image_size="auto" crops to 224
    small = _save(torchvision_vit(image_size=28, patch_size=7), tmp_path / "small.pth")
    clf = BcosSimpleViTClassifier(**FIT, pretrained=small, image_size=None).fit(*_data(side=28))
    before = clf.decision_function(_data(side=28)[0])
    clf.set_params(image_size="auto")
    with pytest.raises(ValueError) as error:
        clf.fit(*_data(4, side=28))
    assert str(error.value) == (
        f"pretrained={small!r} has learned positions (encoder.pos_embedding) for images of "
        "28 x 28 pixels, not (224, 224): pass image_size=28 (image_size defaults to 'auto', "
        "which crops to 224 with pretrained weights), or images of 28 x 28 pixels with "
        "image_size=None.")
    # the refusal left the earlier fit as it was
    assert clf.image_shape_ == (28, 28) and clf.crop_size_ is None
    np.testing.assert_array_equal(clf.decision_function(_data(side=28)[0]), before)
