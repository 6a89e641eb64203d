"""
B-cos ViT on MNIST: fit, exact explanations, per-head split, metrics
====================================================================

Fits a B-cos ViT on MNIST digits, checks that its contribution maps are complete, splits them
exactly per attention head, explains the same model post hoc (attention rollout) and scores
both with the grid pointing game and pixel perturbation. Not run when the documentation is
built (a few minutes on 2 CPU cores); run it with::

    python examples/bcos_vit.py

It writes ``bcos_vit_contributions.png`` (contribution maps) where it is run. The gallery's
:ref:`sphx_glr_auto_examples_plot_bcos_contributions.py` shows the same views in seconds.
"""
import numpy as np
import torch

from interpretable import BcosViTClassifier
from interpretable.metrics import grid_pointing_game, pixel_perturbation
from interpretable.reproduce.bcos_vit import split

torch.set_num_threads(1)  # predictable on shared machines; raise on a free one
X_train, X_test, y_train, y_test = split()
clf = BcosViTClassifier(patch_size=4, embed_dim=64, depth=4, num_heads=4,
                        attention_prior="multiplicative", max_epochs=3, lr=2e-3, batch_size=32,
                        random_state=0)
clf.fit(X_train[:2000], y_train[:2000])
print(f"test accuracy: {clf.score(X_test, y_test):.3f}")

# exact contribution maps W(x)ᵀ ⊙ x: they sum to the logit minus the fixed bias
exp = clf.explain(X_test[:8])
print("completeness error per sample:", np.array2string(exp.completeness_error, precision=2))
exp.plot().savefig("bcos_vit_contributions.png")

# per (layer, head) contributions, summing exactly to the explanation
heads = clf.explain(X_test[:2], by="head")
table = heads.to_frame(by_component=True)
print(table.groupby(["sample", "component"])["attribution"].sum().unstack(0).round(3))

# a post-hoc baseline on the same model, and the two metrics
rollout = clf.explain(X_test[:8], method="rollout")
for method in ("inherent", "rollout"):
    loc = grid_pointing_game(clf, X_test, y_test, n_grids=20, method=method)
    abc = pixel_perturbation(clf, X_test, y_test, method=method, n_samples=50)
    print(f"{method:>9}: pointing game {loc:.3f}, area between curves {abc:.3f}")
