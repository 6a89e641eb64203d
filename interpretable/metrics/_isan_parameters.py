"""The fitted ISAN behind the ISAN analyses (:mod:`interpretable.metrics`,
:mod:`interpretable.metrics`): the check that a model is one, fitted, and
its parameters as float64 arrays."""

from __future__ import annotations

from sklearn.utils.validation import check_is_fitted

from interpretable.estimators.sequence import ISANLanguageModel, ISANSequenceTagger


def check_isan(model, *classes):
    """Raise unless ``model`` is a fitted instance of one of ``classes`` (default: a language
    model)."""
    classes = classes or (ISANLanguageModel,)
    if not isinstance(model, classes):
        names = " or ".join(c.__name__ for c in classes)
        raise TypeError(f"model must be a fitted {names}, got {type(model).__name__}.")
    check_is_fitted(model)


def isan_parameters(model):
    """float64 numpy views of the fitted ISAN: W (S,H,H), b (S,H), W_ro (O,H), b_ro (O,)."""
    check_isan(model, ISANLanguageModel, ISANSequenceTagger)
    m = model.module_
    f = lambda t: t.detach().double().cpu().numpy()  # noqa: E731
    return f(m.W), f(m.b), f(m.readout.weight), f(m.readout.bias)
