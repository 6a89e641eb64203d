"""One table of bad inputs, run against every estimator whose input kind it concerns.

Each row: (kind(s), stage, description, call, expected error, message regex). ``stage`` is
"fit" (on a fresh estimator) or "fitted" (on the fitted one). Rows marked ``ok`` document a
handling instead of an error (e.g. unseen words map to the unknown token).
"""

import numpy as np
import pytest
import torch
from sklearn.base import clone

from conformance.cases import CASES

LONG_TEXT = " ".join(["word"] * 10_000)


def _y_bad(y, kind):
    return y


def _assert_zero(score):
    """Labels not seen in fit are never predicted: as ClassifierMixin.score, they count wrong."""
    assert score == 0.0


TEXT_ROWS = [
    # fit-time
    ("fit", "empty list", lambda e, X, y, kw: e.fit([], []), ValueError, "empty"),
    ("fit", "empty string", lambda e, X, y, kw: e.fit(X[:-1] + [""], y), ValueError, "empty"),
    ("fit", "whitespace-only string",
     lambda e, X, y, kw: e.fit(X[:-1] + ["  \t"], y), ValueError, "whitespace"),
    ("fit", "non-str item", lambda e, X, y, kw: e.fit(X[:-1] + [42], y), TypeError, "str"),
    ("fit", "bytes item",
     lambda e, X, y, kw: e.fit(X[:-1] + [b"abc"], y), TypeError, "bytes|decode"),
    ("fit", "a single str instead of a list",
     lambda e, X, y, kw: e.fit("great movie", y), TypeError, "list"),
    ("fit", "mismatched X/y lengths", lambda e, X, y, kw: e.fit(X, y[:-1]), ValueError, "samples"),
    ("fit", "single class in y",
     lambda e, X, y, kw: e.fit(X, np.full(len(X), y[0])), ValueError, "single class"),
    ("fit", "NaN in y",
     lambda e, X, y, kw: e.fit(X, np.r_[np.zeros(len(X) - 1), np.nan]), ValueError, "NaN"),
    ("fit", "None in y",
     lambda e, X, y, kw: e.fit(X, list(y[:-1]) + [None]), ValueError, "missing"),
    ("fit", "2-d y", lambda e, X, y, kw: e.fit(X, np.c_[y, y]), ValueError, "one-dimensional"),
    # predict-time
    ("fitted", "empty list", lambda e, X, y, kw: e.predict([]), ValueError, "empty"),
    ("fitted", "non-str item", lambda e, X, y, kw: e.predict([None]), TypeError, "str"),
    ("fitted", "bytes item",
     lambda e, X, y, kw: e.explain([b"x"], **kw), TypeError, "bytes|decode"),
    ("fitted", "unseen labels in score (handled: counted wrong)",
     lambda e, X, y, kw: _assert_zero(e.score(X[:2], ["zzz", "yyy"])), None, None),
    ("fitted", "unknown explain method",
     lambda e, X, y, kw: e.explain(X[:1], method="nope"), ValueError, "method"),
    ("fitted", "unknown explain target",
     lambda e, X, y, kw: e.explain(X[:1], target="zzz", **kw), ValueError, "not seen"),
    ("fitted", "unseen words (handled: <unk>)",
     lambda e, X, y, kw: e.predict(["qwertyuiop zxcvbnm"]), None, None),
    ("fitted", "10k-token text (handled)", lambda e, X, y, kw: e.predict([LONG_TEXT]), None, None),
]

PAIR_ROWS = [
    ("fit", "malformed pair (3 items)",
     lambda e, X, y, kw: e.fit([X[0] + ("extra",)] + X[1:], y), ValueError, "pair"),
    ("fit", "pair with empty query",
     lambda e, X, y, kw: e.fit([(X[0][0], "")] + X[1:], y), ValueError, "empty"),
    ("fit", "mixed pairs and plain texts",
     lambda e, X, y, kw: e.fit(X[:-1] + ["plain text"], y), ValueError, "pair"),
    ("fitted", "plain texts to a pair model",
     lambda e, X, y, kw: e.predict(["plain text"]), ValueError, "pairs"),
]

