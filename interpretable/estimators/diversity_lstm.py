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
``explain(X, method="detached_gradient")`` is the authors' "gradient" attribution to compare
attention with: gradient × embedding of the explained class's probability, attention detached.
"""
from __future__ import annotations

from numbers import Real

import numpy as np
import torch
from sklearn.utils._param_validation import Interval, StrOptions
from torch import nn

from ..attribution.text import attribute_tokens
from ..explanation import TokenExplanation
from ..nn.attention import CONICITY_KINDS
from ..nn.losses import DiversityLoss
from .attention_text import EXPLAIN_METHODS, AttentionClassifierBase
from .base import Batch

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
        "conicity": [StrOptions(set(CONICITY_KINDS))],
    }
    explain_methods = (*EXPLAIN_METHODS, "detached_gradient")

    def __init__(self, *, cell="diversity", diversity_weight=0.5, conicity="absolute",
                 embeddings=None, embed_dim=50,
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
        self.conicity = conicity

    def _encoder_spec(self):
        return "orthogonal" if self.cell == "orthogonal" else "lstm"

    def _criterion(self) -> nn.Module:
        return DiversityLoss(self.diversity_weight if self.cell == "diversity" else 0.0,
                             absolute=self.conicity == "absolute")

    def _explain_detached_gradient(self, batch: Batch, target, *, batch_size) -> TokenExplanation:
        """The authors' "gradient" attribution: ``(∂p_c / ∂e_t) · e_t`` per token, ``p_c`` the
        softmax probability of the explained class (σ(logit) of their one-logit binary
        models) with the attention weights held constant (detached), ``e_t (E,)`` the embedding."""
        n, T = batch.inputs["tokens"].shape
        scores, logits = np.zeros((n, T)), np.zeros((n, len(self.classes_)))
        target_idx = None if target is None else self.target_indices(target, logits)
        for rows, b in self.iter_batches(batch.inputs, batch_size):
            keys = list(b)

            def probabilities(embedded, *args):
                inputs = dict(zip(keys, args))
                with torch.no_grad():
                    attention = self.forward_batch(inputs, embedded=embedded).attention
                return torch.softmax(self.forward_batch(inputs, embedded=embedded,
                                                        attention=attention).logits, 1)

            embedded = self.embed(b).detach()
            with torch.no_grad():
                out = self.forward_batch(b, embedded=embedded)
            logits[rows] = out.logits.float().cpu().numpy()
            tgt = logits[rows].argmax(1) if target_idx is None else target_idx[rows]
            result = attribute_tokens(probabilities, embedded,
                                      torch.as_tensor(tgt, device=embedded.device),
                                      "input_x_gradient", mask=out.mask,
                                      additional_forward_args=tuple(b.values()))
            scores[rows, : embedded.shape[1]] = result.scores.cpu().numpy()
        target_idx = logits.argmax(1) if target_idx is None else target_idx
        return self._token_explanation(batch, scores, target_idx, logits, "detached_gradient")

    def _explainer(self, method: str):
        if method == "detached_gradient":
            return self._explain_detached_gradient
        return super()._explainer(method)
