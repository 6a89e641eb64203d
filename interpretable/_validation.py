"""Input validation shared by every estimator: clear errors before anything reaches torch."""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import numbers
import os
import sys
import warnings
from collections.abc import Iterable, Sequence

import narwhals.stable.v2 as nw
import numpy as np
import torch
from scipy import sparse


def _refuse_sparse(X, what: str) -> None:
    """A scipy sparse matrix or array (a vectorizer's output passed by mistake) is refused,
    saying so (scikit-learn's convention for estimators without sparse support)."""
    if sparse.issparse(X):
        raise TypeError(f"{what} is a sparse {type(X).__name__}: sparse input is not supported; "
                        "pass the samples themselves (texts, images or symbol sequences).")


def as_column(X, what: str = "X"):
    """A one-column table as its column, anything else unchanged.

    Tables are those narwhals reads (pandas, polars, pyarrow, ...): a pandas DataFrame gives its
    column as a Series (the index kept: it becomes the explanation's sample ids), others their
    native column (polars Series, pyarrow ChunkedArray). A 2-d numpy array of texts ``(n, 1)``
    (e.g. a ``ColumnTransformer``'s output) gives ``(n,)``. A table with several columns is
    refused naming them, a sparse matrix as such.
    """
    _refuse_sparse(X, what)
    if isinstance(X, np.ndarray) and X.ndim == 2 and X.shape[1] == 1 and X.dtype.kind in "OUS":
        return X[:, 0]
    try:
        frame = nw.from_native(X, eager_only=True, pass_through=True)
    except nw.exceptions.DuplicateError:  # repeated column names: several columns
        frame = None
    else:
        if not isinstance(frame, nw.DataFrame):
            return X
    columns = list(X.columns) if frame is None else frame.columns
    if len(columns) != 1:
        first = columns[0].item() if hasattr(columns[0], "item") else columns[0]  # numpy names
        raise ValueError(f"{what} is a {type(X).__name__} with columns {columns[:10]}; pass "
                         f"the one column to use, e.g. {what}[{first!r}].")
    return frame.get_column(columns[0]).to_native()


def _as_values(X):
    """A pandas / polars / pyarrow series (or another narwhals reads) as a numpy array,
    anything else unchanged."""
    series = nw.from_native(X, series_only=True, pass_through=True)
    return series.to_numpy() if isinstance(series, nw.Series) else X


def _as_list(X, what: str) -> list:
    X = _as_values(as_column(X, what))
    if isinstance(X, (str, bytes)):
        raise TypeError(
            f"{what} must be a list of samples, got a single {type(X).__name__}; "
            "wrap it in a list: [text]."
        )
    if isinstance(X, np.ndarray):
        if X.ndim != 1:
            raise ValueError(f"{what} must be one-dimensional (one sample per row), got an "
                             f"array of shape {X.shape}; pass one column, e.g. {what}[:, 0].")
        X = X.tolist()
    elif isinstance(X, Iterable):
        X = list(X)
    else:
        raise TypeError(f"{what} must be a list of samples, got {type(X).__name__}.")
    if len(X) == 0:
        raise ValueError(f"{what} is empty: at least one sample is required.")
    return X


def _check_text(text, index: int, what: str, allow_blank: bool = False) -> str:
    if isinstance(text, bytes):
        raise TypeError(
            f"{what}[{index}] is bytes; decode it first (e.g. text.decode('utf-8'))."
        )
    if not isinstance(text, str):
        hint = ""
        if (text is None or (isinstance(text, float) and text != text)
                or type(text).__name__ in ("NAType", "NaTType")):  # pandas' missing values
            hint = (" (a missing value: drop it, e.g. X.dropna(), or fill it, e.g. "
                    "X.fillna(''))")
        raise TypeError(f"{what}[{index}] must be a str, got {type(text).__name__}: "
                        f"{text!r:.60}{hint}.")
    if not allow_blank and not text.strip():
        raise ValueError(f"{what}[{index}] is an empty or whitespace-only text.")
    return text


