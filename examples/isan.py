"""
ISAN on Shakespeare: generate, explain exactly, compose, change basis
=====================================================================

1. fits an ISAN (H=96) character language model on 300k characters of the training plays and
   reports bits/char on the held-out plays;
2. explains "the king is dead" exactly: word-level contributions to every next-character
   logit, with the completeness check, and writes an HTML heat map;
3. composes a word into one affine map and advances the state with a word cache;
4. re-expresses the network in its readout basis (identical predictions) and runs the paper's
   n-gram analyses.

Not run when the documentation is built (1-3 minutes on 2 CPU cores); run it with::

    python examples/isan.py
"""
import numpy as np
import torch

from interpretable import ISANLanguageModel
from interpretable.datasets import load_shakespeare
from interpretable.metrics import input_bias_analysis, offsets_vs_bigram, readout_bias_vs_unigram

torch.set_num_threads(1)
train = load_shakespeare(split="train")[:300_000]
test = load_shakespeare(split="test")[:50_000]

lm = ISANLanguageModel(hidden_size=96, max_epochs=2, random_state=0).fit(train)
print(f"held-out bits/char: {lm.bits_per_char(test):.3f}  (score = {lm.score(test):.3f})")
print("sample:", repr(lm.generate("ROMEO:", n_chars=120, temperature=0.8, random_state=0)))

# 2. exact explanation: contributions of each word to every next-character logit
exp = lm.explain("the king is dead", target="actual", level="word")
frame = exp.to_frame()
print(frame[frame.step == frame.step.max()][["token", "target", "attribution", "prediction"]])
print(f"completeness error (relative): {exp.completeness_error.max():.1e}")
with open("isan_explanation.html", "w") as f:
    f.write(exp.to_html())

# 3. a whole word as one affine map; a word cache advances the state one word at a time
A, b = lm.compose(" king")
h = lm.transition("the")
assert np.allclose(A @ h + b, lm.transition("the king"), atol=1e-4)
cache = lm.word_cache(train, n_words=1000)
cached = lm.transition("my lord the king", cache=cache)
print("state difference with / without word cache:",
      np.abs(cached - lm.transition("my lord the king")).max())

# 4. readout basis: same predictions, dynamics split into readout / computational subspaces
basis = lm.readout_basis()
moved = lm.to_basis(basis.Q)
print("max probability change after the change of basis:",
      np.abs(moved.predict_proba(["my lord"]) - lm.predict_proba(["my lord"])).max())
_, corr = input_bias_analysis(lm, train)
print("input-bias norms vs unigram log-probability:", {k: round(v, 3) for k, v in corr.items()})
print("softmax(b_ro) vs unigram:", round(readout_bias_vs_unigram(lm, train)["pearson"], 3))
print("offsets vs bigram:", {k: round(v, 3) for k, v in offsets_vs_bigram(lm, train)[1].items()})
