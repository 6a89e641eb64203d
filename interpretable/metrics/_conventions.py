"""Conventions of the explanation metrics: ERASER's (this package's default) and ferret's.

A :class:`Convention` answers, for one sample, the questions on which ERASER (DeYoung et al.
2020, as :mod:`interpretable.metrics`, :mod:`interpretable.metrics`
and :func:`~interpretable.metrics.loo_kendall_tau` compute it) and ferret 0.4.2's
``Benchmark`` (its evaluators' default arguments) disagree. Its methods take the scores of
the sample's scored units (words or tokens) with the special tokens already left out (ferret
drops the first and last scores, ``[CLS]`` and ``[SEP]``, and the first and last rationale
entries); the model passes that turn unit sets into probabilities are the caller's.

The differences, :data:`ERASER` first, :data:`FERRET` second:

* AOPC bins: 1, 5, 10, 20 and 50 % of the units; ferret: 10, 20, ..., 100 %
  (``np.arange(0.1, 1.1, 0.1)``, with its floating-point values such as 0.30000000000000004).
* Units per bin: ``ceil(f·n)`` and at least one; ferret: ``int(f·n)`` (rounded down), and a
  bin of 0 units is skipped, so a text of fewer than 10 units has no 10 % bin.
* Comprehensiveness removes at most ``n − 1`` units (a one-unit text removes nothing and scores
  0); ferret may remove every unit (its 100 % bin), leaving an empty text.
* Which units: the top-k by score whatever their sign; ferret keeps, among its top-k, only
  the units scoring above 0, so a bin may hold fewer units and a text without a positive score
  has no bin at all.
* Ties: the earlier unit ranks first (stable sort); ferret takes the last ``k`` of numpy's
  default ``argsort`` (not stable, its tie order depends on the CPU's sorting kernel, the
  numpy version and the scores' dtype), so on ties a later unit usually ranks first.
* Repeated sets: every bin counts; ferret skips a bin whose unit set equals the previous kept
  bin's (e.g. a larger bin that only adds units scoring 0 or less).
* AOPC: the mean drop over the bins; ferret: the mean over the kept bins (``statistics.mean``,
  in the drops' dtype), and 0 (comprehensiveness) or 1 (sufficiency) when no bin is kept.
  Sufficiency keeps the top set in its original order in both.
* AUPRC: scikit-learn's ``average_precision_score`` of the raw scores (a step-wise sum);
  ferret: negative scores set to 0, then the trapezoidal area under
  ``precision_recall_curve`` (``sklearn.metrics.auc``), which interpolates linearly.
* Hard rationale of token F1 / IOU: the top ``|R|`` units (the sample's rationale size) that
  score above 0; ferret: the top 5 (``top_k_rationale``) that score above 0, with its ties.
  ferret computes F1 as ``2·P·R / (P + R)`` of precision and recall (0 when either is 0).
* Empty rationale: AUPRC, F1 and IOU are NaN (left out of the means); ferret scores F1 and
  IOU 0 and AUPRC whatever scikit-learn gives (0.5 with scikit-learn >= 1.1).
* Leave-one-out Kendall tau: the same tau-b; NaN with one unit or constant scores or drops,
  tested before calling SciPy; ferret calls ``kendalltau(drops, scores)`` as is (SciPy gives
  NaN in the same cases; the argument order can change the last bit).

Outside these methods ferret also differs in how a unit is removed: it deletes token ids,
decodes the rest with ``tokenizer.decode`` and re-tokenizes the string, batching the perturbed texts
with padding, and computes the drops ``p(ŷ|x) − p(ŷ|x')`` in float32.
"""

from __future__ import annotations

import math
import statistics
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.stats import kendalltau
from sklearn.metrics import auc, average_precision_score, precision_recall_curve

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

__all__ = ["Convention", "ERASER", "FERRET", "get_convention"]


