import base64
import dataclasses
import re
from html import unescape

import numpy as np
import pandas as pd
import pytest

from interpretable.explanation import (
    FRAME_COLUMNS,
    FRAME_DTYPES,
    LABEL_COLUMNS,
    ImageExplanation,
    SequenceExplanation,
    TokenExplanation,
    concat_explanations,
    global_explanation,
    read_frame,
    token_offsets,
    weights_to_rgba,
)
from interpretable.preprocessing._tokenize import word_tokenize

RED, BLUE, PURPLE = "#b2182b", "#2166ac", "#54278f"


def _tokens(method="inherent", **changes):
    texts = ["A <b>", "null NA"]
    return dataclasses.replace(TokenExplanation(
        units=[["a", "<b>"], ["null", "na"]],
        values=[np.array([1.0, -2.0]), np.array([0.5, 0.0])],
        target=np.array([1, 0]),
        prediction=np.array([1, 1]),
        method=method,
        logit=np.array([-0.5, 1.5]),
        bias=np.array([0.5, 1.0]),
        inputs=texts,
        proba=np.array([[0.2, 0.8], [0.3, 0.7]]),
        classes=np.array([0, 1]),
    ), **changes)


def _image(channels=1, method="inherent"):
    a = np.arange(2 * 2 * 3, dtype=float).reshape(2, 2, 3) - 5
    rng = np.random.RandomState(0)
    return ImageExplanation(
        values=a, target=np.array([3, 4]), prediction=np.array([3, 5]), method=method,
        images=rng.rand(2, 2, 3, channels), weights=rng.rand(2, 2, 3, 2 * channels),
        logit=a.reshape(2, -1).sum(1) + 1.0, bias=np.array([1.0, 1.0]),
        components=np.stack([a / 2, a / 2], axis=1), component_names=["layer0.head0", "skip"],
    )


def _sequence(level="char", method="inherent"):
    text = "ab c"
    c = np.tril(np.ones((4, 4)))
    units = list(text)
    if level == "word":
        units, c = ["ab", " c"], np.stack([c[:, :2].sum(1), c[:, 2:].sum(1)], 1)
    return SequenceExplanation(
        units=[units], values=[c], target=[np.array(list("b c\n"))],
        prediction=[np.array(list("bxc "))], method=method,
        logit=[c.sum(1) + 0.25], bias=[np.full(4, 0.25)], level=level, inputs=[text],
    )


def _cells(html):
    """(text, background, color) of every heat-map cell of a view."""
    return re.findall(r'style="background:(#\w+);color:(#\w+)"[^>]*>([^<]*)<', html)


# ---------------------------------------------------------------------------- tables
@pytest.mark.parametrize("make, absent", [
    (_tokens, {"row", "col", "step", "component", "query"}),
    (_image, {"token", "char_start", "step", "query"}),
    (_sequence, {"row", "col", "component", "query"}),
])
def test_frame_has_only_the_columns_of_its_input_kind(make, absent):
    frame = make().to_frame()
    assert list(frame.columns) == [c for c in FRAME_COLUMNS if c in frame.columns]
    assert not absent & set(frame.columns)
    assert {c: str(t) for c, t in frame.dtypes.items() if c not in ("sample", *LABEL_COLUMNS)} \
        == {c: FRAME_DTYPES[c] for c in frame.columns if c not in ("sample", *LABEL_COLUMNS)}
    assert {str(frame[c].dtype) for c in LABEL_COLUMNS} == \
        {"str" if make is _sequence else "int64"}  # the classes' dtype


@pytest.mark.parametrize("make", [_tokens, _image, _sequence])
def test_csv_and_parquet_round_trips_keep_values_and_dtypes(make, tmp_path):
    frame = make().to_frame()
    for name in ("e.csv", "e.parquet"):
        path = tmp_path / name
        frame.to_csv(path, index=False) if name.endswith("csv") else frame.to_parquet(path)
        pd.testing.assert_frame_equal(read_frame(path), frame)
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "e.parquet"), frame)