CHAR_ROWS = [
    ("fit", "empty list", lambda e, X, y, kw: e.fit([]), ValueError, "empty"),
    ("fit", "empty string", lambda e, X, y, kw: e.fit(""), ValueError, "empty"),
    ("fit", "non-str", lambda e, X, y, kw: e.fit(123), TypeError, "str"),
    ("fit", "non-str item", lambda e, X, y, kw: e.fit(X[:-1] + [3.5]), TypeError, "str"),
    ("fit", "bytes", lambda e, X, y, kw: e.fit([b"abc"]), TypeError, "bytes|decode|str"),
    ("fit", "empty alphabet (min_count too high)",
     lambda e, X, y, kw: e.set_params(min_count=10**9).fit(X), ValueError, "alphabet"),
    ("fitted", "empty list", lambda e, X, y, kw: e.predict_proba([]), ValueError, "empty"),
    ("fitted", "non-str item", lambda e, X, y, kw: e.predict_proba([None]), TypeError, "str"),
    ("fitted", "unseen characters (handled: unknown symbol)",
     lambda e, X, y, kw: e.predict_proba(["日本語 ☃"]), None, None),
]

def _with(X, index, value):
    X = np.array(X, dtype=np.float64)
    X.flat[index] = value
    return X


IMAGE_ROWS = [
    ("fit", "empty array", lambda e, X, y, kw: e.fit(np.zeros((0, 8, 8)), []), ValueError, "empty"),
    ("fit", "empty list", lambda e, X, y, kw: e.fit([], []), ValueError, "empty"),
    ("fit", "wrong ndim (2-d)",
     lambda e, X, y, kw: e.fit(np.asarray(X)[:, 0], y), ValueError, "dimensions"),
    ("fit", "wrong ndim (5-d)",
     lambda e, X, y, kw: e.fit(np.asarray(X)[:, None, ..., None], y), ValueError, "dimensions"),
    ("fit", "NaN pixel", lambda e, X, y, kw: e.fit(_with(X, 5, np.nan), y), ValueError, "NaN"),
    ("fit", "inf pixel", lambda e, X, y, kw: e.fit(_with(X, 5, np.inf), y), ValueError, "infinite"),
    ("fit", "negative pixel",
     lambda e, X, y, kw: e.fit(_with(X, 5, -0.5), y), ValueError, r"\[0, 1\]"),
    ("fit", "pixel above 1",
     lambda e, X, y, kw: e.fit(_with(X, 5, 255.0), y), ValueError, r"\[0, 1\]"),
    ("fit", "int32 pixels",
     lambda e, X, y, kw: e.fit(np.asarray(X).astype(np.int32), y), TypeError, "uint8"),
    ("fit", "string pixels",
     lambda e, X, y, kw: e.fit(np.asarray(X).astype(str), y), TypeError, "numeric"),
    ("fit", "mismatched X/y lengths", lambda e, X, y, kw: e.fit(X, y[:-1]), ValueError, "samples"),
    ("fit", "single class in y",
     lambda e, X, y, kw: e.fit(X, np.zeros(len(X))), ValueError, "single class"),
    ("fit", "NaN in y",
     lambda e, X, y, kw: e.fit(X, np.r_[np.zeros(len(X) - 1), np.nan]), ValueError, "NaN"),
    ("fitted", "wrong channel count",
     lambda e, X, y, kw: e.predict(np.repeat(np.asarray(X)[..., None], 3, -1)),
     ValueError, "channel"),
    ("fitted", "wrong image size",
     lambda e, X, y, kw: e.predict(np.zeros((2, 12, 12))), ValueError, "size"),
    ("fitted", "NaN pixel",
     lambda e, X, y, kw: e.explain(_with(X[:2], 3, np.nan), **kw), ValueError, "NaN"),
    ("fitted", "unseen labels in score (handled: counted wrong)",
     lambda e, X, y, kw: _assert_zero(e.score(X[:2], [99, 98])), None, None),
    ("fitted", "unknown explain method",
     lambda e, X, y, kw: e.explain(X[:1], method="nope"), ValueError, "method"),
    ("fitted", "unknown explain target",
     lambda e, X, y, kw: e.explain(X[:1], target=99, **kw), ValueError, "not seen"),
    ("fitted", "uint8 images (handled: scaled by 1/255)",
     lambda e, X, y, kw: e.predict((np.asarray(X[:2]) * 255).astype(np.uint8)), None, None),
]


