"""``inference_precision``: ``"bf16"`` runs the classifiers' predictions (``predict``,
``predict_proba``, ``decision_function``) under ``torch.autocast`` in bfloat16 where the device
computes it natively, else float32 with one warning; explanations, ``logits`` and the metrics
stay in the parameters' precision; the option is saved with the model."""

import copy
import threading
import warnings

import numpy as np
import pytest
import torch
from conformance.cases import _TINY_BERT

from interpretable import BcosTextClassifier, BertTextClassifier, EmbeddingBagClassifier
from interpretable.estimators.core import _classifier as classifier
from interpretable.utils._params import InvalidParameterError


def sentiment(n=64, seed=0):
    rng = np.random.RandomState(seed)
    cues = {"neg": ["awful", "dull", "boring"], "pos": ["great", "superb", "moving"]}
    filler = ["the", "movie", "was", "a", "plot", "and", "film", ","]
    X, y = [], []
    for i in range(n):
        label = ("neg", "pos")[i % 2]
        words = list(rng.choice(filler, size=rng.randint(2, 6)))
        words.insert(rng.randint(len(words) + 1), rng.choice(cues[label]))
        X.append(" ".join(words))
        y.append(label)
    return X, np.array(y)


def tiny(cls=BcosTextClassifier, **params):
    options = dict(checkpoint=dict(_TINY_BERT, hidden_size=16, intermediate_size=32),
                   max_length=24, lr=3e-3, max_epochs=4, batch_size=16, random_state=0,
                   device="cpu")
    return cls(**{**options, **params})


@pytest.fixture(scope="module")
def fitted():
    X, y = sentiment()
    return tiny().fit(X, y), X


def twin(clf, **params):
    """A copy of the fitted ``clf`` sharing its module, with other parameters."""
    return copy.copy(clf).set_params(**params)


@pytest.fixture
def native(monkeypatch):
    """bfloat16 taken as native on this machine (autocast in bfloat16 runs on any CPU)."""
    monkeypatch.setattr(classifier, "native_bf16", lambda device: True)


def _dtypes(clf, call):
    """The dtypes of the floating tensors the module's layers return during ``call()``."""
    seen = set()

    def record(module, inputs, output):
        if isinstance(output, torch.Tensor) and output.is_floating_point():
            seen.add(output.dtype)

    hooks = [m.register_forward_hook(record) for m in clf.module_.modules()]
    try:
        call()
    finally:
        for hook in hooks:
            hook.remove()
    return seen


def test_default_and_validation():
    assert BcosTextClassifier().inference_precision == "float32"
    assert BertTextClassifier(inference_precision="bf16").inference_precision == "bf16"
    X, y = sentiment(n=8)
    with pytest.raises(InvalidParameterError, match="'inference_precision' parameter of "
                                                    "EmbeddingBagClassifier must be a str among"):
        EmbeddingBagClassifier(inference_precision="fp16").fit(X, y)
    clf = EmbeddingBagClassifier(embed_dim=4, max_epochs=1, random_state=0).fit(X, y)
    clf.set_params(inference_precision="half")  # set_params after fit: checked at prediction
    with pytest.raises(InvalidParameterError, match="'inference_precision' parameter"):
        clf.predict(X)


def test_bf16_predictions_agree_with_float32(fitted, native):
    base, X = fitted
    clf = twin(base, inference_precision="float32")
    p32, d32, y32 = clf.predict_proba(X), clf.decision_function(X), clf.predict(X)
    assert _dtypes(clf, lambda: clf.predict(X[:4])) == {torch.float32}
    clf.set_params(inference_precision="bf16")
    assert torch.bfloat16 in _dtypes(clf, lambda: clf.predict(X[:4]))
    p16, d16, y16 = clf.predict_proba(X), clf.decision_function(X), clf.predict(X)
    assert p16.dtype == np.float64 and d16.dtype == np.float32
    np.testing.assert_allclose(p16.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p16, p32, atol=0.03)
    np.testing.assert_allclose(d16, d32, atol=0.1)
    sure = np.abs(d32) > 0.1  # bfloat16 rounding may flip only the near-ties
    assert sure.mean() > 0.5 and (y16[sure] == y32[sure]).all()
    assert (y16 == y32).mean() >= 0.9
    assert not torch.is_autocast_enabled("cpu")  # the context ended with the call


def test_explanations_and_logits_ignore_inference_precision(fitted, native):
    base, X = fitted
    explained = {}
    for precision in ("float32", "bf16"):
        clf = twin(base, inference_precision=precision)
        explained[precision] = [clf.explain(X[:8]), clf.explain(X[:8], dtype="float64"),
                                clf.explain(X[:4], method="integrated_gradients", n_steps=4)]
        assert _dtypes(clf, lambda clf=clf: clf.explain(X[:2])) == {torch.float32}
        assert torch.equal(clf.logits(clf.encode(X).inputs), base.logits(base.encode(X).inputs))
    for a, b in zip(explained["float32"], explained["bf16"], strict=True):
        for field in ("values", "logit", "bias"):
            for u, v in zip(_rows(getattr(a, field)), _rows(getattr(b, field)), strict=True):
                assert u.dtype == v.dtype and np.array_equal(u, v, equal_nan=True), field
    assert explained["bf16"][1].completeness_error.max() <= 1e-9
    assert explained["bf16"][1].completeness_error.max() \
        == explained["float32"][1].completeness_error.max()


