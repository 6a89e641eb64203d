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

Note: with hidden states and decoder fixed, a perturbation ``δ`` of the attention moves the
logits by ``Σ_t δ_t θ h_t`` whatever ``w~`` is, so the stability term can only act through more
decided predictions (saturated softmax); it lowers the PGD divergence on attention, but it does
not make predictions or attention much less sensitive to *embedding* noise (see the
reproduction's Table 1, where Word-AT is the method that is).

``objective="authors"`` trains SEAT as the authors' code does (kaustpradalab/SEAT): after the
vanilla phase the *whole* model is trained further by
``CE(f(x), y) + lambda_stability·CE(f(x + δ*), y) + lambda_topk·topk-L1(att(x + δ*), att(x))``
with ``δ*`` the PGD attack on the word embeddings (``pgd_*``, their setting ``pgd_norm="linf"``,
``pgd_radius=0.01``, ``pgd_steps=10``) and ``topk-L1`` their ``topk_overlap_loss`` (their
``λ1 = 1``, ``λ2 = 1000``, ``K = 7``, batch 32). Embedding and encoder train with ``seat_lr``
(theirs 0.01), attention and decoder with Adam 1e-3, all with amsgrad. The authors start from
a fresh model (20 epochs); here the phase starts from the vanilla weights.

The other ``method`` values train the baselines of the paper's tables with the same estimator,
so that they compare under one grid search: ``"vanilla"`` (cross-entropy only),
``"attention-rp"`` (random perturbation of the attention weights during training),
``"attention-at"`` (adversarial perturbation of the attention weights, Kitada & Iyatomi 2021) and
``"word-at"`` (adversarial perturbation of the word embeddings, Miyato et al. 2016); the
perturbed batch's cross-entropy is added to the clean one.
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
from ..nn.seat import (AuthorsSEATCriterion, AuthorsSEATTrainer, RobustCriterion,
                       RobustTrainer, SEATCriterion, SEATTrainer, prediction_divergence,
                       top_k_overlap)
from ..text import WordPieceEncoder
from ..validation import check_targets
from .attention_text import EXPLAIN_METHODS, AttentionClassifierBase, AttentionTextClassifier
from .text_base import _trim_collate

__all__ = ["SEATClassifier", "SEAT_METHODS"]

SEAT_METHODS = ("seat", "vanilla", "attention-rp", "attention-at", "word-at")
_BASELINES = ("attention-rp", "attention-at", "word-at")
_DEFAULT_EPSILON = {"attention-rp": 0.1, "attention-at": 0.1, "word-at": 1.0}
_ARCHITECTURE = ("hidden_size", "attention_size", "freeze_embeddings", "dropout")
#: learning rate of the attention and decoder parameters under objective="authors" (their code)
AUTHORS_DECODER_LR = 1e-3


class _RecordTerms(Callback):
    """Adds the epoch means of the loss terms to the history: for objective (6)
    ``closeness`` = D1, ``topk`` = L_topk, ``stability`` = max D2; for the authors' loss
    ``clean``, ``adversarial`` and ``topk``."""

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
        SEAT phase: the paper's objective (6) on a copy of the attention layer, or the
        authors' code's loss on the whole model (see the module docstring).
    base_estimator : fitted attention text classifier or None
        Vanilla model to start from (any :class:`AttentionClassifierBase`, e.g. an
        :class:`AttentionTextClassifier` or a :class:`DiversityLSTMClassifier`; SEAT revises
        its attention; baselines fine-tune its weights; ``"vanilla"`` copies it). Its
        architecture and vocabulary are used. An unfitted estimator is cloned and fitted first.
        ``clone`` (and so ``GridSearchCV``) unfits parameters: wrap a fitted model in
        ``sklearn.frozen.FrozenEstimator`` to keep it.
    k : int
        Top-k of the overlap constraint ``L_topk``.
    lambda_topk : float
        Weight of ``L_topk(w, w~)`` (the paper's λ2; ``"authors"``: of their top-k loss).
    lambda_stability : float
        Weight of the stability term ``max_δ D2`` (the paper's λ1; ``"authors"``: of the
        cross-entropy at the attacked embeddings).
    pgd_radius : float
        Radius ``R`` of the attention perturbation ball (``"authors"``: of the embedding
        attack).
    pgd_steps : int
        PGD iterations of the inner maximisation.
    pgd_step_size : float or None
        PGD step (default ``2.5 * pgd_radius / pgd_steps``; ``"authors"``: ``2 * pgd_radius /
        pgd_steps``).
    pgd_norm : {"l2", "linf"}
    pgd_clamp : (float, float) or None
        ``"authors"`` only: clamp the attacked embeddings into this interval (their code:
        ``(0, 1)``).
    divergence : {"bce", "kl"}
        D1 and D2: cross-entropy with soft targets (the paper's BCE) or KL (same gradient).
    seat_epochs, seat_lr : int / float or None
        Epochs and learning rate of the SEAT phase (default: ``max_epochs`` and ``lr``).
    adv_epsilon : float or None
        Perturbation size of the baselines (ℓ2 per sample; default 0.1 on attention weights,
        1.0 on word embeddings).
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
    module_ : AttentionTextModule whose ``attention`` produces ``w~`` (SEAT) and which also
        holds ``vanilla_attention`` (``w``) for ``method="seat"``, ``objective="paper"``: a
        sibling layer chosen per call (``explain(method="vanilla")``,
        ``forward_batch(view="vanilla")``). The authors' objective retrains the whole model
        and keeps no vanilla attention.
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
                 freeze_embeddings=False, dropout=0.0,
                 text_encoder=None, lr=1e-3, max_epochs=10, batch_size=64, optimizer="adam",
                 weight_decay=0.0, device="auto", random_state=None, verbose=0,
                 class_weight=None, callbacks=None, validation_fraction=None, early_stopping=False,
                 n_iter_no_change=5, warm_start=False, precision="float32", accelerator=None):
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
        self.method = method
        self.objective = objective
        self.base_estimator = base_estimator
        self.k = k
        self.lambda_topk = lambda_topk
        self.lambda_stability = lambda_stability
        self.pgd_radius = pgd_radius
        self.pgd_steps = pgd_steps
        self.pgd_step_size = pgd_step_size
        self.pgd_norm = pgd_norm
        self.pgd_clamp = pgd_clamp
        self.divergence = divergence
        self.seat_epochs = seat_epochs
        self.seat_lr = seat_lr
        self.adv_epsilon = adv_epsilon

    # ------------------------------------------------------------------ validation
    def _check_params(self) -> None:
        base = self.base_estimator
        if base is not None and not isinstance(_unwrap(base), AttentionClassifierBase):
            raise TypeError("base_estimator must be an attention text classifier (or a "
                            f"FrozenEstimator of one), got {type(base).__name__}.")
        if self._is_bert() and self.embeddings is not None:
            raise ValueError("embeddings must be None with a BERT encoder: it brings its own "
                             "word-piece embeddings.")
        clamp = self.pgd_clamp
        if clamp is not None and not (len(clamp) == 2 and clamp[0] < clamp[1]):
            raise ValueError(f"pgd_clamp must be None or (low, high) with low < high, got "
                             f"{clamp!r}.")
        if self.objective == "authors" and self.optimizer not in ("adam", "adamw"):
            raise ValueError("objective='authors' trains with Adam (amsgrad) as the authors' "
                             f"code; optimizer must be 'adam' or 'adamw', got {self.optimizer!r}.")

    # ------------------------------------------------------------------ module
    def _architecture(self) -> dict:
        """Encoder and sizes of the module: the base estimator's when fitted from one."""
        arch = getattr(self, "architecture_", None)
        if arch is None:
            arch = {name: getattr(self, name) for name in _ARCHITECTURE}
            arch["encoder"] = self.encoder
        return arch

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
        if self._keeps_vanilla():
            module.vanilla_attention = copy.deepcopy(module.attention)
        return module

    def _keeps_vanilla(self) -> bool:
        """SEAT by objective (6) keeps the vanilla attention beside ``w~``."""
        return self.method == "seat" and self.objective == "paper"

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
        if self.method == "seat" and self.objective == "authors":
            self._log("phase 2/2: SEAT, the authors' loss on the whole model")
            self._fit_authors(X, y)
        elif self.method == "seat":
            self._log("phase 2/2: SEAT attention, objective (6)")
            self._fit_seat(X, y)

    def _fit_seat(self, X, y):
        """The SEAT phase: train a copy of the attention layer by objective (6)."""
        seed = self._start_fit() + 1
        batch = self.encode(X)
        y_index = torch.as_tensor(self.target_indices(check_targets(y, len(batch)),
                                                      np.zeros((len(batch), 0))))
        core = self.module_
        vanilla_attention = copy.deepcopy(core.attention).requires_grad_(False)
        trainable = {name: p.requires_grad for name, p in core.named_parameters()}
        core.requires_grad_(False)
        core.attention.requires_grad_(True)
        self.vanilla_history_ = self.history_
        try:
            self._fit_net(
                lambda: SEATTrainer(core, vanilla_attention, self.pgd_radius, self.pgd_steps,
                                    self.pgd_step_size, self.pgd_norm, self.divergence, seed),
                SEATCriterion(self.k, self.lambda_topk, self.lambda_stability, self.divergence),
                batch.inputs, y_index, seed=seed, callbacks=[("seat_terms", _RecordTerms())],
                iterator_train__collate_fn=_trim_collate, validation=False,
                max_epochs=self.seat_epochs or self.max_epochs, lr=self.seat_lr or self.lr)
        finally:
            for name, p in core.named_parameters():
                p.requires_grad_(trainable.get(name, False))
        core.vanilla_attention = vanilla_attention
        self.module_ = core.eval()

        def reference(batch, out):
            w = vanilla_attention(out.hidden, out.mask, out.query_state)
            return w, core.decode(out.hidden, w, out.query_state)

        self.fit_diagnostics_ = self._diagnostics(batch.inputs, reference)

    def _fit_authors(self, X, y):
        """The SEAT phase of the authors' code: the whole model by their loss."""
        seed = self._start_fit() + 1
        batch = self.encode(X)
        y_index = torch.as_tensor(self.target_indices(check_targets(y, len(batch)),
                                                      np.zeros((len(batch), 0))))
        vanilla = copy.deepcopy(self.module_).eval().requires_grad_(False)
        core = self.module_
        self.vanilla_history_ = self.history_
        attack = dict(radius=self.pgd_radius, steps=self.pgd_steps, step_size=self.pgd_step_size,
                      norm=self.pgd_norm, clamp=self.pgd_clamp)
        decoder = {"lr": AUTHORS_DECODER_LR}
        self._fit_net(
            lambda: AuthorsSEATTrainer(core, attack, seed),
            AuthorsSEATCriterion(self.k, self.lambda_stability, self.lambda_topk),
            {**batch.inputs, "labels": y_index}, y_index, seed=seed,
            callbacks=[("seat_terms", _RecordTerms())], iterator_train__collate_fn=_trim_collate,
            validation=False, max_epochs=self.seat_epochs or self.max_epochs,
            lr=self.seat_lr or self.lr, optimizer__amsgrad=True,
            optimizer__param_groups=[("core.attention.*", {**decoder, "weight_decay": 0.0}),
                                     ("core.output.*", decoder), ("core.combine_*", decoder)])
        self.module_ = self.module_.core.eval()

        def reference(batch, out):
            ref = vanilla(**batch)
            return ref.attention, ref.logits

        self.fit_diagnostics_ = self._diagnostics(batch.inputs, reference)

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

    def _diagnostics(self, inputs, reference) -> dict:
        """Top-k overlap, prediction TVD and agreement with the vanilla model, whose
        ``(attention, logits)`` of a batch are ``reference(batch, output)``."""
        overlap, tvd, agree = [], [], []
        with torch.no_grad():
            for _, batch, out in self.forward_batches(inputs):
                w, logits = reference(batch, out)
                probs = F.softmax(logits, -1)
                overlap.append(top_k_overlap(w, out.attention, self.k, out.mask))
                tvd.append(prediction_divergence(probs, out.logits, "tvd"))
                agree.append((probs.argmax(1) == out.logits.argmax(1)).float())
        return {"top_k_overlap": float(torch.cat(overlap).mean()),
                "prediction_tvd": float(torch.cat(tvd).mean()),
                "agreement": float(torch.cat(agree).mean())}

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        state = super()._get_fitted_state()
        arch = getattr(self, "architecture_", None)
        state["architecture"] = arch
        state["fit_diagnostics"] = getattr(self, "fit_diagnostics_", None)
        return state

    def _set_fitted_state(self, state: dict) -> None:
        super()._set_fitted_state(state)
        if state.get("architecture") is not None:
            self.architecture_ = state["architecture"]
        if state.get("fit_diagnostics") is not None:
            self.fit_diagnostics_ = state["fit_diagnostics"]

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