def _nan_target(y):
    y = np.asarray(y, dtype=np.float64)
    y[0, 0, 0] = np.nan
    return y


SEQUENCE_ROWS = [
    ("fit", "empty list", lambda e, X, y, kw: e.fit([], []), ValueError, "empty"),
    ("fit", "empty sequence", lambda e, X, y, kw: e.fit(X[:-1] + [""], y), ValueError, "empty"),
    ("fit", "a single str instead of a list", lambda e, X, y, kw: e.fit(X[0], y[:1]), TypeError,
     "single str"),
    ("fit", "non-sequence item", lambda e, X, y, kw: e.fit(X[:-1] + [3.5], y), TypeError,
     "str or a list"),
    ("fit", "no targets", lambda e, X, y, kw: e.fit(X), ValueError, "targets"),
    ("fit", "mismatched X/Y lengths", lambda e, X, y, kw: e.fit(X, y[:-1]), ValueError,
     "sequences"),
    ("fit", "targets shorter than their sequence",
     lambda e, X, y, kw: e.fit(X, [t[:-1] for t in y]), ValueError, "shape"),
    ("fit", "non-integer targets", lambda e, X, y, kw: e.fit(X, np.asarray(y) + 0.5), TypeError,
     "integer"),
    ("fit", "NaN in targets", lambda e, X, y, kw: e.fit(X, _nan_target(y)), ValueError, "NaN"),
    ("fit", "empty alphabet (min_count too high)",
     lambda e, X, y, kw: e.set_params(min_count=10**9).fit(X, y), ValueError, "alphabet"),
    ("fitted", "empty list", lambda e, X, y, kw: e.predict_proba([]), ValueError, "empty"),
    ("fitted", "non-sequence item", lambda e, X, y, kw: e.predict_proba([None]), TypeError,
     "str or a list"),
    ("fitted", "unknown explain target",
     lambda e, X, y, kw: e.explain(X[:1], target=10**6, **kw), ValueError, "output index"),
    ("fitted", "unseen symbols (handled: unknown symbol)",
     lambda e, X, y, kw: e.predict_proba(["日本語 ☃"]), None, None),
]

ROWS_BY_KIND = {"text": TEXT_ROWS, "pairs": PAIR_ROWS, "chars": CHAR_ROWS, "image": IMAGE_ROWS,
                "sequences": SEQUENCE_ROWS}


def _params():
    for case in CASES:
        for row in ROWS_BY_KIND.get(case.kind, []):
            yield pytest.param(case, row, id=f"{case.name}-{row[0]}-{row[1]}")


_FITTED = {}


def _fitted(case):
    if case.name not in _FITTED:
        X, y, _ = case.data()
        est = case.make()
        _FITTED[case.name] = est.fit(X, y) if y is not None else est.fit(X)
    return _FITTED[case.name]


@pytest.mark.parametrize("case, row", list(_params()))
def test_bad_input(case, row):
    stage, description, call, error, match = row
    X, y, _ = case.data()
    X = list(X) if case.kind != "image" else X
    if stage == "fit":
        est = clone(case.make())
    else:
        est = _fitted(case)
        if not hasattr(est, "explain") and "explain" in description:
            pytest.skip("no explain method")
    if error is None:
        call(est, X, y, case.explain_kwargs)
        return
    with pytest.raises(error, match=match):
        call(est, X, y, case.explain_kwargs)


