"""SEAT: stable and explainable attention (Hu et al., AAAI 2023), with the paper's baselines.

``SEATClassifier(method="seat")`` first trains (or takes) a vanilla attention text classifier,
then finds the stable attention ``w~`` by objective (6) / Algorithm 1::

    min  D1(y(x, w~), y(x, w)) + lambda_topk * L_topk(w, w~)
         + lambda_stability * max_{||delta|| <= pgd_radius} D2(y(x, w~), y(x, w~ + delta))

As in the paper, the model is unchanged except for the procedure producing ``w~``: embedding,
encoder and decoder stay those of the vanilla model and only a copy of the attention layer is
trained (initialised at the vanilla attention, ``w~_0 = w``). The vanilla attention layer is kept
(``explain(method="vanilla")``). ``lambda_topk`` is the paper's λ2 and ``lambda_stability`` its
λ1; every evaluation runs the module in eval mode (no dropout).

Note: an attention perturbation ``δ`` moves the logits by ``Σ_t δ_t θ h_t`` whatever ``w~`` is,
so (6) acts only through more decided predictions, not on the sensitivity to *embeddings*.

``objective="authors"`` trains as the authors' code (kaustpradalab/SEAT, see
:mod:`interpretable.nn.seat`) the *whole* model, from the vanilla weights (they start afresh), by
``CE(f(x), y) + lambda_stability·CE(f(x+δ*), y) + lambda_topk·topk-L1(att(x+δ*), att(x))``,
``δ*`` the PGD attack (``pgd_*``) on the word embeddings. Their setting: ``k=7, lambda_topk=1000,
lambda_stability=1, pgd_norm="linf", pgd_radius=0.01, pgd_steps=10, seat_lr=0.01``, batch 32.

The other ``method`` values train the paper's baselines: ``"vanilla"`` (cross-entropy only),
``"attention-rp"`` / ``"attention-at"`` (random / adversarial perturbation of the attention,
Kitada & Iyatomi 2021) and ``"word-at"`` (adversarial word embeddings, Miyato et al. 2016),
adding the perturbed batch's cross-entropy to the clean one.
"""

from __future__ import annotations

import copy
import dataclasses
import json
from numbers import Integral, Real

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback

from ..nn.attention import AttentionTextModule
from ..nn.bert_encoder import BertEncoder
from ..nn.losses import OutputCrossEntropy
from ..nn.recurrent import RECURRENT_KINDS
from ..nn.seat import (AUTHORS_PARAM_GROUPS, AuthorsSEATCriterion, AuthorsSEATTrainer,
                       RobustCriterion, RobustTrainer, SEATCriterion, SEATTrainer, check_clamp,
                       prediction_divergence, top_k_overlap)
from ..text import WordPieceEncoder
from ..validation import check_targets
from .attention_text import EXPLAIN_METHODS, AttentionClassifierBase, AttentionTextClassifier
from .text_base import _trim_collate

__all__ = ["SEATClassifier", "SEAT_METHODS"]

SEAT_METHODS = ("seat", "vanilla", "attention-rp", "attention-at", "word-at")
_BASELINES = ("attention-rp", "attention-at", "word-at")
_DEFAULT_EPSILON = {"attention-rp": 0.1, "attention-at": 0.1, "word-at": 1.0}
_ARCHITECTURE = ("hidden_size", "attention_size", "freeze_embeddings", "dropout")


class _RecordTerms(Callback):
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


def _unwrap(estimator):
    """The estimator inside an ``sklearn.frozen.FrozenEstimator`` (or the estimator itself)."""
    inner = getattr(estimator, "estimator", None)
    frozen = type(estimator).__name__ == "FrozenEstimator" and inner is not None
    return inner if frozen else estimator