def check_texts(X, what: str = "X", allow_blank: bool = False) -> list[str]:
    """Validate a list of strings, non-blank unless ``allow_blank``; returns a new list (the
    input is not mutated)."""
    X = _as_list(X, what)
    return [_check_text(t, i, what, allow_blank) for i, t in enumerate(X)]


def check_pairs(X, what: str = "X", allow_blank: bool = False) -> tuple[list[str], list[str]]:
    """Validate a list of ``(text, query)`` pairs; returns ``(texts, queries)``."""
    X = _as_list(X, what)
    texts, queries = [], []
    for i, pair in enumerate(X):
        if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
            raise ValueError(
                f"{what}[{i}] must be a (text, query) pair, got {type(pair).__name__}: "
                f"{pair!r:.60}."
            )
        texts.append(_check_text(pair[0], i, f"{what} text", allow_blank))
        queries.append(_check_text(pair[1], i, f"{what} query", allow_blank))
    return texts, queries


def check_text_inputs(X, what: str = "X", allow_blank: bool = False
                      ) -> tuple[list[str], list[str] | None]:
    """Accept either plain texts or ``(text, query)`` pairs; returns ``(texts, queries or None)``.

    The kind is decided by the first sample and must be the same for all samples; blank texts
    are refused unless ``allow_blank`` (prediction: a blank text is predicted from no tokens).
    """
    X = _as_list(X, what)
    if isinstance(X[0], (tuple, list)):
        return check_pairs(X, what, allow_blank)
    return check_texts(X, what, allow_blank), None


def refuse_single_image(X, *, channels: int | None = None, image_shape=None,
                        what: str = "X") -> None:
    """Refuse one image passed without its batch axis: the rule of every image estimator.

    A 2-d array is one image. A 3-d array ``(a, b, c)`` is ``a`` grey images of ``b x c``
    pixels or one ``(H, W, C)`` image, never guessed silently: it is one image for an
    estimator that resizes images of any size (``image_shape="any"``) when ``c <= 4`` (grey
    images that narrow are passed as ``(n, H, W, 1)``); for a color model (``channels > 1``,
    which takes no grey images) when ``c == channels``; for a grey model when ``c == 1`` and
    ``(a, b)``, not ``(b, c)``, is its ``image_shape``. Before a first fit on images as given
    (``channels`` None) it is a batch of grey images.

    Parameters
    ----------
    X : array-like
        The images; only arrays and tensors (what has ``ndim`` and ``shape``) are checked,
        sequences of images are batches.
    channels : int or None, default=None
        The channel count of the images the estimator was fitted on (None: not fitted yet).
    image_shape : tuple of 2 int, "any" or None, default=None
        Their ``(H, W)``; ``"any"``: the estimator resizes images of any size.
    what : str, default="X"
        Names the input in errors.

    Raises
    ------
    ValueError
        If ``X`` is one image, saying to pass ``X[None]``.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable._validation import refuse_single_image
    >>> refuse_single_image(np.zeros((5, 32, 32)), channels=1, image_shape=(32, 32))  # 5 grey
    >>> refuse_single_image(np.zeros((32, 32, 3)), channels=3, image_shape=(32, 32))
    Traceback (most recent call last):
    ...
    ValueError: X of shape (32, 32, 3) is one (H, W, C) image, not a batch: pass X[None] ...
    """
    shape = tuple(getattr(X, "shape", ()))
    if getattr(X, "ndim", None) == 2:
        raise ValueError(f"{what} must be a batch of images (n, H, W[, C]), got 2 dimensions "
                         f"{shape}: that is a single image; pass {what}[None] (shape "
                         f"{(1, *shape)}).")
    if getattr(X, "ndim", None) != 3:
        return
    a, b, c = shape
    if image_shape == "any":
        single, why = c <= 4, f"; {a} grey images of {b} x {c} pixels would be {what}[..., None]"
    elif channels is not None and channels > 1:
        single, why = c == channels, f"; the model takes {channels}-channel images, not grey ones"
    elif channels == 1 and image_shape is not None:
        fitted = tuple(image_shape)
        single, why = c == 1 and (a, b) == fitted != (b, c), f"; {fitted} is the fitted size"
    else:
        return
    if single:
        raise ValueError(f"{what} of shape {shape} is one (H, W, C) image, not a batch: pass "
                         f"{what}[None] (shape {(1, *shape)}){why}.")


