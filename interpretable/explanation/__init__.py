"""Explanation containers: arrays + metadata, tidy tables and human views.

Every container exports one long table, ``to_frame()``: one row per sample × unit, with the
columns of :data:`FRAME_COLUMNS` that apply to its input kind (no all-missing columns)::

    sample             the caller's sample id: the pandas index of X (Series / DataFrame),
                       else the position 0..n-1 (int64)
    unit               int64  token position, flat pixel index (row * W + col) or unit index
    token              str    the token / symbol (text and sequences; lone surrogates → U+FFFD)
    query              str    the query tokens of (text, query) pairs, joined by spaces
    char_start, end    Int64  the unit's characters ``[start, end)`` in the original text (when
                              known; <NA> for a token not found in it)
    row, col           int64  pixel coordinates (images)
    step               int64  step of the explained logit, in units of the level (sequences)
    component          str    "total", or the model component (e.g. "layer0.head1") (images)
    target             label  the class / symbol whose logit is explained
    contrast           str    with ``explain(contrast=...)``: "mean" (the mean logit is
                              subtracted) or the class whose logit is subtracted
    attribution        float64 contribution of the unit to that logit
    prediction         label  the model's prediction for the sample (or step)
    method             str    explanation method ("inherent", "attention", ...)
    class_independent  bool   the method gives the same values for every target (attention)

Labels (:data:`LABEL_COLUMNS`) keep the dtype of the estimator's classes: int64, float64 or
bool for numeric classes (int labels stay int, so the table joins the caller's ``y``), str for
any other; ``to_frame()``, :func:`read_frame` of a CSV or Parquet export and
:func:`~interpretable.integrations.explanations_to_frame` agree on dtypes and merge.
:func:`write_frame` writes a table whole or not at all; a CSV gets its dtypes in a
``.schema.json`` file beside it (ids such as ``"007"`` read back as strings) and text cells that
spreadsheets would run as formulas start with ``'`` (``escape_formulas=False``: raw).
``to_frame(kind="samples")`` has one row per sample (× step) with the columns of
:data:`SAMPLE_COLUMNS` that are known: logit, bias, probabilities, completeness error.

Inherent (faithful-by-construction) explanations also carry ``logit`` and ``bias``: the
values plus the bias reproduce the logit, checked by ``completeness_error``: the
absolute error ``|sum(values) + bias - logit|`` relative to the size of what is summed,
``max(|logit|, sum|values| + |bias|)``. That is the scale of floating-point rounding in
the sum, so the error stays meaningful for logits near 0 (float32 gives ~1e-7, float64 ~1e-16).

Views: ``to_html()`` (and ``_repr_html_`` in notebooks) and ``plot()`` (a matplotlib
``Figure`` without pyplot, with ``_repr_png_``: an image in Jupyter) for every container:
texts, images, sequences and the corpus view. One color scale everywhere: red raises the
explained logit (or, with ``explain(contrast=...)``, the explained difference of logits), blue
lowers it, white is 0; class-independent methods (attention) use one purple scale and are
flagged.

:func:`concat_explanations` combines explanations of one kind and level, also of different
methods (e.g. several methods on the same texts): ``method`` and ``class_independent`` then hold
one entry per sample (the table's columns keep each row's), the float fields a method lacks
(``logit``, ``bias``) are NaN for its samples, and the views show one method at a time
(``both[both.method == "gradient"]``).
"""

from interpretable.explanation._base import (
    concat_explanations,
    with_sample_ids,
)
from interpretable.explanation._chunked import (
    citing_samples,
    iter_explanations,
)
from interpretable.explanation._corpus import (
    GlobalExplanation,
    global_explanation,
)
from interpretable.explanation._frame import (
    FRAME_COLUMNS,
    FRAME_DTYPES,
    LABEL_COLUMNS,
    SAMPLE_COLUMNS,
    read_frame,
    table_writer,
    write_frame,
)
from interpretable.explanation._image import (
    ImageExplanation,
)
from interpretable.explanation._image_views import (
    weights_to_rgba,
)
from interpretable.explanation._sequence import (
    SequenceExplanation,
)
from interpretable.explanation._text import (
    TokenExplanation,
    WordPieceExplanation,
    token_offsets,
)

__all__ = [
    "FRAME_COLUMNS", "FRAME_DTYPES", "LABEL_COLUMNS", "SAMPLE_COLUMNS", "GlobalExplanation",
    "ImageExplanation", "SequenceExplanation", "TokenExplanation", "WordPieceExplanation",
    "citing_samples", "concat_explanations", "global_explanation", "iter_explanations",
    "read_frame", "table_writer", "token_offsets", "weights_to_rgba", "with_sample_ids",
    "write_frame",
]
