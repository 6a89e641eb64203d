"""
Text explanations: exact contributions, attention, and the corpus view
======================================================================

Explanations of text classifiers show the original text with every token colored: red raises
the logit of the row's target class, blue lowers it, white is 0. This example fits two small
models on Rotten Tomatoes review snippets (seconds each on one CPU thread) and shows

* the exact per-token contributions of a mean-embedding model, through a pipeline that keeps
  the caller's texts and sample ids;
* the attention of a Diversity LSTM (the same for every class: one purple scale);
* the corpus view: every token's mean contribution over 2,000 reviews.

In a notebook the explanation is its own display (``to_html()``); here the pages are shown
inline.
"""

# %%
# An exact explanation, through a pipeline
# ----------------------------------------
# The index of a pandas Series comes back as the explanation's ``sample``.
import numpy as np
import pandas as pd

from interpretable import DiversityLSTMClassifier, EmbeddingBagClassifier
from interpretable.datasets import load_rotten_tomatoes
from interpretable.integrations import make_explainable_pipeline

rt = load_rotten_tomatoes()
reviews = pd.Series(rt.data, index=[f"rt_{i}" for i in range(len(rt.data))])
labels = rt.target_names[rt.target]            # "fresh" / "rotten"
order = np.random.RandomState(0).permutation(len(reviews))
train, shown = order[:4000], order[-4:]

bag = make_explainable_pipeline(EmbeddingBagClassifier(max_epochs=5, random_state=0))
bag.fit(reviews.iloc[train], labels[train])
exp = bag.explain(reviews.iloc[shown])
exp  # noqa: B018 (a cell's last expression is the gallery's display of the explanation)

# %%
# The contributions plus the bias give back the logit, to float rounding:
print("completeness error:", exp.completeness_error.max())
exp.to_frame()[["sample", "token", "target", "attribution", "prediction"]].head(8)

# %%
# The color scale can also be per row (``scale="row"``) or fixed; another target class is
# explained with ``target=``.
bag.explain(reviews.iloc[shown[:2]], target="rotten")

# %%
# Attention
# ---------
# A Diversity LSTM's attention weights do not depend on the explained class, so the page shows
# them on one purple scale shared by all rows.
lstm = make_explainable_pipeline(DiversityLSTMClassifier(
    cell="orthogonal", embed_dim=32, hidden_size=32, max_epochs=3, random_state=0))
lstm.fit(reviews.iloc[train], labels[train])
lstm.explain(reviews.iloc[shown])

# %%
# The same model explained post hoc, by integrated gradients (class-specific again):
lstm.explain(reviews.iloc[shown[:2]], method="integrated_gradients", n_steps=20)

# %%
# The corpus view
# ---------------
# :func:`~interpretable.explanation.global_explanation` explains a corpus chunk by chunk and
# averages every token's contribution per explained class (with counts).
# (gallery cells import what they introduce)
from interpretable.explanation import global_explanation  # noqa: E402

corpus = global_explanation(bag, reviews.iloc[order[4000:6000]])
corpus.to_frame().sort_values("mean_attribution").head()

# %%
corpus.plot(k=8, min_count=5)
