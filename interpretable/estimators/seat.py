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
import numbers
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted
from skorch.callbacks import Callback
from torch import nn

from .._validation import check_targets, check_text_inputs, check_texts, make_generator
from ..explanation import TokenExplanation
from ..nn.attention import AttentionTextModule, lengths_to_mask
from ..nn.bert_encoder import BertEncoder
from ..nn.seat import pgd_attention, prediction_divergence, seat_objective, top_k_overlap
from .attention_text import EXPLAIN_METHODS, AttentionTextClassifier, _trim_collate

__all__ = ["SEATClassifier", "SEAT_METHODS"]

SEAT_METHODS = ("seat", "vanilla", "attention-rp", "attention-at", "word-at")
_BASELINES = ("attention-rp", "attention-at", "word-at")
_DEFAULT_EPSILON = {"attention-rp": 0.1, "attention-at": 0.1, "word-at": 1.0}
_ARCHITECTURE = ("encoder", "hidden_size", "attention_size", "freeze_embeddings", "dropout")


# ---------------------------------------------------------------------------- training modules
class _SEATForward(NamedTuple):
    logits: torch.Tensor            # (B, C) y(x, w~)
    attention: torch.Tensor         # (B, T) w~
    perturbed_logits: torch.Tensor  # (B, C) y(x, w~ + delta*)
    vanilla_probs: torch.Tensor     # (B, C) y(x, w)
    vanilla_attention: torch.Tensor  # (B, T) w
    mask: torch.Tensor              # (B, T)


class _SEATTrainer(nn.Module):
    """One step of Algorithm 1 per batch: PGD on ``delta`` (inner max), then the terms of (6).

    Only ``core.attention`` (the copy producing ``w~``) has trainable parameters; the hidden
    states, the decoder and the vanilla attention are shared and frozen. Always in eval mode.
    """

    def __init__(self, core: AttentionTextModule, vanilla_attention: nn.Module, radius, steps,
                 step_size, norm, divergence, seed):
        super().__init__()
        self.core = core
        self.vanilla_attention = vanilla_attention
        self.pgd = dict(radius=radius, steps=steps, step_size=step_size, norm=norm,
                        divergence=divergence)
        self.generator = make_generator(seed)

    def train(self, mode: bool = True):
        return super().train(False)

    def forward(self, tokens, lengths, query=None, query_lengths=None) -> _SEATForward:
        core = self.core
        with torch.no_grad():
            mask = lengths_to_mask(lengths.to(tokens.device), tokens.shape[1])
            hidden = core.encode(core.embed(tokens), mask)
            q = core.encode_query(query, query_lengths) if core.pair else None
            w = self.vanilla_attention(hidden, mask, q)
            vanilla_probs = F.softmax(core.decode(hidden, w, q), dim=-1)
        w_tilde = core.attention_weights(hidden, mask, q)
        delta = pgd_attention(lambda a: core.decode(hidden, a, q), w_tilde, mask,
                              generator=self.generator, **self.pgd)
        return _SEATForward(core.decode(hidden, w_tilde, q), w_tilde,
                            core.decode(hidden, w_tilde + delta, q), vanilla_probs, w, mask)


class _SEATCriterion(nn.Module):
    """Objective (6); the batch's terms are kept in ``last_terms`` for the history."""

    def __init__(self, k, lambda_topk, lambda_stability, divergence):
        super().__init__()
        self.k, self.lambda_topk, self.lambda_stability = k, lambda_topk, lambda_stability
        self.divergence = divergence
        self.last_terms = {}

    def forward(self, out: _SEATForward, y=None):
        loss = seat_objective(out.logits, out.attention, out.perturbed_logits, out.vanilla_probs,
                              out.vanilla_attention, out.mask, self.k, self.lambda_topk,
                              self.lambda_stability, self.divergence)
        self.last_terms = {name: float(getattr(loss, name).detach())
                           for name in ("closeness", "topk", "stability")}
        return loss.total


