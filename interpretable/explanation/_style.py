"""One colour scale for every view (HTML cells, legends and matplotlib maps).

Signed values (exact contributions, gradients): white at 0, red where the unit raises the
explained logit, blue where it lowers it. Class-independent weights (attention): white to one
purple. Cell text is black or white, whichever contrasts more with the cell (WCAG). Scales
follow the finite values: ±∞ takes the colour of the end of the scale and NaN is hatched grey
(HTML) or grey (matplotlib), and legends say so when such values are shown.
"""

from __future__ import annotations

import base64
import html
import io
import re
from numbers import Real

import numpy as np

from ._frame import exportable

POSITIVE = (178, 24, 43)    # raises the explained logit
NEGATIVE = (33, 102, 172)   # lowers it
SEQUENTIAL = (84, 39, 143)  # class-independent weights
WHITE = (255, 255, 255)
_BREAKS = str.maketrans({"\n": "↵", "\t": "⇥", "\r": "␍"})  # shown in one-line labels
_CONTROL = re.compile("[\x00-\x1f\x7f]")  # other characters that fonts cannot draw
NAN_COLOUR = "#8c8c8c"      # NaN in matplotlib maps (units not read yet are #eeeeee)

CSS = """
.ie{font-family:system-ui,sans-serif;font-size:14px;line-height:1.9;color:#111;max-width:64em}
.ie-head{font-weight:600;font-size:15px}
.ie-head code{font-weight:400}
.ie-flag{background:#fff3cd;border:1px solid #e0c060;border-radius:.3em;padding:0 .3em;
font-size:12px;font-weight:400}
.ie-legend{display:flex;align-items:center;gap:.5em;font-size:12px}
.ie-bar{display:inline-block;width:16em;height:.9em;border:1px solid #888}
.ie-note{font-size:12px;color:#333;margin:.1em 0 .6em}
.ie-row{border-top:1px solid #ddd;padding:.3em 0}
.ie-meta{font-size:12px;color:#333}
.ie-text{white-space:pre-wrap;overflow-wrap:anywhere}
.ie-tok{padding:.05em .1em;border-radius:.2em}
.ie-nan{background:repeating-linear-gradient(135deg,#fff 0 3px,#aaa 3px 5px);color:#000}
.ie-future{color:#aaa}
.ie-seq{font-family:ui-monospace,monospace;white-space:pre-wrap;overflow-wrap:anywhere}
.ie-seq .ie-tok{padding:.05em 0;border-radius:0}
.ie-steps th{font-size:12px;font-weight:400;text-align:left;padding-right:1em;white-space:nowrap}
.ie-table{border-collapse:collapse;font-size:12px}
.ie-table td,.ie-table th{border-bottom:1px solid #ddd;padding:.1em .6em;text-align:left}
"""


def esc(value) -> str:
    """``str(value)`` escaped for HTML text and attribute values (lone surrogates → U+FFFD)."""
    return html.escape(exportable(str(value)), quote=True)


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
    """The value that saturates the colour, per row of ``rows`` (arrays): ``"row"`` each row's
    largest finite ``|value|``, ``"shared"`` the largest over all rows, or the fixed number
    ``scale``."""
    check_scale(scale)
    peaks = np.array([finite_peak(r) for r in rows], dtype=np.float64)
    if scale == "row":
        return peaks
    if scale == "shared":
        return np.full(len(rows), peaks.max() if peaks.size else 0.0)
    return np.full(len(rows), float(scale))


def cell_rgb(value: float, scale: float, signed: bool) -> tuple:
    """Colour of ``value`` (not NaN): white blended towards the end colour by
    ``|value| / scale`` (±∞: the end colour)."""
    t = 1.0 if np.isinf(value) else 0.0 if scale <= 0 else min(abs(value) / scale, 1.0)
    end = (POSITIVE if value > 0 else NEGATIVE) if signed else SEQUENTIAL
    return tuple(round(255 + (e - 255) * t) for e in end)


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


def luminance(rgb) -> float:
    """WCAG relative luminance of an sRGB colour (0-255 channels)."""
    c = np.asarray(rgb, dtype=np.float64) / 255
    c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
    return float(c @ [0.2126, 0.7152, 0.0722])


def text_rgb(background) -> tuple:
    """Black or white, whichever has the higher contrast ratio with ``background``."""
    lum = luminance(background)
    return WHITE if (1.05 / (lum + 0.05)) > ((lum + 0.05) / 0.05) else (0, 0, 0)


