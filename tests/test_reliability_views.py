"""Every view and table of every explanation container renders any text and any values:
matplotlib math markup, lone surrogates, right-to-left scripts, emoji, control
characters, markup and very long tokens; NaN and ±inf attributions, shown as such with the
legend saying so."""

import io
import warnings

import numpy as np
import pandas as pd
import pytest

from interpretable.explanation import (
    ImageExplanation,
    SequenceExplanation,
    TokenExplanation,
    global_explanation,
    read_frame,
    write_frame,
)

TEXTS = {
    "math": "costs $5 and $\\frac{a}{ or $x^$ $$",
    "surrogate": "bad \ud800 byte \udcff",
    "right-to-left": "مرحبا بالعالم שלום",
    "emoji": "great 👍🏽 film 👨‍👩‍👧 🎬",
    "control": "tab\there \x00 nul \x1b[31m",
    "markup": "<script>alert('x')</script> & <b>",
    "long token": "x" * 3000 + " short",
}
SPECIAL = np.array([np.nan, np.inf, -np.inf])


def _values(n: int) -> np.ndarray:
    """``n`` values: NaN, +inf and -inf among ordinary ones."""
    values = np.linspace(-1.0, 1.0, max(n, 3))[:n]
    values[: min(n, 3)] = SPECIAL[: min(n, 3)]
    return values


def _tokens(text: str) -> TokenExplanation:
    units = text.split()
    return TokenExplanation(
        units=[units, units[::-1]], values=[_values(len(units)), np.ones(len(units))],
        target=np.array([text[:8], "$1$"]), prediction=np.array(["$1$", text[:8]]),
        method="inherent", logit=np.array([np.nan, 1.0]), bias=np.array([0.0, np.inf]),
        inputs=[text, text], proba=np.array([[0.5, 0.5], [0.2, 0.8]]),
        classes=np.array([text[:8], "$1$"], dtype=object),
        sample_ids=np.array([text[:6], "007"], dtype=object))


def _sequence(text: str, level: str) -> SequenceExplanation:
    units = [word + " " for word in text.split()] if level == "word" else list(text[:60])
    n = sum(map(len, units))
    values = np.tril(np.resize(np.linspace(-1, 1, 7), (n, len(units))))
    values[-1, :3] = SPECIAL[: len(units)]  # the last step has read every unit
    symbols = np.array(list((text * 2)[:n]))
    return SequenceExplanation(units=[units], values=[values], target=[symbols],
                               prediction=[symbols], method="inherent", level=level,
                               inputs=["".join(units)], sample_ids=np.array([text[:5]]))


def _image(text: str) -> ImageExplanation:
    values = np.resize(_values(32), (2, 4, 4))
    return ImageExplanation(
        values=values, target=np.array([text[:10], "b"]), prediction=np.array(["b", text[:3]]),
        method="inherent", images=np.full((2, 4, 4, 1), 0.5),
        weights=np.resize(_values(64), (2, 4, 4, 2)), logit=np.array([np.inf, 1.0]),
        components=np.stack([values / 2, values / 2], axis=1), component_names=[text[:20], "$"],
        sample_ids=np.array([text[:4], "x"], dtype=object))


CONTAINERS = {
    "tokens": _tokens,
    "sequence-char": lambda text: _sequence(text, "char"),
    "sequence-word": lambda text: _sequence(text, "word"),
    "image": _image,
    "corpus": lambda text: global_explanation([_tokens(text)] * 3),
}


def _figures(explanation, maps_only=False) -> list:
    """Every figure of ``explanation`` (``maps_only``: those showing attributions)."""
    if isinstance(explanation, ImageExplanation):
        kinds = ("overview", "contributions", "heads") + (() if maps_only else ("weights",))
        return [explanation.plot(kind) for kind in kinds]
    if isinstance(explanation, SequenceExplanation) or hasattr(explanation, "top"):
        return [explanation.plot() if hasattr(explanation, "top") else explanation.plot(0)]
    return [explanation.plot("text"), explanation.plot("bars")]


def _rendered(fig) -> bytes:
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Glyph .* missing from", UserWarning)
        fig.savefig(buffer, format="png")
    return buffer.getvalue()


@pytest.mark.parametrize("container", CONTAINERS)
@pytest.mark.parametrize("kind", TEXTS)
def test_views_render_any_text_and_values(container, kind, tmp_path):
    explanation = CONTAINERS[container](TEXTS[kind])
    frame = explanation.to_frame()
    for suffix in (".csv", ".parquet"):
        pd.testing.assert_frame_equal(read_frame(write_frame(frame, tmp_path / f"e{suffix}")),
                                      frame)
    page = explanation.to_html()
    page.encode("utf-8")  # no lone surrogate left
    assert "<script>" not in page
    for fig in _figures(explanation):
        assert _rendered(fig).startswith(b"\x89PNG")


@pytest.mark.parametrize("container", CONTAINERS)
def test_views_show_nan_and_infinity_and_say_so(container):
    explanation = CONTAINERS[container]("a b c d e f")
    page = explanation.to_html()
    assert "NaN" in page and "∞" in page, "the legend explains NaN and ±∞"
    for fig in _figures(explanation, maps_only=True):
        texts = " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))
        assert "NaN" in texts and "∞" in texts, texts[-300:]


def test_token_view_marks_nan_cells_and_saturates_infinity():
    page = _tokens("a b c d").to_html()
    assert 'class="ie-tok ie-nan"' in page and 'title="a: NaN"' in page
    assert 'title="b: +∞"' in page and "background:#b2182b" in page  # saturated red
    assert 'title="c: −∞"' in page and "background:#2166ac" in page  # saturated blue
