"""captum's remaining attribution methods: SmoothGrad and the noise tunnel over
integrated gradients, GradientSHAP, DeepLIFT where it is exact (refused by name elsewhere),
layer integrated gradients and gradient × activation (``layer=``), on the text classifiers,
the BERT family (piece and word level) and the vision transformers.

Each method equals captum called directly on the same forward function and inputs, with the
same draws (captum's own random draws replaced by the explainer's: its noise, interpolation
points and baseline choices); explanations do not depend on the batching; the complete
methods are complete."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from captum.attr import (
    DeepLift,
    GradientShap,
    IntegratedGradients,
    LayerIntegratedGradients,
    NoiseTunnel,
    Saliency,
)

from interpretable import (
    AttentionTextClassifier,
    BcosTextClassifier,
    BertTextClassifier,
    EmbeddingBagClassifier,
    ViTClassifier,
)
from interpretable.attribution._noise import draw
from interpretable.estimators.methods import get_explainer
from interpretable.nn._embedding_bag import MeanEmbeddingClassifier
from interpretable.nn._losses import logits_of

TINY_BERT = {"vocab_size": 30522, "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
             "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
             "attention_probs_dropout_prob": 0.1}
TEXTS = ["a good movie with a great plot", "bad film", "awful awful acting and a dull plot",
         "good", "the plot was great and the acting good", "a dull film"]
LABELS = ["pos", "neg", "neg", "pos", "pos", "neg"]
WORDS = ["unbelievably good film", "the plot was dull", "great", "a boring, awful movie"]
NEW_TEXT_METHODS = ("smoothgrad", "smoothgrad_integrated_gradients", "gradient_shap")


@pytest.fixture(scope="module")
def bag():
    return EmbeddingBagClassifier(embed_dim=8, max_epochs=5, random_state=0).fit(TEXTS, LABELS)


@pytest.fixture(scope="module")
def lstm():
    return AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
                                   random_state=0).fit(TEXTS, LABELS)


@pytest.fixture(scope="module")
def bert():
    return BertTextClassifier(
        checkpoint=TINY_BERT, max_length=24, lr=3e-3, max_epochs=2, batch_size=8,
        random_state=0, device="cpu").fit(WORDS * 4, ["pos", "neg", "pos", "neg"] * 4)


@pytest.fixture(scope="module")
def bcos():
    return BcosTextClassifier(
        checkpoint=TINY_BERT, max_length=24, max_epochs=1, batch_size=8, random_state=0,
        device="cpu").fit(WORDS * 2, ["pos", "neg", "pos", "neg"] * 2)


@pytest.fixture(scope="module")
def vit():
    X = np.random.default_rng(0).random((4, 8, 8, 3), dtype=np.float32)
    clf = ViTClassifier(patch_size=4, embed_dim=8, depth=1, num_heads=2, max_epochs=1,
                        random_state=0)
    return clf.fit(X, [0, 1, 2, 0]), X


# ---------------------------------------------------------------------------- helpers
def _one_batch(clf, X):
    """The encoded ``X`` as one batch, in input order."""
    rows, batch = next(clf.iter_batches(clf.encode(X).inputs, batch_size=len(X)))
    assert rows == slice(0, len(X))
    return batch


def _embeddings_forward(clf, batch):
    """What the text explainers attribute: ``(embedded, *batch.values()) -> logits``."""
    keys = list(batch)

    def forward(embedded, *args):
        return logits_of(clf.forward_batch(dict(zip(keys, args, strict=True)), embedded=embedded))

    return forward


def _captum_inputs(clf, X, target):
    batch = _one_batch(clf, X)
    embedded = clf.embed(batch).detach()
    t = torch.tensor([list(clf.classes_).index(target)] * len(X))
    real = torch.arange(embedded.shape[1])[None] < batch["lengths"][:, None]
    return batch, embedded, t, real


def _inject_noise(monkeypatch, noise):
    """captum's noise tunnel adds ``noise (B, n, ...)`` instead of drawing its own."""
    if not hasattr(NoiseTunnel, "_add_noise_to_input"):
        pytest.skip("this captum draws its noise inside NoiseTunnel.attribute")

    def add(input, stdev, nt_samples_partition):
        assert nt_samples_partition == noise.shape[1]
        return input.repeat_interleave(nt_samples_partition, dim=0) + \
            noise.flatten(0, 1).to(input)

    monkeypatch.setattr(NoiseTunnel, "_add_noise_to_input", staticmethod(add))


