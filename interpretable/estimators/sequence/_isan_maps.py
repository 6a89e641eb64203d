"""The affine maps of a fitted ISAN estimator (:class:`~.base.ISANBase`), read through the
estimator: the map of reading a substring (``compose``) and changes of basis of the state
(``readout_basis``, ``to_basis``) on top of :class:`~interpretable.nn._isan.ISAN`.
"""

from __future__ import annotations

import copy
from typing import TYPE_CHECKING

import numpy as np
import torch
from sklearn.utils import Bunch

if TYPE_CHECKING:
    from collections.abc import Hashable

    from numpy.typing import ArrayLike
    from typing_extensions import Self


class ISANMaps:
    """Mixin: substring composition and change of basis of a fitted ISAN estimator.

    The host estimator provides ``module_`` (an :class:`~interpretable.nn._isan.ISAN`),
    ``device_``, ``history_``, ``_check_fitted`` and ``encode_symbols``.

    Examples
    --------
    >>> from interpretable import ISANSequenceTagger
    >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
    >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
    >>> tagger.readout_basis().rank
    3
    """

    def _with_module(self, module) -> Self:
        """A copy of this fitted estimator that runs ``module``."""
        new = copy.copy(self)
        new.module_ = module.eval()
        new.history_ = list(self.history_)
        return new

    def compose(self, substring: str | list[Hashable] | tuple[Hashable, ...]
                ) -> tuple[np.ndarray, np.ndarray]:
        """Return the affine map ``h → A h + b`` of reading a whole substring.

        Parameters
        ----------
        substring : str or list
            A non-empty sequence of symbols.

        Returns
        -------
        A : ndarray of shape (H, H)
            The linear part.
        b : ndarray of shape (H,)
            The offset.

        Raises
        ------
        ValueError
            If ``substring`` is empty or not a sequence.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> A, b = tagger.compose("abc")
        >>> A.shape, b.shape
        ((8, 8), (8,))
        """
        self._check_fitted()
        if not isinstance(substring, (str, list, tuple)) or len(substring) == 0:
            raise ValueError(
                f"substring must be a non-empty str or symbol list, got {substring!r:.60}.")
        ids = torch.as_tensor(self.encode_symbols(substring))[None].to(self.device_)
        A, b = self.module_.compose(ids)
        return A[0].cpu().numpy(), b[0].cpu().numpy()

    def readout_basis(self) -> Bunch:
        """Return an orthonormal basis splitting the state into readout and computation.

        The readout subspace is the span of the rows of ``W_ro``; the computational subspace
        its orthogonal complement.

        Returns
        -------
        Bunch
            ``Q`` (H, H), ``rank``, ``readout`` = ``Q[:, :rank]``, ``computational`` =
            ``Q[:, rank:]``.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> basis = tagger.readout_basis()
        >>> basis.Q.shape, basis.rank
        ((8, 8), 3)
        """
        self._check_fitted()
        Q, rank = self.module_.readout_basis()
        Q = Q.cpu().numpy()
        return Bunch(Q=Q, rank=rank, readout=Q[:, :rank], computational=Q[:, rank:])

    def to_basis(self, Q: ArrayLike) -> Self:
        """Return a copy of this fitted model in another basis of its state, ``h' = Q⁻¹ h``.

        All predictions are identical; the parameters are re-expressed in the new basis.

        Parameters
        ----------
        Q : array-like of shape (H, H)
            An invertible matrix.

        Returns
        -------
        ISANBase
            The copy.

        Raises
        ------
        ValueError
            If ``Q`` has the wrong shape, is not finite or is singular.

        Examples
        --------
        >>> from interpretable import ISANSequenceTagger
        >>> tagger = ISANSequenceTagger(hidden_size=8, max_epochs=1, random_state=0)
        >>> tagger = tagger.fit(["abc", "cba"], [[0, 1, 2], [2, 1, 0]])
        >>> rotated = tagger.to_basis(tagger.readout_basis().Q)
        >>> rotated.predict(["ab"])[0].tolist() == tagger.predict(["ab"])[0].tolist()
        True
        """
        self._check_fitted()
        Q = np.asarray(Q, dtype=np.float64)
        H = self.module_.hidden_size
        if Q.shape != (H, H) or not np.isfinite(Q).all():
            raise ValueError(f"Q must be a finite ({H}, {H}) matrix, got shape {Q.shape}.")
        if np.linalg.cond(Q) > 1e12:
            raise ValueError(
                "Q is singular (or numerically so); a change of basis must be invertible.")
        return self._with_module(self.module_.to_basis(torch.as_tensor(Q)))
