"""Fixtures shared by the conformance tests."""

import pytest

from conformance.cases import CASES


@pytest.fixture(scope="module", params=CASES, ids=str)
def fitted_case(request):
    """``(case, fitted estimator, X, y, X_test)`` for every case, fitted once per module."""
    case = request.param
    X, y, X_test = case.data()
    est = case.make()
    est.fit(X, y) if y is not None else est.fit(X)
    return case, est, X, y, X_test