def _inject_gradient_shap_draws(monkeypatch, draws):
    """captum's GradientShap takes its interpolation points and baseline choices from
    ``draws`` (numpy's global generator otherwise)."""
    import captum._utils.common as common
    import captum.attr._core.gradient_shap as gradient_shap

    alphas = draws.alphas.flatten().double().numpy()
    monkeypatch.setattr(gradient_shap.np.random, "uniform",
                        lambda low, high, size: alphas[:size].copy())
    picks = draws.picks.flatten().tolist()
    monkeypatch.setattr(common.np.random, "choice", lambda n, size: np.asarray(picks[:size]))


def _rows(values, lengths=None):
    """Explanation values (list of per-sample arrays) as a zero-padded (n, T) array."""
    width = max(len(v) for v in values)
    out = np.zeros((len(values), width))
    for i, v in enumerate(values):
        out[i, :len(v)] = v
    return out


def _close(values, expected, atol=1e-6):
    if isinstance(expected, torch.Tensor):
        expected = expected.detach().numpy()
    expected = np.asarray(expected, dtype=np.float64)
    np.testing.assert_allclose(_rows(values), expected[:, :_rows(values).shape[1]], atol=atol,
                               rtol=0)


# ---------------------------------------------------------------------------- SmoothGrad
@pytest.mark.parametrize("nt_type", ["smoothgrad", "smoothgrad_sq", "vargrad"])
@pytest.mark.parametrize("model", ["bag", "bert"])
def test_smoothgrad_equals_captum_noise_tunnel_over_saliency(model, nt_type, request,
                                                            monkeypatch):
    clf = request.getfixturevalue(model)
    X = TEXTS if model == "bag" else WORDS
    exp = clf.explain(X, target="pos", method="smoothgrad", nt_type=nt_type, nt_samples=6,
                      stdevs=0.3, random_state=5)
    batch, embedded, t, real = _captum_inputs(clf, X, "pos")
    noise = draw(len(X), 6, tuple(embedded.shape[1:]), stdevs=0.3, random_state=5).noise
    _inject_noise(monkeypatch, noise)
    grads = NoiseTunnel(Saliency(_embeddings_forward(clf, batch))).attribute(
        embedded, nt_type=nt_type, nt_samples=6, stdevs=0.3, target=t, abs=False,
        additional_forward_args=tuple(batch.values()))
    _close(exp.values, (grads.norm(dim=-1) * real))
    assert exp.bias is None and exp.logit is None


def test_smoothgrad_integrated_gradients_equal_captum_noise_tunnel(bert, monkeypatch):
    exp = bert.explain(WORDS, target="neg", method="smoothgrad_integrated_gradients",
                       n_steps=8, nt_samples=4, stdevs=0.05, baseline="pad")
    batch, embedded, t, real = _captum_inputs(bert, WORDS, "neg")
    explainer = get_explainer(bert, "smoothgrad_integrated_gradients")
    baseline = explainer.baseline_embedding(bert, batch, embedded, "pad")
    noise = draw(len(WORDS), 4, tuple(embedded.shape[1:]), stdevs=0.05).noise
    _inject_noise(monkeypatch, noise)
    attr = NoiseTunnel(IntegratedGradients(_embeddings_forward(bert, batch))).attribute(
        embedded, nt_samples=4, stdevs=0.05, baselines=baseline, target=t, n_steps=8,
        additional_forward_args=tuple(batch.values()))
    _close(exp.values, (attr.sum(-1) * real))