def test_labels_keep_the_classes_dtype_and_tokens_like_null_survive_csv(tmp_path):
    frame = _tokens().to_frame()
    assert frame["target"].tolist() == [1, 1, 0, 0]
    assert _tokens(target=np.array(["1", "0"])).to_frame()["target"].tolist() == \
        ["1", "1", "0", "0"]
    frame.to_csv(tmp_path / "e.csv", index=False)
    assert read_frame(tmp_path / "e.csv")["token"].tolist() == ["a", "<b>", "null", "na"]


def test_samples_frame_has_logit_bias_probabilities_and_completeness():
    samples = _tokens(sample_ids=np.array(["rev_7", "rev_9"])).to_frame(kind="samples")
    assert samples["sample"].tolist() == ["rev_7", "rev_9"]
    np.testing.assert_allclose(samples["logit"], [-0.5, 1.5])
    np.testing.assert_allclose(samples["target_probability"], [0.8, 0.3])
    np.testing.assert_allclose(samples["prediction_probability"], [0.8, 0.7])
    np.testing.assert_allclose(samples["completeness_error"], 0.0)
    assert "logit" not in _tokens(logit=None, bias=None).to_frame(kind="samples")
    with pytest.raises(ValueError, match="kind"):
        _tokens().to_frame(kind="pixels")


def test_token_offsets_and_frame_map_tokens_to_the_original_text():
    exp = _tokens()
    frame = exp.to_frame()
    assert frame["char_start"].tolist() == [0, 2, 0, 5]
    assert frame["char_end"].tolist() == [1, 5, 4, 7]
    assert "char_start" not in _tokens(inputs=None).to_frame()


@pytest.mark.parametrize("text", [
    'He said "Don\'t go" (twice)...', "Gonna cannot İstanbul", "a<br>b  c\n\td",
])
def test_token_offsets_of_treebank_tokens(text):
    tokens = word_tokenize(text.lower())
    spans = token_offsets(text, tokens)
    for token, (start, end) in zip(tokens, spans, strict=True):
        piece = text[start:end].lower()
        assert piece == token or (token in ("``", "''") and piece == '"'), (token, piece)


def test_token_not_in_the_text_has_no_span_and_later_tokens_still_align():
    spans = token_offsets("the cat sat", ["the", "dog", "sat"])
    assert spans.tolist() == [[0, 3], [-1, -1], [8, 11]]


def test_sample_ids_survive_indexing_and_concatenation():
    exp = _tokens(sample_ids=np.array(["x", "y"]))
    assert exp[1].to_frame()["sample"].unique().tolist() == ["y"]
    assert _tokens()[[1]].to_frame()["sample"].unique().tolist() == [1]
    both = concat_explanations([exp, exp[::-1]])
    assert both.to_frame(kind="samples")["sample"].tolist() == ["x", "y", "y", "x"]
    plain = concat_explanations([_tokens(), _tokens()])
    assert plain.to_frame(kind="samples")["sample"].tolist() == [0, 1, 2, 3]


@pytest.mark.parametrize("make", [_tokens, _image, _sequence])
def test_concat_and_indexing(make):
    a, b = make(), make()
    both = concat_explanations([a, b])
    assert len(both) == 2 * len(a)
    pd.testing.assert_frame_equal(both[: len(a)].to_frame(), a.to_frame())
    mixed = concat_explanations([a, dataclasses.replace(b, method="other")])
    assert mixed.method.tolist() == [a.method] * len(a) + ["other"] * len(b)
    assert mixed[len(a):].method == "other"
    assert set(mixed.to_frame()["method"]) == {a.method, "other"}


def test_completeness_and_mismatched_lengths():
    np.testing.assert_allclose(_tokens().completeness_error, [0.0, 0.0])
    assert _tokens(logit=np.array([0.0, 1.5])).completeness_error[0] > 0.1
    with pytest.raises(ValueError, match="2 units but 1 values"):
        TokenExplanation([["a", "b"]], [np.ones(1)], np.array([0]), np.array([0]), "x")


