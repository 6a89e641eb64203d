"""scikit-learn's estimator checks (``sklearn.utils.estimator_checks``), all of them, on every
estimator of ``cases.CASES`` and on BertTextClassifier.

The estimators' tags say truthfully that their inputs are texts, symbol sequences or images,
not 2-d arrays (``input_tags.two_d_array=False``). For such an estimator scikit-learn yields no
check at all (one ``SkipTestWarning``); here the checks are collected as for a 2-d estimator and
run on the estimator as it is. A check that fails for a reason that is no bug is declared, with
its reason, in its family's ``_expected_failed_checks`` (next to the class) and marked as a
strict ``xfail``: a declared check that starts to pass fails the run, and so does a declared
name that is no check. Nearly all of those checks fit on the 2-d numeric arrays they generate,
which the estimators refuse first; what they verify is checked on the estimators' own inputs by
``test_what_the_declared_checks_verify_on_the_estimators_own_inputs`` below, test_bad_input.py
(empty, NaN, dtypes, one class), test_contracts.py (pickling, parameters left unchanged,
identical refits) and test_model_contract.py (pure predict and explain).
"""

from functools import partial

import numpy as np
import pandas as pd
import pytest
from scipy import sparse
from sklearn.base import clone
from sklearn.exceptions import SkipTestWarning
from sklearn.metrics import accuracy_score
from sklearn.model_selection import KFold, cross_val_score
from sklearn.utils import get_tags
from sklearn.utils.estimator_checks import estimator_checks_generator

from conformance.cases import _TINY_BERT, CASES, Case, _sentiment


def _bert_text():
    from interpretable import BertTextClassifier

    return BertTextClassifier(checkpoint=dict(_TINY_BERT), max_length=24, lr=1e-2, max_epochs=2,
                              batch_size=16, random_state=0)


CHECKED = [*CASES, Case("BertTextClassifier", _bert_text, _sentiment, "text")]


def _check_name(check) -> str:
    while isinstance(check, partial):
        check = check.func
    return check.__name__


def _collected(estimator, **options):
    """What ``estimator_checks_generator`` yields for ``estimator`` if its tags allowed 2-d
    arrays (the other tags as they are)."""
    tags = get_tags(estimator)
    tags.input_tags.two_d_array = True
    probe = clone(estimator)
    probe.__sklearn_tags__ = lambda: tags
    return list(estimator_checks_generator(probe, legacy=True, **options))


def _params():
    for case in CHECKED:
        est = case.make()
        for item in _collected(est, expected_failed_checks=est._expected_failed_checks,
                               mark="xfail", xfail_strict=True):
            (_, check), marks = (item.values, item.marks) if hasattr(item, "marks") \
                else (item, ())  # pytest.param(..., marks=xfail) for the declared ones
            options = "".join(f"-{k}={v}" for k, v in check.func.keywords.items()) \
                if isinstance(check.func, partial) else ""
            yield pytest.param(case, check, marks=marks,
                               id=f"{case.name}-{_check_name(check)}{options}")


@pytest.mark.parametrize("case, check", list(_params()))
def test_sklearn_check(case, check, request):
    try:
        check(case.make())
    except Exception as exc:
        if request.node.get_closest_marker("xfail") is None:
            raise
        # a declared failure is reported by its reason and error, without the traceback
        # through the check (formatting ~800 of them would take minutes)
        raise AssertionError(f"{type(exc).__name__}: {exc}") from None


@pytest.mark.parametrize("case", CHECKED, ids=str)
def test_sklearn_alone_would_skip_the_checks(case):
    """Why the checks are collected as above: scikit-learn runs none on non-tabular inputs
    (when it does, ``_collected`` is no longer needed)."""
    est = case.make()
    with pytest.warns(SkipTestWarning, match="requires\\s+input"):
        names = [_check_name(c) for _, c in estimator_checks_generator(est)]
    assert names == ["check_estimator_cloneable"]


@pytest.mark.parametrize("case", CHECKED, ids=str)
def test_declared_failures_are_checks_it_runs(case):
    est = case.make()
    declared = est._expected_failed_checks
    assert declared and all(isinstance(r, str) and r for r in declared.values())
    assert set(declared) <= {_check_name(c) for _, c in _collected(est)}


# ------------------------------------------------------------------ the same, on their inputs
def _fit(est, X, y, **kwargs):
    return est.fit(X, y, **kwargs) if y is not None else est.fit(X, **kwargs)


def _outputs(est, X):
    """predict / predict_proba / decision_function of ``X``: arrays, or lists of arrays (one
    per sequence)."""
    return {name: getattr(est, name)(X) for name in ("predict", "predict_proba",
                                                     "decision_function") if hasattr(est, name)}


def _rows(X, index):
    return X[list(index)] if isinstance(X, np.ndarray) else [X[i] for i in index]


def _assert_same(a, b, tolerance=1e-5):
    """Equal predictions, probabilities and logits within ``tolerance`` (float32 batch
    effects)."""
    assert a.keys() == b.keys()
    for name in a:
        pairs = (v if isinstance(v, list) else [v] for v in (a[name], b[name]))
        for x, y in zip(*pairs, strict=True):
            if name == "predict":
                np.testing.assert_array_equal(x, y, err_msg=name)
            else:
                np.testing.assert_allclose(x, y, rtol=tolerance, atol=tolerance, err_msg=name)


