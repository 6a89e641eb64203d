"""The post-hoc methods from captum: occlusion (leave-one-out), LIME and Kernel SHAP over
tokens (and words of BERT models), integrated gradients from the "zeros" / "pad" / "mask"
token baselines, and for images integrated gradients from a constant or blurred image and
occlusion. Checked against hand computations on tiny models."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from interpretable import BertTextClassifier, EmbeddingBagClassifier, ViTClassifier
from interpretable.attribution._images import gaussian_blur

TINY_BERT = {"vocab_size": 30522, "hidden_size": 16, "num_hidden_layers": 2,
             "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32,
             "type_vocab_size": 2, "layer_norm_eps": 1e-12, "hidden_dropout_prob": 0.1,
             "attention_probs_dropout_prob": 0.1}
TEXTS = ["a good movie with a great plot", "bad film", "awful awful acting and a dull plot",
         "good", "the plot was great and the acting good", "a dull film"]
LABELS = ["pos", "neg", "neg", "pos", "pos", "neg"]
WORDS = ["unbelievably good film", "the plot was dull", "great", "a boring, awful movie"]


@pytest.fixture(scope="module")
def bag():
    cls = EmbeddingBagClassifier
    return cls(embed_dim=8, max_epochs=5, random_state=0).fit(TEXTS, LABELS)


@pytest.fixture(scope="module")
def bert():
    cls = BertTextClassifier
    X = WORDS * 4
    y = ["pos", "neg", "pos", "neg"] * 4
    return cls(checkpoint=TINY_BERT, max_length=24, lr=3e-3, max_epochs=2, batch_size=8,
               random_state=0, device="cpu").fit(X, y)


@pytest.fixture(scope="module")
def vit():
    X = np.random.default_rng(0).random((6, 8, 8, 3), dtype=np.float32)
    cls = ViTClassifier
    clf = cls(patch_size=4, embed_dim=8, depth=1, num_heads=2, max_epochs=2, random_state=0)
    return clf.fit(X, [0, 1, 2] * 2), X


def _logits(clf, X) -> np.ndarray:
    return clf.logits(clf.encode(X).inputs).double().numpy()


def _one_batch(clf, X):
    """The encoded ``X`` as one batch, in input order."""
    rows, batch = next(clf.iter_batches(clf.encode(X).inputs, batch_size=len(X)))
    assert rows == slice(0, len(X))
    return batch


# ---------------------------------------------------------------------------- occlusion
def test_occlusion_is_the_drop_of_the_logit_when_a_token_is_replaced(bag):
    """Mean-embedding model: replacing token t by the zero embedding drops the logit of c by
    exactly W_c e_t / T; computed by hand from the weights (batches of 2, given targets)."""
    exp = bag.explain(TEXTS, target="neg", method="occlusion", batch_size=2)
    weights = bag.module_.output.weight.detach().double()
    table = bag.module_.embedding.weight.detach().double()
    c = list(bag.classes_).index("neg")
    for i, text in enumerate(TEXTS):
        ids = bag.encode([text]).inputs["tokens"][0]
        expected = (table[ids] @ weights[c] / len(ids)).numpy()
        np.testing.assert_allclose(exp.values[i], expected, rtol=1e-5, atol=1e-7)
    assert exp.logit is None and exp.bias is None
    # the padding token's embedding is 0 in this model: "pad" is the same baseline
    pad = bag.explain(TEXTS, target="neg", method="occlusion", baseline="pad")
    for a, b in zip(pad.values, exp.values, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-7)


def test_occlusion_of_a_word_replaces_all_its_pieces(bert):
    """BERT, level="word": a word's value is the logit drop when all its pieces are replaced
    together by the zero embedding, which differs from the sum of its pieces' own drops."""
    batch = _one_batch(bert, WORDS)
    encoded = bert.encode(WORDS)
    embedded = bert.embed(batch).detach()
    with torch.no_grad():
        logits = bert.forward_batch(batch, embedded=embedded).double()
    word = bert.explain(WORDS, target="pos", method="occlusion", level="word")
    piece = bert.explain(WORDS, target="pos", method="occlusion")
    c = list(bert.classes_).index("pos")
    differs = False
    for i, pieces in enumerate(encoded.alignments):
        assert word.units[i] == [WORDS[i][s:e] for s, e in pieces.spans]
        for w in range(len(pieces.spans)):
            at = torch.as_tensor(np.flatnonzero(pieces.words == w))
            occluded = embedded.clone()
            occluded[i, at] = 0
            with torch.no_grad():
                drop = logits[i, c] - bert.forward_batch(batch, embedded=occluded)[i, c]
            assert word.values[i][w] == pytest.approx(float(drop), abs=1e-6)
            summed = piece.values[i][at.numpy()].sum()
            differs |= abs(summed - word.values[i][w]) > 1e-6
    assert differs  # a nonlinear model: the word is not the sum of its pieces' drops
    assert [len(u) for u in piece.units] == [len(p.words) for p in encoded.alignments]