def check_images(X, *, channels: int | None = None, image_shape=None, what: str = "X"
                 ) -> np.ndarray:
    """Validate images and return float32 ``(n, H, W, C)`` in [0, 1] (a new array).

    Layout rule: a batch of ``(n, H, W)`` grey or channels-last ``(n, H, W, C)`` images, float
    in [0, 1] or uint8 in [0, 255]. Never guessed: a channels-first batch ``(n, C, H, W)`` (C ≤ 4
    before more than 4 trailing values) and a single image without batch axis
    (:func:`refuse_single_image`, which the fitted ``channels`` and ``image_shape`` inform) are
    refused with a message saying how to pass them. Float pixels within 1e-6 outside [0, 1]
    (rounding) are clipped. ``channels`` (the count seen in ``fit``) is enforced when given.
    """
    _refuse_sparse(X, what)
    if isinstance(X, torch.Tensor):
        X = X.detach().cpu().numpy()
    if isinstance(X, (list, tuple)) and len(X) == 0:
        raise ValueError(f"{what} is empty: at least one image is required.")
    try:
        X = np.asarray(X)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{what} must be an array of equally sized images: {exc}") from None
    if X.dtype == object:
        raise ValueError(f"{what} must be an array of equally sized numeric images.")
    if X.size == 0 or X.ndim == 0 or X.shape[0] == 0:
        raise ValueError(f"{what} is empty: at least one image is required.")
    refuse_single_image(X, channels=channels, image_shape=image_shape, what=what)
    if X.ndim == 4 and X.shape[1] <= 4 < X.shape[-1]:
        raise ValueError(f"{what} of shape {X.shape} looks channels-first (n, C, H, W); images "
                         f"are channels-last (n, H, W, C): pass np.moveaxis({what}, 1, -1).")
    if X.ndim == 3:
        X = X[..., None]
    if X.ndim != 4:
        raise ValueError(
            f"{what} must have shape (n, H, W) or (n, H, W, C), got {X.ndim} dimensions "
            f"{X.shape}."
        )
    if X.dtype == np.bool_ or not np.issubdtype(X.dtype, np.number):
        raise TypeError(f"{what} must be numeric (float in [0, 1] or uint8), got {X.dtype}.")
    if np.issubdtype(X.dtype, np.complexfloating):
        raise TypeError(f"{what} must be real-valued, got {X.dtype}.")
    if X.dtype == np.uint8:
        X = X.astype(np.float32) / 255.0
    elif np.issubdtype(X.dtype, np.integer):
        raise TypeError(
            f"{what} has integer dtype {X.dtype}; pass uint8 in [0, 255] or floats in [0, 1]."
        )
    else:
        if not np.isfinite(X).all():
            raise ValueError(f"{what} contains NaN or infinite pixel values.")
        lo, hi = float(X.min()), float(X.max())
        if lo < -1e-6 or hi > 1.0 + 1e-6:
            raise ValueError(
                f"{what} float pixel values must lie in [0, 1], got range [{lo:.4g}, {hi:.4g}]; "
                "scale them (e.g. X / 255) or pass uint8."
            )
        X = np.clip(X, 0.0, 1.0).astype(np.float32)
    if channels is not None and X.shape[-1] != channels:
        raise ValueError(
            f"{what} has {X.shape[-1]} channel(s) but the estimator was fitted on {channels}."
        )
    return X


