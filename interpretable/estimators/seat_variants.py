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
    """One training phase: ``module_factory()`` trained on ``X`` (dict of CPU tensors) and
    ``y`` with ``criterion``; ``options`` are the phase's keywords of
    :func:`~interpretable.estimators.training.train_module` (``lr``, ``max_epochs``,
    ``callbacks``, ``validation``, net keywords); ``finish`` turns the trained module into the
    fitted one; ``reference`` is the vanilla module the phase started from (diagnostics)."""

    module_factory: Callable[[], torch.nn.Module]
    criterion: torch.nn.Module
    X: dict
    y: torch.Tensor
    options: dict = field(default_factory=dict)
    finish: Callable[[torch.nn.Module], torch.nn.Module] = lambda module: module
    reference: torch.nn.Module | None = None


class RecordTerms(Callback):
    """Adds the epoch means of the criterion's ``last_terms`` to the history."""

    def on_epoch_begin(self, net, **kwargs):
        self._sums, self._count = {}, 0

    def on_batch_end(self, net, training=False, **kwargs):
        if training:
            for name, value in net.criterion_.last_terms.items():
                self._sums[name] = self._sums.get(name, 0.0) + value
            self._count += 1

    def on_epoch_end(self, net, **kwargs):
        for name, total in self._sums.items():
            net.history.record(name, total / max(self._count, 1))


class SEATVariant(BaseEstimator):
    """A SEAT training procedure. Subclasses set ``name`` and may change the first phase
    (:meth:`first_phase`, the attention model's training) and add a second one
    (:meth:`second_phase`)."""

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
        """Validate the parameters (and their relations to the estimator's)."""
        self._validate_params()

    def first_phase(self, phase: TrainingPhase, seed: int) -> TrainingPhase:
        """The attention model's training phase, as this variant trains it."""
        return phase

    def second_phase(self, module: torch.nn.Module, inputs: dict, y: torch.Tensor, seed: int,
                     defaults: dict) -> TrainingPhase | None:
        """A phase after the attention model was trained (``module``, fitted on the encoded
        ``inputs`` and class indices ``y``), or None. ``defaults`` holds the estimator's
        ``lr``, ``max_epochs`` and the training collate function."""
        return None


class Vanilla(SEATVariant):
    """The vanilla attention model: cross-entropy only."""

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
        factory = phase.module_factory
        return TrainingPhase(
            lambda: RobustTrainer(factory(), self.name, self.epsilon, seed), RobustCriterion(),
            {**phase.X, "labels": phase.y}, phase.y, {**phase.options, "validation": False},
            finish=lambda trainer: trainer.core.eval())


class AttentionRP(_Robust):
    """Random perturbation of the attention weights (Kitada & Iyatomi, 2021)."""

    name = "attention-rp"


class AttentionAT(_Robust):
    """Adversarial perturbation of the attention weights (Kitada & Iyatomi, 2021)."""

    name = "attention-at"


class WordAT(_Robust):
    """Adversarial perturbation of the word embeddings (Miyato et al., 2016)."""

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
    """SEAT with the paper's objective (6) / Algorithm 1: the vanilla model is trained first,
    then a copy of its attention layer (``w~_0 = w``) is trained by::

        D1(y(x, w~), y(x, w)) + lambda_topk * L_topk(w, w~)
            + lambda_stability * max_{||delta|| <= pgd_radius} D2(y(x, w~), y(x, w~ + delta))

    with embedding, encoder and decoder those of the vanilla model (frozen). The vanilla
    attention is kept beside ``w~`` (``explain(method="vanilla")``).

    Parameters
    ----------
    k : int
        Top-k of the overlap constraint ``L_topk``.
    lambda_topk, lambda_stability : float
        The paper's λ2 (weight of ``L_topk``) and λ1 (weight of the stability term).
    pgd_radius, pgd_steps, pgd_step_size, pgd_norm : float, int, float or None, {"l2", "linf"}
        PGD of the inner maximisation: radius ``R`` of the attention perturbation ball,
        iterations, step (default ``2.5 R / steps``) and norm.
    divergence : {"bce", "kl"}
        D1 and D2: cross-entropy with soft targets (the paper's BCE) or KL (same gradient).
    epochs, lr : int / float or None
        Epochs and learning rate of the SEAT phase (default: the estimator's ``max_epochs``
        and ``lr``).

    Note: an attention perturbation ``δ`` moves the logits by ``Σ_t δ_t θ h_t`` whatever
    ``w~`` is, so (6) acts only through more decided predictions, not on the sensitivity to
    *embeddings*.
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
    """SEAT as the authors' code trains it (kaustpradalab/SEAT): the *whole* model, from the
    vanilla weights, by ``CE(f(x), y) + lambda_stability·CE(f(x+δ*), y) +
    lambda_topk·topk-L1(att(x+δ*), att(x))``, ``δ*`` the PGD attack (``pgd_*``, step default
    ``2 R / steps``; ``pgd_clamp`` clamps the attacked embeddings, their code: ``(0, 1)``) on
    the word embeddings. Embedding and encoder train at ``lr``, attention and decoder with Adam
    at 1e-3 (amsgrad, as theirs); the estimator's ``optimizer`` must be Adam or AdamW.

    The defaults are the authors' setting: ``k=7, lambda_topk=1000, lambda_stability=1,
    pgd_norm="linf", pgd_radius=0.01, pgd_steps=10, lr=0.01``.
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
        super().check(estimator)
        check_clamp(self.pgd_clamp, "pgd_clamp")
        if estimator.optimizer not in ("adam", "adamw"):
            raise ValueError("variant AuthorsSEAT trains with Adam (amsgrad) as the authors' "
                             "code; optimizer must be 'adam' or 'adamw', got "
                             f"{estimator.optimizer!r}.")

    def second_phase(self, module, inputs, y, seed, defaults) -> TrainingPhase:
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