# ---------------------------------------------------------------------------- text view
def test_text_view_names_method_target_scale_probability_and_logit():
    html = _tokens().to_html()
    assert "method <code>inherent</code>" in html and "target <b>1</b> (p=0.80)" in html
    assert "logit -0.5" in html and "prediction <b>1</b> (p=0.70)" in html
    assert "−2 lowers the target's logit" in unescape(html) and "+2 raises" in html
    assert "Red raises" in html


def test_text_view_shows_the_original_text_escaped_with_token_colors():
    cells = _cells(_tokens().to_html())
    # shared scale 2: 'A' = +1 -> half red, '<b>' = -2 -> full blue, 'NA' = 0 -> white
    assert cells[0][2] == "A" and cells[1] == (BLUE, "#ffffff", "&lt;b&gt;")
    assert cells[0][0] == "#d88c95" and cells[3][:2] == ("#ffffff", "#000000")
    assert "<b>" not in re.sub(r"</?b>", "", _tokens().to_html()).replace("&lt;b&gt;", "")


@pytest.mark.parametrize("scale, legend", [("row", "−max"), (4.0, "−4 lowers")])
def test_text_view_scale_option(scale, legend):
    html = _tokens().to_html(scale=scale)
    assert legend in html
    second_row = _cells(html)[2]  # 'null' = 0.5: full red with its own scale, 1/8 with 4
    assert second_row[0] == (RED if scale == "row" else "#f5e2e4")
    with pytest.raises(ValueError, match="scale"):
        _tokens().to_html(scale=0)


def test_every_cell_color_keeps_text_readable():
    def luminance(hex_color):
        c = np.array([int(hex_color[i:i + 2], 16) for i in (1, 3, 5)]) / 255
        c = np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)
        return c @ [0.2126, 0.7152, 0.0722]

    values = np.linspace(-1, 1, 41)
    for method in ("inherent", "attention"):
        exp = TokenExplanation([list("x" * 41)], [values], np.array([0]), np.array([0]), method)
        for background, color, _ in _cells(exp.to_html()):
            lum = sorted([luminance(background), luminance(color)])
            assert (lum[1] + 0.05) / (lum[0] + 0.05) >= 4.5, (background, color)


def test_attention_is_flagged_class_independent_in_one_color():
    exp = dataclasses.replace(
        _tokens("attention", values=[np.array([0.25, 0.75]), np.array([0.5, 0.5])]),
        class_independent=True)
    assert exp.class_independent and exp.to_frame()["class_independent"].all()
    html = exp.to_html()
    backgrounds = np.array([[int(c[0][i:i + 2], 16) for i in (1, 3, 5)] for c in _cells(html)])
    shade = (255 - backgrounds) / (255 - np.array([0x54, 0x27, 0x8f]))  # white -> purple
    assert "class-independent" in html and np.ptp(shade, axis=1).max() < 0.02
    assert shade.max() == 1.0
    assert not _tokens().to_frame()["class_independent"].any()


def test_pairs_show_the_query():
    exp = _tokens(queries=[["where", "?"], ["who"]],
                  inputs=[("A <b>", "Where?"), ("null NA", "who")])
    assert "query: <i>Where?</i>" in exp.to_html()
    assert exp.to_frame()["query"].tolist() == ["where ?", "where ?", "who", "who"]


def test_text_plot_colors_the_words_and_returns_the_figure():
    """plot() of a token explanation: a Figure (pyplot holds none) with each word on the color
    of its attribution, the same colors as the HTML view; the bar chart of the strongest."""
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    exp = _tokens()
    fig = exp.plot()
    assert isinstance(fig, Figure) and plt.get_fignums() == []
    words = {t.get_text(): t for t in fig.axes[0].texts}
    html = {text: background for background, _, text in _cells(exp.to_html())}
    for word in ("A", "null"):
        assert words[word.lower()].get_bbox_patch().get_facecolor()[:3] == pytest.approx(
            tuple(int(html[word][i:i + 2], 16) / 255 for i in (1, 3, 5)), abs=1e-6)
    assert words["<b>"].get_color() == "white"  # saturated blue: white text
    assert any(t.startswith("sample 1 · target 0 (p=0.30): logit(0) = +1.5") for t in words)
    bars = exp.plot("bars", k=1)
    assert [len(ax.patches) for ax in bars.axes] == [1, 1]
    assert bars.axes[0].get_yticklabels()[0].get_text() == "<b>"  # the strongest, |-2|
    _, ax = plt.subplots()
    assert exp.plot("bars", sample=1, ax=ax) is ax.figure and len(ax.patches) == 2
    plt.close("all")
    with pytest.raises(ValueError, match="ax= draws one sample"):
        exp.plot(ax=ax)
    with pytest.raises(ValueError, match="kind"):
        exp.plot("heads")


