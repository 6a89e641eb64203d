"""The training procedures of :class:`~interpretable.estimators.SEATClassifier`, one object
each with its own parameters (``SEATClassifier(variant=...)``).

* :class:`Vanilla` — cross-entropy only: the vanilla attention model;
* :class:`SEAT` — the paper's objective (6) on a copy of the attention (Hu et al., AAAI 2023);
* :class:`AuthorsSEAT` — the loss of the authors' code, training the whole model;
* :class:`AttentionRP`, :class:`AttentionAT`, :class:`WordAT` — the paper's baselines (random /
  adversarial perturbation of the attention, Kitada & Iyatomi 2021; adversarial word
  embeddings, Miyato et al. 2016): the perturbed batch's cross-entropy is added to the clean one.

Variants are scikit-learn parameter objects (``get_params`` / ``set_params`` / ``clone``), so a
grid search tunes them as nested parameters (``variant__lambda_topk``). They say *what* to
train as :class:`TrainingPhase` objects; the estimator trains them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from numbers import Integral, Real
from typing import Callable, ClassVar

import torch
from sklearn.base import BaseEstimator
from sklearn.utils._param_validation import Interval, StrOptions
from skorch.callbacks import Callback

from ..nn.attacks import NORMS, check_clamp
from ..nn.seat import (AUTHORS_PARAM_GROUPS, AuthorsSEATCriterion, AuthorsSEATTrainer,
                       RobustCriterion, RobustTrainer, SEATCriterion, SEATTrainer)
from .params import stores_params

__all__ = ["TrainingPhase", "SEATVariant", "Vanilla", "SEAT", "AuthorsSEAT", "AttentionRP",
           "AttentionAT", "WordAT", "VARIANTS", "RecordTerms"]


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
        The phase's keywords of :func:`~interpretable.estimators.nets.train_module` (``lr``,
        ``max_epochs``, ``callbacks``, ``validation``, net keywords).
    finish : callable, default=identity
        Turns the trained module into the fitted one.
    reference : torch.nn.Module or None, default=None
        The vanilla module the phase started from (diagnostics).

    Examples
    --------
    >>> import torch
    >>> from interpretable.estimators.seat_variants import TrainingPhase
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
    finish: Callable[[torch.nn.Module], torch.nn.Module] = lambda module: module
    reference: torch.nn.Module | None = None


class RecordTerms(Callback):
    """A skorch callback adding the epoch means of the criterion's ``last_terms`` to the history.

    See Also
    --------
    SEAT : Records its ``topk`` and ``stability`` terms with it.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> from interpretable.estimators.seat_variants import SEAT
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
        >>> from interpretable.estimators.seat_variants import RecordTerms
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
        >>> from interpretable.estimators.seat_variants import RecordTerms
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
        >>> from interpretable.estimators.seat_variants import RecordTerms
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
    >>> from interpretable.estimators.seat_variants import SEAT, SEATVariant
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

    def check(self, estimator) -> None:
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
        >>> from interpretable.estimators.seat_variants import SEAT
        >>> SEAT(k=0).check(SEATClassifier())
        Traceback (most recent call last):
        ...
        sklearn.utils._param_validation.InvalidParameterError: The 'k' parameter of SEAT must be ...
        """
        self._validate_params()

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
        >>> from interpretable.estimators.seat_variants import TrainingPhase
        >>> phase = TrainingPhase(module_factory=torch.nn.Identity, criterion=torch.nn.MSELoss(),
        ...                       X={}, y=torch.zeros(1))
        >>> from interpretable.estimators.seat_variants import Vanilla
        >>> Vanilla().first_phase(phase, seed=0) is phase
        True
        """
        return phase

    def second_phase(self, module: torch.nn.Module, inputs: dict, y: torch.Tensor, seed: int,
                     defaults: dict) -> TrainingPhase | None:
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
        >>> from interpretable.estimators.seat_variants import Vanilla
        >>> Vanilla().second_phase(None, {}, None, 0, {}) is None
        True
        """
        return None


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
    >>> from interpretable.estimators.seat_variants import Vanilla
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

    @stores_params
    def __init__(self, epsilon=0.1):
        """Store the parameters unchanged (see the class docstring)."""

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
        >>> from interpretable.estimators.seat_variants import TrainingPhase
        >>> phase = TrainingPhase(module_factory=torch.nn.Identity, criterion=torch.nn.MSELoss(),
        ...                       X={}, y=torch.zeros(1))
        >>> from interpretable.estimators.seat_variants import AttentionRP
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
    >>> from interpretable.estimators.seat_variants import AttentionRP
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
    >>> from interpretable.estimators.seat_variants import AttentionAT
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
    >>> from interpretable.estimators.seat_variants import WordAT
    >>> clf = SEATClassifier(variant=WordAT(epsilon=0.5), embed_dim=8, hidden_size=8,
    ...                      max_epochs=1, random_state=0).fit(X, y)
    >>> clf.variant_
    WordAT(epsilon=0.5)
    """

    name = "word-at"

    @stores_params
    def __init__(self, epsilon=1.0):
        """Store the parameters unchanged (see the class docstring)."""


