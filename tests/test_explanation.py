import numpy as np
import pandas as pd
import pytest

from interpretable.explanation import (
    FRAME_COLUMNS,
    ImageExplanation,
    SequenceExplanation,
    TokenExplanation,
    concat_explanations,
)


def _tokens(method="inherent"):
    return TokenExplanation(
        units=[["a", "<b>"], ["c"]],
        values=[np.array([1.0, -2.0]), np.array([0.5])],
        target=np.array(["pos", "neg"]),
        prediction=np.array(["pos", "pos"]),
        method=method,
        logit=np.array([-0.5, 1.5]),
        bias=np.array([0.5, 1.0]),
    )


def _image():
    a = np.arange(2 * 2 * 3, dtype=float).reshape(2, 2, 3)
    return ImageExplanation(
        values=a, target=np.array([3, 4]), prediction=np.array([3, 5]), method="inherent",
        logit=a.reshape(2, -1).sum(1) + 1.0, bias=np.array([1.0, 1.0]),
        components=np.stack([a / 2, a / 2], axis=1), component_names=["layer0.head0", "skip"],
    )


def _sequence():
    c = np.tril(np.ones((3, 3)))
    return SequenceExplanation(
        units=[list("abc")], values=[c], target=[np.array(list("bcd"))],
        prediction=[np.array(list("bcx"))], method="inherent",
        logit=[c.sum(1) + 0.25], bias=[np.full(3, 0.25)],
    )


@pytest.mark.parametrize("make", [_tokens, _image, _sequence])
def test_shared_frame_schema(make):
    frame = make().to_frame()
    assert list(frame.columns) == FRAME_COLUMNS
    assert frame["attribution"].dtype == np.float64
    assert str(frame["row"].dtype) == "Int64" and str(frame["step"].dtype) == "Int64"
    assert (frame["method"] == "inherent").all()


def test_token_frame_rows_and_completeness():
    exp = _tokens()
    frame = exp.to_frame()
    assert len(frame) == 3
    assert frame["token"].tolist() == ["a", "<b>", "c"]
    assert frame["target"].tolist() == ["pos", "pos", "neg"]
    assert frame["row"].isna().all()
    np.testing.assert_allclose(exp.completeness_error, [0.0, 0.0])
    broken = _tokens()
    broken.logit = np.array([0.0, 1.5])
    assert broken.completeness_error[0] > 0.1


def test_token_html_escapes_and_colours():
    html = _tokens().to_html()
    assert "&lt;b&gt;" in html and "<b>" not in html.replace("<br>", "")
    # sample 0: 'a' = +1 of max |2| -> half red, '<b>' = -2 -> full blue; sample 1 scaled alone
    assert 'rgba(220,40,40,0.500)" title="1">a<' in html
    assert 'rgba(40,80,220,1.000)" title="-2">&lt;b&gt;<' in html
    assert 'rgba(220,40,40,1.000)" title="0.5">c<' in html


def test_mismatched_lengths_rejected():
    with pytest.raises(ValueError, match="2 units but 1 values"):
        TokenExplanation([["a", "b"]], [np.ones(1)], np.array([0]), np.array([0]), "x")


def test_image_frame_coordinates_and_components():
    exp = _image()
    frame = exp.to_frame()
    assert len(frame) == 2 * 6
    row = frame.iloc[5]
    assert (row["row"], row["col"], row["attribution"]) == (1, 2, 5.0)
    by = exp.to_frame(by_component=True)
    assert len(by) == 2 * 2 * 6 and set(by["component"]) == {"layer0.head0", "skip"}
    total = by.groupby(["sample", "unit"])["attribution"].sum().to_numpy()
    np.testing.assert_allclose(total, frame["attribution"].to_numpy())
    np.testing.assert_allclose(exp.completeness_error, 0.0)


def test_image_plot():
    import matplotlib

    fig = _image().plot()
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
    with pytest.raises(ValueError, match="no dynamic weights"):
        _image().plot(kind="weights")


def test_sequence_frame_and_html():
    exp = _sequence()
    frame = exp.to_frame()
    assert len(frame) == 9
    assert frame.loc[(frame.step == 0) & (frame.unit == 2), "attribution"].item() == 0.0
    np.testing.assert_allclose(exp.completeness_error, [0.0])
    assert "target=&#x27;d&#x27;" in exp.to_html()


@pytest.mark.parametrize("make", [_tokens, _image, _sequence])
def test_concat_and_indexing(make):
    a, b = make(), make()
    both = concat_explanations([a, b])
    assert len(both) == 2 * len(a)
    frame = both.to_frame()
    assert frame["sample"].max() == 2 * len(a) - 1
    pd.testing.assert_frame_equal(both[: len(a)].to_frame(), a.to_frame())
    with pytest.raises(ValueError, match="method"):
        concat_explanations([a, _retag(b)])


def _retag(exp):
    import dataclasses

    return dataclasses.replace(exp, method="other")
