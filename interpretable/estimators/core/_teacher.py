"""Teachers for distillation: a fitted classifier whose class probabilities on the training
inputs a student learns to match (:class:`~interpretable.nn._losses.DistillationLoss`).

A teacher is read, never changed or stored: :func:`teacher_probabilities` calls its public
``predict_proba`` once per fit. It is any fitted scikit-learn classifier over the student's
inputs (e.g. a fitted :class:`~interpretable.BertTextClassifier`, a TF-IDF pipeline, either
wrapped in ``sklearn.frozen.FrozenEstimator``) or the folder of a classifier saved with
``save()``, loaded at each fit (never code from the file).
"""

from __future__ import annotations

import os

import numpy as np
import torch
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from interpretable.estimators.core._base import NeuralEstimator

#: key of the teacher's probabilities in a training batch (an input of the loss only)
TEACHER_PROBABILITIES = "teacher_probabilities"


def _fitted_teacher(teacher, device):
    """The fitted classifier ``teacher`` names: itself, or the estimator saved in that
    folder."""
    if isinstance(teacher, (str, os.PathLike)):
        try:
            teacher = NeuralEstimator.load(teacher, device=device)
        except (FileNotFoundError, ValueError) as exc:
            raise ValueError(f"teacher={os.fspath(teacher)!r} is not a model saved with "
                             f"save(): {exc}") from None
    if not callable(getattr(teacher, "predict_proba", None)):
        raise TypeError(f"the teacher must be a classifier with predict_proba, got "
                        f"{type(teacher).__name__}.")
    try:
        if callable(getattr(teacher, "fit", None)):  # an estimator (else: a fixed predictor)
            check_is_fitted(teacher)
    except NotFittedError:
        raise NotFittedError(f"the teacher ({type(teacher).__name__}) is not fitted: pass a "
                             "fitted classifier (a scikit-learn clone of it is a new, unfitted "
                             "one: wrap it in sklearn.frozen.FrozenEstimator) or a saved "
                             "model's folder.") from None
    return teacher


def teacher_probabilities(teacher, X, classes, device="cpu") -> torch.Tensor:
    """Return the teacher's class probabilities of ``X``, in the order of ``classes``.

    Parameters
    ----------
    teacher : classifier or str or os.PathLike
        A fitted classifier with ``predict_proba`` and ``classes_``, or the folder of one
        saved with ``save()``.
    X : sequence of shape (n_samples,)
        The student's training inputs, as the teacher's ``predict_proba`` takes them.
    classes : ndarray of shape (n_classes,)
        The student's classes; the teacher must predict the same set.
    device : str or torch.device, default="cpu"
        Where a saved teacher is loaded.

    Returns
    -------
    torch.Tensor of shape (n_samples, n_classes)
        float32 probabilities, each row summing to 1, columns in the order of ``classes``.

    Raises
    ------
    TypeError
        If the teacher is no classifier with ``predict_proba``.
    NotFittedError
        If it is not fitted.
    ValueError
        If a folder holds no saved model, the classes differ or the probabilities are not
        probabilities of ``X``.

    Examples
    --------
    >>> from sklearn.feature_extraction.text import TfidfVectorizer
    >>> from sklearn.linear_model import LogisticRegression
    >>> from sklearn.pipeline import make_pipeline
    >>> X = ["good movie", "great film", "bad movie", "awful film"]
    >>> teacher = make_pipeline(TfidfVectorizer(), LogisticRegression()).fit(
    ...     X, ["pos", "pos", "neg", "neg"])
    >>> teacher_probabilities(teacher, X, np.array(["pos", "neg"])).shape
    torch.Size([4, 2])
    """
    teacher = _fitted_teacher(teacher, device)
    taught = np.asarray(getattr(teacher, "classes_", ()))
    classes = np.asarray(classes)
    if taught.shape != classes.shape or set(taught.tolist()) != set(classes.tolist()):
        raise ValueError(f"the teacher predicts the classes {taught.tolist()!r:.200}, the "
                         f"student is fitted on {classes.tolist()!r:.200}: they must be the "
                         "same.")
    probabilities = np.asarray(teacher.predict_proba(X), dtype=np.float64)
    if probabilities.shape != (len(X), len(classes)) or not np.isfinite(probabilities).all() \
            or (probabilities < 0).any() or not np.allclose(probabilities.sum(1), 1, atol=1e-4):
        raise ValueError(f"the teacher's predict_proba gave an array of shape "
                         f"{probabilities.shape} that are not probabilities of the "
                         f"{len(X)} inputs over {len(classes)} classes.")
    column = {label: i for i, label in enumerate(taught.tolist())}
    ordered = probabilities[:, [column[label] for label in classes.tolist()]]
    return torch.from_numpy(ordered.astype(np.float32))