def test_without_noise_the_tunnel_is_the_method_it_wraps(bert):
    X = WORDS[:2]
    for tunnelled, plain, options in [
            ("smoothgrad", "gradient", {}),
            ("smoothgrad_integrated_gradients", "integrated_gradients", {"n_steps": 8})]:
        a = bert.explain(X, method=tunnelled, stdevs=0.0, nt_samples=2, **options)
        b = bert.explain(X, method=plain, **options)
        for u, v in zip(a.values, b.values, strict=True):
            np.testing.assert_allclose(u, v, atol=1e-6)


def test_smoothgrad_default_noise_is_a_share_of_each_texts_spread(bag):
    """stdevs=None: 15 % of the spread of the text's real token embeddings, whatever the other
    texts of its batch."""
    from interpretable.attribution._tokens import NOISE_LEVEL

    X = TEXTS[:2]
    embedded = [bag.embed(_one_batch(bag, [x]))[0].detach() for x in X]
    spread = [float(e.max() - e.min()) for e in embedded]
    default = bag.explain(X, method="smoothgrad")
    for i, x in enumerate(X):
        explicit = bag.explain([x], method="smoothgrad", stdevs=NOISE_LEVEL * spread[i])
        np.testing.assert_allclose(default.values[i], explicit.values[0], rtol=1e-5)


# ---------------------------------------------------------------------------- GradientSHAP
@pytest.mark.parametrize("model", ["bag", "bert"])
def test_gradient_shap_equals_captum(model, request, monkeypatch):
    clf = request.getfixturevalue(model)
    X = TEXTS if model == "bag" else WORDS
    exp = clf.explain(X, target="pos", method="gradient_shap", n_samples=7, stdevs=0.1,
                      random_state=2)
    batch, embedded, t, real = _captum_inputs(clf, X, "pos")
    draws = draw(len(X), 7, tuple(embedded.shape[1:]), stdevs=0.1, random_state=2)
    _inject_noise(monkeypatch, draws.noise)
    _inject_gradient_shap_draws(monkeypatch, draws)
    attr = GradientShap(_embeddings_forward(clf, batch)).attribute(
        embedded, baselines=torch.zeros_like(embedded[:1]), n_samples=7, stdevs=0.1, target=t,
        additional_forward_args=tuple(batch.values()))
    _close(exp.values, (attr.sum(-1) * real))
    with torch.no_grad():  # the bias: the baseline's logit
        zero = _embeddings_forward(clf, batch)(torch.zeros_like(embedded), *batch.values())
    np.testing.assert_allclose(exp.bias, zero[:, t[0]].numpy(), atol=1e-6)


def test_gradient_shap_draws_from_a_distribution_of_baselines(bert, monkeypatch):
    """baseline=("zeros", "pad"): every draw picks one of the text's two baselines, as
    captum's GradientShap draws from its baseline distribution; the bias is their mean
    logit."""
    text = WORDS[:1]
    exp = bert.explain(text, target="pos", method="gradient_shap", n_samples=8,
                       baseline=("zeros", "pad"))
    batch, embedded, t, real = _captum_inputs(bert, text, "pos")
    explainer = get_explainer(bert, "gradient_shap")
    baselines = explainer.baseline_embedding(bert, batch, embedded, ("zeros", "pad"))[0]
    draws = draw(1, 8, tuple(embedded.shape[1:]), n_baselines=2)
    assert 0 < int(draws.picks.sum()) < 8  # both baselines drawn
    _inject_noise(monkeypatch, draws.noise)
    _inject_gradient_shap_draws(monkeypatch, draws)
    forward = _embeddings_forward(bert, batch)
    attr = GradientShap(forward).attribute(
        embedded, baselines=baselines, n_samples=8, target=t,
        additional_forward_args=tuple(batch.values()))
    _close(exp.values, (attr.sum(-1) * real))
    with torch.no_grad():
        logits = forward(baselines, *(v.expand(2, *v.shape[1:]) for v in batch.values()))
    np.testing.assert_allclose(exp.bias, [float(logits[:, t[0]].mean())], atol=1e-6)


