"""A ``Pipeline`` that explains: earlier steps transform, the final estimator explains."""

from __future__ import annotations

import dataclasses

from sklearn.pipeline import Pipeline
from sklearn.utils.validation import check_is_fitted

__all__ = ["ExplainablePipeline", "make_explainable_pipeline"]


class ExplainablePipeline(Pipeline):
    """``sklearn.pipeline.Pipeline`` with ``explain``.

    ``explain(X, **kwargs)`` runs the fitted transform steps on ``X`` and calls the final
    estimator's ``explain`` on the result. The returned explanation keeps the caller's
    original inputs (``inputs``: the untransformed samples), so a report can show the text or
    image the user gave next to the units the model saw.
    """

    def explain(self, X, **explain_kwargs):
        check_is_fitted(self)
        final = self._final_estimator
        if not hasattr(final, "explain"):
            raise TypeError(f"the final step {type(final).__name__} has no explain method.")
        Xt = X
        for _, _, transformer in self._iter(with_final=False):
            Xt = transformer.transform(Xt)
        explanation = final.explain(Xt, **explain_kwargs)
        original = list(X) if not hasattr(X, "shape") else X
        if "inputs" in {f.name for f in dataclasses.fields(explanation)}:
            explanation = dataclasses.replace(explanation, inputs=original)
        return explanation

    def __sklearn_is_fitted__(self):
        try:
            check_is_fitted(self._final_estimator)
        except Exception:  # NotFittedError or estimators without fitted markers
            return False
        return True


def make_explainable_pipeline(*steps, memory=None, verbose=False) -> ExplainablePipeline:
    """Like :func:`sklearn.pipeline.make_pipeline`, returning an :class:`ExplainablePipeline`."""
    from sklearn.pipeline import _name_estimators

    return ExplainablePipeline(_name_estimators(steps), memory=memory, verbose=verbose)
