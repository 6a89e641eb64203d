"""What an explainer computes for one batch: :class:`Attributions`, the per-sample fields
(values, logits, targets, ...) that :meth:`~.explain_loop.ExplainLoop.explain` gathers over
the batches and hands to the explainer's ``assemble``."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

__all__ = ["Attributions"]


def explained_classes(logits: torch.Tensor, target) -> torch.Tensor:
    """The explained class of each row of a batch's ``logits (B, C)``: ``target`` (the
    batch's class indices ``(B,)``, as the explain loop resolved them) or, for None, the
    largest logit; ``(B,)`` int64 on the logits' device."""
    if target is None:
        return logits.argmax(1)
    return torch.as_tensor(target, dtype=torch.long, device=logits.device)


@dataclass
class Attributions:
    """What an explainer computes for one batch of ``B`` samples (sample axis first).

    Parameters
    ----------
    values : torch.Tensor, ndarray or list
        The attributions, e.g. ``(B, T)`` per token (padded to the batch's length), ``(B, H, W)``
        per pixel, or a list of ``B`` arrays.
    logits : torch.Tensor, ndarray or list
        ``(B, C)``: the model's outputs (prediction and probabilities), or per sample.
    target : torch.Tensor, ndarray or list
        ``(B,)``: the explained output of each sample, or per sample.
    logit : torch.Tensor or None, default=None
        ``(B,)``: the explained logit, for methods whose attributions plus bias reproduce it
        (completeness).
    bias : torch.Tensor or None, default=None
        ``(B,)``: what the attributions leave out of the logit.
    extras : dict, default={}
        Further per-sample fields of the explanation (e.g. B-cos ``weights``).

    See Also
    --------
    Explainer.attribute : Computes them.

    Examples
    --------
    >>> import torch
    >>> from interpretable.estimators.methods import Attributions
    >>> part = Attributions(values=torch.ones(2, 3), logits=torch.zeros(2, 2),
    ...                     target=torch.tensor([0, 1]))
    >>> sorted(part.fields())
    ['logits', 'target', 'values']
    """

    values: object
    logits: object
    target: object
    logit: object = None
    bias: object = None
    extras: dict = field(default_factory=dict)

    def fields(self) -> dict:
        """Return every field that is set, by name.

        Returns
        -------
        dict
            ``values``, ``logits``, ``target``, ``logit`` and ``bias`` where not None, and the
            ``extras``.

        Examples
        --------
        >>> import torch
        >>> from interpretable.estimators.methods import Attributions
        >>> part = Attributions(values=torch.ones(1, 2), logits=torch.zeros(1, 2),
        ...                     target=torch.tensor([1]), extras={"weights": torch.ones(1, 2)})
        >>> sorted(part.fields())
        ['logits', 'target', 'values', 'weights']
        """
        out = {"values": self.values, "logits": self.logits, "target": self.target,
               "logit": self.logit, "bias": self.bias, **self.extras}
        return {k: v for k, v in out.items() if v is not None}