def check_targets(y, n_samples: int | None = None, what: str = "y") -> np.ndarray:
    """Validate classification targets: 1-d, one label type, no missing values, not continuous
    (non-integer floats), at least two classes."""
    if y is None:
        raise ValueError(f"{what} is required for fitting a classifier.")
    y = _as_values(as_column(y, what))
    if isinstance(y, (list, tuple)) or getattr(y, "dtype", None) == np.dtype(object):
        y = np.asarray(list(y), dtype=object)
        if all(isinstance(v, str) for v in y) or all(
                isinstance(v, numbers.Number) and not isinstance(v, bool) for v in y):
            y = np.asarray(y.tolist())
    else:
        y = np.asarray(y)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y.ravel()
    if y.ndim != 1:
        raise ValueError(f"{what} must be one-dimensional, got shape {y.shape}.")
    if n_samples is not None and len(y) != n_samples:
        raise ValueError(f"X has {n_samples} samples but {what} has {len(y)}.")
    if y.dtype.kind == "f" and not np.isfinite(y).all():
        raise ValueError(f"{what} contains NaN or infinite values.")
    if y.dtype == object and any(v is None or (isinstance(v, float) and v != v) for v in y):
        raise ValueError(f"{what} contains missing values (None or NaN).")
    if y.dtype == object:
        kinds = {"str" if isinstance(v, str) else "number" if isinstance(v, numbers.Number)
                 else type(v).__name__ for v in y}
        if len(kinds) > 1:
            raise ValueError(f"{what} mixes label types {sorted(kinds)}; use one type for all "
                             "labels (e.g. all str).")
    if y.dtype.kind == "f" and not np.array_equal(y, np.round(y)):
        example = float(y[(y != np.round(y)).argmax()])
        raise ValueError(f"Unknown label type: {what} is continuous (non-integer floats such as "
                         f"{example!r}); a classifier needs class labels (str, int or "
                         "integer-valued floats).")
    if len(np.unique(y)) < 2:
        raise ValueError(
            f"{what} has a single class ({np.asarray(y[0]).tolist()!r}); a classifier needs at "
            "least two classes."
        )
    return y


def check_random_state_seed(random_state) -> int:
    """Turn ``random_state`` (None, int or numpy RandomState/Generator) into a torch seed."""
    if random_state is None:
        return int(np.random.default_rng().integers(2**31 - 1))
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        if random_state < 0:
            raise ValueError(f"random_state must be non-negative, got {random_state}.")
        return int(random_state)
    if isinstance(random_state, np.random.RandomState):
        return int(random_state.randint(2**31 - 1))
    if isinstance(random_state, np.random.Generator):
        return int(random_state.integers(2**31 - 1))
    raise TypeError(
        f"random_state must be None, an int or a numpy RandomState, got {random_state!r}."
    )


def check_documents(X, what="X") -> list[str]:
    """A str or an iterable of str (whitespace allowed; empty strings rejected)."""
    X = _as_values(as_column(X, what))
    if isinstance(X, str):
        X = [X]
    elif isinstance(X, bytes):
        raise TypeError(f"{what} is bytes; decode it first (e.g. X.decode('utf-8')).")
    elif isinstance(X, np.ndarray):
        X = list(X.astype(object).ravel())
    elif isinstance(X, Iterable):
        X = list(X)
    else:
        raise TypeError(f"{what} must be a str or an iterable of str, got {type(X).__name__}.")
    if not X:
        raise ValueError(f"{what} is empty: at least one text is required.")
    for i, x in enumerate(X):
        if not isinstance(x, str):
            raise TypeError(f"{what}[{i}] must be a str, got {type(x).__name__}: {x!r:.60}.")
        if not x:
            raise ValueError(f"{what}[{i}] is an empty text.")
    return X


def check_sequences(X, what="X") -> list:
    """A list of non-empty symbol sequences (str or sequences of hashable symbols)."""
    X = _as_values(as_column(X, what))
    if isinstance(X, (str, bytes)):
        raise TypeError(f"{what} must be a list of sequences, got a single {type(X).__name__}.")
    if isinstance(X, np.ndarray) and X.ndim == 2:
        X = [row.tolist() for row in X]
    try:
        X = list(X)
    except TypeError:
        raise TypeError(f"{what} must be a list of sequences, got {type(X).__name__}.") from None
    if not X:
        raise ValueError(f"{what} is empty: at least one sequence is required.")
    out = []
    for i, x in enumerate(X):
        if isinstance(x, np.ndarray):
            x = x.tolist()
        if not isinstance(x, (str, list, tuple)):
            raise TypeError(
                f"{what}[{i}] must be a str or a list of symbols, got {type(x).__name__}.")
        if len(x) == 0:
            raise ValueError(f"{what}[{i}] is an empty sequence.")
        out.append(x)
    return out


