"""Property-based fuzzing of every public entry point of every estimator.

Each conformance case is fitted once per module; Hypothesis then throws inputs at its inference
and explanation methods. Every call either gives a documented, consistent result
(probabilities of each sample sum to 1, predictions are the most probable classes, explanations
hold one row of values per sample and are complete where exact, the caller's inputs and the
model unchanged) or raises a ``ValueError`` / ``TypeError`` / ``OSError`` with a message;
anything else (another exception type, a crash) fails.
"""

import copy
import math
import pickle

import numpy as np
import pytest
import torch
from hypothesis import event, given, strategies as st
from hypothesis.control import currently_in_test_context

from fuzz.conftest import examples, fixed_seed

#: cheap options of the slower explanation methods (the methods are checked, not their
#: defaults' cost)
CHEAP = {"integrated_gradients": {"n_steps": 4}, "smoothgrad": {"nt_samples": 2},
         "smoothgrad_integrated_gradients": {"nt_samples": 2, "n_steps": 4},
         "gradient_shap": {"n_samples": 2}}


DOCUMENTED = (ValueError, TypeError, OSError)

# ---------------------------------------------------------------------------- strategies
#: any code point: surrogates, controls, right-to-left, combining marks, private use, ...
ANY_CHAR = st.characters(exclude_categories=())
SPECIAL_TEXTS = st.sampled_from([
    "", " ", "\t\n", "\x00", "\u200b", "\ufeff", "\udce9", "caf\udce9", "\u202egreat\u202c",
    "שלום great", "e\u0301" * 300, "great " * 400, "\U0001f600 awful", "[CLS] [SEP] [PAD]",
    "##s", "x" * 3000])
TEXTS = st.one_of(st.text(ANY_CHAR, max_size=40), SPECIAL_TEXTS,
                  st.text(st.sampled_from("great awful the movie ."), max_size=80))


def _texts(kind):
    if kind == "pairs":
        return st.lists(st.tuples(TEXTS, TEXTS), max_size=3)
    if kind == "sequences":
        return st.lists(st.lists(st.sampled_from(["(", ")", "[", "]", "x", "", "\udce9"]),
                                 max_size=20), max_size=3)
    if kind == "chars":  # language models explain every step of a text: quadratic in length
        return st.lists(TEXTS.filter(lambda text: len(text) <= 200), max_size=3)
    return st.lists(TEXTS, max_size=3)


def _images(draw, shape, channels):
    """Batches around the fitted images: half as fitted, half with other sizes, channel
    layouts, dtypes, NaN / inf pixels or no image at all."""
    rng = np.random.RandomState(draw(st.integers(0, 2**16)))
    layout = () if channels == 1 else (channels,)
    if draw(st.booleans()):  # valid images
        X = rng.rand(draw(st.integers(1, 3)), *shape, *layout).astype(np.float32)
        return draw(st.sampled_from([X, list(X), (X * 255).astype(np.uint8)]))
    n = draw(st.integers(0, 3))
    h, w = draw(st.sampled_from([shape, (shape[0] + 1, shape[1]), (1, 1),
                                 (2 * shape[0], shape[1])]))
    layout = draw(st.sampled_from([layout, (1,), (3,), (4,), ("first",)]))
    dims = (n, 3, h, w) if layout == ("first",) else (n, h, w, *layout)
    dtype = draw(st.sampled_from([np.float32, np.float64, np.uint8, np.int64, np.float16,
                                  bool]))
    X = rng.rand(*dims)
    if dtype in (np.uint8, np.int64):
        X = (X * 255).astype(dtype)
    else:
        X = X.astype(dtype)
        if X.size and dtype is not bool and draw(st.booleans()):
            X.flat[draw(st.integers(0, X.size - 1))] = draw(
                st.sampled_from([np.nan, np.inf, -np.inf, 1.5, -0.5]))
    return draw(st.sampled_from([X, list(X)]))


@st.composite
def inputs(draw, kind, est):
    if kind == "image":
        return _images(draw, tuple(est.image_shape_), est.n_channels_)
    return draw(_texts(kind))


# ---------------------------------------------------------------------------- checks
def _snapshot(est):
    return {k: v.clone() for k, v in est.module_.state_dict().items()}, \
        set(vars(est)), [None if p.grad is None else p.grad.clone()
                         for p in est.module_.parameters()]


def _unchanged(est, snapshot):
    tensors, attributes, grads = snapshot
    now = est.module_.state_dict()
    assert now.keys() == tensors.keys()
    assert all(torch.equal(now[k], v) for k, v in tensors.items()), "the model changed"
    assert set(vars(est)) == attributes, "attributes added or removed"
    for p, grad in zip(est.module_.parameters(), grads, strict=True):
        assert (p.grad is None) == (grad is None), "gradients left"
        assert grad is None or torch.equal(p.grad, grad), "gradients changed"


def _same(a, b):
    """Equal inputs, arrays and NaN included."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))


def _call(fn, *args, **kwargs):
    """``fn``'s result, or None when it raised a documented error with a message."""
    try:
        result = fn(*args, **kwargs)
    except DOCUMENTED as exc:
        assert str(exc).strip(), f"{type(exc).__name__} without a message"
        _event(f"{fn.__name__}: {type(exc).__name__}")
        return None
    _event(f"{fn.__name__}: a result")
    return result


def _event(text):
    """What the call gave, in Hypothesis' statistics (``--hypothesis-show-statistics``)."""
    if currently_in_test_context():
        event(text)