def test_gradient_shap_is_complete(bag, bert):
    """Exact on the linear mean-embedding model (every draw's attributions sum to
    f(x) - f(b)); on BERT in expectation: close with enough draws, at both levels."""
    assert bag.explain(TEXTS, method="gradient_shap", n_samples=3).completeness_error.max() \
        < 1e-5
    for level in ("piece", "word"):
        exp = bert.explain(WORDS, method="gradient_shap", n_samples=64, level=level)
        assert exp.completeness_error.max() < 0.05


# ---------------------------------------------------------------------------- DeepLIFT
class _BagNetwork(torch.nn.Module):
    def __init__(self, clf):
        super().__init__()
        self.net = clf.module_

    def forward(self, embedded, tokens, lengths):
        return self.net(tokens, lengths, embedded=embedded)


@pytest.mark.filterwarnings("ignore:Setting forward, backward hooks:UserWarning")
@pytest.mark.filterwarnings("ignore:Input Tensor 0 did not already require:UserWarning")
@pytest.mark.parametrize("baseline", ["zeros", "pad"])
def test_deeplift_equals_captum_and_is_complete(bag, baseline):
    exp = bag.explain(TEXTS, target="neg", method="deeplift", baseline=baseline)
    batch, embedded, t, real = _captum_inputs(bag, TEXTS, "neg")
    base = get_explainer(bag, "deeplift").baseline_embedding(bag, batch, embedded, baseline)
    attr = DeepLift(_BagNetwork(bag)).attribute(embedded, baselines=base, target=t,
                                                additional_forward_args=tuple(batch.values()))
    _close(exp.values, (attr.sum(-1) * real))
    with torch.no_grad():
        logits = bag.forward_batch(batch, embedded=embedded)
        reference = bag.forward_batch(batch, embedded=base)
    np.testing.assert_allclose(exp.logit, logits[:, t[0]].numpy(), atol=1e-6)
    np.testing.assert_allclose(exp.bias, reference[:, t[0]].numpy(), atol=1e-6)
    sums = np.array([v.sum() for v in exp.values])  # sum(attr) = f(x) - f(baseline)
    np.testing.assert_allclose(sums, exp.logit - exp.bias, atol=1e-5)
    assert exp.completeness_error.max() < 1e-5


@pytest.mark.parametrize("model, named", [
    ("lstm", ["encoder.rnn (LSTM)", "recurrent"]),
    ("bert", ["LayerNorm", "attention", "GELUActivation"]),
    ("bcos", ["BertBcosLayerNorm", "B-cos layer"]),
])
def test_deeplift_is_refused_naming_what_prevents_it(model, named, request):
    clf = request.getfixturevalue(model)
    with pytest.raises(ValueError, match="method='deeplift' is not supported") as error:
        clf.explain(WORDS[:1], method="deeplift")
    for part in [*named, "f(x) - f(baseline)", "choose one of"]:
        assert part in str(error.value), part


def test_deeplift_is_refused_for_images_and_unfitted_classes(vit):
    clf, X = vit
    with pytest.raises(ValueError, match=r"blocks\.0\.norm1 \(LayerNorm\)"):
        clf.explain(X[:1], method="deeplift")
    with pytest.raises(ValueError, match="a fitted estimator names the operations"):
        get_explainer(BertTextClassifier, "deeplift")


def test_deeplift_refuses_a_network_it_would_get_wrong(bag):
    """Offered by the class, refused on a fitted network with a GELU (never silently
    wrong)."""

    class GeluModule(MeanEmbeddingClassifier):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.activation = torch.nn.GELU()

        def forward(self, tokens, lengths, embedded=None):
            return self.activation(super().forward(tokens, lengths, embedded))

    class GeluBag(EmbeddingBagClassifier):
        def _build_module(self, embeddings=None):
            return GeluModule(len(self.text_encoder_.index_to_token_), len(self.classes_),
                              self.embed_dim_, embeddings)

    clf = GeluBag(embed_dim=4, max_epochs=1, random_state=0).fit(TEXTS, LABELS)
    assert "deeplift" in clf.explain_methods
    with pytest.raises(ValueError, match=r"activation \(GELU\)"):
        clf.explain(TEXTS[:1], method="deeplift")


