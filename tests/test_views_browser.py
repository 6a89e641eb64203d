"""Every HTML view rendered by headless Chromium: the DOM it builds and a screenshot.

Skipped when no ``chromium`` is on PATH (``.ci/run`` installs it, so CI runs these).
"""

import shutil
import subprocess
from html.parser import HTMLParser

import numpy as np
import pytest

from interpretable.explanation import (
    ImageExplanation,
    SequenceExplanation,
    TokenExplanation,
    global_explanation,
)

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get "
                                "install chromium; .ci/run does it)")
RED, BLUE, PURPLE = (178, 24, 43), (33, 102, 172), (84, 39, 143)


def _text(method="inherent"):
    values = [np.array([2.0, -0.2, -1.5, 0.1, 1.0]), np.array([0.3, -2.0, 0.0])]
    if method == "attention":
        values = [np.abs(v) / np.abs(v).sum() for v in values]
    return TokenExplanation(
        units=[["a", "witty", ",", "dull", "film"], ["far", "too", "long"]], values=values,
        target=np.array(["fresh", "rotten"]), prediction=np.array(["fresh", "rotten"]),
        method=method, logit=np.array([1.2, 2.0]), bias=np.array([-0.2, 3.7]),
        inputs=["A witty, DULL <film>", "Far too long"], proba=np.array([[0.8, 0.2], [0.1, 0.9]]),
        classes=np.array(["fresh", "rotten"]), sample_ids=np.array(["rev_1", "rev_2"]),
        class_independent=method == "attention")


def _image():
    y, x = np.mgrid[-1:1:16j, -1:1:16j]
    values = np.stack([x, -y])
    return ImageExplanation(
        values=values, target=np.array([3, 8]), prediction=np.array([3, 3]), method="inherent",
        images=np.clip(values[..., None] + 0.5, 0, 1), weights=np.abs(np.stack([values] * 2, -1)),
        proba=np.array([[0.7, 0.3], [0.6, 0.4]]), classes=np.array([3, 8]))


def _sequence():
    text = "the king"
    c = np.tril(np.linspace(-1, 1, 64).reshape(8, 8))
    return SequenceExplanation(units=[list(text)], values=[c], target=[np.array(list("he king\n"))],
                               prediction=[np.array(list("he kinga"))], method="inherent",
                               inputs=[text])


VIEWS = {
    "text": (_text, ["method inherent", "target per row", "rev_1", "A witty", "(p=0.80)"]),
    "attention": (lambda: _text("attention"), ["class-independent", "most weight"]),
    "image": (_image, ["Pixel contributions", "W(x) color view", "target_probability"]),
    "sequence": (_sequence, ["step 2 → ␣", "showing 8 of 8 steps"]),
    "corpus": (lambda: global_explanation([_text()] * 3), ["Corpus view", "witty"]),
}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    folder = tmp_path_factory.mktemp("views")
    paths = {}
    for name, (make, _) in VIEWS.items():
        paths[name] = folder / f"{name}.html"
        paths[name].write_text(make().to_html(standalone=True), encoding="utf-8")
    return paths


def _chromium(page, *args, tmp_path):
    result = subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
         f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1000,900", *args,
         page.as_uri()], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


class _Dom(HTMLParser):
    """Text, legend bars and colored cells of a dumped DOM."""

    def __init__(self):
        super().__init__()
        self.text, self.bars, self.cells, self.images = [], [], [], []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        style, classes = attrs.get("style") or "", (attrs.get("class") or "").split()
        if "ie-bar" in classes:
            self.bars.append(style)
        if "ie-tok" in classes:
            self.cells.append(style)
        if tag == "img":
            self.images.append(attrs["src"])

    def handle_data(self, data):
        self.text.append(data)


@pytest.mark.parametrize("name", VIEWS)
def test_dom_has_legend_labels_and_colors(name, pages, tmp_path):
    dom = _Dom()
    dom.feed(_chromium(pages[name], "--dump-dom", tmp_path=tmp_path))
    text = " ".join(" ".join(dom.text).split())
    for label in VIEWS[name][1]:
        assert label in text, label
    if name == "corpus":
        assert "background:#b2182b" in dom.cells[0] and "background:#2166ac" in dom.cells[1]
    elif name == "attention":
        assert dom.bars == ["background:linear-gradient(to right,#ffffff,#54278f)"]
        assert "background:#54278f;color:#ffffff" in dom.cells
    else:
        assert dom.bars == ["background:linear-gradient(to right,#2166ac,#ffffff,#b2182b)"]
    if name in ("text", "sequence"):
        assert "background:#b2182b;color:#ffffff" in dom.cells  # the largest value: red, white text
    if name in ("image", "corpus"):
        assert len(dom.images) == 1 and dom.images[0].startswith("data:image/png;base64,")


@pytest.mark.parametrize("name", VIEWS)
def test_screenshot_shows_the_view_colors(name, pages, tmp_path):
    from PIL import Image

    png = tmp_path / f"{name}.png"
    _chromium(pages[name], f"--screenshot={png}", tmp_path=tmp_path)
    pixels = np.asarray(Image.open(png).convert("RGB")).reshape(-1, 3).astype(int)
    assert len(np.unique(pixels, axis=0)) > 1

    def shown(rgb):
        return (np.abs(pixels - rgb).max(axis=1) <= 6).any()

    if name == "attention":
        assert shown(PURPLE) and not shown(RED)
    else:
        assert shown(RED) and shown(BLUE)
