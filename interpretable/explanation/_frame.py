"""The tidy table every explanation exports, its dtypes, and a writer and a reader of CSV and
Parquet files that keep them."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from interpretable._optional import import_optional
from interpretable.utils import replacing

if TYPE_CHECKING:
    import os

#: Every column an explanation table can have, in table order (a table has those that apply).
FRAME_COLUMNS = [
    "sample", "unit", "token", "query", "char_start", "char_end", "row", "col", "step",
    "component", "target", "contrast", "attribution", "prediction", "method",
    "class_independent",
]
#: Columns of ``to_frame(kind="samples")``, in table order.
SAMPLE_COLUMNS = [
    "sample", "step", "target", "contrast", "prediction", "logit", "bias", "target_probability",
    "prediction_probability", "completeness_error", "n_steps", "method", "class_independent",
]
#: The dtype of every column but ``sample`` (int64 positions, or the caller's ids) and the
#: :data:`LABEL_COLUMNS`.
FRAME_DTYPES = {
    "unit": "int64", "token": "str", "query": "str", "char_start": "Int64", "char_end": "Int64",
    "row": "int64", "col": "int64", "step": "int64", "n_steps": "Int64", "component": "str",
    "contrast": "str",
    "attribution": "float64", "method": "str", "class_independent": "bool",
    "logit": "float64", "bias": "float64", "target_probability": "float64",
    "prediction_probability": "float64", "completeness_error": "float64",
}
#: Columns of class labels or symbols: the dtype of the estimator's classes (int64, float64 or
#: bool for numeric classes, str for any other).
LABEL_COLUMNS = ("target", "prediction")

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def exportable(text: str) -> str:
    """``text`` with lone surrogates (invalid in UTF-8, e.g. from ``errors="surrogateescape"``
    decoding) replaced by U+FFFD, so that every export format can write it."""
    return _LONE_SURROGATE.sub("\ufffd", text)


def texts(values) -> np.ndarray:
    """Tokens, symbols or names as exportable strings (object array)."""
    return np.array([exportable(str(v)) for v in np.asarray(values, dtype=object).ravel()],
                    dtype=object)


def labels(values) -> np.ndarray:
    """Class labels or symbols for a :data:`LABEL_COLUMNS` column: numbers and booleans as they
    are (the classes' dtype), anything else as exportable strings (see :func:`texts`)."""
    values = np.asarray(values)
    return values.ravel() if values.dtype.kind in "biuf" else texts(values)


def build_frame(columns: dict, order: list) -> pd.DataFrame:
    """A DataFrame of the non-None ``columns`` in ``order``, cast to :data:`FRAME_DTYPES` and
    string labels to str (string sample ids made exportable too)."""
    data = {name: columns[name] for name in order if columns.get(name) is not None}
    if "sample" in data and np.asarray(data["sample"]).dtype.kind in "OU":
        data["sample"] = np.array([exportable(v) if isinstance(v, str) else v
                                   for v in data["sample"]], dtype=object)
    frame = pd.DataFrame(data)
    return frame.astype({name: FRAME_DTYPES.get(name, "str") for name in frame.columns
                         if name in FRAME_DTYPES or name in LABEL_COLUMNS
                         and frame[name].dtype == object})


# ---------------------------------------------------------------------------- files
#: spreadsheets run a CSV cell starting with one of these as a formula
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
SCHEMA_SUFFIX = ".schema.json"
_TEXT_DTYPES = ("str", "string", "object")


def check_table_path(path) -> Path:
    path = Path(path)
    if path.suffix not in (".parquet", ".csv"):
        raise ValueError(f"path must end in .parquet or .csv, got {path.name!r}.")
    return path


def schema_file(path: Path) -> Path:
    """``<path>.schema.json``: the column dtypes of the CSV table ``path``."""
    return path.with_name(path.name + SCHEMA_SUFFIX)


def _formula_cells(column: pd.Series, quoted: bool = False) -> pd.Series:
    """Where a text cell, after its leading quotes, starts like a formula (``quoted``: and
    has a leading quote)."""
    if not pd.api.types.is_string_dtype(column):
        return pd.Series(False, index=column.index)
    cells = column.str.lstrip("'").str.startswith(FORMULA_STARTS, na=False)
    return cells & column.str.startswith("'", na=False) if quoted else cells


def escape_formula_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with ``'`` before every text cell that a spreadsheet would run as a formula
    (one starting, after any quotes, with ``= + - @``, tab or carriage return): the cell then
    shows as text. :func:`unescape_formula_cells` reverses it exactly."""
    frame = frame.copy()
    for name in frame.columns:
        cells = _formula_cells(frame[name])
        if cells.any():
            frame.loc[cells, name] = "'" + frame.loc[cells, name]
    return frame


def unescape_formula_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """Inverse of :func:`escape_formula_cells`."""
    frame = frame.copy()
    for name in frame.columns:
        cells = _formula_cells(frame[name], quoted=True)
        if cells.any():
            frame.loc[cells, name] = frame.loc[cells, name].str[1:]
    return frame


class _CsvTable:
    """Rows appended to a CSV file; :meth:`schema` records their dtypes."""

    def __init__(self, path: Path, escape: bool):
        self.dtypes: dict[str, str] | None
        self.path, self.escape, self.dtypes = path, escape, None

    def write(self, frame: pd.DataFrame) -> None:
        first = self.dtypes is None
        (escape_formula_cells(frame) if self.escape else frame).to_csv(
            self.path, mode="w" if first else "a", header=first, index=False, encoding="utf-8")
        if first:
            self.dtypes = {name: str(dtype) for name, dtype in frame.dtypes.items()}

    def close(self) -> None:
        pass

    def schema(self) -> str:
        return json.dumps({"dtypes": self.dtypes, "escaped_formulas": self.escape}, indent=1)


class _ParquetTable:
    """Rows appended to a Parquet file, with the schema of the first rows."""

    def __init__(self, path: Path):
        self.path, self.writer = path, None

    def write(self, frame: pd.DataFrame) -> None:
        pa = import_optional("pyarrow", "writing a .parquet table")
        import pyarrow.parquet as pq

        table = pa.Table.from_pandas(frame, preserve_index=False)
        if self.writer is None:
            self.writer = pq.ParquetWriter(str(self.path), table.schema)
        self.writer.write_table(table.cast(self.writer.schema))

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


@contextmanager
def table_writer(path: str | os.PathLike[str], *, escape_formulas: bool = True
                 ) -> Iterator[Callable[[pd.DataFrame], None]]:
    """Write a table file in parts: a context manager yielding an append function.

    The file appears complete when the block ends; on any error an earlier file at ``path``
    stays as it was (see :func:`write_frame`).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.csv`` or ``.parquet`` file.
    escape_formulas : bool, default=True
        CSV: text cells that spreadsheets would run as formulas start with ``'``.

    Yields
    ------
    callable
        ``write(frame)``, which appends the rows of a DataFrame to the file.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> from interpretable.explanation import read_frame, write_frame
    >>> frame = TokenExplanation(
    ...     units=[["=1+1", "film"]], values=[np.array([1.0, 0.5])], target=np.array([1]),
    ...     prediction=np.array([1]), method="inherent").to_frame()
    >>> from interpretable.explanation import table_writer
    >>> with table_writer("two_parts.parquet") as write:
    ...     write(frame)
    ...     write(frame)
    >>> len(read_frame("two_parts.parquet"))
    4
    """
    path = check_table_path(path)
    csv = path.suffix == ".csv"
    with replacing(path, companions=[schema_file(path)] if csv else []) as staged:
        table = _CsvTable(staged[0], escape_formulas) if csv else _ParquetTable(staged[0])
        try:
            yield table.write
        finally:
            table.close()
        if csv:
            staged[1].write_text(table.schema(), encoding="utf-8")


def write_frame(frame: pd.DataFrame, path: str | os.PathLike[str], *,
                escape_formulas: bool = True) -> Path:
    """Write an explanation table so that :func:`read_frame` gives it back with its dtypes.

    The file is replaced whole (written beside it, then renamed): readers and a failed write
    never see half a table, and a failure raises an ``OSError`` naming the path. A CSV gets
    its dtypes in ``<path>.schema.json`` (so ids such as ``"007"`` stay strings) and, with
    ``escape_formulas`` (default), text cells that spreadsheets would run as formulas (see
    :func:`escape_formula_cells`) start with ``'``; :func:`read_frame` removes it again.

    Parameters
    ----------
    frame : pandas.DataFrame
        An explanation table (``to_frame()``).
    path : str or os.PathLike
        A ``.csv`` or ``.parquet`` file.
    escape_formulas : bool, default=True
        CSV: escape the text cells that spreadsheets would run as formulas.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    OSError
        If writing fails (the error names the path).
    ValueError
        If the suffix is neither ``.csv`` nor ``.parquet``.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> from interpretable.explanation import read_frame, write_frame
    >>> frame = TokenExplanation(
    ...     units=[["=1+1", "film"]], values=[np.array([1.0, 0.5])], target=np.array([1]),
    ...     prediction=np.array([1]), method="inherent").to_frame()
    >>> path = write_frame(frame, "explanation.csv")
    >>> open(path).read().splitlines()[1].split(",")[:3]
    ['0', '0', "'=1+1"]
    >>> read_frame(path)["token"].tolist()
    ['=1+1', 'film']
    """
    with table_writer(path, escape_formulas=escape_formulas) as write:
        write(frame)
    return Path(path)


def read_frame(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read an explanation table written as ``.csv`` or ``.parquet``, with its dtypes.

    The dtypes are those ``to_frame()`` gives (labels included: int labels stay int). A CSV is
    read with the dtypes of its ``<path>.schema.json`` (written by :func:`write_frame`);
    without one (a CSV written by other tools), the token ``"null"`` still reads as a token,
    and ``sample``, ``target`` and ``prediction`` take pandas' inferred dtypes (int64 when
    every value is an integer, so a string label ``"1"`` needs the schema to stay a string).

    Parameters
    ----------
    path : str or os.PathLike
        A ``.csv`` or ``.parquet`` file.

    Returns
    -------
    pandas.DataFrame
        The table.

    Raises
    ------
    ValueError
        If the suffix is neither ``.csv`` nor ``.parquet``.

    Examples
    --------
    >>> import numpy as np
    >>> from interpretable import TokenExplanation
    >>> from interpretable.explanation import read_frame, write_frame
    >>> frame = TokenExplanation(
    ...     units=[["=1+1", "film"]], values=[np.array([1.0, 0.5])], target=np.array([1]),
    ...     prediction=np.array([1]), method="inherent").to_frame()
    >>> read_frame(write_frame(frame, "explanation.parquet")).dtypes["target"]
    dtype('int64')
    """
    path = check_table_path(path)
    if path.suffix == ".parquet":
        import_optional("pyarrow", "reading a .parquet table")  # pandas' reader
        return pd.read_parquet(path)
    schema = json.loads(schema_file(path).read_text(encoding="utf-8")) \
        if schema_file(path).is_file() else {"dtypes": {}, "escaped_formulas": False}
    header = pd.read_csv(path, nrows=0).columns
    recorded = {name: "str" if dtype in _TEXT_DTYPES else dtype
                for name, dtype in schema["dtypes"].items()}
    known = {**FRAME_DTYPES, **recorded}
    dtypes = {name: known[name] for name in header if name in known}
    readable = {name: dtype if dtype in (*FRAME_DTYPES.values(), "float64") else "str"
                for name, dtype in dtypes.items()}
    missing = {name: [""] for name, dtype in readable.items() if dtype != "str"}
    frame = pd.read_csv(path, dtype=readable, keep_default_na=False, na_values=missing,
                        encoding="utf-8")
    frame = frame.astype({name: dtype for name, dtype in dtypes.items()
                          if readable[name] != dtype})
    return unescape_formula_cells(frame) if schema["escaped_formulas"] else frame