class _RecordTerms(Callback):
    """Adds the epoch means of the terms of (6) (``closeness`` = D1, ``topk`` = L_topk,
    ``stability`` = max D2) to the history."""

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


class _RobustTrainer(nn.Module):
    """Clean and perturbed forward passes of the baselines; returns ``(clean, perturbed
    logits)``. ``labels`` (B,) give the adversarial directions (``*-at``)."""

    def __init__(self, core: AttentionTextModule, method: str, epsilon: float, seed: int):
        super().__init__()
        self.core, self.method, self.epsilon = core, method, float(epsilon)
        self.generator = make_generator(seed)

    def _direction(self, grad, mask):
        """Unit-ℓ2 direction per sample (over all real positions)."""
        m = mask.to(grad.dtype).reshape(mask.shape + (1,) * (grad.dim() - 2))
        grad = grad * m
        norm = grad.flatten(1).norm(dim=1).clamp_min(1e-12)
        return grad / norm.reshape((-1,) + (1,) * (grad.dim() - 1))

    def forward(self, tokens, lengths, labels, query=None, query_lengths=None):
        core = self.core
        mask = lengths_to_mask(lengths.to(tokens.device), tokens.shape[1])
        embedded = core.embed(tokens)
        if self.method == "word-at" and not embedded.requires_grad:
            embedded = embedded.detach().requires_grad_(True)
        hidden = core.encode(embedded, mask)
        q = core.encode_query(query, query_lengths) if core.pair else None
        w = core.attention_weights(hidden, mask, q)
        logits = core.decode(hidden, w, q)
        if self.method == "attention-rp":
            noise = torch.randn(w.shape, generator=self.generator).to(w.device)
            r = self.epsilon * self._direction(noise, mask)
            return logits, core.decode(hidden, w + r, q)
        target = embedded if self.method == "word-at" else w
        (grad,) = torch.autograd.grad(F.cross_entropy(logits, labels), target, retain_graph=True)
        r = self.epsilon * self._direction(grad.detach(), mask)
        if self.method == "attention-at":
            return logits, core.decode(hidden, w + r, q)
        adv = core(tokens, lengths, query, query_lengths, embedded=embedded + r)
        return logits, adv.logits


class _RobustCriterion(nn.Module):
    def forward(self, out, y):
        clean, perturbed = out
        return F.cross_entropy(clean, y) + F.cross_entropy(perturbed, y)


# ---------------------------------------------------------------------------- BERT inputs
class _WordPieceEncoder:
    """Word-piece tokeniser of the bundled MiniLM with the interface of ``TextEncoder`` that
    the attention classifiers use (``tokenize_many``, ``encode_tokens``, ``index_to_token_``,
    ``get_state`` / ``from_state``). Texts become ``[CLS] pieces [SEP]``, at most ``max_len``
    (<= 512) tokens; padding id 0."""

    def __init__(self, max_len=None):
        self.max_len = min(int(max_len or 512), 512)

    @property
    def tokenizer(self):
        if getattr(self, "_tokenizer", None) is None:
            from transformers import AutoTokenizer

            from ..datasets import load_minilm

            self._tokenizer = AutoTokenizer.from_pretrained(str(load_minilm()),
                                                            local_files_only=True)
        return self._tokenizer

    def fit(self, X=None, y=None):
        vocab = self.tokenizer.get_vocab()
        self.index_to_token_ = sorted(vocab, key=vocab.get)
        return self

    def tokenize(self, text: str) -> list:
        tok = self.tokenizer
        return [tok.cls_token, *tok.tokenize(text)[: self.max_len - 2], tok.sep_token]

    def tokenize_many(self, X) -> list:
        return [self.tokenize(t) for t in check_texts(X)]

    def encode_tokens(self, tokenized) -> tuple:
        lengths = np.array([len(t) for t in tokenized], dtype=np.int64)
        ids = np.full((len(tokenized), int(lengths.max())), self.tokenizer.pad_token_id, np.int64)
        for i, tokens in enumerate(tokenized):
            ids[i, : len(tokens)] = self.tokenizer.convert_tokens_to_ids(tokens)
        return ids, lengths

    def get_state(self) -> dict:
        return {"wordpiece": "minilm", "max_len": self.max_len}

    @classmethod
    def from_state(cls, state: dict) -> "_WordPieceEncoder":
        return cls(state["max_len"]).fit()

    def __getstate__(self):
        return {k: v for k, v in self.__dict__.items() if k != "_tokenizer"}