def _rows(field):
    """An explanation's field as a list of arrays (ragged fields are lists of arrays)."""
    if isinstance(field, np.ndarray) and field.dtype != object:
        return [field]
    return [np.asarray(row) for row in field]


def test_saved_with_the_model(tmp_path):
    bf16 = tiny(inference_precision="bf16", max_epochs=1).fit(*sentiment(n=16))
    loaded = BcosTextClassifier.load(bf16.save(tmp_path / "bf16"), device="cpu")
    assert loaded.inference_precision == "bf16"


def test_without_native_bf16_float32_and_one_warning(fitted, monkeypatch):
    monkeypatch.setattr(classifier, "native_bf16", lambda device: False)
    base, X = fitted
    clf = twin(base, inference_precision="bf16")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        proba = clf.predict_proba(X)
        clf.predict(X)
        clf.decision_function(X)
    messages = [str(w.message) for w in caught if "inference_precision" in str(w.message)]
    assert len(messages) == 1, messages
    assert "does not compute bfloat16 natively; predicting in float32" in messages[0]
    assert caught[0].filename == __file__  # at the user's call
    np.testing.assert_array_equal(proba, base.predict_proba(X))


def test_native_bf16_check():
    assert classifier.native_bf16("meta") is False
    cpu = classifier.native_bf16("cpu")
    assert cpu == (torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    if not torch.cuda.is_available():
        assert classifier.native_bf16("cuda") is False


def test_threads_do_not_share_the_context(fitted, native):
    """Autocast is thread-local: a bf16 prediction in one thread leaves another's float32
    predictions exact, and the module is never changed."""
    base, X = fitted
    bf16 = twin(base, inference_precision="bf16")
    expected = base.predict_proba(X)
    results, errors = [], []

    def run(clf):
        try:
            for _ in range(3):
                results.append((clf is base, clf.predict_proba(X)))
        except Exception as error:  # pragma: no cover - reported below
            errors.append(error)

    threads = [threading.Thread(target=run, args=(c,)) for c in (base, bf16, base, bf16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    for exact, proba in results:
        if exact:
            np.testing.assert_array_equal(proba, expected)
        else:
            np.testing.assert_allclose(proba, expected, atol=0.03)
    assert {p.dtype for p in base.module_.parameters()} == {torch.float32}


@pytest.fixture(scope="module", params=["BcosSimpleViTClassifier", "ViTClassifier"])
def fitted_vit(request):
    import interpretable
    from interpretable.datasets import load_digits_images

    X, y = load_digits_images(return_X_y=True)
    options = dict(max_epochs=2, batch_size=32, random_state=0, device="cpu")
    if request.param == "BcosSimpleViTClassifier":
        options["architecture"] = dict(dim=16, depth=1, heads=2, mlp_dim=16, patch_size=4)
    else:
        options.update(patch_size=4, embed_dim=16, depth=1, num_heads=2)
    return getattr(interpretable, request.param)(**options).fit(X[:96], y[:96]), X[96:128]


def test_vision_transformers(fitted_vit, native, tmp_path):
    base, X = fitted_vit
    clf = twin(base, inference_precision="bf16")
    assert torch.bfloat16 in _dtypes(clf, lambda: clf.predict(X[:4]))
    p32, p16 = base.predict_proba(X), clf.predict_proba(X)
    np.testing.assert_allclose(p16.sum(axis=1), 1.0, rtol=0, atol=1e-12)
    np.testing.assert_allclose(p16, p32, atol=0.03)
    assert (p16.argmax(1) == p32.argmax(1)).mean() >= 0.9
    exact = type(base).__name__ == "BcosSimpleViTClassifier"  # the contribution maps
    for options in ({}, {"dtype": "float64"}) if exact else ({}, {"method": "gradcam"}):
        a, b = base.explain(X[:4], **options), clf.explain(X[:4], **options)
        assert np.array_equal(a.values, b.values) and np.array_equal(a.logit, b.logit)
        assert torch.bfloat16 not in _dtypes(clf, lambda o=options: clf.explain(X[:2], **o))
    if exact:
        assert clf.explain(X[:4], dtype="float64").completeness_error.max() <= 1e-9
    loaded = type(base).load(base.save(tmp_path / "m"), device="cpu")
    assert loaded.inference_precision == "float32"
    loaded.set_params(inference_precision="bf16")  # after load
    np.testing.assert_array_equal(loaded.predict_proba(X), p16)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda(fitted, tmp_path):
    """On CUDA: the support check is torch's for the device, and bf16 predictions (autocast
    on CUDA where the GPU computes bfloat16) agree with float32; explanations unchanged."""
    base, X = fitted
    gpu = BcosTextClassifier.load(base.save(tmp_path / "m"), device="cuda")
    with torch.cuda.device(0):
        expected = torch.cuda.is_bf16_supported(including_emulation=False)
    assert classifier.native_bf16("cuda") == classifier.native_bf16("cuda:0") == expected
    bf16 = twin(gpu, inference_precision="bf16")
    with warnings.catch_warnings():
        warnings.simplefilter("error" if expected else "ignore")
        proba = bf16.predict_proba(X)
    if expected:
        assert torch.bfloat16 in _dtypes(bf16, lambda: bf16.predict(X[:4]))
    np.testing.assert_allclose(proba, gpu.predict_proba(X), atol=0.03)
    a, b = gpu.explain(X[:4], dtype="float64"), bf16.explain(X[:4], dtype="float64")
    for u, v in zip(_rows(a.values), _rows(b.values), strict=True):
        assert np.array_equal(u, v)
