"""What the metrics share: their result type and the public interface of the text
classifiers they evaluate (probabilities of encoded inputs, explanation matrices, the model
view behind an explanation method)."""

from __future__ import annotations

from typing import Any, NamedTuple, TypeVar

import numpy as np
import pandas as pd
import torch
from sklearn.utils.validation import check_is_fitted

from interpretable.estimators.methods import get_explainer
from interpretable.explanation import TokenExplanation
from interpretable.nn import logits_of

__all__ = ["AnalysisResult", "check_text_model"]

#: the public methods of a text classifier the metrics use
TEXT_MODEL_INTERFACE = ("encode", "iter_batches", "embed", "forward_batch", "explain")


#: the model :func:`check_text_model` checks, returned as it was given
_Model = TypeVar("_Model")


class AnalysisResult(NamedTuple):
    """The result of a metric: a table of its values per sample and their aggregates.

    Parameters
    ----------
    frame : pandas.DataFrame
        One row per sample (or per sample and step, seed, ...), a column per value.
    summary : dict
        The aggregates by name: floats, or small DataFrames (e.g. a mean per fraction).

    Examples
    --------
    >>> import pandas as pd
    >>> from interpretable.metrics import AnalysisResult
    >>> result = AnalysisResult(pd.DataFrame({"sample": [0, 1], "aopc": [0.5, 0.25]}),
    ...                         {"aopc": 0.375})
    >>> result.frame.columns.tolist(), result.summary["aopc"]
    (['sample', 'aopc'], 0.375)
    >>> frame, summary = result  # a named tuple
    """
    frame: pd.DataFrame
    summary: dict[str, Any]


def check_text_model(clf: _Model, what: str = "this metric") -> _Model:
    """Check that ``clf`` is a fitted text classifier with the embedding-level interface.

    The text metrics use its public methods ``encode``, ``iter_batches``, ``embed``,
    ``forward_batch`` and ``explain`` (every text classifier of
    :mod:`interpretable.estimators` has them).

    Parameters
    ----------
    clf : estimator
        The model a metric evaluates.
    what : str, default="this metric"
        The metric, as the error message names it.

    Returns
    -------
    estimator
        ``clf`` itself.

    Raises
    ------
    TypeError
        If ``clf`` lacks one of those methods.
    sklearn.exceptions.NotFittedError
        If ``clf`` is not fitted.

    Examples
    --------
    >>> from interpretable import EmbeddingBagClassifier
    >>> from interpretable.metrics import check_text_model
    >>> clf = EmbeddingBagClassifier(embed_dim=8, max_epochs=1, random_state=0)
    >>> clf = clf.fit(["good film", "bad film"], ["pos", "neg"])
    >>> check_text_model(clf) is clf
    True
    >>> check_text_model("a text", "comprehensiveness")
    Traceback (most recent call last):
    ...
    TypeError: comprehensiveness needs a text classifier with ['encode', ...]; str lacks [...].
    """
    missing = [name for name in TEXT_MODEL_INTERFACE if not hasattr(clf, name)]
    if missing:
        raise TypeError(f"{what} needs a text classifier with {list(TEXT_MODEL_INTERFACE)}; "
                        f"{type(clf).__name__} lacks {missing}.")
    check_is_fitted(clf)
    return clf


def model_view(clf, method) -> str:
    """The model variant an explanation ``method`` explains (SEAT's vanilla attention
    explains the ``"vanilla"`` view), see
    :class:`~interpretable.estimators.methods.Explainer`."""
    return get_explainer(clf, method).view


def predict_probabilities(clf, inputs: dict, embedding_offset=None, batch_size=None,
                          view: str = "model", ordered: bool = False) -> torch.Tensor:
    """Class probabilities ``(n, C)`` (CPU) of encoded ``inputs``; ``embedding_offset``
    ``(n, T, E)`` is added to the token embeddings; ``ordered``: batch texts of similar
    lengths together (the rows come back in the order of ``inputs``)."""
    parts, order = [], []
    with torch.no_grad():
        for rows, batch in clf.iter_batches(inputs, batch_size, ordered=ordered):
            emb = None
            if embedding_offset is not None:
                emb = clf.embed(batch)
                emb = emb + embedding_offset[rows, : emb.shape[1]].to(emb)
            logits = logits_of(clf.forward_batch(batch, embedded=emb, view=view)).float()
            parts.append(torch.softmax(logits, -1).cpu())
            order.append(torch.arange(rows.start, rows.stop) if isinstance(rows, slice)
                         else rows.cpu())
    if not parts:
        return torch.zeros(0, 0)
    probs = torch.cat(parts)
    return probs[torch.argsort(torch.cat(order))] if ordered else probs


def explanation_matrix(explanation: TokenExplanation, lengths) -> np.ndarray:
    """Attributions as a zero-padded ``(n, T)`` array, checked against the model's lengths."""
    lengths = np.asarray(lengths)
    if len(explanation) != len(lengths):
        raise ValueError(f"explanation has {len(explanation)} samples but X has {len(lengths)}.")
    out = np.zeros((len(lengths), int(lengths.max())), dtype=np.float64)
    for i, (att, n) in enumerate(zip(explanation.values, lengths, strict=True)):
        if len(att) != n:
            raise ValueError(
                f"explanation of sample {i} has {len(att)} tokens but the model sees {n}; "
                "pass an explanation of the same X by the same estimator."
            )
        out[i, :n] = att
    return out


def explain_or_take(clf, X, method, explanation, target=None) -> TokenExplanation:
    """``explanation`` (checked to be a TokenExplanation), or ``clf``'s explanation of ``X``
    by ``method``."""
    if explanation is not None:
        if not isinstance(explanation, TokenExplanation):
            raise TypeError("explanation must be a TokenExplanation, got "
                            f"{type(explanation).__name__}.")
        return explanation
    return clf.explain(X, target=target, method=method)
