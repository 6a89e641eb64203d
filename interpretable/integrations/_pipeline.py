"""A ``Pipeline`` that explains: earlier steps transform, the final estimator explains."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import narwhals.stable.v2 as nw
import numpy as np
from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

from interpretable._validation import as_column
from interpretable.explanation import with_sample_ids

if TYPE_CHECKING:
    from interpretable.explanation import (
        ImageExplanation,
        SequenceExplanation,
        TokenExplanation,
    )

__all__ = ["ExplainablePipeline", "make_explainable_pipeline"]


def _original_samples(X):
    """The caller's samples as a list: a series' values, a one-column table's column, a wider
    table's rows as dicts (pandas, polars, pyarrow, ...: what narwhals reads), the column of a
    2-d array of texts ``(n, 1)``; other arrays and lists unchanged."""
    data = nw.from_native(X, eager_only=True, allow_series=True, pass_through=True)
    if isinstance(data, nw.Series):
        return data.to_list()
    if isinstance(data, nw.DataFrame):
        return data.get_column(data.columns[0]).to_list() if len(data.columns) == 1 \
            else data.rows(named=True)
    return as_column(X) if isinstance(X, np.ndarray) else X


class ExplainablePipeline(Pipeline):
    """A scikit-learn ``Pipeline`` with ``explain``.

    ``explain(X, **kwargs)`` runs the fitted transform steps on ``X`` and calls the final
    estimator's ``explain`` on the result. The returned explanation keeps the caller's
    original inputs (``inputs``: the untransformed samples), so a report can show the text or
    image the user gave next to the units the model saw, and the caller's sample ids (the
    pandas index of ``X``).

    Parameters
    ----------
    steps : list of (str, estimator) tuples
        The transforms and, last, an estimator with ``explain``.
    transform_input : list of str or None, default=None
        As in :class:`sklearn.pipeline.Pipeline` (metadata routing).
    memory : str, object with the joblib.Memory interface or None, default=None
        Caches the fitted transformers.
    verbose : bool, default=False
        Print the time each step takes to fit.

    See Also
    --------
    make_explainable_pipeline : Build one from the steps alone.

    Examples
    --------
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from interpretable import EmbeddingBagClassifier
    >>> lower = FunctionTransformer(lambda texts: [t.lower() for t in texts])
    >>> X = ["Good movie", "Great film", "Bad movie", "Awful film"]
    >>> y = ["pos", "pos", "neg", "neg"]
    >>> from interpretable.integrations import ExplainablePipeline
    >>> pipe = ExplainablePipeline([
    ...     ("lower", lower),
    ...     ("clf", EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0))])
    >>> explanation = pipe.fit(X, y).explain(["Good FILM"])
    >>> explanation.units, explanation.inputs
    ([['good', 'film']], ['Good FILM'])
    """

    def explain(self, X: Iterable[Any], **explain_kwargs: Any
                ) -> TokenExplanation | ImageExplanation | SequenceExplanation:
        """Transform ``X`` with the fitted steps and explain the result with the final step.

        Parameters
        ----------
        X : sequence or pandas object of shape (n_samples,)
            The samples, as the pipeline takes them.
        **explain_kwargs
            Passed to the final estimator's ``explain`` (e.g. ``method``, ``target``,
            ``contrast``).

        Returns
        -------
        explanation
            The final step's explanation, whose ``inputs`` are the untransformed samples and
            whose sample ids are the pandas index of ``X`` (else positions).

        Raises
        ------
        TypeError
            If the final step has no ``explain``.

        Examples
        --------
        >>> from sklearn.preprocessing import FunctionTransformer
        >>> from interpretable import EmbeddingBagClassifier
        >>> lower = FunctionTransformer(lambda texts: [t.lower() for t in texts])
        >>> X = ["Good movie", "Great film", "Bad movie", "Awful film"]
        >>> y = ["pos", "pos", "neg", "neg"]
        >>> from interpretable.integrations import make_explainable_pipeline
        >>> pipe = make_explainable_pipeline(
        ...     lower, EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0))
        >>> pipe.fit(X, y).explain(["Bad film"], method="gradient").method
        'gradient'
        """
        check_is_fitted(self)
        final = self._final_estimator
        if not hasattr(final, "explain"):
            raise TypeError(f"the final step {type(final).__name__} has no explain method.")
        if not hasattr(X, "shape") and not isinstance(X, (list, tuple)):
            X = list(X)  # an iterator is read once, for the transforms and for `inputs`
        original = _original_samples(X)
        Xt = X
        for _, _, transformer in self._iter(with_final=False):
            Xt = transformer.transform(Xt)
        explanation = final.explain(Xt, **explain_kwargs)
        if "inputs" in {f.name for f in dataclasses.fields(explanation)}:
            explanation = dataclasses.replace(explanation, inputs=original)
        return with_sample_ids(explanation, X)

    def __sklearn_is_fitted__(self):
        try:
            check_is_fitted(self._final_estimator)
        except Exception:  # NotFittedError or estimators without fitted markers
            return False
        return True


def make_explainable_pipeline(*steps: Any,  # scikit-learn estimators, the last with explain
                              memory: Any = None,  # a path, or the joblib.Memory interface
                              verbose: bool = False) -> ExplainablePipeline:
    """Build an :class:`ExplainablePipeline` from its steps, as ``make_pipeline`` does.

    Parameters
    ----------
    *steps : estimators
        The transforms and, last, an estimator with ``explain``; named after their classes.
    memory : str, object with the joblib.Memory interface or None, default=None
        Caches the fitted transformers.
    verbose : bool, default=False
        Print the time each step takes to fit.

    Returns
    -------
    ExplainablePipeline
        The pipeline.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.integrations import make_explainable_pipeline
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> pipe = make_explainable_pipeline(FunctionTransformer(str.split),
    ...                                  EmbeddingBagClassifier())
    >>> [name for name, _ in pipe.steps]
    ['functiontransformer', 'embeddingbagclassifier']
    """
    from sklearn.pipeline import make_pipeline

    # make_pipeline names the steps (lower-cased class names, numbered when repeated)
    return ExplainablePipeline(make_pipeline(*steps).steps, memory=memory, verbose=verbose)
