"""Faithfulness of token explanations: ERASER comprehensiveness / sufficiency (DeYoung et al.
2020), sensitivity (Yin et al. 2022) and the top-k overlap ``V_k`` of SEAT (Hu et al. 2023).

Every metric takes a fitted text classifier through its public interface (``encode``,
``iter_batches``, ``embed``, ``forward_batch``, ``explain``: every estimator in
:mod:`interpretable.estimators` that classifies texts) and any explanation method:
``method=`` is passed to ``explain`` (None: the estimator's default), or a precomputed
:class:`~interpretable.explanation.TokenExplanation` (e.g. a post-hoc baseline) is given as
``explanation=``. SEAT's ``method="vanilla"`` scores the vanilla model (its ``view``).
Results are :class:`AnalysisResult` ``(frame, summary)``: one row per sample and aggregates.
All model evaluations are batched and run in eval mode.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import torch

from interpretable.explanation import TokenExplanation
from interpretable.metrics._common import (
    AnalysisResult,
    check_text_model,
    explain_or_take,
    explanation_matrix,
    model_view,
    predict_probabilities,
)
from interpretable.metrics._conventions import ERASER
from interpretable.metrics._erasure import erase, text_units, unit_scores
from interpretable.nn import embedding_attack, logits_of, top_k_overlap as _top_k_overlap_torch

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.text import TextClassifierBase

__all__ = ["comprehensiveness", "sufficiency", "sensitivity", "top_k_overlap"]

#: token fractions of ERASER's AOPC bins
ERASER_FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.5)
#: fractions of top-ranked tokens perturbed by :func:`sensitivity`
SENSITIVITY_FRACTIONS = (0.1, 0.2, 0.3, 0.4, 0.5)


def _ranks(scores: np.ndarray, lengths: np.ndarray) -> torch.Tensor:
    """Rank (0 = most important) of every real token by score, ties by position; padding
    gets ranks >= its row length."""
    s = torch.as_tensor(scores)
    real = torch.arange(s.shape[1])[None] < torch.as_tensor(lengths)[:, None]
    s = s.masked_fill(~real, -np.inf)
    order = torch.sort(-s, dim=1, stable=True).indices
    return torch.empty_like(order).scatter_(1, order, torch.arange(s.shape[1]).expand_as(order))


def _check_fractions(fractions, name="fractions") -> np.ndarray:
    f = np.asarray(fractions, dtype=np.float64).ravel()
    if f.size == 0 or not np.all((f > 0) & (f <= 1)):
        raise ValueError(f"{name} must be a non-empty sequence of numbers in (0, 1], "
                         f"got {fractions!r}.")
    return f


def _erasure(clf, X, method, explanation, fractions, keep_top: bool, batch_size):
    clf = check_text_model(clf, "comprehensiveness / sufficiency")
    convention = replace(ERASER, fractions=tuple(_check_fractions(fractions).tolist()))
    explanation = explain_or_take(clf, X, method, explanation)
    units = text_units(clf, X)
    if len(explanation) != len(units.groups):
        raise ValueError(f"explanation has {len(explanation)} samples but X has "
                         f"{len(units.groups)}.")
    erasures = erase(clf, units, {"scored": unit_scores(explanation, units)}, convention,
                     batch_size=batch_size, view=model_view(clf, method),
                     leave_one_out=False)
    drops = np.array(erasures.bins["scored", keep_top], dtype=np.float64).reshape(
        len(units.groups), len(convention.fractions))
    frame = pd.DataFrame(drops, columns=[f"k={f:g}" for f in convention.fractions])
    frame.insert(0, "sample", np.arange(len(frame)))
    frame["aopc"] = drops.mean(1)
    summary = {"aopc": float(frame.aopc.mean()), "fractions": list(convention.fractions),
               "by_fraction": frame.iloc[:, 1:-1].mean().to_dict()}
    return AnalysisResult(frame, summary)


def comprehensiveness(clf: TextClassifierBase, X: Sequence[str] | ArrayLike,
                      method: str | None = None, explanation: TokenExplanation | None = None,
                      fractions: Sequence[float] | np.ndarray = ERASER_FRACTIONS,
                      batch_size: int | None = None) -> AnalysisResult:
    r"""ERASER comprehensiveness: how much the top tokens' removal lowers the prediction.

    ``p(ŷ|x) − p(ŷ|x \ top-k)`` with the top-k fraction of tokens (by explanation score)
    removed, averaged over ``fractions`` (AOPC). Higher is more faithful. At least one token
    is always left (a one-token text scores 0).

    Parameters
    ----------
    clf : fitted text classifier
        Any estimator of :mod:`interpretable.estimators` that classifies texts.
    X : sequence of str of shape (n_samples,)
        The texts.
    method : str or None, default=None
        Explanation method passed to ``explain`` (None: the estimator's default).
    explanation : TokenExplanation or None, default=None
        A precomputed explanation of ``X`` to score instead (e.g. a post-hoc baseline).
    fractions : tuple of float, default=(0.01, 0.05, 0.1, 0.2, 0.5)
        The top-k fractions of tokens (ERASER's AOPC bins).
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample, a column per fraction and ``aopc``; ``summary``:
        ``aopc`` (the mean), ``fractions``, ``by_fraction``.

    See Also
    --------
    sufficiency : Keep only the top tokens.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import comprehensiveness
    >>> result = comprehensiveness(clf, X, fractions=(0.5,))
    >>> result.frame.columns.tolist()
    ['sample', 'k=0.5', 'aopc']
    >>> sorted(result.summary)
    ['aopc', 'by_fraction', 'fractions']
    """
    return _erasure(clf, X, method, explanation, fractions, False, batch_size)


def sufficiency(clf: TextClassifierBase, X: Sequence[str] | ArrayLike,
                method: str | None = None, explanation: TokenExplanation | None = None,
                fractions: Sequence[float] | np.ndarray = ERASER_FRACTIONS,
                batch_size: int | None = None) -> AnalysisResult:
    """ERASER sufficiency: the drop of the predicted class's probability with only the top tokens.

    ``p(ŷ|x) − p(ŷ|top-k)`` keeping only the top-k fraction of tokens (at least one),
    averaged over ``fractions`` (AOPC). Lower is more faithful.

    Parameters
    ----------
    clf : fitted text classifier
        Any estimator of :mod:`interpretable.estimators` that classifies texts.
    X : sequence of str of shape (n_samples,)
        The texts.
    method : str or None, default=None
        Explanation method passed to ``explain`` (None: the estimator's default).
    explanation : TokenExplanation or None, default=None
        A precomputed explanation of ``X`` to score instead (e.g. a post-hoc baseline).
    fractions : tuple of float, default=(0.01, 0.05, 0.1, 0.2, 0.5)
        The top-k fractions of tokens (ERASER's AOPC bins).
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample, a column per fraction and ``aopc``; ``summary``:
        ``aopc`` (the mean), ``fractions``, ``by_fraction``.

    See Also
    --------
    comprehensiveness : Remove the top tokens.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import sufficiency
    >>> result = sufficiency(clf, X, fractions=(0.5,))
    >>> result.frame.columns.tolist()
    ['sample', 'k=0.5', 'aopc']
    >>> sorted(result.summary)
    ['aopc', 'by_fraction', 'fractions']
    """
    return _erasure(clf, X, method, explanation, fractions, True, batch_size)


def sensitivity(clf: TextClassifierBase, X: Sequence[str] | ArrayLike,
                method: str | None = None, explanation: TokenExplanation | None = None,
                fractions: Sequence[float] | np.ndarray = SENSITIVITY_FRACTIONS,
                max_radius: float = 1.0, n_search: int = 8, pgd_steps: int = 5,
                batch_size: int | None = None) -> AnalysisResult:
    """Sensitivity (Yin et al., 2022): the smallest embedding perturbation flipping a prediction.

    Only the embeddings of the top-ranked tokens move. Lower is more faithful. For each
    fraction ``f`` the ``ceil(f·n)`` top tokens may move by ``‖δ_t‖₂ ≤ ε``; the smallest
    flipping ``ε`` in ``[0, max_radius]`` is found by ``n_search`` bisection steps, each an
    untargeted PGD attack (``pgd_steps`` normalised-gradient steps on the cross-entropy of the
    predicted class). A sample never flipped scores ``max_radius``. The per-sample score is the
    mean over ``fractions``; all samples are searched in lock-step batches.

    Parameters
    ----------
    clf : fitted text classifier
        Any estimator of :mod:`interpretable.estimators` that classifies texts.
    X : sequence of str of shape (n_samples,)
        The texts.
    method : str or None, default=None
        Explanation method passed to ``explain`` (None: the estimator's default).
    explanation : TokenExplanation or None, default=None
        A precomputed explanation of ``X`` to score instead (e.g. a post-hoc baseline).
    fractions : tuple of float, default=(0.1, 0.2, 0.3, 0.4, 0.5)
        The fractions of top tokens that may move.
    max_radius : float, default=1.0
        The largest perturbation searched.
    n_search : int, default=8
        Bisection steps.
    pgd_steps : int, default=5
        PGD steps per attack.
    batch_size : int or None, default=None
        Mini-batch size (None: the estimator's).

    Returns
    -------
    AnalysisResult
        ``frame``: one row per sample, a column per fraction and ``sensitivity``; ``summary``:
        ``mean``, ``max_radius``, ``fractions``, ``by_fraction``.

    Examples
    --------
    >>> from interpretable import AttentionTextClassifier
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> clf = AttentionTextClassifier(embed_dim=8, hidden_size=8, max_epochs=2,
    ...                               random_state=0).fit(X, y)
    >>> from interpretable.metrics import sensitivity
    >>> result = sensitivity(clf, X, fractions=(0.5,), n_search=2, pgd_steps=1)
    >>> result.frame.columns.tolist()
    ['sample', 'k=0.5', 'sensitivity']
    >>> bool(0 <= result.summary["mean"] <= 1.0)
    True
    """
    clf = check_text_model(clf, "sensitivity")
    fractions = _check_fractions(fractions)
    if not max_radius > 0 or n_search < 1 or pgd_steps < 1:
        raise ValueError("max_radius must be > 0 and n_search, pgd_steps positive integers.")
    view = model_view(clf, method)
    inputs = clf.encode(X).inputs
    lengths = inputs["lengths"]
    scores = explanation_matrix(explain_or_take(clf, X, method, explanation), lengths.numpy())
    ranks = _ranks(scores, lengths.numpy())
    pred = predict_probabilities(clf, inputs, batch_size=batch_size, view=view).argmax(1)
    eps = np.zeros((len(pred), len(fractions)))
    for j, f in enumerate(fractions):
        k = torch.ceil(f * lengths.double()).long().clamp(min=1)
        selected = ranks < k[:, None]
        lo = torch.zeros(len(pred), dtype=torch.float64)
        hi = torch.full((len(pred),), float(max_radius), dtype=torch.float64)
        for _ in range(n_search):
            mid = 0.5 * (lo + hi)
            flipped = _flips(clf, inputs, selected, pred, mid, pgd_steps, batch_size, view)
            hi = torch.where(flipped, mid, hi)
            lo = torch.where(flipped, lo, mid)
        eps[:, j] = hi.numpy()
    frame = pd.DataFrame(eps, columns=[f"k={f:g}" for f in fractions])
    frame.insert(0, "sample", np.arange(len(frame)))
    frame["sensitivity"] = eps.mean(1)
    summary = {"mean": float(frame.sensitivity.mean()), "max_radius": float(max_radius),
               "fractions": fractions.tolist(),
               "by_fraction": frame.iloc[:, 1:-1].mean().to_dict()}
    return AnalysisResult(frame, summary)


def _flips(clf, inputs, selected, pred, radius, steps, batch_size, view) -> torch.Tensor:
    """Whether a PGD attack of per-sample ``radius`` on the selected tokens' embeddings
    changes the predicted class; ``(n,)`` bool."""
    out = []
    for rows, batch in clf.iter_batches(inputs, batch_size):
        T = batch["tokens"].shape[1]
        sel = selected[rows, :T].to(clf.device_).unsqueeze(-1).float()
        r = radius[rows].to(clf.device_).float()[:, None, None]
        out.append(_batch_flips(clf, batch, sel, r, pred[rows].to(clf.device_), steps, view))
    return torch.cat(out)


def _batch_flips(clf, batch, sel, r, y, steps, view) -> torch.Tensor:
    """:func:`_flips` of one batch (``sel``, ``r`` and ``y`` on the model's device)."""
    with torch.no_grad():
        emb = clf.embed(batch).detach()

    def logits(delta):
        return logits_of(clf.forward_batch(batch, embedded=emb + delta, view=view))

    delta = embedding_attack(
        lambda d: torch.nn.functional.cross_entropy(logits(d), y, reduction="sum"),
        torch.zeros_like(emb), r, steps=steps, mask=sel)
    with torch.no_grad():
        return (logits(delta).argmax(1) != y).cpu()


def top_k_overlap(w: TokenExplanation | Sequence[ArrayLike],
                  w_tilde: TokenExplanation | Sequence[ArrayLike], k: int = 4) -> np.ndarray:
    """Compute SEAT's top-k overlap ``V_k(w, w~) = |T_k(w) ∩ T_k(w~)| / k`` of explanations.

    Parameters
    ----------
    w : TokenExplanation or list of 1-d arrays
        Explanations of the texts.
    w_tilde : TokenExplanation or list of 1-d arrays
        Other explanations of the same texts (equal lengths).
    k : int, default=4
        How many top tokens (a text shorter than ``k`` uses its length).

    Returns
    -------
    ndarray of shape (n_samples,)
        The overlap of each sample, in [0, 1].

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable.metrics import top_k_overlap
    >>> w = [np.array([0.5, 0.3, 0.2]), np.array([0.1, 0.9])]
    >>> top_k_overlap(w, [np.array([0.1, 0.3, 0.6]), np.array([0.2, 0.8])], k=2)
    array([0.5, 1. ], dtype=float32)
    """
    def rows(e):
        return e.values if isinstance(e, TokenExplanation) else list(e)

    a, b = rows(w), rows(w_tilde)
    if len(a) != len(b):
        raise ValueError(f"w has {len(a)} samples but w_tilde has {len(b)}.")
    lengths = np.array([len(x) for x in a])
    if any(len(x) != n for x, n in zip(b, lengths, strict=True)):
        raise ValueError("w and w_tilde must have the same number of tokens in every sample.")
    if len(a) == 0:
        return np.zeros(0)
    T = int(lengths.max())
    A, B = np.zeros((len(a), T)), np.zeros((len(a), T))
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        A[i, : len(x)], B[i, : len(y)] = x, y
    mask = torch.arange(T)[None] < torch.as_tensor(lengths)[:, None]
    return _top_k_overlap_torch(torch.as_tensor(A), torch.as_tensor(B), k, mask).numpy()
