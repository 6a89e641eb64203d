"""Exports under faults: repeated and concurrent Dask exports on one client, exports
over an earlier export, exports that fail part way (a bad sample, a full disk), errors citing
the caller's sample position, and tables that keep their dtypes through CSV and Parquet
without writing spreadsheet formulas."""

import csv
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from conformance.cases import _sentiment

from interpretable import EmbeddingBagClassifier
from interpretable.explanation import TokenExplanation, read_frame, write_frame
from interpretable.integrations._scale import explain_to_parquet
from interpretable.integrations._streaming import explanations_to_frame

dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    """A small in-process cluster (2 workers, 1 thread each), stopped after the tests."""
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def model():
    X, y, _ = _sentiment(64)
    return EmbeddingBagClassifier(embed_dim=8, max_epochs=2, random_state=0).fit(X, y)


@pytest.fixture(scope="module")
def texts():
    return _sentiment(40, seed=1)[0]


def _bag(texts, npartitions):
    import dask.bag as db

    return db.from_sequence(texts, npartitions=npartitions)


def _read(folder) -> pd.DataFrame:
    return pd.read_parquet(folder).sort_values(["sample", "unit"], ignore_index=True)


def _files(root) -> dict:
    return {str(p.relative_to(root)): p.read_bytes() for p in Path(root).rglob("*") if p.is_file()}


# ---------------------------------------------------------------------------- Dask
def test_100_back_to_back_exports_on_one_client(client, model, texts, tmp_path):
    """Each call scatters its own copy of the model: one call releasing it cannot cancel
    the next one's tasks (FutureCancelledError)."""
    import dask.dataframe as dd

    data = dd.from_pandas(pd.Series(texts, name="text"), npartitions=4)
    expected = explanations_to_frame(model, texts)
    start = time.perf_counter()
    for i in range(100):
        explain_to_parquet(model, data, tmp_path / f"run{i}", client=client)
    print(f"100 exports in {time.perf_counter() - start:.1f} s")
    for i in (0, 99):
        pd.testing.assert_frame_equal(_read(tmp_path / f"run{i}"), expected)