@pytest.mark.parametrize("make", [_tokens, _image, _sequence,
                                  lambda: global_explanation([_tokens()] * 2)],
                         ids=["tokens", "image", "sequence", "corpus"])
def test_every_explanation_plots_renders_and_exports(make):
    from matplotlib.figure import Figure

    from interpretable.explanation import WordPieceExplanation

    explanation = make()
    assert isinstance(explanation.plot(), Figure)
    assert isinstance(explanation.to_html(), str)
    assert isinstance(explanation.to_frame(), pd.DataFrame)
    assert all(callable(getattr(WordPieceExplanation, name, None))
               for name in ("plot", "to_html", "to_frame"))


# ---------------------------------------------------------------------------- image view
# overview: input, map, its parts from x and 1 − x, W(x) color view and a color bar per
# sample; heads: per sample its input, the 2 component maps and a color bar
@pytest.mark.parametrize("kind, n_axes", [("overview", 2 * 5 + 2), ("contributions", 2 + 2),
                                          ("weights", 2), ("heads", 2 * 4)])
def test_image_plot_returns_a_figure_pyplot_does_not_hold(kind, n_axes):
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    fig = _image().plot(kind)
    assert isinstance(fig, Figure) and len(fig.axes) == n_axes  # color bars are axes too
    assert plt.get_fignums() == []


def test_image_titles_name_classes_and_probabilities():
    exp = dataclasses.replace(_image(), proba=np.array([[0.9, 0.1, 0], [0.2, 0.3, 0.5]]),
                              classes=np.array([3, 4, 5]))
    titles = [ax.get_title() for ax in exp.plot().axes]
    assert "sample 1 · predicted 5 (p=0.50)" in titles
    assert any(t.startswith("contributions to 4 (p=0.30)") for t in titles)


def _texts(fig) -> str:
    return " ".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))


def test_image_overview_splits_object_and_background_and_has_a_caption():
    """The map's exact parts from x and from 1 − x sum to it; the color view and the maps
    are explained by a caption; the maps share one symmetric scale per row."""
    exp = _image()
    x = np.zeros((2, 2, 3, 1))
    x[:, :, 1] = 1.0  # a vertical stroke on a black background
    encoded = np.concatenate([x, 1 - x], axis=-1)
    exp = dataclasses.replace(exp, images=x, values=(exp.weights * encoded).sum(-1))
    fig = exp.plot()
    for i in range(2):
        from_x, from_inverse = exp._parts(i)
        np.testing.assert_allclose(from_x + from_inverse, exp.values[i])
        assert (from_x[:, [0, 2]] == 0).all() and (from_inverse[:, 1] == 0).all()
        assert from_x[:, 1].sum() > 0  # the stroke's share, apart from the background's
    caption = _texts(fig)
    assert "W(x) color view: each pixel in the input color" in caption
    assert "'from x' is what its value contributes" in caption and "symmetric" in caption
    maps = [a.images[0] for a in fig.axes if a.get_title().startswith(("contrib", "from"))]
    assert len(maps) == 2 * 3
    for image in maps:
        low, high = image.get_clim()
        assert -low == high > 0
    assert len(exp.plot(split=False).axes) == 2 * 3 + 2


