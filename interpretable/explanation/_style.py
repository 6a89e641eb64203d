"""One color scale for every view (HTML cells, legends and matplotlib maps).

Signed values (exact contributions, gradients): white at 0, red where the unit raises the
explained logit, blue where it lowers it. Class-independent weights (attention): white to one
purple. Cell text is black or white, whichever contrasts more with the cell (WCAG). Scales
follow the finite values: ±∞ takes the color of the end of the scale and NaN is hatched grey
(HTML) or grey (matplotlib), and legends say so when such values are shown.

HTML views are jinja2 templates (``templates/``, autoescaped; :func:`render`) fed with what
is computed here: colors, legends, table cells. Only the heat-map cell, one per token or unit,
is formatted here (:func:`heat_cells`, escaped by markupsafe): the hot path, 9× faster than a
template macro per cell.
"""

from __future__ import annotations

import base64
import functools
import io
import re
from numbers import Real

import numpy as np
from jinja2 import Environment, PackageLoader, StrictUndefined
from markupsafe import Markup, escape

from interpretable.explanation._frame import exportable

POSITIVE = (178, 24, 43)    # raises the explained logit
NEGATIVE = (33, 102, 172)   # lowers it
SEQUENTIAL = (84, 39, 143)  # class-independent weights
WHITE = (255, 255, 255)
_BREAKS = str.maketrans({"\n": "↵", "\t": "⇥", "\r": "␍"})  # shown in one-line labels
_CONTROL = re.compile("[\x00-\x1f\x7f]")  # other characters that fonts cannot draw
NAN_COLOR = "#8c8c8c"      # NaN in matplotlib maps (units not read yet are #eeeeee)

def check_scale(scale) -> None:
    if isinstance(scale, str) and scale in ("row", "shared"):
        return
    if isinstance(scale, bool) or not isinstance(scale, Real) or not scale > 0:
        raise ValueError(f"scale must be 'row', 'shared' or a positive number, got {scale!r}.")


def finite_peak(values) -> float:
    """The largest ``|value|`` among the finite ``values`` (0 when there is none)."""
    values = np.abs(np.asarray(values, dtype=np.float64))
    values = values[np.isfinite(values)]
    return float(values.max()) if values.size else 0.0


def row_scales(scale, rows: list) -> np.ndarray:
    """The value that saturates the color, per row of ``rows`` (arrays): ``"row"`` each row's
    largest finite ``|value|``, ``"shared"`` the largest over all rows, or the fixed number
    ``scale``."""
    check_scale(scale)
    peaks = np.array([finite_peak(r) for r in rows], dtype=np.float64)
    if scale == "row":
        return peaks
    if scale == "shared":
        return np.full(len(rows), peaks.max() if peaks.size else 0.0)
    return np.full(len(rows), float(scale))


def value_text(value: float) -> str:
    """``+0.1235``, ``NaN``, ``+∞`` or ``−∞``."""
    if np.isnan(value):
        return "NaN"
    if np.isinf(value):
        return "+∞" if value > 0 else "−∞"
    return f"{value:+.4g}"


def nonfinite(values) -> tuple[bool, bool]:
    """Whether the arrays ``values`` hold NaN, and whether they hold ±∞."""
    flat = np.concatenate([np.ravel(np.asarray(v, dtype=np.float64)) for v in values]) \
        if len(values) else np.zeros(0)
    return bool(np.isnan(flat).any()), bool(np.isinf(flat).any())


def nonfinite_caption(values) -> str:
    """What a figure of ``values`` shows for NaN and ±∞ (empty when all are finite)."""
    has_nan, has_inf = nonfinite(values)
    return " · ".join([*(["grey: NaN"] if has_nan else []),
                       *(["±∞ at the ends of the scale"] if has_inf else [])])


def luminance(rgb) -> np.ndarray:
    """WCAG relative luminance of sRGB colors ``(..., 3)`` (0-255 channels)."""
    c = np.asarray(rgb, dtype=np.float64) / 255
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return c @ [0.2126, 0.7152, 0.0722]


def hex_color(rgb) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


#: one heat-map cell: the hot path of the views (one per token / unit: 50,000 in a page of
#: 1,000 reviews), formatted here rather than by a template macro (9× faster, same markup)
_CELL = '<span class="ie-tok" style="background:{};color:{}" data-value="{}" title="{}">{}</span>'
_NAN_CELL = '<span class="ie-tok ie-nan" data-value="{}" title="{}">{}</span>'


