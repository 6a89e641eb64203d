"""Hypothesis profiles of the fuzz suite and the fitted models it fuzzes.

* ``ci`` (the default): few examples per property, a fixed seed (``fixed_seed``), a deadline
  per example, the example database of this folder (``hypothesis-db``, committed: what any run
  found once is replayed first by every run).
* ``long`` (``HYPOTHESIS_PROFILE=long``, ``make fuzz``): ``FUZZ_EXAMPLES`` examples per
  property (default 300), random seeds, the same database; ``make fuzz`` bounds the whole run
  in time (``FUZZ_TIME``).
"""

import os
from pathlib import Path

import pytest
from conformance.cases import CASES
from hypothesis import HealthCheck, seed, settings
from hypothesis.database import DirectoryBasedExampleDatabase

DATABASE = DirectoryBasedExampleDatabase(Path(__file__).parent / "hypothesis-db")
_COMMON = dict(database=DATABASE, print_blob=True,
               suppress_health_check=[HealthCheck.function_scoped_fixture,
                                      HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", max_examples=8, deadline=30000, **_COMMON)
settings.register_profile("long", max_examples=int(os.environ.get("FUZZ_EXAMPLES", 300)),
                          deadline=60000, **_COMMON)
PROFILE = os.environ.get("HYPOTHESIS_PROFILE", "ci")
settings.load_profile(PROFILE)


def fixed_seed(test):
    """The ci profile draws the same examples on every run (after the database's)."""
    return seed(20261128)(test) if PROFILE == "ci" else test


def examples(n):
    """``n`` examples under ci (the long profile's count otherwise)."""
    return settings(max_examples=n) if PROFILE == "ci" else (lambda test: test)


@pytest.fixture(scope="module", params=CASES, ids=str)
def fitted(request):
    """``(case, fitted estimator, X_test)`` for every conformance case, fitted once per
    module."""
    case = request.param
    X, y, X_test = case.data()
    est = case.make()
    est.fit(X, y) if y is not None else est.fit(X)
    return case, est, X_test