class SEATClassifier(AttentionTextClassifier):
    """Attention text classifier with stable and explainable attention (SEAT) or a baseline.

    Parameters
    ----------
    method : {"seat", "vanilla", "attention-rp", "attention-at", "word-at"}
        SEAT (vanilla training, then objective (6)) or one of the paper's baselines.
    objective : {"paper", "authors"}
        SEAT phase: objective (6) on a copy of the attention, or the authors' code's loss.
    base_estimator : fitted attention text classifier or None
        Vanilla model to start from (any :class:`AttentionClassifierBase`; SEAT revises it,
        baselines fine-tune it, ``"vanilla"`` copies it), architecture and vocabulary included.
        An unfitted one is cloned and fitted first; ``clone`` (and ``GridSearchCV``) unfits
        parameters: wrap a fitted model in ``sklearn.frozen.FrozenEstimator`` to keep it.
    k : int
        Top-k of the overlap constraint ``L_topk``.
    lambda_topk, lambda_stability : float
        Weights of ``L_topk(w, w~)`` (the paper's λ2) and of the stability term ``max_δ D2``
        (its λ1); ``"authors"``: of their top-k loss and of the attacked cross-entropy.
    pgd_radius, pgd_steps, pgd_step_size, pgd_norm : float, int, float or None, {"l2", "linf"}
        PGD of the inner maximisation: radius ``R`` of the attention perturbation ball
        (``"authors"``: of the embedding attack), iterations, step (default ``2.5 R / steps``;
        ``"authors"``: ``2 R / steps``) and norm.
    pgd_clamp : (float, float) or None
        ``"authors"`` only: clamp of the attacked embeddings (their code: ``(0, 1)``).
    divergence : {"bce", "kl"}
        D1 and D2: cross-entropy with soft targets (the paper's BCE) or KL (same gradient).
    seat_epochs, seat_lr : int / float or None
        Epochs and learning rate of the SEAT phase (default: ``max_epochs`` and ``lr``).
    adv_epsilon : float or None
        Baselines' perturbation (ℓ2 per sample; default 0.1 on attention, 1.0 on embeddings).
    encoder : {"rnn", "lstm", "bilstm", "orthogonal", "minilm"} or nn.Module
        ``"minilm"``: the bundled MiniLM-L6 (``bert`` extra, word-piece tokens, fine-tuned;
        ``embeddings`` must be None); a :class:`~interpretable.nn.bert_encoder.BertEncoder`
        instance (e.g. randomly initialised) works the same way with the MiniLM tokeniser.
    embeddings, embed_dim, hidden_size, attention_size, freeze_embeddings, dropout,
    text_encoder, lr, max_epochs, batch_size, optimizer, weight_decay, device, random_state,
    verbose :
        As in :class:`AttentionTextClassifier` (the vanilla model / baseline training). With a
        BERT encoder ``text_encoder`` defaults to :class:`~interpretable.text.WordPieceEncoder`.

    Attributes
    ----------
    module_ : AttentionTextModule whose ``attention`` produces ``w~`` (SEAT), holding
        ``vanilla_attention`` (``w``) for objective (6): a sibling layer chosen per call
        (``explain(method="vanilla")``, ``forward_batch(view="vanilla")``).
    vanilla_history_ : per-epoch history of the vanilla training (SEAT; ``history_`` is the
        SEAT phase).
    fit_diagnostics_ : dict (SEAT): on the training data, mean top-k overlap ``V_k(w, w~)``,
        mean TVD between the vanilla and the SEAT predictions and their agreement rate.
    """

    _parameter_constraints = {
        **AttentionTextClassifier._parameter_constraints,
        "method": [StrOptions(set(SEAT_METHODS))],
        "objective": [StrOptions({"paper", "authors"})],
        "pgd_clamp": [tuple, None],
        "base_estimator": [AttentionClassifierBase, HasMethods(["fit", "predict"]), None],
        "k": [Interval(Integral, 1, None, closed="left")],
        "lambda_topk": [Interval(Real, 0, None, closed="left")],
        "lambda_stability": [Interval(Real, 0, None, closed="left")],
        "pgd_radius": [Interval(Real, 0, None, closed="left")],
        "pgd_steps": [Interval(Integral, 0, None, closed="left")],
        "pgd_step_size": [Interval(Real, 0, None, closed="neither"), None],
        "pgd_norm": [StrOptions({"l2", "linf"})],
        "divergence": [StrOptions({"bce", "kl"})],
        "seat_epochs": [Interval(Integral, 1, None, closed="left"), None],
        "seat_lr": [Interval(Real, 0, None, closed="neither"), None],
        "adv_epsilon": [Interval(Real, 0, None, closed="neither"), None],
        "encoder": [StrOptions({*RECURRENT_KINDS, "minilm"}), torch.nn.Module],
    }
    views = ("model", "vanilla")
    explain_methods = (*EXPLAIN_METHODS, "vanilla")

    def __init__(self, *, method="seat", objective="paper", base_estimator=None, k=4,
                 lambda_topk=1.0, lambda_stability=1.0, pgd_radius=0.05, pgd_steps=5,
                 pgd_step_size=None, pgd_norm="l2", pgd_clamp=None, divergence="bce",
                 seat_epochs=None, seat_lr=None, adv_epsilon=None, encoder="lstm",
                 embeddings=None, embed_dim=50, hidden_size=128, attention_size=None,
                 freeze_embeddings=False, dropout=0.0, text_encoder=None, lr=1e-3, max_epochs=10,
                 batch_size=64, optimizer="adam", weight_decay=0.0, device="auto",
                 random_state=None, verbose=0, class_weight=None, callbacks=None,
                 validation_fraction=None, early_stopping=False, n_iter_no_change=5,
                 warm_start=False, precision="float32", accelerator=None):
        super().__init__(encoder=encoder, embeddings=embeddings, embed_dim=embed_dim,
                         hidden_size=hidden_size, attention_size=attention_size,
                         freeze_embeddings=freeze_embeddings, dropout=dropout,
                         text_encoder=text_encoder, lr=lr, max_epochs=max_epochs,
                         batch_size=batch_size, optimizer=optimizer, weight_decay=weight_decay,
                         device=device, random_state=random_state, verbose=verbose,
                         class_weight=class_weight, callbacks=callbacks,
                         validation_fraction=validation_fraction, early_stopping=early_stopping,
                         n_iter_no_change=n_iter_no_change, warm_start=warm_start,
                         precision=precision, accelerator=accelerator)
        self.method, self.objective, self.base_estimator = method, objective, base_estimator
        self.k, self.lambda_topk, self.lambda_stability = k, lambda_topk, lambda_stability
        self.pgd_radius, self.pgd_steps, self.pgd_step_size = pgd_radius, pgd_steps, pgd_step_size
        self.pgd_norm, self.pgd_clamp, self.divergence = pgd_norm, pgd_clamp, divergence
        self.seat_epochs, self.seat_lr, self.adv_epsilon = seat_epochs, seat_lr, adv_epsilon

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        base = self.base_estimator
        if base is not None and not isinstance(_unwrap(base), AttentionClassifierBase):
            raise TypeError("base_estimator must be an attention text classifier (or a "
                            f"FrozenEstimator of one), got {type(base).__name__}.")
        if self._is_bert() and self.embeddings is not None:
            raise ValueError("embeddings must be None with a BERT encoder: it brings its own "
                             "word-piece embeddings.")
        check_clamp(self.pgd_clamp, "pgd_clamp")
        if self.objective == "authors" and self.optimizer not in ("adam", "adamw"):
            raise ValueError("objective='authors' trains with Adam (amsgrad) as the authors' "
                             f"code; optimizer must be 'adam' or 'adamw', got {self.optimizer!r}.")

    # ------------------------------------------------------------------ module
    def _architecture(self) -> dict:
        """Encoder and sizes of the module: the base estimator's when fitted from one."""
        arch = getattr(self, "architecture_", None)
        return arch if arch is not None else {
            **{name: getattr(self, name) for name in _ARCHITECTURE}, "encoder": self.encoder}

    def _is_bert(self) -> bool:
        spec = self._architecture()["encoder"]
        return (isinstance(spec, str) and spec == "minilm") or isinstance(spec, BertEncoder)

    def _encoder_spec(self, pretrained: bool = False):
        """The encoder; ``"minilm"`` is the bundled MiniLM, with its pretrained weights for
        training (``pretrained=True``) or only its structure (weights loaded afterwards)."""
        spec = self._architecture()["encoder"]
        if isinstance(spec, str) and spec == "minilm":
            from ..datasets import load_minilm

            path = load_minilm()
            if pretrained:
                return BertEncoder.from_pretrained(path)
            return BertEncoder.from_config(json.loads((path / "config.json").read_text()))
        return spec

    def _default_text_encoder(self):
        return WordPieceEncoder() if self._is_bert() else super()._default_text_encoder()

    def _initial_module(self, embeddings=None) -> AttentionTextModule:
        return self._build_module(embeddings, pretrained=True)

    def _build_module(self, embeddings=None, pretrained: bool = False) -> AttentionTextModule:
        arch = self._architecture()
        spec = copy.deepcopy(self._encoder_spec(pretrained))
        if isinstance(spec, BertEncoder):
            if spec.vocab_size != len(self.text_encoder_.index_to_token_):
                raise ValueError(f"the BERT encoder has {spec.vocab_size} word pieces but the "
                                 f"tokeniser {len(self.text_encoder_.index_to_token_)}.")
            embeddings, spec.word_embeddings = spec.word_embeddings, None  # moves into the module
        module = AttentionTextModule(
            vocab_size=len(self.text_encoder_.index_to_token_), num_classes=len(self.classes_),
            embed_dim=self.embed_dim_, hidden_size=arch["hidden_size"], encoder=spec,
            embeddings=None if embeddings is None else torch.as_tensor(embeddings),
            freeze_embeddings=arch["freeze_embeddings"], pair=self.pair_input_,
            dropout=arch["dropout"], attention_size=arch["attention_size"])
        if self.method == "seat" and self.objective == "paper":  # keeps w beside w~
            module.vanilla_attention = copy.deepcopy(module.attention)
        return module

    def _attention_layer(self, view: str):
        if view != "vanilla":
            return None
        if not hasattr(self.module_, "vanilla_attention"):
            raise ValueError(f"method={self.method!r}, objective={self.objective!r} keeps no "
                             "separate vanilla attention; only method='seat' with "
                             "objective='paper' does.")
        return self.module_.vanilla_attention

    # ------------------------------------------------------------------ fit
    def _fit_net(self, module_factory, criterion, X, y, *, seed, **kwargs):
        """Baselines train through :class:`RobustTrainer` (it needs labels and gradients: no
        validation split); the fitted ``module_`` is always the plain AttentionTextModule."""
        if self.method not in _BASELINES:
            return super()._fit_net(module_factory, criterion, X, y, seed=seed, **kwargs)
        epsilon = self.adv_epsilon or _DEFAULT_EPSILON[self.method]
        net = super()._fit_net(
            lambda: RobustTrainer(module_factory(), self.method, epsilon, seed),
            RobustCriterion(), {**X, "labels": y}, y, seed=seed, validation=False, **kwargs)
        self.module_ = self.module_.core.eval()
        return net

    def _fit(self, X, y, sample_weight=None):
        """Train the vanilla model (or take ``base_estimator``), then SEAT / the baseline.
        ``sample_weight`` / ``class_weight`` and ``validation_fraction`` apply to the vanilla
        phase and the baselines (objective (6) is unweighted and needs gradients at every step);
        ``warm_start`` continues them, but not SEAT, whose phase starts at ``w~_0 = w``."""
        if self._continues() and self.method == "seat":
            raise ValueError("warm_start=True is not supported with method='seat'.")
        if self.method == "seat":
            self._log("phase 1/2: vanilla attention model")
        if self.base_estimator is None or self._continues():
            super()._fit(X, y, sample_weight)
        else:
            self._start_from_base(X, y, sample_weight)
        if self.method == "seat":
            self._log("phase 2/2: SEAT " + ("attention, objective (6)" if self.objective == "paper"
                                            else "model, the authors' loss"))
            self._fit_seat(X, y)

    def _fit_seat(self, X, y):
        """The SEAT phase: the attention copy by (6), or the whole model by the authors' loss."""
        seed = self._start_fit() + 1
        batch = self.encode(X)
        y_index = torch.as_tensor(self.target_indices(check_targets(y, len(batch)),
                                                      np.zeros((len(batch), 0))))
        core, self.vanilla_history_ = self.module_, self.history_
        vanilla = copy.deepcopy(core).requires_grad_(False)
        phase = dict(seed=seed, callbacks=[("seat_terms", _RecordTerms())], validation=False,
                     iterator_train__collate_fn=_trim_collate, lr=self.seat_lr or self.lr,
                     max_epochs=self.seat_epochs or self.max_epochs)
        if self.objective == "authors":
            attack = dict(radius=self.pgd_radius, steps=self.pgd_steps,
                          step_size=self.pgd_step_size, norm=self.pgd_norm, clamp=self.pgd_clamp)
            self._fit_net(lambda: AuthorsSEATTrainer(core, attack, seed),
                          AuthorsSEATCriterion(self.k, self.lambda_stability, self.lambda_topk),
                          {**batch.inputs, "labels": y_index}, y_index, optimizer__amsgrad=True,
                          optimizer__param_groups=AUTHORS_PARAM_GROUPS, **phase)
            self.module_ = self.module_.core.eval()
        else:
            trainable = {name: p.requires_grad for name, p in core.named_parameters()}
            core.requires_grad_(False)
            core.attention.requires_grad_(True)
            try:
                self._fit_net(
                    lambda: SEATTrainer(core, vanilla.attention, self.pgd_radius, self.pgd_steps,
                                        self.pgd_step_size, self.pgd_norm, self.divergence, seed),
                    SEATCriterion(self.k, self.lambda_topk, self.lambda_stability,
                                  self.divergence), batch.inputs, y_index, **phase)
            finally:
                for name, p in core.named_parameters():
                    p.requires_grad_(trainable.get(name, False))
            core.vanilla_attention = vanilla.attention
            self.module_ = core.eval()
        self.fit_diagnostics_ = self._diagnostics(batch.inputs, vanilla.eval())

    def _start_from_base(self, X, y, sample_weight=None):
        base = _unwrap(self.base_estimator)
        try:
            check_is_fitted(base, "module_")
        except NotFittedError:
            base = clone(base).fit(X, y)
        texts, queries = self._split_inputs(X, fitting=True)
        labels = check_targets(y, len(texts))
        unseen = np.setdiff1d(np.unique(labels), base.classes_)
        if unseen.size:
            raise ValueError(f"y has labels {unseen.tolist()} unknown to base_estimator.")
        if (queries is not None) != base.pair_input_:
            raise ValueError("X and base_estimator disagree on (text, query) pairs vs texts.")
        seed = self._start_fit()
        self.classes_, self.pair_input_ = base.classes_.copy(), base.pair_input_
        self.text_encoder_ = copy.deepcopy(base.text_encoder_)
        self.embed_dim_ = base.embed_dim_
        arch = {name: getattr(base, name) for name in _ARCHITECTURE}
        arch["encoder"] = (base._architecture()["encoder"] if isinstance(base, SEATClassifier)
                           else base._encoder_spec())
        self.architecture_ = arch
        module = copy.deepcopy(base.module_)
        if hasattr(module, "vanilla_attention"):
            del module.vanilla_attention
        self.module_ = module.to(self.device_).eval()
        self.history_ = list(getattr(base, "history_", []))
        if self.method in _BASELINES:
            batch = self._encode_texts(texts, queries)
            y_index = torch.as_tensor(np.searchsorted(self.classes_, labels))
            self._fit_net(lambda: module, OutputCrossEntropy(), batch.inputs, y_index, seed=seed,
                          sample_weight=self._training_weights(y_index, sample_weight),
                          iterator_train__collate_fn=_trim_collate)

    def _diagnostics(self, inputs, vanilla) -> dict:
        """Top-k overlap, prediction TVD and agreement with the ``vanilla`` module."""
        terms = {"top_k_overlap": [], "prediction_tvd": [], "agreement": []}
        with torch.no_grad():
            for _, batch, out in self.forward_batches(inputs):
                ref = vanilla(**batch)
                probs = F.softmax(ref.logits, -1)
                terms["top_k_overlap"].append(top_k_overlap(ref.attention, out.attention, self.k,
                                                            out.mask))
                terms["prediction_tvd"].append(prediction_divergence(probs, out.logits, "tvd"))
                terms["agreement"].append((probs.argmax(1) == out.logits.argmax(1)).float())
        return {name: float(torch.cat(values).mean()) for name, values in terms.items()}

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        return {**super()._get_fitted_state(),
                "architecture": getattr(self, "architecture_", None),
                "fit_diagnostics": getattr(self, "fit_diagnostics_", None)}

    def _set_fitted_state(self, state: dict) -> None:
        super()._set_fitted_state(state)
        for name in ("architecture", "fit_diagnostics"):
            if state.get(name) is not None:
                setattr(self, name + "_", state[name])

    # ------------------------------------------------------------------ explain
    def _explainer(self, method: str):
        """``"vanilla"``: the vanilla attention ``w`` (SEAT only; prediction and target then
        refer to the vanilla model); the others as in :class:`AttentionTextClassifier` (``w~``
        for ``"attention"``)."""
        if method != "vanilla":
            return super()._explainer(method)

        def explain_vanilla(batch, target, *, batch_size):
            self._attention_layer("vanilla")  # a clear error unless method="seat"
            explanation = self._explain_attention(batch, target, batch_size=batch_size,
                                                  view="vanilla")
            return dataclasses.replace(explanation, method="vanilla")

        return explain_vanilla