def cell_colors(values, scale: float, signed: bool) -> tuple[np.ndarray, np.ndarray]:
    """The heat-map colors of ``values`` (n,): sRGB ``(n, 3)`` (0-255), white blended towards
    the end color by ``|value| / scale`` (±∞: the end color; NaN: white), and whether white
    text contrasts more with each than black (WCAG)."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.minimum(np.abs(values) / scale, 1.0) if scale > 0 else np.zeros_like(values)
    t = np.nan_to_num(np.where(np.isinf(values), 1.0, t), nan=0.0)
    end = np.where((values > 0)[:, None], POSITIVE, NEGATIVE) if signed else np.array(SEQUENTIAL)
    rgb = np.rint(255 + (end - 255) * t[:, None]).astype(int)
    lum = luminance(rgb)
    return rgb, 1.05 / (lum + 0.05) > (lum + 0.05) / 0.05


def heat_cells(texts, values, scale: float, signed: bool, labels=None) -> list[Markup]:
    """Heat-map ``<span>`` cells of ``texts`` colored by ``values`` (colors computed for all
    at once, :func:`cell_colors`; NaN: hatched grey) with black or white text, whichever
    contrasts more (WCAG); the value in ``data-value`` and ``title`` (``label: value``; the
    labels default to the texts). Texts are escaped."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    rgb, white = cell_colors(values, scale, signed)
    labels = texts if labels is None else labels
    return [Markup(_NAN_CELL.format(f"{value:.6g}", escape(_text(f"{label}: {value_text(value)}")),
                                    escape(_text(text))) if np.isnan(value) else
                   _CELL.format(hex_color(color), "#ffffff" if light else "#000000",
                                f"{value:.6g}", escape(_text(f"{label}: {value_text(value)}")),
                                escape(_text(text))))
            for text, value, color, light, label
            in zip(texts, values, rgb, white, labels, strict=True)]


def fmt(value: float) -> str:
    """``0.123``, or ``NaN`` / ``+∞`` / ``−∞``."""
    return f"{value:.3g}" if np.isfinite(value) else value_text(value)


def plot_text(value, limit: int = 40) -> str:
    """``str(value)`` for a one-line matplotlib label: line breaks shown as symbols, lone
    surrogates and other control characters replaced, shortened to ``limit`` characters,
    ``$`` escaped (never math markup)."""
    text = _CONTROL.sub("\ufffd", exportable(str(value)).translate(_BREAKS))
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text.replace("$", r"\$")


def legend(scale: float | None, signed: bool, what: str, per: str = "row", values=()) -> dict:
    """The color bar of a view (``legend`` macro): its ends, gradient and value range, and
    whether NaN and ±∞ are among ``values`` (arrays). ``scale`` None: each ``per`` (row, map)
    has its own range."""
    hi = "+max" if scale is None else f"+{fmt(scale)}"
    if signed:
        lo = "−max" if scale is None else f"−{fmt(scale)}"
        stops = (NEGATIVE, WHITE, POSITIVE)
        low, high = f"{lo} lowers {what}", f"{hi} raises {what}"
    else:
        stops = (WHITE, SEQUENTIAL)
        low, high = "0", f"{hi.lstrip('+')} weight"
    has_nan, has_inf = nonfinite(values)
    return {"low": low, "high": high, "stops": ",".join(map(hex_color, stops)),
            "range_note": "" if scale is not None else f"· each {per} has its own range",
            "nan": has_nan, "inf": has_inf}


def target_names(targets) -> list[str]:
    """The distinct targets of a view, sorted (a header names the target when there is one)."""
    return sorted({str(t) for t in targets})


def table_cells(frame) -> dict:
    """A table (``table`` macro): the column names and the cells as text (floats as
    :func:`fmt`)."""
    return {"columns": list(frame.columns),
            "cells": [[fmt(v) if isinstance(v, float) else v for v in row]
                      for row in frame.itertuples(index=False)]}


def figure_png(fig, dpi: int = 80) -> str:
    """``fig`` as a base64 PNG (``figure`` macro)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


def _text(value) -> str:
    """``str(value)`` that every encoder can write (lone surrogates → U+FFFD)."""
    text = str(value)
    return text if text.isascii() else exportable(text)


def _output(value):
    """What a template prints: markup as it is, anything else as :func:`_text`, which
    autoescaping then escapes."""
    return value if isinstance(value, Markup) else _text(value)


@functools.cache
def _environment() -> Environment:
    return Environment(loader=PackageLoader("interpretable.explanation", "templates"),
                       autoescape=True, trim_blocks=True, lstrip_blocks=True,
                       keep_trailing_newline=True, undefined=StrictUndefined, finalize=_output)


def render(template: str, *, kind: str, method: str, standalone: bool, title: str,
           **context) -> str:
    """The view ``template`` (in ``templates/``, autoescaped) as an HTML fragment (notebooks)
    or, ``standalone``, a full UTF-8 page."""
    return _environment().get_template(template).render(
        kind=kind, method=method, standalone=standalone, title=title, **context)


def colormap(signed: bool, positive: bool = False):
    """The same scale as a matplotlib colormap (diverging for signed values; ``positive``:
    its positive half, white to red)."""
    from matplotlib.colors import LinearSegmentedColormap

    stops = ([WHITE, POSITIVE] if positive else [NEGATIVE, WHITE, POSITIVE]) if signed \
        else [WHITE, SEQUENTIAL]
    name = ("interpretable_positive" if positive else "interpretable_signed") if signed \
        else "interpretable_weight"
    return LinearSegmentedColormap.from_list(name, [tuple(c / 255 for c in rgb) for rgb in stops])
