"""The baselines of :class:`~interpretable.estimators.SEATClassifier`, one variant object each
(``SEATClassifier(variant=...)``):

* :class:`Vanilla` — cross-entropy only: the vanilla attention model;
* :class:`AttentionRP`, :class:`AttentionAT`, :class:`WordAT` — the paper's baselines (random /
  adversarial perturbation of the attention, Kitada & Iyatomi 2021; adversarial word
  embeddings, Miyato et al. 2016): the perturbed batch's cross-entropy is added to the clean one.

All are importable from :mod:`interpretable.estimators.seat`, with SEAT itself.
"""

from __future__ import annotations

from numbers import Real

from interpretable.estimators.seat._phases import SEATVariant, TrainingPhase
from interpretable.nn import RobustCriterion, RobustTrainer
from interpretable.utils import Interval

__all__ = ["Vanilla", "AttentionRP", "AttentionAT", "WordAT"]


class Vanilla(SEATVariant):
    """The vanilla attention model: cross-entropy only.

    See Also
    --------
    SEAT : Stable attention on top of it.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.estimators.seat import Vanilla
    >>> clf = SEATClassifier(variant=Vanilla(), embed_dim=8, hidden_size=8, max_epochs=1,
    ...                      random_state=0).fit(X, y)
    >>> clf.variant_
    Vanilla()
    """

    name = "vanilla"
    _parameter_constraints: dict = {}


class _Robust(SEATVariant):
    """A baseline adding the cross-entropy of a perturbed forward pass (ℓ2 per sample of size
    ``epsilon``) to the clean one. Its loss needs labels and gradients, so it trains on all of
    the data (no validation split)."""

    _parameter_constraints = {"epsilon": [Interval(Real, 0, None, closed="neither")]}
    fine_tunes_base = True

    def __init__(self, epsilon: float = 0.1):
        self.epsilon = epsilon

    def first_phase(self, phase: TrainingPhase, seed: int) -> TrainingPhase:
        """Return the attention model's training phase with the perturbed loss added.

        The loss needs labels and gradients, so the phase trains on all of the data (no validation
        split).

        Parameters
        ----------
        phase : TrainingPhase
            The vanilla training phase.
        seed : int
            The fit's seed.

        Returns
        -------
        TrainingPhase
            The robust phase.

        Examples
        --------
        >>> import torch
        >>> from interpretable.estimators.seat import TrainingPhase
        >>> phase = TrainingPhase(module_factory=torch.nn.Identity, criterion=torch.nn.MSELoss(),
        ...                       X={}, y=torch.zeros(1))
        >>> from interpretable.estimators.seat import AttentionRP
        >>> robust = AttentionRP().first_phase(phase, seed=0)
        >>> robust.options, sorted(robust.X)
        ({'validation': False}, ['labels'])
        """
        factory = phase.module_factory
        return TrainingPhase(
            lambda: RobustTrainer(factory(), self.name, self.epsilon, seed), RobustCriterion(),
            {**phase.X, "labels": phase.y}, phase.y, {**phase.options, "validation": False},
            finish=lambda trainer: trainer.core.eval())


class AttentionRP(_Robust):
    """Random perturbation of the attention weights (Kitada & Iyatomi, 2021).

    A baseline adding the cross-entropy of a perturbed forward pass to the clean one.

    Parameters
    ----------
    epsilon : float > 0, default=0.1
        The ℓ2 size of the perturbation, per sample.

    See Also
    --------
    SEAT : Stable and explainable attention.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.estimators.seat import AttentionRP
    >>> clf = SEATClassifier(variant=AttentionRP(epsilon=0.5), embed_dim=8, hidden_size=8,
    ...                      max_epochs=1, random_state=0).fit(X, y)
    >>> clf.variant_
    AttentionRP(epsilon=0.5)
    """

    name = "attention-rp"


class AttentionAT(_Robust):
    """Adversarial perturbation of the attention weights (Kitada & Iyatomi, 2021).

    A baseline adding the cross-entropy of a perturbed forward pass to the clean one.

    Parameters
    ----------
    epsilon : float > 0, default=0.1
        The ℓ2 size of the perturbation, per sample.

    See Also
    --------
    SEAT : Stable and explainable attention.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.estimators.seat import AttentionAT
    >>> clf = SEATClassifier(variant=AttentionAT(epsilon=0.5), embed_dim=8, hidden_size=8,
    ...                      max_epochs=1, random_state=0).fit(X, y)
    >>> clf.variant_
    AttentionAT(epsilon=0.5)
    """

    name = "attention-at"


class WordAT(_Robust):
    """Adversarial perturbation of the word embeddings (Miyato et al., 2016).

    A baseline adding the cross-entropy of a perturbed forward pass to the clean one.

    Parameters
    ----------
    epsilon : float > 0, default=1.0
        The ℓ2 size of the perturbation, per sample.

    See Also
    --------
    SEAT : Stable and explainable attention.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.estimators.seat import WordAT
    >>> clf = SEATClassifier(variant=WordAT(epsilon=0.5), embed_dim=8, hidden_size=8,
    ...                      max_epochs=1, random_state=0).fit(X, y)
    >>> clf.variant_
    WordAT(epsilon=0.5)
    """

    name = "word-at"

    def __init__(self, epsilon: float = 1.0):
        self.epsilon = epsilon
