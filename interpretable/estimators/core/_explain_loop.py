"""How an explainer is called: its options (the keyword-only parameters of ``attribute``),
checked, and the one loop every method runs through (batching in the estimator's inference
order, per-sample options, targets, assembly).

:class:`ExplainLoop` is a mixin of :class:`~.explainer.Explainer`: it calls the methods and
reads the class attributes the explainer contract declares (``applies``, ``prepare``, ``attribute``,
``assemble``; ``name``, ``dtypes``, ``per_sample_options``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from interpretable.explanation import with_sample_ids

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from interpretable.estimators.core._inference import BatchedInference
    from interpretable.explanation import ImageExplanation, SequenceExplanation, TokenExplanation


def _rows(value) -> list:
    """A per-sample field of one batch as a list of CPU numpy arrays (or objects)."""
    if isinstance(value, torch.Tensor):
        return list(value.detach().cpu().numpy())
    if isinstance(value, np.ndarray):
        return list(value)
    return [v.detach().cpu().numpy() if isinstance(v, torch.Tensor) else v for v in value]


class ExplainLoop:
    """Mixin of :class:`~.explainer.Explainer`: its options and the shared explain loop.

    Examples
    --------
    >>> from interpretable.estimators.methods import Explainer
    >>> from interpretable.estimators.core._explain_loop import ExplainLoop
    >>> issubclass(Explainer, ExplainLoop)
    True
    """

    def options(self, public: bool = True) -> list[str]:
        """Return the method's options (the keyword-only parameters of :meth:`attribute`).

        Parameters
        ----------
        public : bool, default=True
            Leave out the per-sample options (not offered by ``estimator.explain``).

        Returns
        -------
        list of str
            The option names.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> get_explainer(EmbeddingBagClassifier, "integrated_gradients").options()
        ['n_steps', 'tolerance', 'baseline', 'layer']
        """
        names = [name for name, p in inspect.signature(self.attribute).parameters.items()
                 if p.kind is inspect.Parameter.KEYWORD_ONLY]
        names += ["dtype"] if self.dtypes else []
        return [n for n in names if not (public and n in self.per_sample_options)]

    def check_options(self, options: dict, public: bool = False) -> None:
        """Raise a TypeError naming the options this method does not take.

        Parameters
        ----------
        options : dict
            Options by name.
        public : bool, default=False
            Check against the public options only.

        Raises
        ------
        TypeError
            If an option is not taken.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> gradient = get_explainer(EmbeddingBagClassifier, "gradient")
        >>> gradient.check_options({"n_steps": 8}, public=True)
        Traceback (most recent call last):
        ...
        TypeError: explain(method='gradient') got unexpected option(s) ['n_steps']; it takes ...
        """
        accepted = self.options(public)
        unknown = sorted(set(options) - set(accepted))
        if unknown:
            raise TypeError(f"explain(method={self.name!r}) got unexpected option(s) "
                            f"{unknown}; it takes {accepted or 'no options'}.")

    def explain(self, estimator: BatchedInference, X: ArrayLike,
                target: Hashable | ArrayLike | None = None, *, batch_size: int | None = None,
                **options: Any) -> TokenExplanation | ImageExplanation | SequenceExplanation:
        """Explain ``X`` with this method: the lower-level call behind ``estimator.explain``.

        Encode, resolve the targets (and a ``contrast`` option into per-sample weights over the
        classes,
        :meth:`~interpretable.estimators.core.NeuralClassifier.contrast_weights`), run
        :meth:`attribute` over the estimator's batches (in its inference order),
        :meth:`assemble`. Accepts the per-sample options too (``embedding_offset (n, T, E)``
        for the text methods that declare it).

        Parameters
        ----------
        estimator : fitted estimator
            The explained estimator.
        X : sequence
            Inputs as for ``estimator.predict``.
        target : label, array-like or None, default=None
            The explained targets (None: the predicted ones).
        batch_size : int or None, default=None
            Mini-batch size (None: the estimator's).
        **options
            The method's options, per-sample ones included.

        Returns
        -------
        TokenExplanation, ImageExplanation or SequenceExplanation
            The explanation.

        Raises
        ------
        ValueError
            If the method does not explain ``estimator``, or ``dtype`` is not supported.
        TypeError
            If an option is not taken.

        Examples
        --------
        >>> from interpretable import EmbeddingBagClassifier
        >>> from interpretable.estimators.methods import get_explainer
        >>> X = ["good movie", "great film", "bad movie", "awful film"]
        >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0)
        >>> clf = clf.fit(X, ["pos", "pos", "neg", "neg"])
        >>> explainer = get_explainer(clf, "integrated_gradients")
        >>> explainer.explain(clf, ["good film"], target="neg", n_steps=8).target
        array(['neg'], dtype='<U3')
        """
        if not self.applies(estimator):
            raise ValueError(f"method={self.name!r} does not explain "
                             f"{type(estimator).__name__}.")
        self.check_options(options)
        contrast = options.pop("contrast", None)
        dtype = options.pop("dtype", None)
        if dtype is not None and dtype not in self.dtypes:
            raise ValueError(f"dtype must be None or one of {list(self.dtypes)}, got {dtype!r}.")
        with contextlib.ExitStack() as call:  # one check: encode and the batches skip theirs
            call.enter_context(estimator._fitted_call())
            if dtype is not None:  # a copy of the checked estimator, in that precision
                estimator = estimator.astype(dtype)
                call.enter_context(estimator._fitted_call(check=False))
            encoded = estimator.encode(X)
            explanation = self._explain_encoded(estimator, encoded, target, contrast,
                                                batch_size, options)
        return with_sample_ids(explanation, X)

    def _explain_encoded(self, estimator, encoded, target, contrast, batch_size,
                         options: dict):
        """The loop of :meth:`explain` over the encoded samples of a checked estimator:
        ``target`` and ``contrast`` resolved once, per-sample options and targets sliced per
        batch, the attributions assembled."""
        targets = estimator.explained_targets(encoded, target)
        if isinstance(targets, np.ndarray):  # class indices (n,), as a tensor once
            targets = torch.from_numpy(targets)
        options = self.prepare(estimator, encoded, targets, **options)
        per_sample = {k: options.pop(k) for k in self.per_sample_options
                      if options.get(k) is not None}
        n = len(encoded)
        if contrast is not None:  # (n, C) weights of the subtracted logits, and their names
            weights, contrast = estimator.contrast_weights(contrast, n)
            per_sample["contrast"] = torch.from_numpy(weights)
        fields: dict[str, list] = {}
        for rows, batch in estimator.iter_batches(encoded.inputs, batch_size, ordered=True):
            index = torch.arange(n)[rows] if isinstance(rows, slice) else rows
            sliced = {k: _take(v, index) for k, v in per_sample.items()}
            part = self.attribute(estimator, batch, _take(targets, index), **options, **sliced)
            for name, value in part.fields().items():
                column = fields.setdefault(name, [None] * n)
                for i, row in zip(index.tolist(), _rows(value), strict=True):
                    column[i] = row
        explanation = self.assemble(estimator, encoded, fields, **options)
        if contrast is not None:
            explanation = dataclasses.replace(explanation, contrast=contrast)
        return explanation


def _take(values, index: torch.Tensor):
    """The entries ``index`` of per-sample ``values`` (array, tensor or list; None stays
    None)."""
    if values is None or isinstance(values, torch.Tensor):
        return None if values is None else values[index.to(values.device)]
    if isinstance(values, np.ndarray):
        return values[index.numpy()]
    return [values[i] for i in index.tolist()]