def check_sequence_targets(Y, lengths, what="Y") -> list[np.ndarray]:
    """Per-position integer targets: arrays (len_i,) or (len_i, G) → list of (len_i, G)."""
    if isinstance(Y, np.ndarray) and Y.ndim >= 2:
        Y = list(Y)
    try:
        Y = list(Y)
    except TypeError:
        raise TypeError(
            f"{what} must be a list of target sequences, got {type(Y).__name__}.") from None
    if len(Y) != len(lengths):
        raise ValueError(f"X has {len(lengths)} sequences but {what} has {len(Y)}.")
    out, groups = [], None
    for i, (y, n) in enumerate(zip(Y, lengths, strict=True)):
        y = np.asarray(y)
        if y.ndim == 1:
            y = y[:, None]
        if y.ndim != 2 or y.shape[0] != n:
            raise ValueError(
                f"{what}[{i}] must have shape ({n},) or ({n}, G) to match X[{i}], got {y.shape}."
            )
        if y.dtype.kind == "f":
            if not np.isfinite(y).all():
                raise ValueError(f"{what}[{i}] contains NaN or infinite values.")
            if not np.array_equal(y, np.round(y)):
                raise TypeError(f"{what}[{i}] must hold integer class labels, got floats.")
            y = y.astype(np.int64)
        elif y.dtype.kind not in "iu":
            raise TypeError(f"{what}[{i}] must hold integer class labels, got dtype {y.dtype}.")
        if groups is None:
            groups = y.shape[1]
        elif y.shape[1] != groups:
            raise ValueError(f"{what}[{i}] has {y.shape[1]} target groups, {what}[0] has {groups}.")
        out.append(y.astype(np.int64))
    return out


def check_batch_size(batch_size, default: int) -> int:
    """``batch_size`` of an inference call: None (``default``) or an integer >= 1."""
    if batch_size is None:
        return int(default)
    if isinstance(batch_size, (bool, np.bool_)) or not isinstance(batch_size, numbers.Integral) \
            or batch_size < 1:
        raise ValueError(f"batch_size must be None or an integer >= 1, got {batch_size!r}.")
    return int(batch_size)


@functools.cache
def _not_the_caller() -> tuple[str, ...]:
    """The files whose frames a warning skips to reach the user's call: this package's,
    scikit-learn's and skorch's (pipelines, the fit context, training), contextlib's and the
    frozen standard modules' (``runpy`` of ``python -m``)."""
    folders = [os.path.dirname(spec.origin) + os.sep for spec in map(
        importlib.util.find_spec, (__package__, "sklearn", "skorch")) if spec and spec.origin]
    return (*folders, contextlib.__file__, "<frozen ")


def warn_caller(message: str, category: type[Warning] = UserWarning) -> None:
    """Warn at the user's call: the first frame outside the package (and outside scikit-learn
    and skorch, whose wrappers call it), whatever the call path (``fit``, ``predict``,
    ``explain``, a pipeline), so the warning shows the user's line, not the package's. Called
    from the package alone (``python -m interpretable ...``), it warns at the outermost
    package frame.

    Parameters
    ----------
    message : str
        The warning.
    category : type of Warning, default=UserWarning
        Its class.

    Examples
    --------
    >>> import warnings
    >>> from interpretable._validation import warn_caller
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_caller("texts were truncated")
    >>> str(caught[0].message), caught[0].filename.endswith("validation.py")  # the caller's
    ('texts were truncated', False)
    """
    frame, level = sys._getframe(1), 2
    outermost = level  # the outermost frame that is not frozen, if all are skipped
    while frame is not None and frame.f_code.co_filename.startswith(_not_the_caller()):
        if not frame.f_code.co_filename.startswith("<frozen "):
            outermost = level
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level if frame is not None else outermost)