def test_concurrent_exports_on_one_client_are_independent(client, model, texts, tmp_path):
    """4 threads export back to back, each into its own folders and all into one shared
    folder (``overwrite=True``): every export succeeds and the shared folder ends up holding
    one whole export, never parts of several."""
    sizes = {0: 12, 1: 20, 2: 28, 3: 40}  # samples exported by each thread
    errors = []

    def export(worker):
        for i in range(8):
            try:
                explain_to_parquet(model, _bag(texts[:sizes[worker]], 1 + worker),
                                   tmp_path / (f"{worker}-{i}" if i % 2 else "shared"),
                                   client=client, overwrite=True)
            except Exception as exc:  # noqa: BLE001 - collected for the assertion
                errors.append(repr(exc))

    threads = [threading.Thread(target=export, args=(w,)) for w in sizes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    for worker, i in ((w, i) for w in sizes for i in range(1, 8, 2)):
        pd.testing.assert_frame_equal(_read(tmp_path / f"{worker}-{i}"),
                                      explanations_to_frame(model, texts[:sizes[worker]]))
    shared = _read(tmp_path / "shared")
    n = shared["sample"].nunique()
    worker = next(k for k, v in sizes.items() if v == n)
    assert len(list((tmp_path / "shared").iterdir())) == 1 + worker  # its partitions
    pd.testing.assert_frame_equal(shared, explanations_to_frame(model, texts[:n]))


def test_export_into_an_earlier_export(client, model, texts, tmp_path):
    """Without ``overwrite`` an earlier export is refused; with it, it is replaced whole
    (no part file of the earlier run is left: it had more partitions)."""
    out = tmp_path / "out"
    explain_to_parquet(model, _bag(texts, 4), out, client=client)
    before = _files(tmp_path)
    with pytest.raises(FileExistsError, match=rf"{out}.*overwrite=True"):
        explain_to_parquet(model, _bag(texts[:10], 2), out, client=client)
    assert _files(tmp_path) == before
    files = explain_to_parquet(model, _bag(texts[:10], 2), out, client=client, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == [f.name for f in files] == \
        ["part-00000.parquet", "part-00001.parquet"]
    pd.testing.assert_frame_equal(_read(out), explanations_to_frame(model, texts[:10]))
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(".lock")) == ["out"]


def test_overwrite_refuses_a_folder_that_is_not_an_export(client, model, texts, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="notes.txt"):
        explain_to_parquet(model, _bag(texts, 2), tmp_path, client=client, overwrite=True)
    assert _files(tmp_path) == {"notes.txt": b"mine"}


def test_failed_export_keeps_the_earlier_one_and_cites_the_sample(client, model, texts,
                                                                   tmp_path):
    out = tmp_path / "out"
    explain_to_parquet(model, _bag(texts, 4), out, client=client)
    before = _files(tmp_path)
    bad = list(texts)
    bad[25] = None  # blank texts are predicted (from no evidence); a missing value is refused
    with pytest.raises(TypeError, match=r"X\[25\] must be a str, got NoneType"):
        explain_to_parquet(model, _bag(bad, 4), out, client=client, overwrite=True)
    assert _files(tmp_path) == before


def test_disk_full_during_a_dask_export(client, model, texts, tmp_path):
    """A file size limit makes the workers' writes fail with EFBIG: the export raises an
    OSError naming the file and the earlier export stays whole."""
    out = tmp_path / "out"
    explain_to_parquet(model, _bag(texts, 2), out, client=client)
    before = _files(out)
    explanations_to_frame(model, texts[:3], path=tmp_path / "small.parquet")
    model.save(tmp_path / "model")
    (tmp_path / "texts.json").write_text(json.dumps(texts))
    limit = (tmp_path / "small.parquet").stat().st_size + 100  # smaller than one part file
    report = _run_child("dask-export", tmp_path, limit=limit)
    assert report["error"] == "OSError" and report["errno"] == 27, report
    assert str(out / "part-0000") in report["message"], report
    assert _files(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == \
        ["model", "out", "small.parquet", "texts.json"]


def test_error_in_a_dataframe_partition_cites_the_index_label(client, model, texts, tmp_path):
    import dask.dataframe as dd

    bad = pd.Series(texts, index=10**6 + np.arange(len(texts)), name="text")
    bad.iloc[25] = None
    with pytest.raises(TypeError, match=r"X\.loc\[1000025\] must be a str.*dropna"):
        explain_to_parquet(model, dd.from_pandas(bad, npartitions=4), tmp_path / "out",
                           client=client)
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------------------- single files
def test_error_cites_the_position_in_the_callers_input(model):
    X = ["a great film"] * 3000
    X[2345] = None
    with pytest.raises(TypeError, match=r"X\[2345\] must be a str.*fillna"):
        explanations_to_frame(model, X)
    X[2345] = 7
    with pytest.raises(TypeError, match=r"X\[2345\] must be a str"):
        explanations_to_frame(model, iter(X), chunk_size=500)


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_failed_file_export_keeps_the_earlier_file(model, texts, tmp_path, suffix):
    path = explanations_to_frame(model, texts, path=tmp_path / f"e{suffix}")
    before = _files(tmp_path)
    bad = texts * 3
    bad[100] = None
    with pytest.raises(TypeError, match=r"X\[100\]"):
        explanations_to_frame(model, bad, path=path, chunk_size=30)
    assert _files(tmp_path) == before


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_disk_full_during_a_file_export(model, texts, tmp_path, suffix):
    path = explanations_to_frame(model, texts[:5], path=tmp_path / f"e{suffix}")
    model.save(tmp_path / "model")
    (tmp_path / "texts.json").write_text(json.dumps(texts * 20))
    before = _files(tmp_path)
    report = _run_child("file-export", tmp_path, path, limit=path.stat().st_size + 200)
    assert report["error"] == "OSError" and report["errno"] == 27, report
    assert str(path) in report["message"], report
    assert _files(tmp_path) == before


# ---------------------------------------------------------------------------- tables
HOSTILE = ["=HYPERLINK(\"http://x\")", "+1", "-2", "@SUM(A1)", "\tcmd", "'=x", "''+y", "'s",
           "null", "", "=cmd|' /C calc'!A0", "a, \"quoted\"\nline"]


def _hostile_frame():
    """Text cells that spreadsheets would run as formulas or readers would mistype."""
    explanation = TokenExplanation(
        units=[HOSTILE[:6], HOSTILE[6:]], values=[np.arange(6.0), np.array([np.nan, np.inf,
                                                                           -np.inf, 0, 1, 2])],
        target=np.array(["=1+1", "007"]), prediction=np.array(["-", "@x"]), method="inherent",
        sample_ids=np.array(["007", "010"], dtype=object))
    return explanation.to_frame()


def test_tables_keep_their_dtypes_through_csv_and_parquet(tmp_path):
    """String ids such as "007" stay strings, integer ids integers, text cells unchanged."""
    ints = TokenExplanation(units=[["a"]], values=[np.ones(1)], target=np.array([1]),
                            prediction=np.array([1]), method="inherent").to_frame()
    for frame, name in ((_hostile_frame(), "strings"), (ints, "ints")):
        for suffix in (".csv", ".parquet"):
            path = write_frame(frame, tmp_path / f"{name}{suffix}")
            pd.testing.assert_frame_equal(read_frame(path), frame)


def test_csv_export_neutralises_formulas(tmp_path):
    frame = _hostile_frame()
    with open(write_frame(frame, tmp_path / "e.csv"), newline="", encoding="utf-8") as f:
        cells = [cell for row in csv.reader(f) for cell in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t")
                or c.startswith("-") and not _is_number(c)]
    with open(write_frame(frame, tmp_path / "raw.csv", escape_formulas=False), newline="",
              encoding="utf-8") as f:
        assert '=HYPERLINK("http://x")' in [cell for row in csv.reader(f) for cell in row]
    pd.testing.assert_frame_equal(read_frame(tmp_path / "raw.csv"), frame)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_streamed_csv_keeps_string_ids(model, texts, tmp_path):
    X = pd.Series(texts[:12], index=[f"{i:03d}" for i in range(12)])
    frame = explanations_to_frame(model, X, chunk_size=5)
    path = explanations_to_frame(model, X, path=tmp_path / "e.csv", chunk_size=5)
    back = read_frame(path)
    assert back["sample"].tolist()[:2] == ["000", "000"]
    pd.testing.assert_frame_equal(back, frame)


# ---------------------------------------------------------------------------- child processes
def _run_child(role, folder, *args, limit):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    run = subprocess.run([sys.executable, __file__, role, str(folder), *map(str, args),
                          str(limit)], env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.splitlines()[-1])


def _limit_file_size(limit: str) -> None:
    """Files of this process cannot grow beyond ``limit`` bytes: writes fail with EFBIG."""
    import resource
    import signal

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))


def _outcome(export) -> dict:
    try:
        export()
    except Exception as exc:  # noqa: BLE001 - reported to the test
        return {"error": type(exc).__name__, "errno": getattr(exc, "errno", None),
                "message": str(exc)}
    return {"error": None}


def _dask_export(folder, limit):
    from distributed import Client, LocalCluster

    folder = Path(folder)
    model = EmbeddingBagClassifier.load(folder / "model", device="cpu")
    texts = json.loads((folder / "texts.json").read_text())
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        _limit_file_size(limit)
        return _outcome(lambda: explain_to_parquet(model, _bag(texts, 2), folder / "out",
                                                   client=client, overwrite=True))


def _file_export(folder, path, limit):
    folder = Path(folder)
    model = EmbeddingBagClassifier.load(folder / "model", device="cpu")
    texts = json.loads((folder / "texts.json").read_text())
    _limit_file_size(limit)
    return _outcome(lambda: explanations_to_frame(model, texts, path=path, chunk_size=50))


if __name__ == "__main__":
    role, *arguments = sys.argv[1:]
    print(json.dumps({"dask-export": _dask_export, "file-export": _file_export}[role](
        *arguments)), flush=True)