# ---------------------------------------------------------------------------- LIME, SHAP
@pytest.mark.parametrize("method", ["lime", "kernel_shap"])
def test_sampling_methods_are_reproducible_and_shaped(bag, method):
    exp = bag.explain(TEXTS, method=method, n_samples=24, random_state=3)
    assert [v.shape for v in exp.values] == [(len(u),) for u in exp.units]
    again = bag.explain(TEXTS, method=method, n_samples=24, random_state=3)
    for a, b in zip(exp.values, again.values, strict=True):
        np.testing.assert_array_equal(a, b)
    alone = bag.explain(TEXTS[::-1], method=method, n_samples=24, random_state=3,
                        batch_size=1)  # another order and batching: the same per text
    for a, b in zip(exp.values, alone.values[::-1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)  # up to the padding's rounding
    other = bag.explain(TEXTS, method=method, n_samples=24, random_state=4)
    assert any(not np.array_equal(a, b) for a, b in zip(exp.values, other.values, strict=True))
    torch.manual_seed(1)  # the global generator plays no part
    for a, b in zip(exp.values, bag.explain(TEXTS, method=method, n_samples=24,
                                            random_state=3).values, strict=True):
        np.testing.assert_array_equal(a, b)
    unseeded = [bag.explain(TEXTS[2:3], method=method, n_samples=8, random_state=None)
                for _ in range(2)]
    assert not np.array_equal(unseeded[0].values[0], unseeded[1].values[0])


def test_kernel_shap_of_an_additive_model_is_exact(bag):
    """The mean-embedding logit is additive over tokens: its Shapley values are the exact
    contributions, and they sum to the logit minus the baseline's logit (bias)."""
    shap = bag.explain(TEXTS, method="kernel_shap", n_samples=64)
    inherent = bag.explain(TEXTS)  # W_c e_t / T, exact
    for a, b in zip(shap.values, inherent.values, strict=True):
        np.testing.assert_allclose(a, b, atol=1e-4)
    np.testing.assert_allclose(shap.bias, inherent.bias, atol=1e-6)  # logit at all zeros
    assert shap.completeness_error.max() < 1e-4


def test_kernel_shap_of_words_is_complete(bert):
    exp = bert.explain(WORDS, method="kernel_shap", level="word", n_samples=64)
    assert exp.units[0] == ["unbelievably", "good", "film"]
    assert exp.completeness_error.max() < 1e-3
    lime = bert.explain(WORDS, method="lime", level="word", n_samples=32)
    assert [len(v) for v in lime.values] == [len(u) for u in exp.units]


# ---------------------------------------------------------------------------- IG baselines
@pytest.mark.parametrize("baseline", ["zeros", "pad", "mask"])
def test_integrated_gradients_from_each_baseline(bert, baseline):
    """Complete against the baseline with enough steps; the bias is the model's logit at the
    baseline (the pad / mask tokens at every piece but [CLS] and [SEP]), computed here by
    running the model on those tokens."""
    exp = bert.explain(WORDS, method="integrated_gradients", baseline=baseline, n_steps=256)
    assert exp.completeness_error.max() < 1e-3
    batch = _one_batch(bert, WORDS)
    tokens = batch["tokens"]
    real = torch.arange(tokens.shape[1])[None] < batch["lengths"][:, None]
    ids = {piece: int(bert.text_encoder_.encode_tokens([[piece]])[0][0, 0])
           for piece in ("[PAD]", "[MASK]", "[CLS]", "[SEP]")}
    special = (tokens == ids["[CLS]"]) | (tokens == ids["[SEP]"])
    with torch.no_grad():
        if baseline == "zeros":
            out = bert.forward_batch(batch, embedded=torch.zeros_like(bert.embed(batch)))
        else:
            replaced = tokens.masked_fill(real & ~special, ids[f"[{baseline.upper()}]"])
            out = bert.forward_batch({**batch, "tokens": replaced})
    targets = [list(bert.classes_).index(t) for t in exp.target]
    np.testing.assert_allclose(exp.bias, out.double().numpy()[range(len(WORDS)), targets],
                               atol=1e-5)
    ends = np.array([[v[0], v[-1]] for v in exp.values])  # [CLS], [SEP]
    if baseline == "zeros":
        assert np.abs(ends).min() > 0
    else:  # kept as they are: no path, no attribution
        np.testing.assert_array_equal(ends, 0)


def test_mask_baseline_needs_a_mask_token(bag):
    with pytest.raises(ValueError, match=r"mask token.*\[MASK\]"):
        bag.explain(TEXTS[:2], method="integrated_gradients", baseline="mask")
    with pytest.raises(ValueError, match="mask token"):
        bag.explain(TEXTS[:2], method="occlusion", baseline="mask")


@pytest.mark.parametrize("method, options, match", [
    ("integrated_gradients", {"baseline": "blank"}, "baseline must be one of"),
    ("integrated_gradients", {"n_steps": 0}, "n_steps"),
    ("lime", {"n_samples": 0}, "n_samples"),
    ("kernel_shap", {"n_samples": 2.5}, "n_samples"),
    ("lime", {"random_state": -1}, "random_state"),
    ("occlusion", {"baseline": None}, "baseline must be one of"),
])
def test_bad_text_options_are_refused(bag, method, options, match):
    with pytest.raises(ValueError, match=match):
        bag.explain(TEXTS[:2], method=method, **options)


def test_options_a_method_does_not_take_are_refused(bag):
    with pytest.raises(TypeError, match="n_samples"):
        bag.explain(TEXTS[:2], method="occlusion", n_samples=8)


# ---------------------------------------------------------------------------- vision
def test_gaussian_blur_is_scipys_with_nearest_borders():
    ndimage = pytest.importorskip("scipy.ndimage")
    x = torch.rand(2, 3, 9, 7, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    expected = ndimage.gaussian_filter(x.numpy(), sigma=(0, 0, 1.5, 1.5), mode="nearest",
                                       truncate=3.0)
    np.testing.assert_allclose(gaussian_blur(x, 1.5).numpy(), expected, atol=1e-12)


@pytest.mark.parametrize("baseline", ["zeros", 0.5, "blur"])
def test_image_integrated_gradients_are_complete(vit, baseline):
    clf, X = vit
    exp = clf.explain(X, target=1, method="integrated_gradients", baseline=baseline,
                      sigma=1.0, n_steps=128)
    if baseline == "blur":  # the blur of the images (it commutes with the encoding)
        images = torch.from_numpy(X).permute(0, 3, 1, 2)
        reference = gaussian_blur(images, 1.0).permute(0, 2, 3, 1).numpy()
    else:
        reference = np.full_like(X, 0.0 if baseline == "zeros" else baseline)
    difference = _logits(clf, X)[:, 1] - _logits(clf, reference)[:, 1]
    np.testing.assert_allclose(exp.values.sum((1, 2)), difference, rtol=1e-3, atol=1e-5)


def test_image_occlusion_is_the_drop_of_the_logit(vit):
    """Non-overlapping 4×4 windows: every pixel holds the logit drop when its window is
    replaced by the black image, computed here on blacked-out images."""
    clf, X = vit
    exp = clf.explain(X, target=2, method="occlusion")  # the default: the 4×4 patches
    np.testing.assert_array_equal(
        exp.values, clf.explain(X, target=2, method="occlusion", window=4, stride=4).values)
    logits = _logits(clf, X)[:, 2]
    for top, left in [(0, 0), (4, 4), (0, 4)]:
        covered = X.copy()
        covered[:, top:top + 4, left:left + 4] = 0
        drop = logits - _logits(clf, covered)[:, 2]
        window = exp.values[:, top:top + 4, left:left + 4]
        np.testing.assert_allclose(window, np.broadcast_to(drop[:, None, None], window.shape),
                                   rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("options, match", [
    ({"baseline": 2.0}, "pixel value in"), ({"baseline": "noise"}, "baseline must be"),
    ({"baseline": "blur", "sigma": 0}, "sigma"), ({"window": 0}, "window"),
    ({"window": 9}, "window"), ({"stride": 0}, "stride"),
])
def test_bad_image_options_are_refused(vit, options, match):
    clf, X = vit
    method = "occlusion" if {"window", "stride"} & set(options) else "integrated_gradients"
    with pytest.raises(ValueError, match=match):
        clf.explain(X[:1], method=method, **options)


# ---------------------------------------------------------------------------- purity
def _state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}, \
        [m.training for m in module.modules()]


def _calls(fitted):
    bag, bert, (vit, images) = fitted
    for baseline in ("zeros", "pad"):
        yield bag, TEXTS, "integrated_gradients", {"baseline": baseline, "n_steps": 4}
    for method in ("occlusion", "lime", "kernel_shap"):
        yield bag, TEXTS, method, {} if method == "occlusion" else {"n_samples": 8}
        yield bert, WORDS, method, {"level": "word", "baseline": "mask",
                                    **({} if method == "occlusion" else {"n_samples": 8})}
    yield bert, WORDS, "integrated_gradients", {"baseline": "mask", "n_steps": 4}
    for baseline in (0.5, "blur"):
        yield vit, images, "integrated_gradients", {"baseline": baseline, "n_steps": 4}
    yield vit, images, "occlusion", {"window": 4, "stride": 2, "baseline": "blur"}


def test_new_methods_leave_the_model_unchanged_and_are_thread_safe(bag, bert, vit):
    calls = list(_calls((bag, bert, vit)))
    models = {id(c[0]): c[0] for c in calls}
    before = {key: _state(m.module_) for key, m in models.items()}
    expected = [clf.explain(X, method=method, **options).values
                for clf, X, method, options in calls]
    results, errors = [None] * len(calls), []

    def work(i):
        try:
            clf, X, method, options = calls[i]
            results[i] = clf.explain(X, method=method, **options).values
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(calls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for (_clf, _, method, _), a, b in zip(calls, results, expected, strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y, err_msg=method)
    for key, model in models.items():
        tensors, flags = _state(model.module_)
        assert flags == before[key][1]
        for name, value in tensors.items():
            assert torch.equal(value, before[key][0][name]), name
