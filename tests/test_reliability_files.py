"""Saving and loading models under faults, with real processes and real files: a disk that
fills up, processes saving over a folder while others load it, a save killed part way, and
folders of another format version (refused).

The child processes run this file as a script (see ``main``): each loads a model saved by the
test and then saves or loads under the fault.
"""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from interpretable import EmbeddingBagClassifier
from interpretable.estimators.core._model_folder import FORMAT_VERSION

pytestmark = pytest.mark.skipif(os.name != "posix", reason="uses POSIX signals and rlimits")

TEXTS = ["a great film", "an awful film", "great acting", "dull and awful", "superb", "boring"]
LABELS = ["pos", "neg", "pos", "neg", "pos", "neg"]
CONFIG = "config.json"


def _fit(seed: int, embed_dim: int = 8) -> EmbeddingBagClassifier:
    """Models of one architecture (same vocabulary and sizes) with different parameters and
    weights: loading the config of one with the weights of another would succeed silently."""
    return EmbeddingBagClassifier(embed_dim=embed_dim, lr=0.01 * (seed + 1), max_epochs=1,
                                  random_state=seed).fit(TEXTS, LABELS)


def fingerprint(model) -> str:
    """The model's parameters (from config.json) and weights (from the weights file)."""
    digest = hashlib.sha256(f"{model.lr}/{model.random_state}".encode())
    for name, tensor in sorted(model.module_.state_dict().items()):
        digest.update(name.encode() + tensor.numpy().tobytes())
    return digest.hexdigest()


def _files(root) -> dict:
    """Every file under ``root`` (hidden ones too) with its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in Path(root).rglob("*") if p.is_file()}


def _child(*args) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, __file__, *map(str, args)], env=env, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _report(process, timeout=120) -> dict:
    out, err = process.communicate(timeout=timeout)
    assert process.returncode == 0, err[-3000:]
    return json.loads(out.splitlines()[-1])


# ---------------------------------------------------------------------------- disk full
@pytest.mark.parametrize("fails", ["first file", "larger file"])
def test_disk_full_during_save_raises_os_error_and_keeps_the_previous_model(tmp_path, fails):
    """A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) makes the OS refuse the write with
    EFBIG part way through the save, as a full disk does with ENOSPC."""
    previous, new = _fit(0, embed_dim=64), _fit(1, embed_dim=64)
    path = previous.save(tmp_path / "model")
    new.save(tmp_path / "probe")
    sizes = sorted(len(data) for data in _files(tmp_path / "probe").values() if data)
    shutil.rmtree(tmp_path / "probe")
    new.save(tmp_path / "source")
    before = _files(tmp_path)
    limit = sizes[0] - 1 if fails == "first file" else sizes[-1] - 1
    report = _report(_child("save-with-size-limit", tmp_path / "source", path, limit))
    assert report["type"] == "OSError", report
    assert report["errno"] == 27 and str(path) in report["message"], report
    assert _files(tmp_path) == before  # nothing half-written left
    assert fingerprint(EmbeddingBagClassifier.load(path)) == fingerprint(previous)


# ---------------------------------------------------------------------------- concurrency
def test_loads_during_concurrent_saves_return_one_saved_model(tmp_path):
    """2 processes save 3 models in turn over one folder while 3 processes load it: every
    load returns one of the saved models whole (never the config of one with the weights of
    another) and no load or save fails."""
    models = [_fit(seed) for seed in range(3)]
    for i, model in enumerate(models):
        model.save(tmp_path / f"source{i}")
    path = models[0].save(tmp_path / "model")
    expected = tmp_path / "expected.json"
    expected.write_text(json.dumps([fingerprint(m) for m in models]))
    go = tmp_path / "go"
    writers = [_child("save-loop", go, path, *(tmp_path / f"source{i}" for i in range(3)))
               for _ in range(2)]
    readers = [_child("load-loop", go, path, expected) for _ in range(3)]
    children = writers + readers
    for child in children:
        assert child.stdout.readline().strip() == "ready", child.stderr.read()[-3000:]
    (tmp_path / "go.partial").write_text("3.0")  # seconds to run
    (tmp_path / "go.partial").rename(go)
    saves = [_report(child) for child in writers]
    loads = [_report(child) for child in readers]
    print("saves", [r["count"] for r in saves], "loads", [r["count"] for r in loads])
    assert [r["errors"] for r in saves + loads] == [[]] * 5
    assert sum(r["count"] for r in saves) >= 10 and sum(r["count"] for r in loads) >= 10


# ---------------------------------------------------------------------------- killed saves
def test_killed_save_keeps_the_previous_model_and_the_next_save_cleans_up(tmp_path):
    """A save killed (SIGKILL) just before it moves the new model in: the folder still loads
    as the previous model, and the next save removes what the killed one left."""
    previous, new = _fit(0), _fit(1)
    path = previous.save(tmp_path / "model")
    new.save(tmp_path / "source")
    killed = _child("save-killed-at-rename", tmp_path / "source", path)
    killed.communicate(timeout=120)
    assert killed.returncode == -signal.SIGKILL
    assert fingerprint(EmbeddingBagClassifier.load(path)) == fingerprint(previous)
    new.save(path)
    assert fingerprint(EmbeddingBagClassifier.load(path)) == fingerprint(new)
    assert _files(tmp_path) == {**_prefixed(_files(tmp_path / "source"), "source"),
                                **_prefixed(_files(path), "model")}
    assert len(list(path.glob("weights*"))) == 1


def _prefixed(files: dict, folder: str) -> dict:
    return {f"{folder}/{name}": data for name, data in files.items()}


def test_a_save_waits_for_a_live_save_and_leaves_its_files_alone(tmp_path):
    """Process A is stopped (SIGSTOP) in the middle of its save; a save by this process
    waits for A instead of deleting A's unfinished files, and both complete in turn."""
    first, second = _fit(1), _fit(2)
    path = _fit(0).save(tmp_path / "model")
    first.save(tmp_path / "source")
    stopped = _child("save-stopped-at-config", tmp_path / "source", path)
    deadline = time.monotonic() + 60
    while _status(stopped.pid) != "T" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _status(stopped.pid) == "T", "the child did not stop in its save"
    unfinished = _files(tmp_path)
    done = threading.Event()
    saver = threading.Thread(target=lambda: (second.save(path), done.set()))
    saver.start()
    try:
        assert not done.wait(1.0)  # waits for A
        assert _files(tmp_path) == unfinished
    finally:
        os.kill(stopped.pid, signal.SIGCONT)
    assert _report(stopped)["errors"] == []
    assert done.wait(60)
    saver.join()
    assert fingerprint(EmbeddingBagClassifier.load(path)) == fingerprint(second)


