"""
B-cos contribution maps: exact, per head, and against post-hoc methods
======================================================================

A B-cos ViT computes its logit as ``W(x)ᵀ x + b``: the contribution map ``W(x) ⊙ x`` is the
model's own computation, so the pixels' contributions plus the bias give back the logit
(``completeness_error``). This example fits a tiny B-cos ViT on MNIST digits (seconds on one
CPU thread), draws its contribution maps, splits them exactly per attention head, and compares
them with post-hoc methods on the same model with a pixel-perturbation curve.
"""

# %%
# Fit a tiny model
# ----------------
# ``patch_size=7`` gives 4 × 4 tokens for a 28 px digit; 3 epochs on 2,000 digits. Raise
# ``embed_dim``, ``depth`` and ``max_epochs`` for a better model.
import matplotlib.pyplot as plt
import numpy as np

from interpretable import BcosViTClassifier
from interpretable.datasets import load_mnist_5k

X, y = load_mnist_5k(return_X_y=True)              # (5000, 28, 28) floats in [0, 1]
order = np.random.RandomState(0).permutation(len(X))
train, test = order[:2000], order[4000:]
clf = BcosViTClassifier(patch_size=7, embed_dim=32, depth=2, num_heads=2, max_epochs=3,
                        random_state=0).fit(X[train], y[train])
print(f"test accuracy: {clf.score(X[test], y[test]):.3f}")

# %%
# Exact contribution maps
# -----------------------
# ``plot()`` draws the input, the contributions to the explained logit (red raises it, blue
# lowers it) and B-cos's color view of ``W(x)``.
exp = clf.explain(X[test[:3]])
print("completeness error per image:", np.array2string(exp.completeness_error, precision=2))
exp.plot()

# %%
# The tidy table: one row per pixel, with its row and column, the explained class and the
# prediction.
exp.to_frame().head()

# %%
# Per attention head
# ------------------
# ``by="head"`` splits every map exactly into the contributions that flow through each
# (layer, head) and the rest of the network; the parts sum to the map above.
heads = clf.explain(X[test[:1]], by="head")
heads.plot("heads")

# %%
# Post-hoc methods on the same model
# ----------------------------------
# Every estimator lists its methods, the inherent one first; ``method=`` picks another.
print(clf.explain_methods)
clf.explain(X[test[:3]], method="integrated_gradients").plot("contributions")

# %%
# A faithfulness curve
# --------------------
# :func:`~interpretable.metrics.pixel_perturbation` removes the most (and the least) important
# pixels first and follows the probability of the true class: the larger the area between the
# two curves, the better the map ranks the pixels. 60 images here; the reproduction
# (``python -m interpretable reproduce bcos-vit``) uses 250 and a larger model.
# (gallery cells import what they introduce)
from interpretable.metrics import pixel_perturbation  # noqa: E402

fig, ax = plt.subplots(figsize=(5, 3.5))
for method in ("inherent", "integrated_gradients", "rollout"):
    area, curves = pixel_perturbation(clf, X[test], y[test], method=method, n_samples=60,
                                      return_curves=True)
    line, = ax.plot(curves["fractions"], curves["most_first"], label=f"{method}: {area:.3f}")
    ax.plot(curves["fractions"], curves["least_first"], ls="--", color=line.get_color())
ax.set(xlabel="fraction of pixels removed", ylabel="probability of the true class (relative)",
       title="most (solid) / least (dashed) important first")
ax.legend(title="area between curves", fontsize=8)
fig.tight_layout()
