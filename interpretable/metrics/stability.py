"""Stability of explanations and predictions (SEAT, Hu et al. 2023; Yin et al. 2022).

For every sample: the Jensen-Shannon divergence (natural log, in [0, ln 2]) between the
explanation before and after a perturbation, and the total variation distance between the
predicted class distributions. Explanations become distributions as ``|a| / Σ|a|`` (attention
weights are already distributions). Perturbations: random or adversarial noise on the word
embeddings (:func:`embedding_stability`), synonym substitution (:func:`word_stability`) and
retraining with other random seeds (:func:`seed_stability`).

Estimators and explanation methods as in :mod:`interpretable.metrics.faithfulness`; results are
:class:`AnalysisResult` ``(frame, summary)``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from .._validation import make_generator
from ..attribution.text import embedding_attributions
from .attention_analysis import AnalysisResult, _batched_jsd
from .faithfulness import (check_text_model, explanation_matrix, explanation_method,
                           iter_batches, predict_probabilities)

__all__ = ["embedding_stability", "word_stability", "seed_stability",
           "explanation_distributions", "total_variation"]


def explanation_distributions(scores: np.ndarray, lengths) -> np.ndarray:
    """``(n, T)`` attributions -> distributions ``|a| / Σ|a|`` over each row's real tokens
    (uniform when a row is all zero)."""
    scores = np.abs(np.asarray(scores, dtype=np.float64))
    real = np.arange(scores.shape[1])[None] < np.asarray(lengths)[:, None]
    scores = np.where(real, scores, 0.0)
    total = scores.sum(1, keepdims=True)
    uniform = real / real.sum(1, keepdims=True).clip(min=1)
    return np.where(total > 0, scores / np.where(total > 0, total, 1.0), uniform)


def total_variation(p, q) -> np.ndarray:
    """Total variation distance ``½‖p − q‖₁`` per row of ``(n, C)`` distributions."""
    return 0.5 * np.abs(np.asarray(p, dtype=np.float64) - np.asarray(q, dtype=np.float64)).sum(-1)


def _result(jsd, tvd, extra: dict | None = None, group: str | None = None) -> AnalysisResult:
    frame = pd.DataFrame({"jsd": jsd, "tvd": tvd, **(extra or {})})
    frame.insert(0, "sample", frame.pop("sample") if "sample" in frame else np.arange(len(frame)))
    summary = {"mean_jsd": float(frame.jsd.mean()), "median_jsd": float(frame.jsd.median()),
               "mean_tvd": float(frame.tvd.mean()), "median_tvd": float(frame.tvd.median()),
               "n_samples": int(frame["sample"].nunique())}
    if group is not None:
        summary["by_" + group] = frame.groupby(group)[["jsd", "tvd"]].mean()
    return AnalysisResult(frame, summary)


# ---------------------------------------------------------------------------- embeddings
class _PerturbedEmbeddings:
    """The estimator seen through perturbed embeddings: ``_embed_batch`` adds ``delta``
    (rows found through the private ``_row`` key of the batch); everything else delegates."""

    def __init__(self, clf, delta: torch.Tensor | None = None):
        self._clf, self._delta = clf, delta

    def __getattr__(self, name):
        return getattr(self._clf, name)

    def _embed_batch(self, batch):
        emb = self._clf._embed_batch(batch)
        if self._delta is None:
            return emb
        return emb + self._delta[batch["_row"].cpu(), : emb.shape[1]].to(emb)

    def _batch_outputs(self, batch, **kwargs):
        return self._clf._batch_outputs({k: v for k, v in batch.items() if k != "_row"}, **kwargs)


def _token_noise(shape, lengths, radius, generator) -> torch.Tensor:
    """Random directions of norm ``radius`` for every real token, ``(n, T, E)``."""
    noise = torch.randn(shape, generator=generator, dtype=torch.float64)
    noise = noise / noise.norm(dim=-1, keepdim=True).clamp_min(1e-12) * radius
    real = torch.arange(shape[1])[None] < torch.as_tensor(lengths)[:, None]
    return (noise * real[..., None]).float()


def _adversarial_noise(clf, inputs, radius, steps, generator, batch_size) -> torch.Tensor:
    """PGD maximising the KL divergence of the predictions, ``‖δ_t‖₂ ≤ radius`` per token."""
    n, T = inputs["tokens"].shape
    deltas = torch.zeros(n, T, clf._embed_batch({"tokens": inputs["tokens"][:1, :1]}).shape[-1])
    clf.module_.eval()
    for rows, batch in iter_batches(clf, inputs, batch_size):
        with torch.no_grad():
            emb = clf._embed_batch(batch).detach()
            target = F.softmax(clf._batch_outputs(batch, embedded=emb).logits, -1)
        lengths = batch["lengths"].cpu()
        delta = _token_noise(emb.shape, lengths, radius, generator).to(emb) * 0.5
        positions = torch.arange(emb.shape[1], device=emb.device)[None]
        real = (positions < batch["lengths"][:, None])[..., None]
        for _ in range(steps):
            delta.requires_grad_(True)
            with torch.enable_grad():
                logp = F.log_softmax(clf._batch_outputs(batch, embedded=emb + delta).logits, -1)
                loss = F.kl_div(logp, target, reduction="sum")
                (grad,) = torch.autograd.grad(loss, delta)
            with torch.no_grad():
                grad = grad / grad.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                delta = delta.detach() + 2.5 * radius / steps * grad
                norm = delta.norm(dim=-1, keepdim=True).clamp_min(1e-12)
                delta = delta * (radius / norm).clamp(max=1)
                delta = delta * real
        deltas[rows, : emb.shape[1]] = delta.detach().cpu()
    return deltas


def _explain_tensors(model, inputs, method, target_idx, batch_size, n_steps):
    """Padded explanation scores ``(n, T)`` and probabilities ``(n, C)`` of ``model`` (a
    :class:`_PerturbedEmbeddings` view) on encoded ``inputs``."""
    n, T = inputs["tokens"].shape
    probs, att = [], np.zeros((n, T))
    inputs = {**inputs, "_row": torch.arange(n)}
    model.module_.eval()
    with torch.no_grad():
        for rows, batch in iter_batches(model, inputs, batch_size):
            out = model._batch_outputs(batch, embedded=model._embed_batch(batch))
            probs.append(F.softmax(out.logits.float(), -1).cpu())
            att[rows, : out.attention.shape[1]] = out.attention.float().cpu().numpy()
    if method != "attention":
        att = embedding_attributions(model, inputs, target_idx, method=method,
                                     n_steps=n_steps, batch_size=batch_size).scores
    return att, torch.cat(probs).numpy()


def embedding_stability(clf, X, radius=1e-3, method="attention", kind="random", steps=10,
                        random_state=0, batch_size=None, n_steps=50) -> AnalysisResult:
    """Stability under perturbation of the word embeddings (SEAT, Table 1).

    Every token's embedding moves by ``‖δ_t‖₂ = radius`` in a random direction
    (``kind="random"``), or within that ball by ``steps`` of PGD maximising the change of the
    predicted distribution (``kind="adversarial"``). Explanations by ``method`` (any method
    of ``explain``; gradient methods target the clean prediction) are compared by JSD,
    predictions by TVD.
    """
    clf = check_text_model(clf, "embedding_stability")
    if not radius >= 0:
        raise ValueError(f"radius must be >= 0, got {radius!r}.")
    if kind not in ("random", "adversarial"):
        raise ValueError(f"kind must be 'random' or 'adversarial', got {kind!r}.")
    generator = make_generator(random_state)
    with explanation_method(clf, method) as m:
        clf._check_method(m, ("attention", "gradient", "integrated_gradients", "input_x_gradient"))
        inputs = clf._encode_inputs(X)
        lengths = inputs["lengths"].numpy()
        target = predict_probabilities(clf, inputs, batch_size=batch_size).argmax(1).numpy()
        clean, p = _explain_tensors(_PerturbedEmbeddings(clf), inputs, m, target, batch_size,
                                    n_steps)
        if kind == "random":
            emb_dim = clf._embed_batch({"tokens": inputs["tokens"][:1, :1]}).shape[-1]
            delta = _token_noise((*inputs["tokens"].shape, emb_dim), lengths, radius, generator)
        else:
            delta = _adversarial_noise(clf, inputs, radius, steps, generator, batch_size)
        pert, q = _explain_tensors(_PerturbedEmbeddings(clf, delta), inputs, m, target,
                                   batch_size, n_steps)
    real = np.arange(clean.shape[1])[None] < lengths[:, None]
    jsd = _batched_jsd(explanation_distributions(clean, lengths),
                       explanation_distributions(pert, lengths), real)
    return _result(jsd, total_variation(p, q))


# ---------------------------------------------------------------------------- words
def word_stability(clf, X, perturber, method="attention") -> AnalysisResult:
    """Stability under word perturbation (SEAT, Table 3): ``perturber`` (e.g.
    :class:`~interpretable.text.SynonymSubstitution`, fitted here if needed) rewrites ``X``;
    explanations of the clean and perturbed texts (both for the clean prediction) are compared
    token by token by JSD (word by word, summing word pieces, when a substitution changed the
    number of word pieces), predictions by TVD. ``n_changed`` counts the replaced words.
    """
    clf = check_text_model(clf, "word_stability")
    if not hasattr(perturber, "transform"):
        raise TypeError("perturber must be a transformer of texts, got "
                        f"{type(perturber).__name__}.")
    try:
        check_is_fitted(perturber)
    except NotFittedError:
        perturber = clone(perturber).fit(X)
    if hasattr(perturber, "substitute"):
        X_pert, positions = perturber.substitute(X)
        n_changed = np.array([len(p) for p in positions])
    else:
        X_pert = perturber.transform(X)
        n_changed = None
    with explanation_method(clf, method) as m:
        clean = clf.explain(X, method=m)
        pert = clf.explain(X_pert, target=clean.target, method=m)
        p, q = clf.predict_proba(X), clf.predict_proba(X_pert)
    rows_a, rows_b, bad = [], [], []
    for i, (ta, tb) in enumerate(zip(clean.tokens, pert.tokens)):
        a, b = np.abs(clean.attributions[i]), np.abs(pert.attributions[i])
        if len(ta) != len(tb):  # a word split into other word pieces: compare whole words
            a, b = _merge_word_pieces(ta, a), _merge_word_pieces(tb, b)
        if len(a) != len(b):
            bad.append(i)
        rows_a.append(a)
        rows_b.append(b)
    if bad:
        raise ValueError(
            f"the perturbation changed the number of words of samples {bad[:5]}; word "
            "stability compares explanations token by token."
        )
    lengths = np.array([len(a) for a in rows_a])
    A = explanation_distributions(_pad_rows(rows_a, lengths), lengths)
    B = explanation_distributions(_pad_rows(rows_b, lengths), lengths)
    jsd = _batched_jsd(A, B, np.arange(A.shape[1])[None] < lengths[:, None])
    extra = {} if n_changed is None else {"n_changed": n_changed}
    return _result(jsd, total_variation(p, q), extra)


def _merge_word_pieces(tokens, values) -> np.ndarray:
    """Sum the values of word pieces (``##`` continuations) into one value per word."""
    starts = np.array([not t.startswith("##") for t in tokens])
    starts[0] = True
    return np.bincount(np.cumsum(starts) - 1, weights=values)


def _pad_rows(rows, lengths) -> np.ndarray:
    out = np.zeros((len(rows), int(lengths.max())))
    for i, row in enumerate(rows):
        out[i, : len(row)] = row
    return out


# ---------------------------------------------------------------------------- seeds
def seed_stability(estimator, X, y, seeds=(0, 1, 2), X_eval=None,
                   method="attention") -> AnalysisResult:
    """Stability against training randomness (SEAT, Fig. 2): ``estimator`` is cloned and fitted
    on ``(X, y)`` with ``random_state`` = each seed; the first seed is the base model. For every
    other seed and sample of ``X_eval`` (default ``X``): JSD between its explanation and the
    base model's (both for the base prediction) and TVD between the predictions.
    ``max_attention`` is the base explanation's largest weight (the paper bins by it).
    """
    seeds = list(seeds)
    if len(seeds) < 2:
        raise ValueError(f"seed_stability needs at least two seeds, got {seeds!r}.")
    X_eval = X if X_eval is None else X_eval
    models = [clone(estimator).set_params(random_state=s).fit(X, y) for s in seeds]
    base = check_text_model(models[0], "seed_stability")
    with explanation_method(base, method) as m:
        ref = base.explain(X_eval, method=m)
        p = base.predict_proba(X_eval)
    lengths = np.array([len(t) for t in ref.tokens])
    A = explanation_distributions(explanation_matrix(ref, lengths), lengths)
    real = np.arange(A.shape[1])[None] < lengths[:, None]
    parts = []
    for seed, model in zip(seeds[1:], models[1:]):
        with explanation_method(model, method) as m:
            other = model.explain(X_eval, target=ref.target, method=m)
            q = model.predict_proba(X_eval)
        B = explanation_distributions(explanation_matrix(other, lengths), lengths)
        parts.append(pd.DataFrame({"sample": np.arange(len(lengths)), "seed": seed,
                                   "jsd": _batched_jsd(A, B, real), "tvd": total_variation(p, q),
                                   "max_attention": A.max(1)}))
    frame = pd.concat(parts, ignore_index=True)
    result = _result(frame.jsd.to_numpy(), frame.tvd.to_numpy(),
                     {"sample": frame["sample"].to_numpy(), "seed": frame.seed.to_numpy(),
                      "max_attention": frame.max_attention.to_numpy()}, group="seed")
    result.summary["base_seed"] = seeds[0]
    return result