# ---------------------------------------------------------------------------- properties
@fixed_seed
@examples(10)
@given(data=st.data())
def test_inference_is_consistent_or_refused(fitted, data):
    case, est, _ = fitted
    X = data.draw(inputs(case.kind, est), label="X")
    before, snapshot = copy.deepcopy(X), _snapshot(est)
    if case.kind in ("text", "pairs", "image"):  # classifiers
        proba = _call(est.predict_proba, X)
        if proba is not None:
            n = len(X)
            assert proba.shape == (n, len(est.classes_)) and np.isfinite(proba).all()
            np.testing.assert_allclose(proba.sum(1), 1, atol=1e-5)
            predicted = est.predict(X)
            np.testing.assert_array_equal(predicted, est.classes_[proba.argmax(1)])
            decision = est.decision_function(X)
            assert len(decision) == n and np.isfinite(decision).all()
            assert 0 <= est.score(X, predicted) <= 1 and est.score(X, predicted) == 1
    else:
        _call(est.predict_proba, X) if hasattr(est, "predict_proba") else None
        _call(est.predict, X)
    assert _same(X, before), "the caller's input changed"
    _unchanged(est, snapshot)


@fixed_seed
@examples(10)
@given(data=st.data())
def test_explanations_are_consistent_or_refused(fitted, data):
    case, est, _ = fitted
    X = data.draw(inputs(case.kind, est), label="X")
    method = data.draw(st.sampled_from(list(est.explain_methods)), label="method")
    options = CHEAP.get(method, {})
    before, snapshot = copy.deepcopy(X), _snapshot(est)
    explanation = _call(est.explain, X, method=method, **options)
    if explanation is not None:
        assert len(explanation) == len(X)
        frame = explanation.to_frame()
        assert frame is not None
        html = explanation.to_html()
        assert isinstance(html, str) and html
        error = explanation.completeness_error
        if error is not None and method == "inherent":
            assert np.all(np.asarray(error)[np.isfinite(error)] < 1e-3), error
    assert _same(X, before), "the caller's input changed"
    _unchanged(est, snapshot)


TARGETS = st.one_of(st.none(), st.integers(-2, 5), st.text(max_size=3), st.booleans(),
                    st.just("pos"), st.just([0, 1]), st.floats(allow_nan=True))


@fixed_seed
@examples(5)
@given(target=TARGETS)
def test_explain_targets_are_labels_or_refused(fitted, target):
    case, est, X_test = fitted
    snapshot = _snapshot(est)
    explanation = _call(est.explain, X_test[:2], target)
    if explanation is not None:
        assert len(explanation) == len(X_test[:2])
    _unchanged(est, snapshot)


ODD_VALUES = st.one_of(st.none(), st.integers(-3, 3), st.floats(allow_nan=True),
                       st.text(max_size=5), st.booleans(), st.just([]), st.just({}),
                       st.just("auto"))


@fixed_seed
@examples(6)
@given(data=st.data())
def test_set_params_after_fit_then_use_is_consistent_or_refused(fitted, data):
    case, est, X_test = fitted
    name = data.draw(st.sampled_from(sorted(est.get_params(deep=False))), label="name")
    value = data.draw(ODD_VALUES, label="value")
    changed = copy.deepcopy(est)
    if _call(changed.set_params, **{name: value}) is None:
        return
    result = _call(changed.predict, X_test[:2])
    if result is not None:
        assert len(result) == len(X_test[:2])
    if case.explains and _call(changed.explain, X_test[:1]) is not None:
        pass


def test_plot_of_every_method(fitted):
    """One plot per method (figures are slow for Hypothesis): any figure or a documented
    error."""
    import matplotlib.pyplot as plt

    case, est, X_test = fitted
    for method in est.explain_methods:
        options = CHEAP.get(method, {})
        explanation = _call(est.explain, X_test[:2], method=method, **options)
        if explanation is not None and hasattr(explanation, "plot"):
            _call(explanation.plot)
        plt.close("all")


# ---------------------------------------------------------------------------- round trips
def _explain(est, X, method):
    options = CHEAP.get(method, {})
    try:
        return est.explain(X, method=method, **options).to_frame()
    except ValueError as exc:
        return f"ValueError: {exc}"


@pytest.mark.parametrize("trip", ["pickle", "save/load"])
def test_round_trips_are_bit_identical(fitted, trip, tmp_path):
    case, est, X_test = fitted
    if trip == "pickle":
        other = pickle.loads(pickle.dumps(est))
    else:
        est.save(tmp_path / "model")
        other = type(est).load(tmp_path / "model")
    X = X_test[:3]
    if hasattr(est, "predict_proba"):
        np.testing.assert_array_equal(other.predict_proba(X), est.predict_proba(X))
    np.testing.assert_array_equal(other.predict(X), est.predict(X))
    fitted_module, rebuilt = dict(est.module_.named_parameters()), \
        dict(other.module_.named_parameters())
    assert {n: p.requires_grad for n, p in rebuilt.items()} == \
        {n: p.requires_grad for n, p in fitted_module.items()}
    assert all(torch.equal(rebuilt[n], p) for n, p in fitted_module.items())
    for method in est.explain_methods if case.explains else ():
        expected, got = _explain(est, X, method), _explain(other, X, method)
        if isinstance(expected, str):
            assert got == expected, method
        else:
            assert not isinstance(got, str) and got.equals(expected), method
