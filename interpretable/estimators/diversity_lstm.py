"""Diversity / Orthogonal LSTM attention classifier (Mohankumar et al., ACL 2020).

Three variants of the LSTM + additive attention model, chosen with ``cell``:

* ``"vanilla"``: a standard LSTM (the baseline whose hidden states have high conicity);
* ``"diversity"``: a standard LSTM trained with ``loss + diversity_weight * conicity(H)``
  (conicity with ``|cos|`` as in the authors' code, or the paper's signed cosine: ``conicity``);
* ``"orthogonal"``: the orthogonal LSTM cell, which removes from each ``ĥ_t`` its component
  along the sum of the previous hidden states.

Low conicity makes the attention weights faithful: permuting them changes the output, erasing
the highest-weighted hidden states flips decisions quickly, and attention agrees better with
gradient attributions (see :mod:`interpretable.metrics.attention_analysis`).
Besides attention and the post-hoc token methods, it is explained by the authors' "gradient"
attribution to compare attention with: gradient × embedding of the explained class's
probability, attention detached (:class:`~interpretable.estimators.explainers.text.DetachedGradient`).
"""
from __future__ import annotations

from numbers import Real

from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from ..nn.attention import CONICITY_KINDS
from ..nn.losses import DiversityLoss
from .attention_text import AttentionClassifierBase
from .params import stores_params

__all__ = ["DiversityLSTMClassifier", "CELLS", "CONICITY_KINDS"]

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
    conicity : {"absolute", "signed"}
        Cosine used by the conicity penalty: ``"absolute"`` averages ``|cos(h_t, mean(H))|``
        (the authors' code, default), ``"signed"`` the signed cosine of the paper's text (its
        penalty is lowest for anti-aligned states, so the trained conicity can turn negative).
    embeddings, embed_dim, hidden_size, attention_size, freeze_embeddings, dropout, text_encoder :
        As in :class:`~interpretable.estimators.attention_text.AttentionTextClassifier`.
    {class_weight}
    {training_parameters}

    Examples
    --------
    >>> clf = DiversityLSTMClassifier(cell="diversity", embeddings="glove-50")  # doctest: +SKIP
    >>> clf.fit(texts, labels).explain(texts[:3]).to_frame()                    # doctest: +SKIP
    """

    _parameter_constraints = {
        **AttentionClassifierBase._parameter_constraints,
        "cell": [StrOptions(set(CELLS))],
        "diversity_weight": [Interval(Real, 0, None, closed="left")],
        "conicity": [StrOptions(set(CONICITY_KINDS))],
    }

    @stores_params
    def __init__(self, *, cell="diversity", diversity_weight=0.5, conicity="absolute",
                 embeddings=None, embed_dim=50,
                 hidden_size=128, attention_size=None, freeze_embeddings=False, dropout=0.0,
                 text_encoder=None, lr=1e-3, max_epochs=10, batch_size=64, optimizer="adam",
                 weight_decay=0.0, device="auto", random_state=None, verbose=0,
                 class_weight=None, callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
        """Store the parameters unchanged (see the class docstring)."""

    def architecture(self) -> dict:
        """As the base's, with the encoder of ``cell``: the orthogonal LSTM or ``nn.LSTM``."""
        return {**super().architecture(),
                "encoder": "orthogonal" if self.cell == "orthogonal" else "lstm"}

    def _criterion(self) -> nn.Module:
        return DiversityLoss(self.diversity_weight if self.cell == "diversity" else 0.0,
                             absolute=self.conicity == "absolute")
