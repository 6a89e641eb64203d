"""What a SEAT variant is to :class:`~interpretable.estimators.SEATClassifier`: the base of the
variants and what its hooks hand the estimator to train.

* :class:`SEATVariant` — the base of the variants (:mod:`.variants`): a scikit-learn
  parameter object whose hooks (:meth:`~SEATVariant.first_phase`,
  :meth:`~SEATVariant.second_phase`) say *what* to train;
* :class:`TrainingPhase` — one phase to train: module, loss, data and training options;
* :class:`RecordTerms` — the skorch callback recording a criterion's terms in the history.

All three are importable from :mod:`interpretable.estimators.seat` as well.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

import torch
from sklearn.base import BaseEstimator
from skorch.callbacks import Callback

from interpretable.utils import validate_estimator_parameters

if TYPE_CHECKING:
    from interpretable.estimators.seat._estimator import SEATClassifier
    from interpretable.nn import AttentionTextModule

__all__ = ["TrainingPhase", "SEATVariant"]


def _identity(module: torch.nn.Module) -> torch.nn.Module:
    """Return the trained module as it is: the default ``finish`` of a :class:`TrainingPhase`.

    Parameters
    ----------
    module : torch.nn.Module
        The trained module.

    Returns
    -------
    torch.nn.Module
        ``module`` itself.

    Examples
    --------
    >>> import torch
    >>> from interpretable.estimators.seat import TrainingPhase
    >>> phase = TrainingPhase(module_factory=torch.nn.Identity, criterion=torch.nn.MSELoss(),
    ...                       X={}, y=torch.zeros(1))
    >>> module = torch.nn.Linear(1, 1)
    >>> phase.finish(module) is module
    True
    """
    return module


@dataclass
class TrainingPhase:
    """One training phase of a SEAT variant, trained by the estimator.

    Parameters
    ----------
    module_factory : callable
        Builds the module to train.
    criterion : torch.nn.Module
        The loss.
    X : dict of str to torch.Tensor
        The encoded inputs (CPU tensors).
    y : torch.Tensor
        The targets.
    options : dict, default={}
        The phase's keywords of :func:`~interpretable.estimators.core._nets.train_module` (``lr``,
        ``max_epochs``, ``callbacks``, ``validation``, net keywords).
    finish : callable, default=identity
        Turns the trained module into the fitted one.
    reference : torch.nn.Module or None, default=None
        The vanilla module the phase started from (diagnostics).

    Examples
    --------
    >>> import torch
    >>> from interpretable.estimators.seat import TrainingPhase
    >>> phase = TrainingPhase(module_factory=torch.nn.Identity, criterion=torch.nn.MSELoss(),
    ...                       X={}, y=torch.zeros(1))
    >>> phase.options, phase.finish(phase.criterion) is phase.criterion
    ({}, True)
    """

    module_factory: Callable[[], torch.nn.Module]
    criterion: torch.nn.Module
    X: dict
    y: torch.Tensor
    options: dict = field(default_factory=dict)
    finish: Callable[[torch.nn.Module], torch.nn.Module] = _identity
    reference: torch.nn.Module | None = None


class RecordTerms(Callback):
    """A skorch callback adding the epoch means of the criterion's ``last_terms`` to the history.

    See Also
    --------
    SEAT : Records its ``topk`` and ``stability`` terms with it.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> from interpretable.estimators.seat import SEAT
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> clf = SEATClassifier(variant=SEAT(epochs=1), embed_dim=8, hidden_size=8, max_epochs=1,
    ...                      random_state=0).fit(X, ["pos", "pos", "neg", "neg"])
    >>> [name for name in clf.history_[-1] if name in ("topk", "stability")]
    ['topk', 'stability']
    """

    def on_epoch_begin(self, net, **kwargs):
        """Start the epoch's sums.

        Parameters
        ----------
        net : skorch.NeuralNet
            The net being trained.
        **kwargs
            Further arguments of skorch's callback.

        Examples
        --------
        >>> from interpretable.estimators.seat._phases import RecordTerms
        >>> callable(RecordTerms().on_epoch_begin)
        True
        """
        self._sums, self._count = {}, 0

    def on_batch_end(self, net, training=False, **kwargs):
        """Add a training batch's terms.

        Parameters
        ----------
        net : skorch.NeuralNet
            The net being trained.
        training : bool, default=False
            Whether the batch was a training batch.
        **kwargs
            Further arguments of skorch's callback.

        Examples
        --------
        >>> from interpretable.estimators.seat._phases import RecordTerms
        >>> callable(RecordTerms().on_batch_end)
        True
        """
        if training:
            for name, value in net.criterion_.last_terms.items():
                self._sums[name] = self._sums.get(name, 0.0) + value
            self._count += 1

    def on_epoch_end(self, net, **kwargs):
        """Record the epoch means in the history.

        Parameters
        ----------
        net : skorch.NeuralNet
            The net being trained.
        **kwargs
            Further arguments of skorch's callback.

        Examples
        --------
        >>> from interpretable.estimators.seat._phases import RecordTerms
        >>> callable(RecordTerms().on_epoch_end)
        True
        """
        for name, total in self._sums.items():
            net.history.record(name, total / max(self._count, 1))


class SEATVariant(BaseEstimator):
    """A SEAT training procedure: the base of the variants.

    Subclasses set ``name`` and may change the first phase (:meth:`first_phase`, the attention
    model's training) and add a second one (:meth:`second_phase`). Variants are values: equal
    when of one class with equal parameters.

    See Also
    --------
    interpretable.SEATClassifier : Trains a variant.

    Examples
    --------
    >>> from interpretable.estimators.seat import SEAT, SEATVariant
    >>> isinstance(SEAT(), SEATVariant), SEAT(k=2) == SEAT(k=2)
    (True, True)
    """

    name: ClassVar[str]
    #: whether the fitted module keeps the vanilla attention ``w`` beside ``w~``
    keeps_vanilla_attention: ClassVar[bool] = False
    #: whether ``warm_start`` can continue a model trained this way
    supports_warm_start: ClassVar[bool] = True
    #: whether a ``base_estimator`` is trained further by :meth:`first_phase` (else copied)
    fine_tunes_base: ClassVar[bool] = False
    #: whether :meth:`second_phase` trains after the attention model
    has_second_phase: ClassVar[bool] = False

    def __eq__(self, other) -> bool:
        """Variants are values: equal when of one class with equal parameters."""
        return type(self) is type(other) and self.get_params() == other.get_params()

    __hash__ = None

    def check(self, estimator: SEATClassifier) -> None:
        """Validate the parameters (and their relations to the estimator's).

        Parameters
        ----------
        estimator : SEATClassifier
            The estimator that trains the variant.

        Raises
        ------
        ValueError
            If a parameter is invalid.

        Examples
        --------
        >>> from interpretable import SEATClassifier
        >>> from interpretable.estimators.seat import SEAT
        >>> try:
        ...     SEAT(k=0).check(SEATClassifier())
        ... except ValueError as error:
        ...     print(error)
        The 'k' parameter of SEAT must be an int in the range [1, inf). Got 0 instead.
        """
        validate_estimator_parameters(self)

    def first_phase(self, phase: TrainingPhase, seed: int) -> TrainingPhase:
        """Return the attention model's training phase, as this variant trains it.

        Parameters
        ----------
        phase : TrainingPhase
            The vanilla training phase.
        seed : int
            The fit's seed.

        Returns
        -------
        TrainingPhase
            The phase (unchanged here).

        Examples
        --------
        >>> import torch
        >>> from interpretable.estimators.seat import TrainingPhase
        >>> phase = TrainingPhase(module_factory=torch.nn.Identity, criterion=torch.nn.MSELoss(),
        ...                       X={}, y=torch.zeros(1))
        >>> from interpretable.estimators.seat import Vanilla
        >>> Vanilla().first_phase(phase, seed=0) is phase
        True
        """
        return phase

    def second_phase(self, module: AttentionTextModule, inputs: dict, y: torch.Tensor,
                     seed: int, defaults: dict) -> TrainingPhase | None:
        """Return a phase after the attention model was trained, or None.

        Parameters
        ----------
        module : torch.nn.Module
            The trained attention model.
        inputs : dict of str to torch.Tensor
            The encoded training inputs.
        y : torch.Tensor
            The class indices.
        seed : int
            The fit's seed.
        defaults : dict
            The estimator's ``lr``, ``max_epochs`` and the training ``collate_fn``.

        Returns
        -------
        TrainingPhase or None
            The phase (None here: no second phase).

        Examples
        --------
        >>> from interpretable.estimators.seat import Vanilla
        >>> Vanilla().second_phase(None, {}, None, 0, {}) is None
        True
        """
        return None
