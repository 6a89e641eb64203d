"""
SEAT on Rotten Tomatoes: revise attention, explain, score stability
===================================================================

1. fits a vanilla RNN attention model (GloVe-50 init) on 4,000 review snippets, then SEAT on
   top of it (objective (6): prediction closeness, top-4 overlap, robustness to attention
   perturbations);
2. shows vanilla attention w next to the SEAT attention w~ and writes an HTML heat map;
3. compares both with the faithfulness and stability metrics;
4. picks SEAT's lambda_stability by grid search on F1, reporting sufficiency next to it.

Not run when the documentation is built (about 2 minutes on 2 CPU cores); run it with::

    python examples/seat.py
"""
import numpy as np
import pandas as pd
import torch
from sklearn.frozen import FrozenEstimator
from sklearn.model_selection import GridSearchCV, train_test_split

from interpretable import SEATClassifier
from interpretable.datasets import load_rotten_tomatoes
from interpretable.estimators.seat import SEAT, Vanilla
from interpretable.metrics import (
    comprehensiveness,
    embedding_stability,
    make_explanation_scorer,
    sufficiency,
    top_k_overlap,
    word_stability,
)
from interpretable.preprocessing import SynonymSubstitution

torch.set_num_threads(1)
rt = load_rotten_tomatoes()
X_train, X_test, y_train, y_test = train_test_split(rt.data, rt.target, test_size=0.2,
                                                    stratify=rt.target, random_state=0)
X_train, y_train, X_test, y_test = X_train[:4000], y_train[:4000], X_test[:300], y_test[:300]

common = dict(encoder="rnn", embeddings="glove-50", hidden_size=64, lr=5e-3, random_state=0)
vanilla = SEATClassifier(variant=Vanilla(), max_epochs=3, **common).fit(X_train, y_train)
seat = SEATClassifier(variant=SEAT(k=4, lambda_topk=10.0, lambda_stability=10.0, pgd_radius=0.1,
                                   epochs=3, lr=1e-2),
                      base_estimator=FrozenEstimator(vanilla), **common).fit(X_train, y_train)
print("SEAT training diagnostics:", seat.fit_diagnostics_)

reviews = ["A gorgeous, witty and heartfelt film.", "Dull, lifeless and far too long."]
w, w_tilde = seat.explain(reviews, method="vanilla"), seat.explain(reviews)
table = w_tilde.to_frame()[["sample", "token", "prediction"]]
table.insert(2, "vanilla_w", np.concatenate(w.values))
table.insert(3, "seat_w", np.concatenate(w_tilde.values))
print(table.round(3).to_string(index=False))
with open("seat_attention.html", "w") as f:
    f.write(w.to_html() + "\n" + w_tilde.to_html())
print("heat maps written to seat_attention.html")

synonyms = SynonymSubstitution(n_words=1, random_state=0).fit()
rows = {}
for name, clf in [("vanilla", vanilla), ("seat", seat)]:
    rows[name] = {
        "accuracy": clf.score(X_test, y_test),
        "comprehensiveness": comprehensiveness(clf, X_test).summary["aopc"],
        "sufficiency": sufficiency(clf, X_test).summary["aopc"],
        "embedding_tvd": embedding_stability(clf, X_test, radius=1e-3).summary["mean_tvd"],
        "word_jsd": word_stability(clf, X_test, synonyms).summary["mean_jsd"],
        "top4_overlap": top_k_overlap(vanilla.explain(X_test), clf.explain(X_test), 4).mean(),
    }
print(pd.DataFrame(rows).T.to_string(float_format=lambda x: f"{x:.4g}"))

# inside a search each candidate fits its own vanilla model on its training folds (an unfitted
# base_estimator is cloned and fitted first), so no fold sees the vanilla model's training data
search = GridSearchCV(
    SEATClassifier(variant=SEAT(epochs=2, lr=1e-2),
                   base_estimator=SEATClassifier(variant=Vanilla(), max_epochs=3, **common),
                   **common),
    {"variant__lambda_stability": [1.0, 10.0]}, cv=2, refit="f1",
    scoring={"f1": "f1_macro", "sufficiency": make_explanation_scorer("sufficiency")})
search.fit(X_train[:1500], y_train[:1500])
print(pd.DataFrame(search.cv_results_)[["param_variant__lambda_stability", "mean_test_f1",
                                        "mean_test_sufficiency"]].to_string(index=False))