# ---------------------------------------------------------------------------- estimator
def _check_number(value, name, low=0.0, integer=False, strict=False):
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind) or not np.isfinite(value) \
            or value < low or (strict and value == low):
        what = "an integer" if integer else "a number"
        raise ValueError(f"{name} must be {what} {'>' if strict else '>='} {low}, got {value!r}.")


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
    base_estimator : fitted AttentionTextClassifier or None
        Vanilla model to start from (SEAT revises its attention; baselines fine-tune its
        weights; ``"vanilla"`` copies it). Its architecture and vocabulary are used. An unfitted
        estimator is cloned and fitted first. ``clone`` (and so ``GridSearchCV``) unfits
        parameters: wrap a fitted model in ``sklearn.frozen.FrozenEstimator`` to keep it.
    k : int
        Top-k of the overlap constraint ``L_topk``.
    lambda_topk : float
        Weight of ``L_topk(w, w~)`` (the paper's λ2).
    lambda_stability : float
        Weight of the stability term ``max_δ D2`` (the paper's λ1).
    pgd_radius : float
        Radius ``R`` of the attention perturbation ball.
    pgd_steps : int
        PGD iterations of the inner maximisation.
    pgd_step_size : float or None
        PGD step (default ``2.5 * pgd_radius / pgd_steps``).
    pgd_norm : {"l2", "linf"}
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
    lowercase, min_freq, max_vocab, max_len, lr, max_epochs, batch_size, optimizer,
    weight_decay, device, random_state, verbose :
        As in :class:`AttentionTextClassifier` (the vanilla model / baseline training).

    Attributes
    ----------
    module_ : AttentionTextModule whose ``attention`` produces ``w~`` (SEAT) and which also
        holds ``vanilla_attention`` (``w``) for ``method="seat"``.
    vanilla_history_ : per-epoch history of the vanilla training (SEAT; ``history_`` is the
        SEAT phase).
    fit_diagnostics_ : dict (SEAT): on the training data, mean top-k overlap ``V_k(w, w~)``,
        mean TVD between ``y(x, w)`` and ``y(x, w~)`` and their agreement rate.
    """

    def __init__(self, *, method="seat", base_estimator=None, k=4, lambda_topk=1.0,
                 lambda_stability=1.0, pgd_radius=0.05, pgd_steps=5, pgd_step_size=None,
                 pgd_norm="l2", divergence="bce", seat_epochs=None, seat_lr=None,
                 adv_epsilon=None, encoder="lstm", embeddings=None, embed_dim=50,
                 hidden_size=128, attention_size=None, freeze_embeddings=False, dropout=0.0,
                 lowercase=True, min_freq=1, max_vocab=None, max_len=None, lr=1e-3,
                 max_epochs=10, batch_size=64, optimizer="adam", weight_decay=0.0,
                 device="auto", random_state=None, verbose=0):
        super().__init__(encoder=encoder, embeddings=embeddings, embed_dim=embed_dim,
                         hidden_size=hidden_size, attention_size=attention_size,
                         freeze_embeddings=freeze_embeddings, dropout=dropout,
                         lowercase=lowercase, min_freq=min_freq, max_vocab=max_vocab,
                         max_len=max_len, lr=lr, max_epochs=max_epochs, batch_size=batch_size,
                         optimizer=optimizer, weight_decay=weight_decay, device=device,
                         random_state=random_state, verbose=verbose)
        self.method = method
        self.base_estimator = base_estimator
        self.k = k
        self.lambda_topk = lambda_topk
        self.lambda_stability = lambda_stability
        self.pgd_radius = pgd_radius
        self.pgd_steps = pgd_steps
        self.pgd_step_size = pgd_step_size
        self.pgd_norm = pgd_norm
        self.divergence = divergence
        self.seat_epochs = seat_epochs
        self.seat_lr = seat_lr
        self.adv_epsilon = adv_epsilon

    # ------------------------------------------------------------------ validation
    def _validate_seat_params(self):
        if self.method not in SEAT_METHODS:
            raise ValueError(f"method must be one of {list(SEAT_METHODS)}, got {self.method!r}.")
        _check_number(self.k, "k", 1, integer=True)
        _check_number(self.lambda_topk, "lambda_topk")
        _check_number(self.lambda_stability, "lambda_stability")
        _check_number(self.pgd_radius, "pgd_radius")
        _check_number(self.pgd_steps, "pgd_steps", integer=True)
        if self.pgd_step_size is not None:
            _check_number(self.pgd_step_size, "pgd_step_size", strict=True)
        if self.pgd_norm not in ("l2", "linf"):
            raise ValueError(f"pgd_norm must be 'l2' or 'linf', got {self.pgd_norm!r}.")
        if self.divergence not in ("bce", "kl"):
            raise ValueError(f"divergence must be 'bce' or 'kl', got {self.divergence!r}.")
        if self.seat_epochs is not None:
            _check_number(self.seat_epochs, "seat_epochs", 1, integer=True)
        if self.seat_lr is not None:
            _check_number(self.seat_lr, "seat_lr", strict=True)
        if self.adv_epsilon is not None:
            _check_number(self.adv_epsilon, "adv_epsilon", strict=True)
        base = self.base_estimator
        if base is not None and not isinstance(_unwrap(base), AttentionTextClassifier):
            raise TypeError("base_estimator must be an AttentionTextClassifier (or a "
                            f"FrozenEstimator of one), got {type(base).__name__}.")

    # ------------------------------------------------------------------ module
    def _architecture(self) -> dict:
        arch = getattr(self, "architecture_", None)
        return arch if arch is not None else {name: getattr(self, name) for name in _ARCHITECTURE}

    def _is_bert(self) -> bool:
        spec = self._architecture()["encoder"]
        return (isinstance(spec, str) and spec == "minilm") or isinstance(spec, BertEncoder)

    def _encoder_spec(self):
        """``"minilm"``: the bundled MiniLM (pretrained, fine-tuned with the model); a
        :class:`BertEncoder` instance is copied (e.g. a tiny random one in tests)."""
        spec = self._architecture()["encoder"]
        if isinstance(spec, str) and spec == "minilm":
            from ..datasets import load_minilm

            return BertEncoder.from_pretrained(load_minilm())
        return copy.deepcopy(spec) if isinstance(spec, BertEncoder) else spec

    def _validate_params(self) -> None:
        super()._validate_params()
        if self._is_bert() and self.embeddings is not None:
            raise ValueError("embeddings must be None with a BERT encoder: it brings its own "
                             "word-piece embeddings.")

    def _text_encoder(self):
        if self._is_bert():
            return _WordPieceEncoder(self.max_len)
        return super()._text_encoder()

    def _build_module(self) -> AttentionTextModule:
        arch, init = self._architecture(), self.embedding_init_
        spec = self._encoder_spec()
        if isinstance(spec, BertEncoder):
            if spec.vocab_size != len(self.encoder_.index_to_token_):
                raise ValueError(f"the BERT encoder has {spec.vocab_size} word pieces but the "
                                 f"MiniLM tokeniser {len(self.encoder_.index_to_token_)}.")
            init = spec.word_embeddings.numpy()
        module = AttentionTextModule(
            vocab_size=len(self.encoder_.index_to_token_), num_classes=self.n_classes_,
            embed_dim=self.embed_dim_, hidden_size=arch["hidden_size"], encoder=spec,
            embeddings=None if init is None else torch.from_numpy(init),
            freeze_embeddings=arch["freeze_embeddings"], pair=self.pair_input_,
            dropout=arch["dropout"], attention_size=arch["attention_size"])
        if self.method == "seat":
            module.vanilla_attention = copy.deepcopy(module.attention)
        return module

    def _criterion(self) -> nn.Module:
        return _RobustCriterion() if self.method in _BASELINES else super()._criterion()

    def _fit_net(self, module_factory, criterion, X, y, *, seed, **kwargs):
        """Baselines train through :class:`_RobustTrainer` (which needs the labels); the
        fitted ``module_`` is always the plain :class:`AttentionTextModule`."""
        if isinstance(criterion, _RobustCriterion):
            epsilon = self.adv_epsilon or _DEFAULT_EPSILON[self.method]
            factory = module_factory
            module_factory = lambda: _RobustTrainer(  # noqa: E731
                factory(), self.method, epsilon, seed)
            X = {**X, "labels": y}
        try:
            return super()._fit_net(module_factory, criterion, X, y, seed=seed, **kwargs)
        finally:
            if hasattr(getattr(self, "module_", None), "core"):
                self.module_ = self.module_.core.eval()

    @contextmanager
    def _phase(self, max_epochs, lr):
        """Train with other epochs / learning rate; the constructor values are restored."""
        saved = self.max_epochs, self.lr
        self.max_epochs, self.lr = max_epochs, lr
        try:
            yield
        finally:
            self.max_epochs, self.lr = saved

    # ------------------------------------------------------------------ fit
    def fit(self, X, y):
        """Train the vanilla model (or take ``base_estimator``), then SEAT / the baseline."""
        self._validate_seat_params()
        self.architecture_ = None
        if self.base_estimator is None:
            if self.method == "seat":
                with self._as_method("vanilla"):
                    super().fit(X, y)
            else:
                super().fit(X, y)
        else:
            self._start_from_base(X, y)
        if self.method != "seat":
            return self
        seed = self._start_fit()
        inputs = self._encode_inputs(X)
        labels = check_targets(y, len(inputs["tokens"]))
        y_index = torch.as_tensor(np.searchsorted(self.classes_, labels))
        core = self.module_
        flags = {name: p.requires_grad for name, p in core.named_parameters()}
        core.requires_grad_(False)
        core.attention.requires_grad_(True)
        vanilla_attention = copy.deepcopy(core.attention).requires_grad_(False)
        self.vanilla_history_ = getattr(self, "history_", [])
        trainer = lambda: _SEATTrainer(  # noqa: E731
            core, vanilla_attention, self.pgd_radius, self.pgd_steps, self.pgd_step_size,
            self.pgd_norm, self.divergence, seed + 1)
        criterion = _SEATCriterion(self.k, self.lambda_topk, self.lambda_stability,
                                   self.divergence)
        try:
            with self._phase(self.seat_epochs or self.max_epochs, self.seat_lr or self.lr):
                self._fit_net(trainer, criterion, inputs, y_index, seed=seed + 1,
                              callbacks=[("seat_terms", _RecordTerms())],
                              iterator_train__collate_fn=_trim_collate)
        finally:
            for name, p in core.named_parameters():
                p.requires_grad_(flags.get(name, False))
        self.module_ = core.eval()
        self.module_.vanilla_attention = vanilla_attention
        self.fit_diagnostics_ = self._diagnostics(inputs)
        return self

    @contextmanager
    def _as_method(self, method):
        saved = self.method
        self.method = method
        try:
            yield
        finally:
            self.method = saved

    def _start_from_base(self, X, y):
        base = _unwrap(self.base_estimator)
        try:
            check_is_fitted(base, "module_")
        except NotFittedError:
            base = clone(base).fit(X, y)
        texts, queries = check_text_inputs(X)
        labels = check_targets(y, len(texts))
        unseen = np.setdiff1d(np.unique(labels), base.classes_)
        if unseen.size:
            raise ValueError(f"y has labels {unseen.tolist()} unknown to base_estimator.")
        if (queries is not None) != base.pair_input_:
            raise ValueError("X and base_estimator disagree on (text, query) pairs vs texts.")
        self._start_fit()
        self.classes_, self.pair_input_ = base.classes_.copy(), base.pair_input_
        self.encoder_ = copy.deepcopy(base.encoder_)
        self.embedding_init_ = base.embedding_init_
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
            seed = self._start_fit()
            inputs = self._encode_inputs(X)
            y_index = torch.as_tensor(np.searchsorted(self.classes_, labels))
            self._fit_net(lambda: module, self._criterion(), inputs, y_index, seed=seed,
                          iterator_train__collate_fn=_trim_collate)

    def _diagnostics(self, inputs) -> dict:
        overlap, tvd, agree = [], [], []
        for _, batch, out, q in self._iter_outputs(inputs):
            w = self.module_.vanilla_attention(out.hidden, out.mask, q)
            probs = F.softmax(self.module_.decode(out.hidden, w, q), -1)
            overlap.append(top_k_overlap(w, out.attention, self.k, out.mask))
            tvd.append(prediction_divergence(probs, out.logits, "tvd"))
            agree.append((probs.argmax(1) == out.logits.argmax(1)).float())
        mean = lambda parts: float(torch.cat(parts).mean())  # noqa: E731
        return {"top_k_overlap": mean(overlap), "prediction_tvd": mean(tvd),
                "agreement": mean(agree)}

    # ------------------------------------------------------------------ persistence
    def _get_fitted_state(self) -> dict:
        state = super()._get_fitted_state()
        state["architecture"] = self.architecture_
        state["fit_diagnostics"] = getattr(self, "fit_diagnostics_", None)
        return state

    def _set_fitted_state(self, state: dict) -> None:
        encoder = state["encoder"]
        if isinstance(encoder, dict) and "wordpiece" in encoder:
            super()._set_fitted_state({**state, "encoder": {
                "params": {}, "index_to_token": []}})
            self.encoder_ = _WordPieceEncoder.from_state(encoder)
        else:
            super()._set_fitted_state(state)
        self.architecture_ = state.get("architecture")
        if state.get("fit_diagnostics") is not None:
            self.fit_diagnostics_ = state["fit_diagnostics"]

    # ------------------------------------------------------------------ explain
    @contextmanager
    def vanilla_view(self):
        """Within this context the estimator predicts and explains with the vanilla attention
        ``w`` instead of ``w~`` (SEAT only; e.g. to score the vanilla model with the metrics)."""
        self._check_fitted()
        if not hasattr(self.module_, "vanilla_attention"):
            raise ValueError(f"method={self.method!r} keeps no separate vanilla attention; "
                             "only method='seat' does.")
        module = self.module_
        seat_attention = module.attention
        module.attention = module.vanilla_attention
        try:
            yield self
        finally:
            module.attention = seat_attention

    def explain(self, X, target=None, method="attention", n_steps=50) -> TokenExplanation:
        """Explain predictions token by token.

        ``method="attention"`` gives the model's attention (``w~`` for SEAT);
        ``method="vanilla"`` the vanilla attention ``w`` (SEAT only; prediction and target then
        refer to the vanilla model); gradient methods as in :class:`AttentionTextClassifier`.
        """
        self._check_method(method, (*EXPLAIN_METHODS, "vanilla"))
        if method != "vanilla":
            return super().explain(X, target=target, method=method, n_steps=n_steps)
        with self.vanilla_view():
            explanation = super().explain(X, target=target, method="attention")
        return dataclasses.replace(explanation, method="vanilla")
