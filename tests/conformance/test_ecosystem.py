"""Explanation scorers inside a parallel grid search (joblib workers pickle the estimator)."""

import numpy as np
from sklearn.model_selection import GridSearchCV

from conformance.cases import _sentiment
from interpretable import DiversityLSTMClassifier
from interpretable.metrics import make_explanation_scorer, make_stability_scorer


def test_grid_search_n_jobs_2_with_explanation_scorers():
    X, y, _ = _sentiment(n=64)
    search = GridSearchCV(
        DiversityLSTMClassifier(embed_dim=8, hidden_size=8, max_epochs=2, random_state=0),
        {"cell": ["vanilla", "orthogonal"]},
        scoring={
            "accuracy": "accuracy",
            "sufficiency": make_explanation_scorer("sufficiency"),
            "stability": make_stability_scorer("embedding", radius=1e-3),
        },
        refit="accuracy", cv=2, n_jobs=2,
    ).fit(X, y)
    for key in ("mean_test_accuracy", "mean_test_sufficiency", "mean_test_stability"):
        assert np.isfinite(search.cv_results_[key]).all(), key
    assert search.best_estimator_.cell in ("vanilla", "orthogonal")
    assert search.best_estimator_.explain(X[:2]).to_frame()["attribution"].notna().all()