def test_image_positive_evidence_and_sample_selection():
    exp = _image()
    fig = exp.plot("contributions", evidence="positive")
    for ax in [a for a in fig.axes if a.get_title().startswith("contributions")]:
        low, high = ax.images[0].get_clim()
        assert low == 0 < high and ax.images[0].get_array().min() >= 0
    assert "positive evidence only" in _texts(fig)
    one = exp.plot(sample=1)
    assert [a.get_title() for a in one.axes][0] == "sample 1 · predicted 5"
    heads = exp.plot("heads", sample=[1, 0])
    titles = [a.get_title() for a in heads.axes]
    assert titles[0] == "sample 1 · predicted 5" and "sample 0 · predicted 3" in titles
    with pytest.raises(ValueError, match="sample must be"):
        exp.plot(sample=2)
    with pytest.raises(ValueError, match="evidence"):
        exp.plot(evidence="negative")


@pytest.mark.parametrize("channels", [1, 3])
def test_weights_color_view_for_grey_and_color_inputs(channels):
    w = np.zeros((1, 2, 2 * channels))
    w[0, 0, :channels], w[0, 1, channels:] = 1.0, 1.0  # aligned with x, then with 1 - x
    rgba = weights_to_rgba(w, np.array([[1.0, 1.0]]))
    np.testing.assert_allclose(rgba[0, :, :3], [[1, 1, 1], [0, 0, 0]])
    with pytest.raises(ValueError, match="encoding"):
        weights_to_rgba(np.zeros((1, 2, 4)), np.ones((1, 2)))


def test_image_html_embeds_a_png_with_legend_and_table():
    html = _image()._repr_html_()
    png = base64.b64decode(re.search(r"base64,([^\"]+)", html).group(1))
    assert png.startswith(b"\x89PNG") and len(html) < 200_000 and "array(" not in html
    assert 'class="ie-legend"' in html and "W(x) color view" in html
    assert "<td>3</td><td>3</td>" in html  # sample 0: target 3, prediction 3


# ---------------------------------------------------------------------------- sequence view
def test_word_level_steps_count_words_and_keep_the_text():
    exp = _sequence("word")
    frame = exp.to_frame()
    assert frame["step"].tolist() == [0, 1, 1] and frame["unit"].tolist() == [0, 0, 1]
    assert frame["char_start"].tolist() == [0, 0, 2]
    row = re.search(r'<td class="ie-seq" dir="auto">(.*?)</td>', exp.to_html(steps=-1)).group(1)
    assert re.sub(r"<[^>]+>", "", row) == "ab c"
    assert exp.to_frame(kind="samples")["target"].tolist() == [" ", "\n"]


def test_sequence_steps_whitespace_and_row_guard():
    exp = _sequence()
    html = exp.to_html(steps=[0, -1])
    assert html.count("<tr>") == 2 and "step 3 → <b>↵</b>" in html and "step 1 " not in html
    assert "step 1 → <b>␣</b>" in exp.to_html()
    assert len(exp.to_frame(steps=[-1])) == 4
    with pytest.raises(ValueError, match="max_rows=5.*steps="):
        exp.to_frame(max_rows=5)
    with pytest.raises(ValueError, match="step 9 was not explained"):
        exp.to_frame(steps=9)


def test_sequence_rows_without_positions_are_refused():
    exp = SequenceExplanation([list("abcd")], [np.ones((2, 4))], [np.array(["x", "y"])],
                              [np.array(["x", "y"])], "inherent")
    with pytest.raises(ValueError, match="steps="):
        exp.to_frame()
    part = dataclasses.replace(exp, steps=[np.array([3, 1])])
    assert part.to_frame(kind="samples")["step"].tolist() == [3, 1]


def test_sequence_plot_is_a_step_by_unit_heat_map():
    fig = _sequence().plot()
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (4, 4) and image.mask[0, 1] and not image.mask[3, 0]