_PGD = {
    "k": [Interval(Integral, 1, None, closed="left")],
    "lambda_topk": [Interval(Real, 0, None, closed="left")],
    "lambda_stability": [Interval(Real, 0, None, closed="left")],
    "pgd_radius": [Interval(Real, 0, None, closed="left")],
    "pgd_steps": [Interval(Integral, 0, None, closed="left")],
    "pgd_step_size": [Interval(Real, 0, None, closed="neither"), None],
    "pgd_norm": [StrOptions(set(NORMS))],
    "epochs": [Interval(Integral, 1, None, closed="left"), None],
    "lr": [Interval(Real, 0, None, closed="neither"), None],
}


class SEAT(SEATVariant):
    """SEAT with the paper's objective (6) / Algorithm 1 (Hu et al., AAAI 2023).

    The vanilla model is trained first, then a copy of its attention layer (``w~_0 = w``) is
    trained by::

        D1(y(x, w~), y(x, w)) + lambda_topk * L_topk(w, w~)
            + lambda_stability * max_{||delta|| <= pgd_radius} D2(y(x, w~), y(x, w~ + delta))

    with embedding, encoder and decoder those of the vanilla model (frozen). The vanilla
    attention is kept beside ``w~`` (``explain(method="vanilla")``).

    Parameters
    ----------
    k : int, default=4
        Top-k of the overlap constraint ``L_topk``.
    lambda_topk : float, default=1.0
        The paper's λ2, the weight of ``L_topk``.
    lambda_stability : float, default=1.0
        The paper's λ1, the weight of the stability term.
    pgd_radius : float, default=0.05
        Radius ``R`` of the attention perturbation ball of the inner maximisation (PGD).
    pgd_steps : int, default=5
        PGD iterations.
    pgd_step_size : float or None, default=None
        PGD step (None: ``2.5 R / steps``).
    pgd_norm : {"l2", "linf"}, default="l2"
        The norm of the ball.
    divergence : {"bce", "kl"}, default="bce"
        D1 and D2: cross-entropy with soft targets (the paper's BCE) or KL (same gradient).
    epochs : int or None, default=None
        Epochs of the SEAT phase (None: the estimator's ``max_epochs``).
    lr : float or None, default=None
        Learning rate of the SEAT phase (None: the estimator's ``lr``).

    See Also
    --------
    AuthorsSEAT : The loss of the authors' code.

    Notes
    -----
    An attention perturbation ``δ`` moves the logits by ``Σ_t δ_t θ h_t`` whatever ``w~`` is,
    so (6) acts only through more decided predictions, not on the sensitivity to *embeddings*.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.estimators.seat_variants import SEAT
    >>> clf = SEATClassifier(variant=SEAT(k=2, epochs=1), embed_dim=8, hidden_size=8,
    ...                      max_epochs=1, random_state=0).fit(X, y)
    >>> sorted(clf.fit_diagnostics_)
    ['agreement', 'prediction_tvd', 'top_k_overlap']
    """

    name = "seat"
    keeps_vanilla_attention = True
    supports_warm_start = False
    has_second_phase = True
    _parameter_constraints = {**_PGD, "divergence": [StrOptions({"bce", "kl"})]}

    @stores_params
    def __init__(self, k=4, lambda_topk=1.0, lambda_stability=1.0, pgd_radius=0.05, pgd_steps=5,
                 pgd_step_size=None, pgd_norm="l2", divergence="bce", epochs=None, lr=None):
        """Store the parameters unchanged (see the class docstring)."""

    def _options(self, defaults: dict) -> dict:
        return {"lr": self.lr or defaults["lr"],
                "max_epochs": self.epochs or defaults["max_epochs"],
                "callbacks": [("seat_terms", RecordTerms())], "validation": False,
                "iterator_train__collate_fn": defaults["collate_fn"]}

    def second_phase(self, module, inputs, y, seed, defaults) -> TrainingPhase:
        """Return the SEAT phase: a copy of the attention trained by objective (6).

        Parameters
        ----------
        module : torch.nn.Module
            The trained vanilla attention model.
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
        TrainingPhase
            The phase.

        Examples
        --------
        >>> import torch
        >>> from interpretable import AttentionTextClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=1,
        ...                               random_state=0).fit(X, ["pos", "pos", "neg", "neg"])
        >>> inputs, labels = clf.encode(X).inputs, torch.tensor([1, 1, 0, 0])
        >>> defaults = {"lr": 1e-3, "max_epochs": 1, "collate_fn": None}
        >>> from interpretable.estimators.seat_variants import SEAT
        >>> SEAT(epochs=2).second_phase(clf.module_, inputs, labels, 0,
        ...                             defaults).options["max_epochs"]
        2
        """
        vanilla = copy.deepcopy(module).requires_grad_(False)
        trainable = {name: p.requires_grad for name, p in module.named_parameters()}
        module.requires_grad_(False)
        module.attention.requires_grad_(True)

        def finish(trainer):
            core = trainer.core
            for name, p in core.named_parameters():
                p.requires_grad_(trainable.get(name, False))
            core.vanilla_attention = vanilla.attention
            return core.eval()

        return TrainingPhase(
            lambda: SEATTrainer(module, vanilla.attention, self.pgd_radius, self.pgd_steps,
                                self.pgd_step_size, self.pgd_norm, self.divergence, seed),
            SEATCriterion(self.k, self.lambda_topk, self.lambda_stability, self.divergence),
            inputs, y, self._options(defaults), finish=finish, reference=vanilla.eval())