def hex_colour(rgb) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def cell_style(value: float, scale: float, signed: bool) -> str:
    """Inline CSS of a heat-map cell: background and readable text colour."""
    rgb = cell_rgb(value, scale, signed)
    return f"background:{hex_colour(rgb)};color:{hex_colour(text_rgb(rgb))}"


def heat_span(text: str, value: float, scale: float, signed: bool, label: str) -> str:
    """A coloured ``<span>`` of ``text`` with its value in ``title`` and ``data-value`` (NaN:
    hatched grey)."""
    look = 'class="ie-tok ie-nan"' if np.isnan(value) else \
        f'class="ie-tok" style="{cell_style(value, scale, signed)}"'
    return (f'<span {look} data-value="{value:.6g}" title="{esc(label)}: {value_text(value)}">'
            f"{esc(text)}</span>")


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


def legend(scale: float | None, signed: bool, what: str, per: str = "row", values=()) -> str:
    """Colour bar with its value range, and what NaN and ±∞ among ``values`` (arrays) look
    like. ``scale`` None: each ``per`` (row, map) has its own range."""
    hi = "+max" if scale is None else f"+{fmt(scale)}"
    if signed:
        lo = "−max" if scale is None else f"−{fmt(scale)}"
        stops = f"{hex_colour(NEGATIVE)},#ffffff,{hex_colour(POSITIVE)}"
        ends = (f"<span>{lo} lowers {esc(what)}</span>", f"<span>{hi} raises {esc(what)}</span>")
    else:
        stops = f"#ffffff,{hex_colour(SEQUENTIAL)}"
        ends = ("<span>0</span>", f"<span>{hi.lstrip('+')} weight</span>")
    range_note = "" if scale is not None else f"· each {esc(per)} has its own range"
    has_nan, has_inf = nonfinite(values)
    special = (['<span class="ie-tok ie-nan">NaN</span> not a number'] if has_nan else []) \
        + (["±∞ takes the colour of the end of the scale"] if has_inf else [])
    return (f'<div class="ie-legend" role="img" aria-label="colour scale">{ends[0]}'
            f'<span class="ie-bar" style="background:linear-gradient(to right,{stops})"></span>'
            f"{ends[1]}<span>{range_note}</span><span>{' · '.join(special)}</span></div>")


def semantics(signed: bool, method: str, what: str) -> str:
    """One sentence saying what the colours mean (and flagging class-independent methods)."""
    if signed:
        return (f"Red raises {esc(what)}, blue lowers it, white is 0; the colour saturates at "
                "the end of the scale.")
    return (f'<span class="ie-flag">class-independent</span> {esc(method)} weights are the '
            "same whatever the target: the target only labels the row. Darker purple = more "
            "weight.")


def header(title: str, method: str, class_independent: bool, targets) -> str:
    """Title line naming the method and the target (when all rows share one)."""
    names = sorted({str(t) for t in targets})
    target = f" · target <b>{esc(names[0])}</b>" if len(names) == 1 else \
        " · target per row" if names else ""
    flag = ' <span class="ie-flag">class-independent</span>' if class_independent else ""
    return (f'<div class="ie-head">{esc(title)} · method <code>{esc(method)}</code>{flag}'
            f"{target}</div>")


def document(kind: str, method: str, parts: list, standalone: bool, title: str) -> str:
    """The view as an HTML fragment (notebooks) or, ``standalone``, a full UTF-8 page."""
    body = (f'<div class="ie ie-{kind}" data-method="{esc(method)}"><style>{CSS}</style>'
            + "\n".join(parts) + "</div>")
    if not standalone:
        return body
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(title)}</title></head><body>{body}</body></html>\n")


def figure_html(fig, alt: str, dpi: int = 80) -> str:
    """An ``<img>`` holding ``fig`` as a base64 PNG."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img class="ie-figure" alt="{esc(alt)}" src="data:image/png;base64,{data}">'


def colormap(signed: bool):
    """The same scale as a matplotlib colormap (diverging for signed values)."""
    from matplotlib.colors import LinearSegmentedColormap

    stops = [NEGATIVE, WHITE, POSITIVE] if signed else [WHITE, SEQUENTIAL]
    return LinearSegmentedColormap.from_list(
        "interpretable_signed" if signed else "interpretable_weight",
        [tuple(c / 255 for c in rgb) for rgb in stops])
