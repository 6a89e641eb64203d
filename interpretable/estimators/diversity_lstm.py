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

import numbers

import torch
from torch import nn

from ..nn.attention import AttentionOutput, conicity
from ..nn.losses import OutputCrossEntropy
from .attention_text import AttentionTextClassifier
from .base import NeuralEstimator

__all__ = ["DiversityLSTMClassifier", "DiversityLoss", "CELLS"]

CELLS = ("vanilla", "diversity", "orthogonal")


class DiversityLoss(OutputCrossEntropy):
    """``cross_entropy(logits, y) + weight * mean_b conicity(H_b)`` over real tokens."""

    def __init__(self, weight: float):
        super().__init__()
        self.weight = float(weight)

    def forward(self, output: AttentionOutput, y: torch.Tensor) -> torch.Tensor:
        loss = super().forward(output, y)
        if self.weight:
            loss = loss + self.weight * conicity(output.hidden, output.mask).mean()
        return loss


class DiversityLSTMClassifier(AttentionTextClassifier):
    """LSTM attention text classifier with diverse (low-conicity) hidden states.

    Parameters
    ----------
    cell : {"vanilla", "diversity", "orthogonal"}
        Encoder variant (see module docstring).
    diversity_weight : float
        λ of the conicity term; used when ``cell="diversity"`` (0.5 in the paper for most tasks,
        0.1 for SNLI, 0.2 for CNN), ignored otherwise.
    embeddings, embed_dim, hidden_size, attention_size, freeze_embeddings, dropout, lowercase,
    min_freq, max_vocab, max_len, lr, max_epochs, batch_size, optimizer, weight_decay, device,
    random_state, verbose :
        As in :class:`AttentionTextClassifier`.

    Examples
    --------
    >>> clf = DiversityLSTMClassifier(cell="diversity", embeddings="glove-50")  # doctest: +SKIP
    >>> clf.fit(texts, labels).explain(texts[:3]).to_frame()                    # doctest: +SKIP
    """

    def __init__(self, *, cell="diversity", diversity_weight=0.5, embeddings=None, embed_dim=50,
                 hidden_size=128, attention_size=None, freeze_embeddings=False, dropout=0.0,
                 lowercase=True, min_freq=1, max_vocab=None, max_len=None, lr=1e-3, max_epochs=10,
                 batch_size=64, optimizer="adam", weight_decay=0.0, device="auto", random_state=None,
                 verbose=0):
        # not super().__init__: AttentionTextClassifier would set `encoder`, which this
        # estimator derives from `cell` instead of taking as a parameter
        NeuralEstimator.__init__(self, lr=lr, max_epochs=max_epochs, batch_size=batch_size,
                                 optimizer=optimizer, weight_decay=weight_decay, device=device,
                                 random_state=random_state, verbose=verbose)
        self.cell = cell
        self.diversity_weight = diversity_weight
        self.embeddings = embeddings
        self.embed_dim = embed_dim
        self.hidden_size = hidden_size
        self.attention_size = attention_size
        self.freeze_embeddings = freeze_embeddings
        self.dropout = dropout
        self.lowercase = lowercase
        self.min_freq = min_freq
        self.max_vocab = max_vocab
        self.max_len = max_len

    def _encoder_spec(self):
        return "orthogonal" if self.cell == "orthogonal" else "lstm"

    def _validate_params(self) -> None:
        if self.cell not in CELLS:
            raise ValueError(f"cell must be one of {CELLS}, got {self.cell!r}.")
        w = self.diversity_weight
        if isinstance(w, bool) or not isinstance(w, numbers.Real) or not w >= 0 or w == float("inf"):
            raise ValueError(f"diversity_weight must be a finite number >= 0, got {w!r}.")
        super()._validate_params()

    def _criterion(self) -> nn.Module:
        return DiversityLoss(self.diversity_weight if self.cell == "diversity" else 0.0)