def _status(pid: int) -> str:
    """The process state letter from /proc (``T``: stopped)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "?"


# ---------------------------------------------------------------------------- format version
@pytest.mark.parametrize("version", [1, FORMAT_VERSION + 1])
def test_a_folder_of_another_format_version_is_refused_naming_both_versions(tmp_path, version):
    """A folder whose ``config.json`` has another ``format_version`` than the one this version
    writes is refused before anything is read, and the error names the version found and the
    version supported."""
    path = _fit(0).save(tmp_path / "model")
    config = json.loads((path / CONFIG).read_text())
    assert config["format_version"] == FORMAT_VERSION
    config["format_version"] = version
    (path / CONFIG).write_text(json.dumps(config))
    with pytest.raises(ValueError) as error:
        EmbeddingBagClassifier.load(path)
    message = str(error.value)
    assert f"format_version {version};" in message, message
    assert f"reads format_version {FORMAT_VERSION} only" in message, message


# ---------------------------------------------------------------------------- child processes
def _wait_for(go: Path) -> float:
    print("ready", flush=True)
    while not go.exists():
        time.sleep(0.01)
    return time.monotonic() + float(go.read_text())


def _save_loop(go, path, *sources):
    models = [EmbeddingBagClassifier.load(s, device="cpu") for s in sources]
    errors, count, end = [], 0, _wait_for(Path(go))
    while time.monotonic() < end:
        try:
            models[count % len(models)].save(path)
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(repr(exc))
        count += 1
    return {"count": count, "errors": errors[:5]}


def _load_loop(go, path, expected):
    known = set(json.loads(Path(expected).read_text()))
    EmbeddingBagClassifier.load(path, device="cpu")  # imports what loading needs
    errors, count, end = [], 0, _wait_for(Path(go))
    while time.monotonic() < end:
        try:
            if fingerprint(EmbeddingBagClassifier.load(path, device="cpu")) not in known:
                errors.append("a model that was never saved")
        except Exception as exc:  # noqa: BLE001 - reported to the test
            errors.append(repr(exc))
        count += 1
    return {"count": count, "errors": errors[:5]}


def _save_with_size_limit(source, path, limit):
    import resource

    model = EmbeddingBagClassifier.load(source, device="cpu")
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (int(limit), int(limit)))
    try:
        model.save(path)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        return {"type": type(exc).__name__, "errno": getattr(exc, "errno", None),
                "message": str(exc)}
    return {"type": None}


def _save_and_signal(source, path, event, signum):
    """Save, sending ``signum`` to this process at the first audit ``event`` in the model's
    folder: ``os.rename`` (also raised by ``os.replace``) or ``open`` of a config file for
    writing."""
    model = EmbeddingBagClassifier.load(source, device="cpu")
    folder = str(path)

    def hook(name, args):
        if name != event or not any(str(a).startswith(folder) for a in args[:2]):
            return
        if event == "open" and ("config" not in str(args[0]) or "w" not in str(args[1])):
            return
        os.kill(os.getpid(), signum)

    sys.addaudithook(hook)
    model.save(path)
    return {"errors": []}


ROLES = {
    "save-loop": _save_loop,
    "load-loop": _load_loop,
    "save-with-size-limit": _save_with_size_limit,
    "save-killed-at-rename": lambda s, p: _save_and_signal(s, p, "os.rename", signal.SIGKILL),
    "save-stopped-at-config": lambda s, p: _save_and_signal(s, p, "open", signal.SIGSTOP),
}


def main(role, *args):
    import torch

    torch.set_num_threads(1)
    print(json.dumps(ROLES[role](*args)), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
