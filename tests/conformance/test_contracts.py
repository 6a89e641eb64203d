"""sklearn and project contracts, run on every estimator in ``cases.CASES``."""

import pickle

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils import estimator_checks as ec

from conformance.cases import CASES

# sklearn checks that need no data: they apply to every estimator.
DATA_FREE_CHECKS = [
    ec.check_no_attributes_set_in_init,
    ec.check_parameters_default_constructible,
    ec.check_get_params_invariance,
    ec.check_set_params,
    ec.check_estimator_cloneable,
    ec.check_estimator_repr,
    ec.check_mixin_order,
    ec.check_do_not_raise_errors_in_init_or_set_params,
]
# sklearn's data checks feed 2-d numeric arrays (fit2d_*, nan_inf, dtypes, sparse, sample
# weights, ...). Our estimators take texts, character strings or images, so those checks do
# not apply as written (test_sklearn_checks.py runs them as declared expected failures); their
# intent (empty data, NaN, wrong dims, pickling, idempotent fit, unfitted errors, input not
# mutated) is covered by the tests below, test_bad_input.py and test_sklearn_checks.py.

PUBLIC_METHODS = ["predict", "predict_proba", "score", "explain", "save"]



@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("check", DATA_FREE_CHECKS, ids=lambda c: c.__name__)
def test_sklearn_data_free_checks(case, check):
    est = case.make()
    check(type(est).__name__, est)


@pytest.mark.parametrize("case", CASES, ids=str)
def test_not_fitted_errors(case):
    est = case.make()
    X, y, X_test = case.data()
    for name in PUBLIC_METHODS:
        method = getattr(est, name, None)
        if method is None:
            continue
        args = {"score": (X_test, y[: len(X_test)] if y is not None else None),
                "save": ("unused",)}.get(name, (X_test,))
        args = tuple(a for a in args if a is not None)
        with pytest.raises(NotFittedError):
            method(*args)


def test_params_unchanged_and_fitted_attributes(fitted_case):
    case, est, X, y, X_test = fitted_case
    fresh = case.make()
    assert _same_params(est, fresh)
    learned = [k for k in vars(est) if k not in fresh.get_params() and not k.startswith("__")]
    assert learned and all(k.endswith("_") or k.startswith("_") for k in learned), learned


def _same_params(a, b):
    pa, pb = a.get_params(), b.get_params()
    return pa.keys() == pb.keys() and all(
        np.array_equal(pa[k], pb[k]) if isinstance(pa[k], np.ndarray) else pa[k] == pb[k]
        for k in pa
    )


def _explain_arrays(exp):
    for name in ("values",):
        if hasattr(exp, name):
            value = getattr(exp, name)
            return (np.concatenate([np.ravel(v) for v in value]) if isinstance(value, list)
                    else value)
    raise AssertionError("explanation without attributions")


def test_refit_same_random_state_is_identical(fitted_case):
    case, est, X, y, X_test = fitted_case
    again = clone(est)
    again.fit(X, y) if y is not None else again.fit(X)
    np.testing.assert_array_equal(again.predict_proba(X_test), est.predict_proba(X_test))
    if case.explains:
        np.testing.assert_array_equal(
            _explain_arrays(again.explain(X_test, **case.explain_kwargs)),
            _explain_arrays(est.explain(X_test, **case.explain_kwargs)),
        )


def test_pickle_and_save_load_round_trip(fitted_case, tmp_path):
    case, est, X, y, X_test = fitted_case
    expected = est.predict_proba(X_test)
    restored = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(restored.predict_proba(X_test), expected)
    loaded = type(est).load(est.save(tmp_path / "model"))
    np.testing.assert_array_equal(loaded.predict_proba(X_test), expected)
    if case.explains:
        np.testing.assert_array_equal(
            _explain_arrays(loaded.explain(X_test, **case.explain_kwargs)),
            _explain_arrays(est.explain(X_test, **case.explain_kwargs)),
        )
    assert not any(p.suffix in (".pkl", ".pickle", ".pt") for p in (tmp_path / "model").iterdir())


def test_truncated_weights_fail_clearly(fitted_case, tmp_path):
    case, est, *_ = fitted_case
    path = est.save(tmp_path / "model")
    weights = next(path.glob("weights*.safetensors"))  # the file config.json names
    weights.write_bytes(weights.read_bytes()[: len(weights.read_bytes()) // 2])
    with pytest.raises(ValueError, match="corrupt"):
        type(est).load(path)