@dataclass(frozen=True)
class Convention:
    """How a family of explanation metrics chooses units and aggregates, for one sample.

    Two instances are defined, :data:`ERASER` and :data:`FERRET`; get one by name with
    :func:`get_convention`. Every method takes the scores of one sample's scored units (special
    tokens left out).

    Parameters
    ----------
    name : str
        The convention's name.
    fractions : tuple of float
        The fractions of units of the AOPC bins.
    rounding : {"ceil", "floor"}
        Units per bin: ``"ceil"``: ``ceil(f·n)``, at least one, and comprehensiveness removes
        at most ``n − 1``; ``"floor"``: ``int(f·n)``, a bin of 0 units is skipped.
    ties : {"first", "numpy"}
        Order of tied scores: ``"first"``: the earlier unit first (stable sort); ``"numpy"``:
        the reverse of numpy's default ``argsort`` (ferret's).
    only_positive : bool
        Whether an AOPC bin keeps only its units that score above 0 (skipped when none does).
    skip_repeated : bool
        Whether a bin whose unit set equals the previous kept bin's is skipped.
    empty_aopc : tuple of float
        AOPC comprehensiveness and sufficiency of a sample without a kept bin.
    exact_mean : bool
        Whether AOPC averages with ``statistics.mean`` (exactly rounded, in the drops' dtype:
        ferret's) rather than ``numpy.mean``.
    top_k : int or None
        Default size of the hard rationale of token F1 / IOU (None: the rationale's size).
    auprc_curve : {"average_precision", "trapezoid"}
        ``"average_precision"``: ``average_precision_score``; ``"trapezoid"``: negative scores
        set to 0 and the trapezoidal area under the precision-recall curve.
    empty_rationale_nan : bool
        Whether a sample without rationale units scores NaN in AUPRC, F1 and IOU.
    tau_nan_guard : bool
        Whether leave-one-out tau is NaN, without calling SciPy, for fewer than two units or
        constant scores or drops (``kendalltau(scores, drops)`` otherwise); else
        ``kendalltau(drops, scores)`` as is.

    See Also
    --------
    get_convention : A convention by name.

    Examples
    --------
    >>> from interpretable.metrics import ERASER, FERRET
    >>> ERASER.fractions
    (0.01, 0.05, 0.1, 0.2, 0.5)
    >>> len(FERRET.fractions), FERRET.top_k
    (10, 5)
    """

    name: str
    fractions: tuple[float, ...]
    rounding: str
    ties: str
    only_positive: bool
    skip_repeated: bool
    empty_aopc: tuple[float, float]
    exact_mean: bool
    top_k: int | None
    auprc_curve: str
    empty_rationale_nan: bool
    tau_nan_guard: bool

    def _order(self, scores: np.ndarray) -> np.ndarray:
        """Unit indices from the highest score down, ties as the convention breaks them."""
        if self.ties == "first":
            return np.argsort(-np.asarray(scores, dtype=np.float64), kind="stable")
        return np.asarray(scores).argsort()[::-1]  # ferret: argsort()[-k:][::-1], dtype kept

    def _bin_size(self, fraction: float, n: int, keep_top: bool) -> int:
        if self.rounding == "floor":
            return int(fraction * n)
        k = max(math.ceil(fraction * n), 1)
        return min(k, n if keep_top else n - 1)

    def erasure_sets(self, scores: Sequence[float] | np.ndarray, keep_top: bool
                     ) -> list[np.ndarray | None]:
        """Give the units that each AOPC bin removes or keeps.

        Parameters
        ----------
        scores : array-like of shape (n_units,)
            The explanation scores of one sample's units.
        keep_top : bool
            False: the units comprehensiveness removes; True: the units sufficiency keeps.

        Returns
        -------
        list of ndarray or None
            One entry per bin of :attr:`fractions`: the sorted unit indices, or None for a bin
            the convention skips.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable.metrics import ERASER, FERRET
        >>> scores = np.array([0.5, 0.25, -1.0, 0.0, 2.0])
        >>> ERASER.erasure_sets(scores, keep_top=False)
        [array([4]), array([4]), array([4]), array([4]), array([0, 1, 4])]
        >>> [None if s is None else s.tolist() for s in FERRET.erasure_sets(scores, False)]
        [None, [4], None, [0, 4], None, [0, 1, 4], None, None, None, None]
        """
        scores = np.asarray(scores)
        sets: list[np.ndarray | None]
        order, sets, last = self._order(scores), [], None
        for fraction in self.fractions:
            k = self._bin_size(fraction, scores.size, keep_top)
            top = order[:k] if k > 0 else order[:0]
            if self.only_positive:
                top = top[scores[top] > 0]
            top = np.sort(top)
            skip = (self.rounding == "floor" and k == 0) or (self.only_positive and not top.size)
            if skip or (self.skip_repeated and last is not None and np.array_equal(top, last)):
                sets.append(None)
                continue
            sets.append(top)
            last = top
        return sets

    def aopc(self, drops: Sequence[float] | np.ndarray, keep_top: bool) -> float:
        """Average the probability drops of the kept bins (AOPC).

        Parameters
        ----------
        drops : array-like of shape (n_kept,) or (n_bins,)
            ``p(ŷ|x) − p(ŷ|x')`` of each kept bin, or of every bin with NaN at the skipped
            ones (NaN entries are left out). ferret averages float32 drops in float32.
        keep_top : bool
            False: comprehensiveness; True: sufficiency (their value without a kept bin).

        Returns
        -------
        float
            The mean drop, or :attr:`empty_aopc` when no bin is left.

        Examples
        --------
        >>> import numpy as np
        >>> from interpretable.metrics import FERRET
        >>> FERRET.aopc(np.array([0.25, np.nan, 0.75]), keep_top=False)
        0.5
        >>> FERRET.aopc(np.array([]), keep_top=True)
        1.0
        """
        drops = np.asarray(drops)
        drops = drops[~np.isnan(drops)]
        if not drops.size:
            return float(self.empty_aopc[int(bool(keep_top))])
        if self.exact_mean:
            return float(statistics.mean(list(drops)))
        return float(np.mean(drops))

    def auprc(self, rationale: ArrayLike, scores: Sequence[float] | np.ndarray) -> float:
        """Score how well the soft scores rank the rationale's units (AUPRC).

        Parameters
        ----------
        rationale : array-like of bool of shape (n_units,)
            Whether each unit is in the human rationale.
        scores : array-like of shape (n_units,)
            The explanation scores.

        Returns
        -------
        float
            The area under the precision-recall curve.

        Examples
        --------
        >>> from interpretable.metrics import ERASER, FERRET
        >>> rationale, scores = [1, 0, 0, 1], [0.9, 0.1, 0.5, -0.2]
        >>> ERASER.auprc(rationale, scores), round(FERRET.auprc(rationale, scores), 4)
        (0.75, 0.7083)
        """
        rationale = np.asarray(rationale).astype(int)
        scores = np.asarray(scores, dtype=np.float64)
        if self.empty_rationale_nan and not rationale.any():
            return float("nan")
        if self.auprc_curve == "average_precision":
            return float(average_precision_score(rationale, scores))
        with warnings.catch_warnings():  # an empty rationale: scikit-learn warns
            warnings.simplefilter("ignore")
            precision, recall, _ = precision_recall_curve(rationale, np.where(scores > 0,
                                                                              scores, 0))
        return float(auc(recall, precision))

    def hard_rationale(self, scores: Sequence[float] | np.ndarray, rationale_size: int,
                       top_k: int | None = None) -> np.ndarray:
        """Choose the units of the hard rationale: the top-k that score above 0.

        Parameters
        ----------
        scores : array-like of shape (n_units,)
            The explanation scores.
        rationale_size : int
            The human rationale's size ``|R|`` (used when ``k`` is the rationale's size).
        top_k : int or None, default=None
            ``k`` (None: the convention's :attr:`top_k`, or ``rationale_size`` when that is
            None too).

        Returns
        -------
        ndarray of bool of shape (n_units,)
            Whether each unit is in the hard rationale.

        Examples
        --------
        >>> from interpretable.metrics import ERASER, FERRET
        >>> scores = [0.9, 0.1, 0.5, -0.2, 0.5]
        >>> ERASER.hard_rationale(scores, 2).astype(int).tolist()
        [1, 0, 1, 0, 0]
        >>> FERRET.hard_rationale(scores, 2).astype(int).tolist()
        [1, 1, 1, 0, 1]
        """
        scores = np.asarray(scores)
        k = top_k if top_k is not None else self.top_k if self.top_k is not None \
            else rationale_size
        top = self._order(scores)[: int(k)]
        chosen = np.zeros(scores.size, dtype=bool)
        chosen[top[scores[top] > 0]] = True
        return chosen

    def token_f1_iou(self, rationale: ArrayLike, scores: Sequence[float] | np.ndarray,
                     top_k: int | None = None) -> tuple[float, float]:
        """Compare the hard rationale with the human one: token F1 and IOU.

        Parameters
        ----------
        rationale : array-like of bool of shape (n_units,)
            Whether each unit is in the human rationale.
        scores : array-like of shape (n_units,)
            The explanation scores.
        top_k : int or None, default=None
            Size of the hard rationale (see :meth:`hard_rationale`).

        Returns
        -------
        tuple of float
            ``(f1, iou)``.

        Examples
        --------
        >>> from interpretable.metrics import ERASER, FERRET
        >>> rationale, scores = [1, 0, 0, 1], [0.9, 0.1, 0.5, -0.2]
        >>> [round(v, 3) for v in ERASER.token_f1_iou(rationale, scores)]
        [0.5, 0.333]
        >>> [round(v, 3) for v in FERRET.token_f1_iou(rationale, scores)]
        [0.4, 0.25]
        """
        rationale = np.asarray(rationale).astype(bool)
        if self.empty_rationale_nan and not rationale.any():
            return float("nan"), float("nan")
        chosen = self.hard_rationale(scores, int(rationale.sum()), top_k)
        hits = int((chosen & rationale).sum())
        if self.empty_rationale_nan:
            return (float(2 * hits / (chosen.sum() + rationale.sum())),
                    float(hits / (chosen | rationale).sum()))
        if not chosen.any() or not hits:  # ferret: no hard rationale, or precision 0
            return 0.0, 0.0
        precision, recall = hits / chosen.sum(), hits / rationale.sum()
        return (float(2 * precision * recall / (precision + recall)),
                float(hits / (chosen | rationale).sum()))

    def loo_tau(self, scores: Sequence[float] | np.ndarray, drops: Sequence[float] | np.ndarray
                ) -> float:
        """Rank-correlate the scores with leave-one-out drops (Kendall's tau-b).

        Parameters
        ----------
        scores : array-like of shape (n_units,)
            The explanation scores.
        drops : array-like of shape (n_units,)
            ``p(ŷ|x) − p(ŷ|x without unit t)`` of each unit.

        Returns
        -------
        float
            Kendall's tau-b, NaN for fewer than two units or constant scores or drops.

        Examples
        --------
        >>> from interpretable.metrics import ERASER, FERRET
        >>> ERASER.loo_tau([0.3, 0.1, 0.2], [0.5, 0.0, 0.1])
        1.0
        >>> FERRET.loo_tau([0.3], [0.5])
        nan
        """
        scores, drops = np.asarray(scores), np.asarray(drops)
        if self.tau_nan_guard:
            if scores.size < 2 or not np.ptp(scores) > 0 or not np.ptp(drops) > 0:
                return float("nan")
            return float(kendalltau(scores, drops).statistic)
        with warnings.catch_warnings():  # SciPy warns on fewer than two units
            warnings.simplefilter("ignore")
            return float(kendalltau(drops, scores)[0])


