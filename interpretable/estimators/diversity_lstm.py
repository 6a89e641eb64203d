"""Diversity / Orthogonal LSTM attention classifier (Mohankumar et al., ACL 2020).

Three variants of the LSTM + additive attention model, chosen with ``cell``:

* ``"vanilla"``: a standard LSTM (the baseline whose hidden states have high conicity);
* ``"diversity"``: a standard LSTM trained with ``loss + diversity_weight * conicity(H)``;
* ``"orthogonal"``: the orthogonal LSTM cell, which removes from each ``ĥ_t`` its component
  along the sum of the previous hidden states.

Low conicity makes the attention weights faithful: permuting them changes the output, erasing
the highest-weighted hidden states flips decisions quickly, and attention agrees better with
gradient attributions (see :mod:`interpretable.metrics.attention_analysis`).
"""
from __future__ import annotations

from numbers import Real

import torch
from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from ..nn.losses import DiversityLoss
from .attention_text import AttentionClassifierBase

__all__ = ["DiversityLSTMClassifier", "CELLS"]

CELLS = ("vanilla", "diversity", "orthogonal")


class DiversityLSTMClassifier(AttentionClassifierBase):
    """LSTM attention text classifier with diverse (low-conicity) hidden states.

    Parameters
    ----------
    cell : {"vanilla", "diversity", "orthogonal"}
        Encoder variant (see module docstring).
    diversity_weight : float >= 0
        λ of the conicity term; used when ``cell="diversity"`` (0.5 in the paper for most tasks,
        0.1 for SNLI, 0.2 for CNN), ignored otherwise.
    embeddings, embed_dim, hidden_size, attention_size, freeze_embeddings, dropout, text_encoder,
    lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state, verbose :
        As in :class:`AttentionTextClassifier`.

    Examples
    --------
    >>> clf = DiversityLSTMClassifier(cell="diversity", embeddings="glove-50")  # doctest: +SKIP
    >>> clf.fit(texts, labels).explain(texts[:3]).to_frame()                    # doctest: +SKIP
    """

    _parameter_constraints = {
        **AttentionClassifierBase._parameter_constraints,
        "cell": [StrOptions(set(CELLS))],
        "diversity_weight": [Interval(Real, 0, None, closed="left")],
    }

    def __init__(self, *, cell="diversity", diversity_weight=0.5, embeddings=None, embed_dim=50,
                 hidden_size=128, attention_size=None, freeze_embeddings=False, dropout=0.0,
                 text_encoder=None, lr=1e-3, max_epochs=10, batch_size=64, optimizer="adam",
                 weight_decay=0.0, device="auto", random_state=None, verbose=0,
                 class_weight=None, callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        super().__init__(embeddings=embeddings, embed_dim=embed_dim, hidden_size=hidden_size,
                         attention_size=attention_size, freeze_embeddings=freeze_embeddings,
                         dropout=dropout, text_encoder=text_encoder, lr=lr,
                         max_epochs=max_epochs, batch_size=batch_size, optimizer=optimizer,
                         weight_decay=weight_decay, device=device, random_state=random_state,
                         verbose=verbose, class_weight=class_weight,
                         callbacks=callbacks, validation_fraction=validation_fraction,
                         early_stopping=early_stopping, n_iter_no_change=n_iter_no_change,
                         warm_start=warm_start, precision=precision, accelerator=accelerator)
        self.cell = cell
        self.diversity_weight = diversity_weight

    def _encoder_spec(self):
        return "orthogonal" if self.cell == "orthogonal" else "lstm"

    def _criterion(self) -> nn.Module:
        return DiversityLoss(self.diversity_weight if self.cell == "diversity" else 0.0)
