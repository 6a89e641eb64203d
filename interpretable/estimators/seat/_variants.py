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
train as :class:`~.phases.TrainingPhase` objects; the estimator trains them.

This module holds the two SEAT variants and :data:`VARIANTS`; the baselines are defined in
:mod:`.baselines`, the base :class:`~.phases.SEATVariant`, :class:`~.phases.TrainingPhase` and
:class:`~.phases.RecordTerms` in :mod:`.phases`; all are importable from
:mod:`interpretable.estimators.seat`.
"""

from __future__ import annotations

import copy
from numbers import Integral, Real
from typing import TYPE_CHECKING, Any

from interpretable.estimators.seat._baselines import AttentionAT, AttentionRP, Vanilla, WordAT
from interpretable.estimators.seat._phases import RecordTerms, SEATVariant, TrainingPhase
from interpretable.nn import (
    AUTHORS_PARAM_GROUPS,
    NORMS,
    AuthorsSEATCriterion,
    AuthorsSEATTrainer,
    SEATCriterion,
    SEATTrainer,
    check_clamp,
)
from interpretable.utils import Interval, StrOptions

if TYPE_CHECKING:
    import torch

    from interpretable.estimators.seat._estimator import SEATClassifier
    from interpretable.nn import AttentionTextModule

__all__ = ["SEAT", "AuthorsSEAT"]


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
    >>> from interpretable.estimators.seat import SEAT
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

    def __init__(self, k: int = 4, lambda_topk: float = 1.0, lambda_stability: float = 1.0,
                 pgd_radius: float = 0.05, pgd_steps: int = 5,
                 pgd_step_size: float | None = None, pgd_norm: str = "l2",
                 divergence: str = "bce", epochs: int | None = None, lr: float | None = None):
        self.k = k
        self.lambda_topk = lambda_topk
        self.lambda_stability = lambda_stability
        self.pgd_radius = pgd_radius
        self.pgd_steps = pgd_steps
        self.pgd_step_size = pgd_step_size
        self.pgd_norm = pgd_norm
        self.divergence = divergence
        self.epochs = epochs
        self.lr = lr

    def _options(self, defaults: dict) -> dict:
        return {"lr": self.lr or defaults["lr"],
                "max_epochs": self.epochs or defaults["max_epochs"],
                "callbacks": [("seat_terms", RecordTerms())], "validation": False,
                "iterator_train__collate_fn": defaults["collate_fn"]}

    def second_phase(self, module: AttentionTextModule, inputs: dict[str, torch.Tensor],
                     y: torch.Tensor, seed: int, defaults: dict[str, Any]) -> TrainingPhase:
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
        >>> from interpretable.estimators.seat import SEAT
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
    >>> from interpretable.estimators.seat import AuthorsSEAT
    >>> clf = SEATClassifier(variant=AuthorsSEAT(k=2, pgd_steps=1, epochs=1), embed_dim=8,
    ...                      hidden_size=8, max_epochs=1, random_state=0).fit(X, y)
    >>> clf.variant_.name
    'authors'
    """

    name = "authors"
    keeps_vanilla_attention = False
    _parameter_constraints = {**_PGD, "pgd_clamp": [tuple, None]}

    def __init__(self, k: int = 7, lambda_topk: float = 1000.0, lambda_stability: float = 1.0,
                 pgd_radius: float = 0.01, pgd_steps: int = 10,
                 pgd_step_size: float | None = None, pgd_norm: str = "linf",
                 pgd_clamp: tuple[float, float] | None = None, epochs: int | None = None,
                 lr: float | None = 0.01):
        self.k = k
        self.lambda_topk = lambda_topk
        self.lambda_stability = lambda_stability
        self.pgd_radius = pgd_radius
        self.pgd_steps = pgd_steps
        self.pgd_step_size = pgd_step_size
        self.pgd_norm = pgd_norm
        self.pgd_clamp = pgd_clamp
        self.epochs = epochs
        self.lr = lr

    def check(self, estimator: SEATClassifier) -> None:
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
        >>> from interpretable.estimators.seat import AuthorsSEAT
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

    def second_phase(self, module: AttentionTextModule, inputs: dict[str, torch.Tensor],
                     y: torch.Tensor, seed: int, defaults: dict[str, Any]) -> TrainingPhase:
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
        >>> from interpretable.estimators.seat import AuthorsSEAT
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