class AuthorsSEAT(SEAT):
    """SEAT as the authors' code trains it (kaustpradalab/SEAT): the whole model.

    From the vanilla weights, by ``CE(f(x), y) + lambda_stability·CE(f(x+δ*), y) +
    lambda_topk·topk-L1(att(x+δ*), att(x))``, ``δ*`` the PGD attack on the word embeddings.
    Embedding and encoder train at ``lr``, attention and decoder with Adam at 1e-3 (amsgrad, as
    theirs); the estimator's ``optimizer`` must be Adam or AdamW. The defaults are the authors'
    setting.

    Parameters
    ----------
    k : int, default=7
        Top-k of the overlap term.
    lambda_topk : float, default=1000.0
        Weight of the top-k term.
    lambda_stability : float, default=1.0
        Weight of the attacked cross-entropy.
    pgd_radius : float, default=0.01
        Radius of the attack.
    pgd_steps : int, default=10
        Attack steps.
    pgd_step_size : float or None, default=None
        Attack step (None: ``2 R / steps``).
    pgd_norm : {"l2", "linf"}, default="linf"
        The norm of the attack's ball.
    pgd_clamp : tuple of float or None, default=None
        Clamps the attacked embeddings (their code: ``(0, 1)``).
    epochs : int or None, default=None
        Epochs of the second phase (None: the estimator's ``max_epochs``).
    lr : float or None, default=0.01
        Learning rate of embedding and encoder in the second phase.

    See Also
    --------
    SEAT : The paper's objective.

    Examples
    --------
    >>> from interpretable import SEATClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.estimators.seat_variants import AuthorsSEAT
    >>> clf = SEATClassifier(variant=AuthorsSEAT(k=2, pgd_steps=1, epochs=1), embed_dim=8,
    ...                      hidden_size=8, max_epochs=1, random_state=0).fit(X, y)
    >>> clf.variant_.name
    'authors'
    """

    name = "authors"
    keeps_vanilla_attention = False
    _parameter_constraints = {**_PGD, "pgd_clamp": [tuple, None]}

    @stores_params
    def __init__(self, k=7, lambda_topk=1000.0, lambda_stability=1.0, pgd_radius=0.01,
                 pgd_steps=10, pgd_step_size=None, pgd_norm="linf", pgd_clamp=None, epochs=None,
                 lr=0.01):
        """Store the parameters unchanged (see the class docstring)."""

    def check(self, estimator) -> None:
        """Validate the parameters and that the estimator trains with Adam or AdamW.

        Parameters
        ----------
        estimator : SEATClassifier
            The estimator that trains the variant.

        Raises
        ------
        ValueError
            If a parameter is invalid or the estimator's ``optimizer`` is neither.

        Examples
        --------
        >>> from interpretable import SEATClassifier
        >>> from interpretable.estimators.seat_variants import AuthorsSEAT
        >>> AuthorsSEAT().check(SEATClassifier(optimizer="sgd"))
        Traceback (most recent call last):
        ...
        ValueError: variant AuthorsSEAT trains with Adam (amsgrad) as the authors' code; ...
        """
        super().check(estimator)
        check_clamp(self.pgd_clamp, "pgd_clamp")
        if estimator.optimizer not in ("adam", "adamw"):
            raise ValueError("variant AuthorsSEAT trains with Adam (amsgrad) as the authors' "
                             "code; optimizer must be 'adam' or 'adamw', got "
                             f"{estimator.optimizer!r}.")

    def second_phase(self, module, inputs, y, seed, defaults) -> TrainingPhase:
        """Return the authors' phase: the whole model trained against the PGD attack.

        Parameters
        ----------
        module : torch.nn.Module
            The trained vanilla attention model.
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
        TrainingPhase
            The phase.

        Examples
        --------
        >>> import torch
        >>> from interpretable import AttentionTextClassifier
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=1,
        ...                               random_state=0).fit(X, ["pos", "pos", "neg", "neg"])
        >>> inputs, labels = clf.encode(X).inputs, torch.tensor([1, 1, 0, 0])
        >>> defaults = {"lr": 1e-3, "max_epochs": 1, "collate_fn": None}
        >>> from interpretable.estimators.seat_variants import AuthorsSEAT
        >>> AuthorsSEAT().second_phase(clf.module_, inputs, labels, 0, defaults).options["lr"]
        0.01
        """
        attack = dict(radius=self.pgd_radius, steps=self.pgd_steps,
                      step_size=self.pgd_step_size, norm=self.pgd_norm, clamp=self.pgd_clamp)
        vanilla = copy.deepcopy(module).requires_grad_(False).eval()
        return TrainingPhase(
            lambda: AuthorsSEATTrainer(module, attack, seed),
            AuthorsSEATCriterion(self.k, self.lambda_stability, self.lambda_topk),
            {**inputs, "labels": y}, y,
            {**self._options(defaults), "optimizer__amsgrad": True,
             "optimizer__param_groups": AUTHORS_PARAM_GROUPS},
            finish=lambda trainer: trainer.core.eval(), reference=vanilla)


#: the variants by name (``SEATClassifier(variant=name)`` takes their defaults)
VARIANTS = {cls.name: cls for cls in (SEAT, AuthorsSEAT, Vanilla, AttentionRP, AttentionAT,
                                      WordAT)}
