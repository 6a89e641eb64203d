"""
Stability curves: how much attention and predictions move under perturbation
============================================================================

An explanation is only useful if a tiny change of the input does not change it completely.
SEAT (Stable and Explainable Attention) revises a vanilla attention model so that its
attention stays close to the vanilla one but moves less when the word embeddings are
perturbed. This example fits a tiny SEAT model on Rotten Tomatoes (seconds on one CPU
thread), perturbs the embeddings with the SEAT authors' attack at growing radii, and plots how
far the attention (Jensen-Shannon divergence) and the predictions (total variation) move, for
the vanilla attention and for SEAT's.

The model is far too small for SEAT's gains to show reliably: the reproduction
(``python -m interpretable reproduce seat``, :doc:`/reproductions`) trains on the whole
training set and reports where the paper's targets are missed.
"""

# %%
# Fit a vanilla attention model, then SEAT on top of it
# -----------------------------------------------------
import matplotlib.pyplot as plt
import numpy as np

from interpretable import SEATClassifier
from interpretable.datasets import load_rotten_tomatoes
from interpretable.estimators.seat import SEAT
from interpretable.metrics import embedding_stability

X, y = load_rotten_tomatoes(return_X_y=True)
order = np.random.RandomState(0).permutation(len(X))
train, test = order[:3000], order[-150:]
clf = SEATClassifier(encoder="rnn", embed_dim=32, hidden_size=32, max_epochs=3,
                     variant=SEAT(k=4, epochs=2), random_state=0)
clf.fit([X[i] for i in train], y[train])
X_test, y_test = [X[i] for i in test], y[test]
print(f"accuracy: {clf.score(X_test, y_test):.3f}; methods: {clf.explain_methods}")

# %%
# The two attentions of one review
# --------------------------------
# ``method="vanilla"`` explains by the vanilla model's attention ``w``, the default by SEAT's
# ``w̃``.
review = ["a gorgeous, witty and heartfelt film"]
clf.explain(review, method="vanilla")

# %%
clf.explain(review)

# %%
# Curves over the attack radius
# -----------------------------
# :func:`~interpretable.metrics.embedding_stability` with ``kind="pgd"``: ℓ∞ PGD on the
# word embeddings, ascending the loss of the gold label, within radius ``r``.
radii = [1e-3, 3e-3, 1e-2, 3e-2, 1e-1]
curves = {method: [embedding_stability(clf, X_test, radius=r, method=method, kind="pgd",
                                       y=y_test).summary for r in radii]
          for method in ("vanilla", "attention")}   # "attention": SEAT's w̃

fig, axes = plt.subplots(1, 2, figsize=(8, 3.2))
for method, summaries in curves.items():
    label = "SEAT w̃" if method == "attention" else "vanilla w"
    axes[0].plot(radii, [s["mean_jsd"] for s in summaries], marker="o", label=label)
    axes[1].plot(radii, [s["mean_tvd"] for s in summaries], marker="o", label=label)
for ax, what in zip(axes, ("attention: mean JSD", "prediction: mean TVD"), strict=True):
    ax.set(xscale="log", xlabel="attack radius r (ℓ∞)", title=what)
    ax.legend(title="attention")
fig.tight_layout()
