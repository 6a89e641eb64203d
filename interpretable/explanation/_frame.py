"""The tidy table every explanation exports, its dtypes and a reader that keeps them."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pandas as pd

#: Every column an explanation table can have, in table order (a table has those that apply).
FRAME_COLUMNS = [
    "sample", "unit", "token", "query", "char_start", "char_end", "row", "col", "step",
    "component", "target", "attribution", "prediction", "method", "class_independent",
]
#: Columns of ``to_frame(kind="samples")``, in table order.
SAMPLE_COLUMNS = [
    "sample", "step", "target", "prediction", "logit", "bias", "target_probability",
    "prediction_probability", "completeness_error", "method", "class_independent",
]
#: The dtype of every column but ``sample`` (int64 positions, or the caller's ids).
FRAME_DTYPES = {
    "unit": "int64", "token": "str", "query": "str", "char_start": "Int64", "char_end": "Int64",
    "row": "int64", "col": "int64", "step": "int64", "component": "str", "target": "str",
    "attribution": "float64", "prediction": "str", "method": "str", "class_independent": "bool",
    "logit": "float64", "bias": "float64", "target_probability": "float64",
    "prediction_probability": "float64", "completeness_error": "float64",
}

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def exportable(text: str) -> str:
    """``text`` with lone surrogates (invalid in UTF-8, e.g. from ``errors="surrogateescape"``
    decoding) replaced by U+FFFD, so that every export format can write it."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def labels(values) -> np.ndarray:
    """Class labels or symbols as exportable strings (object array)."""
    return np.array([exportable(str(v)) for v in np.asarray(values, dtype=object).ravel()],
                    dtype=object)


def build_frame(columns: dict, order: list) -> pd.DataFrame:
    """A DataFrame of the non-None ``columns`` in ``order``, cast to :data:`FRAME_DTYPES`."""
    data = {name: columns[name] for name in order if columns.get(name) is not None}
    frame = pd.DataFrame(data)
    return frame.astype({name: FRAME_DTYPES[name] for name in frame.columns
                         if name in FRAME_DTYPES})


def read_frame(path) -> pd.DataFrame:
    """Read an explanation table written as ``.csv`` or ``.parquet`` with the dtypes
    ``to_frame()`` gives (a CSV alone would read the label ``"1"`` as an int and the token
    ``"null"`` as missing). ``sample`` comes back as int64 when every id is an integer."""
    path = Path(path)
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    if path.suffix != ".csv":
        raise ValueError(f"path must end in .parquet or .csv, got {path.name!r}.")
    header = pd.read_csv(path, nrows=0).columns
    dtypes = {name: FRAME_DTYPES[name] for name in header if name in FRAME_DTYPES}
    missing = {name: [""] for name, dtype in dtypes.items() if dtype != "str"}
    return pd.read_csv(path, dtype=dtypes, keep_default_na=False, na_values=missing)
