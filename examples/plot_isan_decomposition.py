"""
ISAN: the exact contribution of every earlier character to every prediction
===========================================================================

An Input Switched Affine Network updates its state by an affine map chosen by the input
symbol, ``h_t = W[x_t] h_{t-1} + b[x_t]``, and reads out linearly. So every logit is an exact
sum of one term per earlier symbol (plus a bias): the explanation is the computation. This
example fits a tiny character-level ISAN on Shakespeare (seconds on one CPU thread), draws the
step × character decomposition of a short text, groups it by words, and composes a word into
one affine map.
"""

# %%
# Fit a tiny language model
# -------------------------
# 30,000 characters, hidden size 32, 2 epochs: a weak model, but its decomposition is exact
# whatever its quality. ``python -m interpretable reproduce isan`` trains larger ones.
import numpy as np

from interpretable import ISANLanguageModel
from interpretable.datasets import load_shakespeare

text = load_shakespeare(split="train")[:30_000]
lm = ISANLanguageModel(hidden_size=32, max_epochs=2, batch_size=16, lr=1e-2, random_state=0)
lm.fit(text)
print(f"bits per character on held-out text: "
      f"{lm.bits_per_char(load_shakespeare(split='test')[:5_000]):.2f}")

# %%
# Every character's contribution to every step
# --------------------------------------------
# ``target="actual"`` explains, at each step, the logit of the character that actually comes
# next. Row = step (its target on the left), column = the characters read so far.
exp = lm.explain("the king is dead", target="actual")
print("completeness error:", float(np.max(exp.completeness_error)))
exp.plot()

# %%
# By words
# --------
# ``level="word"`` sums the characters of each word (exact as well); the page shows, for the
# chosen steps, the words read so far colored by their contribution to that step's logit.
words = lm.explain("the king is dead, long live the king", target="actual", level="word")
words.to_html(steps=[3, 5, -1])

# %%
# The table of the last step: which word pushed the model towards its next character.
frame = words.to_frame(steps=[-1])
frame[["step", "token", "target", "attribution", "prediction"]]

# %%
# A word as one affine map
# ------------------------
# The maps of a word's characters compose into one affine map ``(A, b)``: applying it to the
# state after "the" gives the state after "the king".
A, b = lm.compose(" king")
h = lm.transition("the")
print("max difference:", float(np.abs(A @ h + b - lm.transition("the king")).max()))
