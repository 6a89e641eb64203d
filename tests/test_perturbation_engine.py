"""The batched occlusion / LIME / Kernel SHAP engine equals captum's own classes, called on
each sample alone with the same coalitions."""
import pytest
import torch
from captum.attr import FeatureAblation, KernelShap, Lime

from interpretable.attribution._perturbation import draw_coalitions, perturbation_attributions


class _Net(torch.nn.Module):
    """A small classifier of (B, T, E) inputs with a (B, T) mask argument whose tokens
    interact (no method is exact on it)."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.hidden = torch.nn.Linear(4, 8)
        self.out = torch.nn.Linear(8, 3)

    def forward(self, x, mask):
        # attention pooling: the tokens interact, so the coalitions drawn matter
        hidden = torch.tanh(self.hidden(x))
        weights = torch.softmax(hidden[..., 0].masked_fill(mask == 0, float("-inf")), 1)
        return self.out((weights[..., None] * hidden).sum(1)) * 4


def _captum(method, net, x, baseline, target, features, mask, n_samples, seed):
    """captum's class on one sample (x: (1, T, E)) drawing the engine's coalitions."""
    count = int(features.max()) + 1
    drawn = draw_coalitions(method, count, n_samples, seed).long()

    def coalitions(original, **kwargs):  # a generator function, as captum's sampler is
        yield from (row[None] for row in drawn)

    rows = iter(drawn)
    settings = {"n_samples": n_samples, "perturbations_per_eval": 7}
    if method == "lime":
        explainer = Lime(net, perturb_func=lambda original, **kw: next(rows)[None])
    elif method == "kernel_shap":
        explainer = KernelShap(net)  # captum's sampler is stored at construction: replace it
        explainer.perturb_func = coalitions
    else:
        explainer, settings = FeatureAblation(net), {"perturbations_per_eval": 3}
    return explainer.attribute(x, baselines=baseline, target=target,
                               additional_forward_args=(mask,),
                               feature_mask=features.expand_as(x), **settings)


@pytest.mark.parametrize("method", ["occlusion", "lime", "kernel_shap"])
def test_equals_captum_on_the_same_coalitions(method):
    net = _Net().eval()
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(3, 6, 4, generator=generator)
    baseline = torch.randn(3, 6, 4, generator=generator) * 0.1
    mask = torch.ones(3, 6)
    target = torch.tensor([0, 2, 1])
    # features: tokens 0-5 alone; sample 1 groups pairs; sample 2 keeps its last token
    features = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 0, 1, 1, 2, 2], [0, 1, 2, 3, 4, -1]])
    ours = perturbation_attributions(method, net, x, baseline, target, features[..., None],
                                     n_samples=40, random_state=3, additional_forward_args=(mask,),
                                     rows_per_pass=5)
    for i in range(3):
        f = features[i:i + 1, :, None]
        b = torch.where(f >= 0, baseline[i:i + 1], x[i:i + 1])  # never-replaced: unchanged
        reference = _captum(method, net, x[i:i + 1], b, target[i:i + 1], f.clamp(min=0),
                            mask[i:i + 1], 40, 3)
        per_feature = reference[0, :, 0]
        for j in range(int(features[i].max()) + 1):
            first = int((features[i] == j).nonzero()[0])
            assert ours[i, j].item() == pytest.approx(per_feature[first].item(), abs=2e-5)


def test_kernel_shap_is_exact_on_a_linear_model_and_one_feature_is_occlusion():
    weights = torch.tensor([[1.0, -2.0, 3.0, 0.5]])
    forward = lambda x: x @ weights.T  # noqa: E731
    x = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 1.0]])
    features = torch.tensor([[0, 1, 2, 3], [0, 0, 0, 0]])
    shap = perturbation_attributions("kernel_shap", forward, x, torch.zeros_like(x),
                                     torch.tensor([0, 0]), features, n_samples=64)
    assert torch.allclose(shap[0], torch.tensor([1.0, -4.0, 9.0, 2.0], dtype=torch.float64),
                          atol=1e-4)
    assert shap[1, 0].item() == pytest.approx(2.5)
    assert torch.all(shap[1, 1:] == 0)


def test_coalitions_do_not_depend_on_the_batch():
    forward = lambda x: torch.stack([x.sum(1), x.prod(1)], 1)  # noqa: E731
    x = torch.rand(4, 5, generator=torch.Generator().manual_seed(0))
    features = torch.arange(5).expand(4, 5)
    together = perturbation_attributions("lime", forward, x, torch.zeros_like(x),
                                         torch.ones(4, dtype=torch.long), features,
                                         n_samples=30)
    alone = perturbation_attributions("lime", forward, x[2:3], torch.zeros_like(x[2:3]),
                                      torch.ones(1, dtype=torch.long), features[2:3],
                                      n_samples=30)
    assert torch.allclose(together[2], alone[0], atol=1e-6)


def test_kernel_shap_draws_the_shapley_kernel():
    rows = draw_coalitions("kernel_shap", 6, 20002, 0)[2:]
    sizes = rows.sum(1)
    assert sizes.min() >= 1 and sizes.max() <= 5
    kernel = torch.tensor([5 / (k * (6 - k)) for k in range(1, 6)])
    expected = kernel / kernel.sum()
    observed = torch.bincount(sizes, minlength=6)[1:].double() / len(rows)
    assert torch.allclose(observed, expected.double(), atol=0.01)
    # given its size, every coalition is equally likely: each feature kept as often
    assert torch.allclose(rows[sizes == 2].double().mean(0), torch.full((6,), 2 / 6,
                          dtype=torch.float64), atol=0.02)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_counts_are_checked(bad):
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        perturbation_attributions("lime", lambda x: x, torch.ones(1, 2), torch.zeros(1, 2),
                                  torch.tensor([0]), torch.tensor([[0, 1]]), n_samples=bad)
    with pytest.raises(ValueError, match="method='shap' is not supported"):
        perturbation_attributions("shap", lambda x: x, torch.ones(1, 2), torch.zeros(1, 2),
                                  torch.tensor([0]), torch.tensor([[0, 1]]))


def _tiny_vit():
    import numpy as np

    from interpretable import BcosViTClassifier

    X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
    clf = BcosViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, stem_channels=(4,),
                            max_epochs=1, random_state=0, device="cpu").fit(X, [0, 1] * 2)
    return clf, X


@pytest.mark.parametrize("method", ["occlusion", "lime", "kernel_shap"])
def test_image_patch_methods_equal_captum(method):
    """explain(method=...) on images: captum's Occlusion / Lime / KernelShap over the tiling
    patches (the same coalitions), from the encoded black image."""
    import numpy as np

    clf, X = _tiny_vit()
    options = {} if method == "occlusion" else {"n_samples": 24, "random_state": 5}
    explanation = clf.explain(X[:2], method=method, window=2, **options)
    model = clf.module_
    x = clf.encode(X[:2]).inputs["x"]
    black = clf.encode(np.zeros((1, 8, 8, 3), np.float32)).inputs["x"].expand_as(x)
    with torch.no_grad():
        target = model(x).argmax(1)
    if method == "occlusion":
        with torch.no_grad():
            reference = captum_occlusion(model, x, black, target)
    else:
        features = torch.arange(16).view(4, 4).repeat_interleave(2, 0).repeat_interleave(2, 1)
        reference = []
        for i in range(2):
            attr = _captum(method, lambda images, _: model(images), x[i:i + 1], black[i:i + 1],
                           target[i:i + 1], features[None, None], torch.ones(1), 24, 5)
            reference.append(attr[0, 0])
        reference = torch.stack(reference)
    np.testing.assert_allclose(explanation.values, reference.numpy(), atol=2e-5)
    assert np.ptp(explanation.values) > 0


def captum_occlusion(model, x, baseline, target):
    from captum.attr import Occlusion

    return Occlusion(model).attribute(x, sliding_window_shapes=(x.shape[1], 2, 2),
                                      strides=(x.shape[1], 2, 2), baselines=baseline,
                                      target=target).mean(1)


def test_image_patches_must_tile():
    clf, X = _tiny_vit()
    from interpretable.attribution import attribute_pixels

    x = clf.encode(X[:1]).inputs["x"]
    with pytest.raises(ValueError, match="method='lime' takes patches that tile the image: "
                                         "stride must be None or the window"):
        attribute_pixels(clf.module_, x, 0, "lime", window=4, stride=2)
    with pytest.raises(TypeError, match="unexpected option"):
        clf.explain(X[:1], method="lime", stride=2)
    with pytest.raises(ValueError, match="n_samples must be a positive integer"):
        clf.explain(X[:1], method="kernel_shap", n_samples=0)
    with pytest.raises(ValueError, match="random_state must be None or a non-negative"):
        clf.explain(X[:1], method="lime", random_state=-1)


def test_bf16_runs_the_perturbation_forwards_only():
    """inference_precision="bf16": occlusion / LIME / Kernel SHAP run their forward passes in
    the predictions' precision (close to float32 in rank), the gradient methods do not (equal
    to the float32 estimator's)."""
    import copy
    import warnings

    import numpy as np
    from scipy.stats import spearmanr

    from interpretable import AttentionTextClassifier

    texts = ["a good movie with a great plot", "bad film", "awful acting and a dull plot",
             "the plot was great and the acting good"]
    clf = AttentionTextClassifier(embed_dim=16, hidden_size=16, max_epochs=3,
                                  random_state=0).fit(texts, [1, 0, 0, 1])
    low = copy.deepcopy(clf).set_params(inference_precision="bf16")  # the same weights
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # no native bfloat16 here: float32, with a warning
        for method in ("occlusion", "kernel_shap"):
            full = clf.explain(texts, method=method)
            half = low.explain(texts, method=method)
            for a, b in zip(full.values, half.values, strict=True):
                assert spearmanr(a, b).statistic > 0.8, method
        full = clf.explain(texts, method="integrated_gradients", n_steps=8)
        half = low.explain(texts, method="integrated_gradients", n_steps=8)
    for a, b in zip(full.values, half.values, strict=True):
        np.testing.assert_array_equal(a, b)