# ---------------------------------------------------------------------------- layers
@pytest.mark.parametrize("model, layer", [("bag", "embedding"), ("bert", "word_embeddings")])
@pytest.mark.parametrize("method", ["integrated_gradients", "input_x_gradient"])
def test_a_layer_method_at_the_embedding_layer_is_the_method_at_the_embeddings(
        model, layer, method, request):
    """captum's LayerIntegratedGradients / LayerGradientXActivation at the embedding module
    equal integrated gradients / input × gradient on the embeddings."""
    clf = request.getfixturevalue(model)
    X = TEXTS if model == "bag" else WORDS
    options = {"n_steps": 16, "baseline": "pad"} if method == "integrated_gradients" else {}
    at_layer = clf.explain(X, method=method, layer=layer, **options)
    at_input = clf.explain(X, method=method, **options)
    for a, b in zip(at_layer.values, at_input.values, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    if method == "integrated_gradients":
        np.testing.assert_allclose(at_layer.bias, at_input.bias, atol=1e-6)


def test_layer_integrated_gradients_equal_captum_and_are_complete(bert):
    layer = "encoder.bert.encoder.layer.0"
    exp = bert.explain(WORDS, target="pos", method="integrated_gradients", layer=layer,
                       n_steps=64)
    batch, embedded, t, real = _captum_inputs(bert, WORDS, "pos")
    module = dict(bert.module_.named_modules())[layer]
    attr = LayerIntegratedGradients(_embeddings_forward(bert, batch), module).attribute(
        embedded, baselines=torch.zeros_like(embedded), target=t, n_steps=64,
        additional_forward_args=tuple(batch.values()))
    _close(exp.values, (attr.sum(-1) * real))
    # every path runs through the first encoder layer: the bias is the baseline's logit
    reference = bert.explain(WORDS, target="pos", method="integrated_gradients", n_steps=8)
    np.testing.assert_allclose(exp.bias, reference.bias, atol=1e-6)
    assert exp.completeness_error.max() < 1e-3
    words = bert.explain(WORDS, target="pos", method="integrated_gradients", layer=layer,
                         n_steps=64, level="word")
    for i, text in enumerate(WORDS):  # word level: the sum of the word's pieces
        of = bert.encode([text]).alignments[0].words
        np.testing.assert_allclose(
            words.values[i], np.bincount(of[of >= 0], weights=exp.values[i][of >= 0]),
            atol=1e-12)


def test_the_layers_of_a_transformers_model_as_it_is(tmp_path):
    """A GPT-2 classifier run as ``transformers`` runs it: its input embedding layer runs
    inside its forward pass (its output replaced by the explained embeddings), once."""
    import warnings

    from architectures import tiny_classifier

    folder = tiny_classifier(tmp_path / "gpt2", "gpt2", labels=("neg", "pos"))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = BertTextClassifier.from_pretrained(folder, device="cpu")
    names = {module: name for name, module in clf.module_.named_modules()}
    embedding = names[clf.module_.model.get_input_embeddings()]
    at_layer = clf.explain(TEXTS[:3], method="integrated_gradients", layer=embedding, n_steps=8)
    at_input = clf.explain(TEXTS[:3], method="integrated_gradients", n_steps=8)
    for a, b in zip(at_layer.values, at_input.values, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-6)
    first_block = clf.explain(TEXTS[:3], method="integrated_gradients", n_steps=64,
                              layer="model.transformer.h.0", level="word")
    assert first_block.completeness_error.max() < 1e-3
    with pytest.raises(ValueError, match=r"model\.transformer\.h\.0\.ln_1 \(LayerNorm\)"):
        clf.explain(TEXTS[:1], method="deeplift")


def test_layer_integrated_gradients_off_the_main_path_are_complete(lstm):
    """The attention weights are a side branch: the hidden states see the input, so the bias
    is the logit with the attention at its baseline value, not the baseline's logit."""
    exp = lstm.explain(TEXTS, method="integrated_gradients", layer="attention", n_steps=64)
    assert exp.completeness_error.max() < 1e-3
    plain = lstm.explain(TEXTS, method="integrated_gradients", n_steps=8)
    assert np.abs(exp.bias - plain.bias).max() > 1e-4
    encoder = lstm.explain(TEXTS, method="input_x_gradient", layer="encoder")
    assert [len(v) for v in encoder.values] == [len(u) for u in encoder.units]


@pytest.mark.parametrize("layer, message", [
    ("embeding", "did you mean 'embedding'"),
    ("nothing", r"its modules: \['embedding', 'encoder'"),
    ("encoder.rnn", "gives a tuple"),
    ("dropout", "runs 2 times"),
    ("output", r"gives a tensor of shape \(1, 1, 2\)"),
])
def test_unknown_or_unusable_layers_are_refused(lstm, layer, message):
    with pytest.raises(ValueError, match=message):
        lstm.explain(TEXTS[:2], method="integrated_gradients", layer=layer)
    with pytest.raises(TypeError, match="unexpected option"):
        lstm.explain(TEXTS[:2], method="gradient", layer="encoder")


def test_bcos_layer_and_noise_methods(bcos):
    exp = bcos.explain(WORDS, method="integrated_gradients", layer="layers.0.feed_forward",
                       n_steps=32, level="word")
    assert exp.completeness_error.max() < 1e-2
    with pytest.raises(ValueError, match="gives a tuple"):
        bcos.explain(WORDS, method="input_x_gradient", layer="layers.0")
    for method in NEW_TEXT_METHODS:
        assert len(bcos.explain(WORDS, method=method, level="word").values) == len(WORDS)


def test_hooks_stay_off_the_fitted_model_and_threads_agree(bert):
    """The layer methods and DeepLIFT hook a copy of the network: explaining with them from
    several threads at once, beside the plain methods, gives the sequential results."""
    calls = [("integrated_gradients", {"layer": "encoder.bert.encoder.layer.1", "n_steps": 8}),
             ("integrated_gradients", {"n_steps": 8}),
             ("input_x_gradient", {"layer": "encoder.bert.embeddings"}),
             ("smoothgrad", {"nt_samples": 3})] * 2
    expected = [bert.explain(WORDS, method=m, **o).values for m, o in calls]
    results = [None] * len(calls)

    def run(i):
        method, options = calls[i]
        results[i] = bert.explain(WORDS, method=method, **options).values

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for got, want in zip(results, expected, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_allclose(a, b, atol=1e-6)
    assert not any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                   for m in bert.module_.modules())


# ---------------------------------------------------------------------------- batching
@pytest.mark.parametrize("model", ["bag", "bert"])
def test_explanations_do_not_depend_on_the_batching(model, request):
    clf = request.getfixturevalue(model)
    X = TEXTS if model == "bag" else WORDS
    methods = [(m, {}) for m in NEW_TEXT_METHODS]
    methods.append(("integrated_gradients", {"layer": "embedding" if model == "bag"
                                             else "encoder.bert.encoder.layer.0",
                                             "n_steps": 8}))
    if model == "bag":
        methods.append(("deeplift", {}))
    for method, options in methods:
        together = clf.explain(X, method=method, batch_size=len(X), **options)
        alone = clf.explain(X[::-1], method=method, batch_size=1, **options)
        for a, b in zip(together.values, alone.values[::-1], strict=True):
            np.testing.assert_allclose(a, b, atol=1e-5, err_msg=method)
        torch.manual_seed(1)  # the global generators play no part
        np.random.seed(1)
        again = clf.explain(X, method=method, batch_size=len(X), **options)
        for a, b in zip(together.values, again.values, strict=True):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------------------- word level
def test_word_level_pools_the_pieces(bert):
    """Norm methods (SmoothGrad) give a word the L2 norm of its pieces' values, the additive
    ones (noise-tunnelled integrated gradients, GradientSHAP) their sum."""
    for method, norm in [("smoothgrad", True), ("smoothgrad_integrated_gradients", False),
                         ("gradient_shap", False)]:
        pieces = bert.explain(WORDS, target="neg", method=method)
        words = bert.explain(WORDS, target="neg", method=method, level="word")
        for i, text in enumerate(WORDS):
            of = bert.encode([text]).alignments[0].words
            real = of >= 0
            if norm:
                expected = np.sqrt(np.bincount(of[real], weights=pieces.values[i][real] ** 2))
            else:
                expected = np.bincount(of[real], weights=pieces.values[i][real])
            np.testing.assert_allclose(words.values[i], expected, atol=1e-12, err_msg=method)
        if not norm and pieces.bias is not None:  # [CLS] / [SEP] join the bias
            np.testing.assert_allclose(
                [v.sum() for v in words.values] + words.bias,
                [v.sum() for v in pieces.values] + pieces.bias, atol=1e-9)


# ---------------------------------------------------------------------------- options
@pytest.mark.parametrize("method, options, message", [
    ("smoothgrad", {"nt_type": "mean"}, "nt_type"),
    ("smoothgrad", {"stdevs": -1.0}, "stdevs"),
    ("smoothgrad", {"nt_samples": 0}, "nt_samples"),
    ("smoothgrad_integrated_gradients", {"random_state": -1}, "random_state"),
    ("gradient_shap", {"n_samples": 1.5}, "n_samples"),
    ("gradient_shap", {"baseline": ()}, "at least one baseline"),
    ("gradient_shap", {"baseline": ("zeros", "blur")}, "baseline must be one of"),
    ("integrated_gradients", {"baseline": ("zeros", "pad")}, "baseline must be one of"),
])
def test_bad_options_are_refused(bag, method, options, message):
    with pytest.raises(ValueError, match=message):
        bag.explain(TEXTS[:2], method=method, **options)


def test_methods_are_offered_where_they_apply(bag, lstm, bert):
    for clf in (bag, lstm, bert):
        assert set(NEW_TEXT_METHODS) <= set(clf.explain_methods)
    assert "deeplift" in bag.explain_methods
    assert "deeplift" not in lstm.explain_methods and "deeplift" not in bert.explain_methods
    for clf, method in [(bag, "integrated_gradients"), (bag, "input_x_gradient"),
                        (bert, "integrated_gradients"), (bert, "input_x_gradient")]:
        assert "layer" in get_explainer(clf, method).options()


# ---------------------------------------------------------------------------- images
def test_pixel_smoothgrad_equals_captum(vit, monkeypatch):
    clf, X = vit
    exp = clf.explain(X, target=1, method="smoothgrad", nt_samples=5, stdevs=0.2)
    x = clf.encode(X).inputs["x"]
    noise = draw(len(X), 5, tuple(x.shape[1:]), stdevs=0.2).noise
    _inject_noise(monkeypatch, noise)
    grads = NoiseTunnel(Saliency(clf.module_)).attribute(x, nt_samples=5, stdevs=0.2,
                                                        target=1, abs=False)
    np.testing.assert_allclose(exp.values, grads.norm(dim=1).numpy(), atol=1e-6)


def test_pixel_gradient_shap_equals_captum_and_batching_is_invisible(vit, monkeypatch):
    clf, X = vit
    exp = clf.explain(X, target=0, method="gradient_shap", n_samples=6, stdevs=0.1,
                      baseline=0.5)
    alone = clf.explain(X, target=0, method="gradient_shap", n_samples=6, stdevs=0.1,
                        baseline=0.5, batch_size=1)
    np.testing.assert_allclose(alone.values, exp.values, atol=1e-6)
    x = clf.encode(X).inputs["x"]
    grey = clf.encode(np.full((1, *X.shape[1:]), 0.5, np.float32)).inputs["x"]
    draws = draw(len(X), 6, tuple(x.shape[1:]), stdevs=0.1)
    _inject_noise(monkeypatch, draws.noise)
    _inject_gradient_shap_draws(monkeypatch, draws)
    attr = GradientShap(clf.module_).attribute(x, baselines=grey, n_samples=6, stdevs=0.1,
                                               target=0)
    np.testing.assert_allclose(exp.values, attr.sum(1).numpy(), atol=1e-6)
    smooth = clf.explain(X, method="smoothgrad", nt_samples=3)
    np.testing.assert_allclose(clf.explain(X, method="smoothgrad", nt_samples=3,
                                           batch_size=1).values, smooth.values, atol=1e-6)


@pytest.mark.parametrize("model", ["lstm", "bert"])
def test_integrated_gradients_to_a_tolerance(model, request):
    """n_steps="auto": every text's completeness error (in logit units) is under the
    tolerance, and where a text used k steps its attributions are those of n_steps=k."""
    clf = request.getfixturevalue(model)
    X = TEXTS if model == "lstm" else WORDS
    tolerance = 1e-5
    auto = clf.explain(X, method="integrated_gradients", n_steps="auto", tolerance=tolerance)
    error = np.abs([v.sum() for v in auto.values] + auto.bias - auto.logit)
    assert (error <= tolerance).all(), error
    steps = auto.n_steps.astype(int)
    assert set(steps) <= {16, 32, *range(40, 513, 8)}
    assert auto.to_frame(kind="samples")["n_steps"].tolist() == steps.tolist()
    for k in sorted(set(steps)):
        fixed = clf.explain(X, method="integrated_gradients", n_steps=int(k))
        for i in np.flatnonzero(steps == k):
            np.testing.assert_allclose(auto.values[i], fixed.values[i], rtol=1e-5, atol=1e-7)
    fixed = clf.explain(X, method="integrated_gradients", n_steps=16)
    assert fixed.n_steps is None
    # a looser tolerance never takes more steps
    loose = clf.explain(X, method="integrated_gradients", n_steps="auto", tolerance=1e-2)
    assert (loose.n_steps <= steps).all()


def test_integrated_gradients_to_a_tolerance_refusals(lstm):
    with pytest.raises(ValueError, match="tolerance must be a positive number, got 0"):
        lstm.explain(TEXTS[:1], method="integrated_gradients", n_steps="auto", tolerance=0)
    with pytest.raises(ValueError, match="n_steps must be a positive integer, got 'many'"):
        lstm.explain(TEXTS[:1], method="integrated_gradients", n_steps="many")
    with pytest.raises(ValueError, match="n_steps='auto' integrates to a tolerance: it is "
                                         "taken by method='integrated_gradients' without a "
                                         "layer, not by method='smoothgrad_integrated_"
                                         "gradients'"):
        lstm.explain(TEXTS[:1], method="smoothgrad_integrated_gradients", n_steps="auto")


def test_auto_steps_refine_only_the_texts_that_need_it():
    """A forward whose path integrand is sharp for some texts (a steep tanh): those take more
    steps; every text ends under the tolerance with the attributions of its step count."""
    from interpretable.attribution._tokens import attribute_tokens

    weights = torch.tensor([[1.0, -0.5, 0.25], [0.5, 0.5, -1.0]])
    steepness = torch.tensor([1.0, 12.0, 30.0])

    def forward(embedded, steep):
        hidden = torch.tanh(steep[:, None, None] * (embedded - 0.4)).sum(1)  # (B, 3)
        return hidden @ weights.T

    embedded = torch.rand(3, 5, 3, generator=torch.Generator().manual_seed(0))
    mask = torch.ones(3, 5, dtype=torch.bool)
    target = torch.tensor([0, 1, 0])
    auto = attribute_tokens(forward, embedded, target, mask=mask, n_steps="auto",
                            tolerance=1e-5, additional_forward_args=(steepness,))
    with torch.no_grad():
        gap = forward(embedded, steepness).gather(1, target[:, None])[:, 0] - \
            auto.baseline_logit
    assert ((auto.scores.sum(1) - gap.double()).abs() <= 1e-5).all()
    steps = auto.steps.tolist()
    assert steps[0] == 16 and steps[2] > steps[1] > 16, steps
    for i, k in enumerate(steps):
        fixed = attribute_tokens(forward, embedded[i:i + 1], target[i:i + 1], mask=mask[i:i + 1],
                                 n_steps=k, additional_forward_args=(steepness[i:i + 1],))
        torch.testing.assert_close(auto.scores[i], fixed.scores[0], rtol=1e-5, atol=1e-6)