# ---------------------------------------------------------------------------- corpus view
def test_global_explanation_averages_tokens_per_target():
    exp = TokenExplanation([["good", "film"], ["good"], ["bad"]],
                           [np.array([1.0, 0.0]), np.array([3.0]), np.array([-1.0])],
                           np.array(["pos", "pos", "neg"]), np.array(["pos"] * 3), "inherent")
    table = global_explanation([exp, exp[:1]]).to_frame()
    good = table[(table.target == "pos") & (table.token == "good")].iloc[0]
    assert (good["count"], good["mean_attribution"]) == (3, 5 / 3)
    glob = global_explanation(exp)
    assert glob.top(k=1, min_count=1)["token"].tolist() == ["bad", "good"]
    assert glob.top(k=1)["token"].tolist() == []  # nothing seen 3 times
    assert len(glob.plot(min_count=1).axes) == 2 and "Corpus view" in glob.to_html()
    with pytest.raises(ValueError, match="different methods"):
        global_explanation([exp, dataclasses.replace(exp, method="attention")])


# ---------------------------------------------------------------------------- with a model
@pytest.fixture(scope="module")
def fitted(sentiment_data):
    from interpretable import EmbeddingBagClassifier

    X, y = sentiment_data
    return EmbeddingBagClassifier(embed_dim=8, max_epochs=5, lr=0.05, random_state=0).fit(X, y)


def test_streaming_keeps_the_pandas_index_and_the_dtypes(fitted, sentiment_data, tmp_path):
    from interpretable.integrations._streaming import explanations_to_frame

    X = pd.Series(sentiment_data[0][:9], index=[f"rev_{i}" for i in range(9)])
    whole = explanations_to_frame(fitted, X, chunk_size=4)
    assert whole["sample"].unique().tolist() == list(X.index)
    for suffix in (".csv", ".parquet"):
        path = explanations_to_frame(fitted, X, path=tmp_path / f"e{suffix}", chunk_size=4)
        pd.testing.assert_frame_equal(read_frame(path), whole)
    direct = fitted.explain(X.tolist()).to_frame()
    assert whole.merge(direct.assign(sample=X.index[direct["sample"]]),
                       on=["sample", "unit", "target"]).shape[0] == len(whole)


def test_pipeline_keeps_ids_and_original_text(fitted, sentiment_data):
    from sklearn.base import clone
    from sklearn.preprocessing import FunctionTransformer

    from interpretable.integrations._pipeline import make_explainable_pipeline

    pipe = make_explainable_pipeline(
        FunctionTransformer(lambda texts: [t.replace("<br>", " ") for t in texts]), clone(fitted))
    pipe.fit(*sentiment_data)
    X = pd.Series(["Great<br>movie", "DULL plot"], index=[10, 20])
    frame = pipe.explain(X).to_frame()
    assert frame["sample"].tolist() == [10, 10, 20, 20]
    assert frame["char_start"].tolist() == [0, 9, 0, 5]


def test_global_explanation_from_an_estimator(fitted, sentiment_data):
    X, _ = sentiment_data
    glob = global_explanation(fitted, X[:30], chunk_size=8)
    assert glob.n_samples == 30 and glob.table["count"].sum() == \
        sum(len(u) for u in fitted.explain(X[:30]).units)


# ---------------------------------------------------------------------------- demo command
def test_demo_writes_the_views_to_the_out_folder_and_prints_their_paths(monkeypatch, tmp_path,
                                                                        capsys):
    import interpretable.__main__ as cli

    def write_views(out):
        (out / "text.html").write_text("<html></html>")
        return [out / "text.html"]

    out = tmp_path / "views"
    out.mkdir()
    monkeypatch.setattr(cli, "write_views", write_views)
    assert cli.main(["demo", "--only", "views", "--out", str(out)]) == 0
    assert str(out / "text.html") in capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("make", [_tokens, _image, _sequence,
                                  lambda method: global_explanation([_tokens(method)])])
def test_views_are_templates_that_escape_every_field(make):
    """Every field a view shows goes through the templates' autoescaping."""
    html = make(method='<img src=x onerror="alert(1)">').to_html(standalone=True)
    assert "<img src=x" not in html and "&lt;img src=x onerror=" in html
    assert html.startswith("<!DOCTYPE html>") and html.endswith("</body></html>\n")