@pytest.mark.parametrize("case", CHECKED, ids=str)
def test_what_the_declared_checks_verify_on_the_estimators_own_inputs(case):
    """check_estimators_fit_returns_self, check_fit_idempotent,
    check_methods_sample_order_invariance, check_methods_subset_invariance,
    check_estimator_sparse_*, check_readonly_memmap_input, check_f_contiguous_array_estimator,
    the sample-weight checks (list, Series, ones, zeros, shape, not overwritten),
    check_supervised_y_2d and check_classifiers_regression_target, on texts, images and symbol
    sequences."""
    X, y, _ = case.data()
    X_copy, y_copy = (X.copy() if isinstance(X, np.ndarray) else list(X)), \
        (None if y is None else list(y))
    est = case.make()
    assert _fit(est, X, y) is est
    expected = _outputs(est, X)
    _assert_same(_outputs(_fit(est, X, y), X), expected, tolerance=0)  # idempotent
    order = np.random.RandomState(0).permutation(len(X))
    shuffled = _outputs(est, _rows(X, order))
    _assert_same(shuffled, {k: _rows(v, order) for k, v in expected.items()})
    _assert_same(_outputs(est, _rows(X, range(5))), {k: _rows(v, range(5))
                                                     for k, v in expected.items()})
    if isinstance(X, np.ndarray):  # images: read-only and Fortran-ordered arrays
        frozen = np.asfortranarray(X)
        frozen.setflags(write=False)
        _assert_same(_outputs(est, frozen), expected)
    with pytest.raises(TypeError, match="sparse"):
        _fit(clone(est), sparse.csr_matrix(np.ones((len(X), 3))), y)
    if y is None or case.kind == "sequences":
        assert (np.array_equal(X, X_copy) if isinstance(X, np.ndarray) else X_copy == X)
        return

    # classifiers: targets and sample weights
    _assert_same(_outputs(_fit(clone(est), X, y[:, None]), X), expected, tolerance=0)
    continuous = np.random.RandomState(0).uniform(size=len(X))
    with pytest.raises(ValueError, match="Unknown label type"):
        clone(est).fit(X, continuous)
    weights = np.random.RandomState(0).uniform(0.5, 1.5, size=len(X))
    weights_copy = weights.copy()
    try:
        weighted = _outputs(_fit(clone(est), X, y, sample_weight=weights), X)
    except ValueError as exc:  # ViTClassifier: its training takes no sample weights
        assert "does not support sample weights" in str(exc)
    else:
        for as_given in (list(weights), pd.Series(weights)):
            _assert_same(_outputs(_fit(clone(est), X, y, sample_weight=as_given), X), weighted,
                         tolerance=0)
        _assert_same(_outputs(_fit(clone(est), X, y, sample_weight=np.ones(len(X))), X),
                     expected, tolerance=1e-4)  # weighted and plain means round differently
    assert np.array_equal(weights, weights_copy)
    with pytest.raises(ValueError, match="zero"):
        _fit(clone(est), X, y, sample_weight=np.zeros(len(X)))
    with pytest.raises(ValueError, match="shape"):
        _fit(clone(est), X, y, sample_weight=np.ones((len(X), 1)))
    assert (np.array_equal(X, X_copy) if isinstance(X, np.ndarray) else X_copy == X)
    assert list(y) == y_copy


# ------------------------------------------------------------------ score on unseen labels
CLASSIFIERS = [c for c in CHECKED if c.kind in ("text", "pairs", "image")]


@pytest.mark.parametrize("case", CLASSIFIERS, ids=str)
def test_score_counts_labels_unseen_in_fit_as_wrong(case):
    """As ClassifierMixin.score: the accuracy of predict, a label the model never saw simply
    never predicted (sample weights as before); explain keeps refusing it as a target."""
    X, y, X_test = case.data()
    est = _fit(case.make(), X, y)
    unseen = "never seen" if y.dtype.kind in "UO" else int(y.max()) + 1
    y_test = est.predict(X_test).astype(object if isinstance(unseen, str) else int)
    y_test[:2] = unseen  # all predicted right but the first two
    assert est.score(X_test, y_test) == pytest.approx((len(X_test) - 2) / len(X_test))
    assert est.score(X_test, y_test) == accuracy_score(y_test, est.predict(X_test))
    weights = np.arange(1.0, len(X_test) + 1)
    assert est.score(X_test, y_test, sample_weight=weights) == pytest.approx(
        weights[2:].sum() / weights.sum())
    assert est.score(X_test[:2], y_test[:2]) == 0.0
    with pytest.raises(ValueError, match="not seen in fit"):
        est.explain(X_test[:1], target=unseen, **case.explain_kwargs)


def test_cross_validation_with_a_class_in_one_test_fold():
    """A class with a single sample is missing from the training folds of the fold that tests
    it: that fold counts it wrong instead of failing."""
    from interpretable import EmbeddingBagClassifier

    X, y, _ = _sentiment(30)
    X, y = X + ["the plot was fine"], np.append(y, "neutral")
    clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
    folds = KFold(3)
    scores = cross_val_score(clf, X, y, cv=folds)
    assert scores.shape == (3,) and np.all((scores >= 0) & (scores <= 1))
    train, test = list(folds.split(X))[-1]
    fitted = clone(clf).fit([X[i] for i in train], y[train])
    assert "neutral" not in fitted.classes_
    X_test, y_test = [X[i] for i in test], y[test]
    assert scores[-1] == accuracy_score(y_test, fitted.predict(X_test)) < 1.0