def test_rows_tried_per_estimator():
    """Keep a record of how many bad inputs each estimator is checked against."""
    counts = {case.name: len(ROWS_BY_KIND.get(case.kind, [])) for case in CASES}
    assert all(n >= 4 for n in counts.values()), counts


def test_messages_name_the_known_classes_and_the_fix_for_missing_texts():
    """Unseen explained labels list classes_; None / NaN texts suggest dropna / fillna."""
    from interpretable import EmbeddingBagClassifier

    clf = EmbeddingBagClassifier(max_epochs=1, embed_dim=4, random_state=0)
    clf.fit(["good film", "bad film"] * 4, ["pos", "neg"] * 4)
    with pytest.raises(ValueError, match=r"classes_ = \['neg', 'pos'\]"):
        clf.explain(["good"], target="meh")
    for missing in (None, float("nan")):
        with pytest.raises(TypeError, match=r"X\[1\].*dropna\(\).*fillna"):
            clf.predict(["good", missing])


@pytest.mark.parametrize("case", [c for c in CASES if c.kind in ("text", "pairs")], ids=str)
def test_blank_texts_are_predicted_from_no_evidence_and_explained_by_no_unit(case):
    """A blank text does not fail the batch: it is predicted from the padding token alone (for
    the mean-embedding model exactly the prior, softmax of the bias; for the BERT family from
    [CLS] [SEP]; for GPT-2 from its whitespace pieces) and explained by no unit of its text;
    fit still refuses blank training texts."""
    X, y, X_test = case.data()
    est = case.make().fit(X, y)
    blank = ("", "  ") if case.kind == "text" else ((X_test[0][0], " "), ("", X_test[0][1]))
    batch = [X_test[0], *blank]
    proba = est.predict_proba(batch)
    assert proba.shape == (3, len(est.classes_)) and np.isfinite(proba).all()
    np.testing.assert_allclose(proba[0], est.predict_proba(X_test[:1])[0], atol=1e-6)
    exp = est.explain(batch)
    spans = getattr(exp, "spans", None)
    if spans is not None:  # word pieces: the special tokens ([CLS] / [SEP], in no text) and
        settings = est.text_encoder_.settings_  # pieces of whitespace (byte-level BPE's Ġ)
        specials = settings["prefix"] + settings["suffix"]
        assert exp.units[2][:len(settings["prefix"])] == settings["prefix"]
        assert all(unit in specials or not unit.strip("Ġ▁") for unit in exp.units[2])
        assert (spans[2][:, 0] == spans[2][:, 1]).all() and (spans[0][:, 1] > spans[0][:, 0]).any()
    else:
        assert exp.units[0] and exp.units[2] == []
    if case.name == "EmbeddingBagClassifier":
        prior = torch.softmax(est.module_.output.bias.detach().double(), 0).numpy()
        np.testing.assert_allclose(proba[1], prior, atol=1e-6)
        assert exp.completeness_error.max() < 1e-5
    with pytest.raises(ValueError, match="whitespace|empty"):
        est.fit(list(X[:-1]) + [blank[1]], y)


def test_long_texts_are_truncated_with_a_warning():
    from interpretable import EmbeddingBagClassifier
    from interpretable.preprocessing import TextEncoder

    clf = EmbeddingBagClassifier(max_epochs=1, embed_dim=4, random_state=0,
                                 text_encoder=TextEncoder(max_len=50))
    clf.fit(["good film", "bad film"] * 4, ["pos", "neg"] * 4)
    with pytest.warns(UserWarning, match=r"max_len=50 tokens.*X\[1\], 300 tokens"):
        exp = clf.explain(["good", "good film " * 150])
    assert len(exp.units[1]) == 50
    assert TextEncoder().max_len == 2048  # the documented default