#: ERASER (DeYoung et al. 2020) as this package computes it by default
ERASER = Convention(
    name="eraser", fractions=(0.01, 0.05, 0.1, 0.2, 0.5), rounding="ceil", ties="first",
    only_positive=False, skip_repeated=False, empty_aopc=(float("nan"), float("nan")),
    exact_mean=False, top_k=None, auprc_curve="average_precision", empty_rationale_nan=True,
    tau_nan_guard=True)

#: ferret 0.4.2's ``Benchmark`` with its evaluators' default arguments
FERRET = Convention(
    name="ferret", fractions=tuple(float(f) for f in np.arange(0.1, 1.1, 0.1)),
    rounding="floor", ties="numpy", only_positive=True, skip_repeated=True,
    empty_aopc=(0.0, 1.0), exact_mean=True, top_k=5, auprc_curve="trapezoid",
    empty_rationale_nan=False, tau_nan_guard=False)

_CONVENTIONS = {c.name: c for c in (ERASER, FERRET)}


def get_convention(name: str | Convention) -> Convention:
    """Return the convention of a name (or the convention given).

    Parameters
    ----------
    name : str or Convention
        ``"eraser"`` or ``"ferret"`` (any case), or a :class:`Convention`, returned as is.

    Returns
    -------
    Convention
        The convention.

    Raises
    ------
    ValueError
        If ``name`` names no convention.

    Examples
    --------
    >>> from interpretable.metrics import get_convention
    >>> get_convention("ferret").fractions[:3]
    (0.1, 0.2, 0.30000000000000004)
    """
    if isinstance(name, Convention):
        return name
    try:
        return _CONVENTIONS[str(name).lower()]
    except KeyError:
        raise ValueError(f"Unknown convention {name!r}; choose one of "
                         f"{sorted(_CONVENTIONS)}.") from None
