"""Vision estimators at their defaults for every value of each categorical option, every
post-hoc method giving a map on class-token ViTs (GradCAM included), and captions that claim
exactness only for exact methods."""
import matplotlib
import numpy as np
import pytest
import torch

from interpretable import (
    BcosResNetClassifier,
    BcosSimpleViTClassifier,
    BcosViTClassifier,
    ViTClassifier,
)
from interpretable.nn._library_vit import CHECKPOINT_LAYOUTS
from interpretable.utils._params import StrOptions

matplotlib.use("Agg")

#: categorical values that need another parameter set (not a default-only fit)
NEEDS_MORE = {("finetune", "head"): "trains part of pretrained= weights"}
#: what an estimator needs besides its defaults (BcosSimpleViTClassifier has no default
#: network: a tiny one)
REQUIRED = {BcosSimpleViTClassifier: dict(architecture=dict(dim=8, depth=1, heads=2, mlp_dim=8,
                                                            patch_size=4)),
            BcosResNetClassifier: dict(architecture=dict(block="basic", layers=[1, 1, 1, 1],
                                                         width=4))}
#: image sides other than 8: the ResNet's stem and pooling halve the side twice, so an 8-pixel
#: image is one cell from the second stage on, where the 3 × 3 patches are mostly zero
#: padding; the first gradient step of a bfloat16 fit then depends on rounding (it diverged in
#: some processes and not in others)
SIDES = {BcosResNetClassifier: 32}


def _data(n=8, side=8, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.random((n, side, side, 3), dtype=np.float32)
    y = np.arange(n) % 2
    X[y == 0, : side // 2, :, 0] = 1.0  # class 0 shows in the red upper half
    return X, y


def _categorical(cls):
    """(parameter, value) of every string option of ``cls`` but the 'auto' defaults."""
    for name, constraints in cls._parameter_constraints.items():
        for constraint in constraints:
            if isinstance(constraint, StrOptions):
                for value in sorted(constraint.options - {"auto"}):
                    if (name, value) not in NEEDS_MORE:
                        yield name, value


CASES = [(cls, name, value)
         for cls in (ViTClassifier, BcosViTClassifier, BcosSimpleViTClassifier,
                     BcosResNetClassifier)
         for name, value in _categorical(cls)]


@pytest.mark.parametrize("cls, name, value", CASES,
                         ids=[f"{c.__name__}-{n}={v}" for c, n, v in CASES])
def test_every_categorical_option_fits_at_the_defaults(cls, name, value):
    """Defaults that depend on an option (``stem_channels`` on ``layout``) resolve per value."""
    X, y = _data(side=SIDES.get(cls, 8))
    clf = cls(**REQUIRED.get(cls, {}), **{name: value}, max_epochs=1, device="cpu",
              random_state=0).fit(X, y)
    assert clf.predict(X[:2]).shape == (2,)


def test_the_categorical_options_are_the_expected_ones():
    found = {(cls.__name__, name) for cls, name, _ in CASES}
    assert {("ViTClassifier", "layout"), ("ViTClassifier", "optimizer"),
            ("BcosViTClassifier", "attention_prior"),
            ("BcosSimpleViTClassifier", "optimizer")} <= found


@pytest.fixture(scope="module", params=CHECKPOINT_LAYOUTS)
def class_token_vit(request):
    X, y = _data(n=16, side=16)
    clf = ViTClassifier(patch_size=4, embed_dim=16, depth=2, num_heads=2, layout=request.param,
                        max_epochs=3, device="cpu", random_state=0).fit(X, y)
    return clf, X


def test_every_post_hoc_method_gives_a_non_constant_map(class_token_vit):
    """GradCAM reads the last block's first LayerNorm: the final patch tokens get no gradient
    from a head on the class token (the maps were all 0)."""
    clf, X = class_token_vit
    for method in clf.explain_methods:
        values = clf.explain(X[:3], method=method).values
        assert np.isfinite(values).all() and np.ptp(values, axis=(1, 2)).min() > 0, method


def test_the_gradcam_layer_computes_the_logits(class_token_vit):
    clf, X = class_token_vit
    x = clf.encode(X[:3]).inputs["x"]
    normed, logits = clf.module_.last_norm_forward(x)
    assert normed.shape == (3, 17, 16) and normed.requires_grad
    torch.testing.assert_close(logits.detach(), clf.module_(x).detach())


@pytest.mark.parametrize("method", ["inherent", "integrated_gradients", "rollout",
                                    "final_attention", "gradcam", "gradsam",
                                    "input_x_gradient"])
def test_only_exact_methods_claim_exact_shares(method):
    X, y = _data()
    clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                            max_epochs=1, device="cpu", random_state=0).fit(X, y)
    explanation = clf.explain(X[:2], method=method)
    figure = explanation.plot()
    caption = figure._supxlabel.get_text()
    titles = [ax.get_title() for ax in figure.axes]
    claims_exact = "exact share" in caption
    assert claims_exact == (method == "inherent"), caption
    if method == "integrated_gradients":
        assert "approximate share" in caption and "completeness error" in caption
    if method in ("rollout", "final_attention"):
        assert "attention weights" in caption and "not shares of a logit" in caption
        assert not any(t.startswith("contributions to") for t in titles), titles
        assert "attention weights" in titles
    if method in ("gradcam", "gradsam", "input_x_gradient"):
        assert "relevance scores" in caption
        assert not any(t.startswith("contributions to") for t in titles), titles
