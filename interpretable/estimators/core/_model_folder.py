"""The files of a saved model and how they are replaced, so that readers always see one
whole model while other processes save over it.

A model folder holds ``config.json``, which names its weights file
``weights-<16 hex digits>.safetensors``; a file is never changed once written. A save writes
the new weights beside the old ones, then replaces ``config.json`` in one rename (the moment
the new model appears), then deletes the old weights. A reader reads ``config.json`` once and
then the weights it names; when a later save deleted them meanwhile it starts again. Saves to
one folder take turns (the lock file ``.lock``) and each first deletes what killed saves left.

``config.json`` carries the format version of the folder (``format_version``,
:data:`FORMAT_VERSION`); a folder of any other format version is refused, naming the version it
holds and the one this version of interpretable reads.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path

from safetensors.torch import save as serialize

from interpretable.utils import exclusive, fsync, open_regular, remove, reporting

FORMAT_VERSION = 2
CONFIG_FILE = "config.json"
LOCK_FILE = ".lock"
STAGED_CONFIG = ".config.json.partial"
#: bounds on what a config may make the loader read
MAX_CONFIG_BYTES = 64 * 2**20
MAX_NESTING = 64
#: how often a load starts again because saves replaced the model it was reading
MAX_LOAD_ATTEMPTS = 20
CONFIG_KEYS = {"format_version", "estimator", "params", "dropped_params", "fitted", "weights"}
_WEIGHTS_NAME = re.compile(r"weights-[0-9a-f]{16}\.safetensors")


# ---------------------------------------------------------------------------- write
def new_weights_name() -> str:
    return f"weights-{secrets.token_hex(8)}.safetensors"


def check_target(path: Path) -> None:
    """Refuse a target that is not a folder of a saved model (or empty): replacing it must not
    delete anything else."""
    if not os.path.lexists(path):
        return
    if not path.is_dir():
        raise FileExistsError(f"{path} exists and is not a folder.")
    others = sorted(p.name for p in path.iterdir()
                    if p.name not in (CONFIG_FILE, LOCK_FILE, STAGED_CONFIG)
                    and not _is_weights_file(p.name))
    if others:
        raise FileExistsError(f"{path} holds files that are not part of a saved model "
                              f"({others[:5]}); save into a new or empty folder.")


def _is_weights_file(name: str) -> bool:
    return _WEIGHTS_NAME.fullmatch(name) is not None


def publish(path: Path, config: str, state: dict) -> None:
    """Make ``config`` (the text of config.json, naming a new weights file) and ``state``
    (the tensors) the model saved in ``path``. Any failure raises an ``OSError`` naming the
    path and leaves the previous model in place."""
    with reporting(path):
        path.mkdir(parents=True, exist_ok=True)
        with exclusive(path / LOCK_FILE):
            check_target(path)
            _replace_model(path, config, state)


def _replace_model(path: Path, config: str, state: dict) -> None:
    """Under the folder's lock: delete what killed saves left, write the weights, replace
    config.json in one rename, delete the previous weights."""
    _remove_weights(path, keep=_published_weights(path))
    weights = path / weights_name(json.loads(config))
    staged = path / STAGED_CONFIG
    try:
        _write_weights(state, weights)
        staged.write_text(config, encoding="utf-8")
        fsync(staged)
        os.replace(staged, path / CONFIG_FILE)
        fsync(path)
    except BaseException:
        remove(weights)
        remove(staged)
        raise
    _remove_weights(path, keep=weights.name)


def _write_weights(state: dict, weights: Path) -> None:
    """The safetensors file of ``state``, flushed to the disk; a failed write raises an
    ``OSError`` naming the file. Serialised in memory and written here, under the folder's
    lock, so that no file but ``weights`` is ever created (safetensors' own ``save_file``
    stages a ``.tmpXXXXXX`` file beside it, which a killed save would leave behind)."""
    data = serialize(state)
    with reporting(weights), open(weights, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _published_weights(path: Path) -> str | None:
    """The weights file named by the folder's config.json (None if it names none)."""
    try:
        return weights_name(read_config(path))
    except (OSError, ValueError):
        return None


def _remove_weights(path: Path, keep: str | None) -> None:
    """Delete the weights files and staged config of ``path``, but ``keep``."""
    for entry in path.iterdir():
        if entry.name != keep and (_is_weights_file(entry.name) or entry.name == STAGED_CONFIG):
            remove(entry)


# ---------------------------------------------------------------------------- read
def read_snapshot(path: Path, read: Callable):
    """``read(config, weights_file)``: the decoded config.json of ``path`` and the weights
    file it names. Started again (up to :data:`MAX_LOAD_ATTEMPTS` times) when a save deleted
    that file meanwhile, so config and weights always come from one save."""
    for _ in range(MAX_LOAD_ATTEMPTS):
        config = read_config(path)
        weights = path / weights_name(config)
        try:
            return read(config, weights)
        except FileNotFoundError:
            if _published_weights(path) == weights.name:
                raise FileNotFoundError(f"{weights} does not exist; is {path} a saved "
                                        "estimator?") from None
    raise OSError(f"{path} was saved over {MAX_LOAD_ATTEMPTS} times while it was being "
                  "loaded; load it again once the saves are over.")


def read_config(path: Path):
    """The decoded config.json of ``path``, bounded in size and nesting."""
    config_file = path / CONFIG_FILE
    try:
        with open_regular(config_file) as f:  # a named pipe would block: refused
            data = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        raise FileNotFoundError(f"{config_file} does not exist; is {path} a saved "
                                "estimator?") from None
    if len(data) > MAX_CONFIG_BYTES:
        raise ValueError(f"{config_file} is larger than {MAX_CONFIG_BYTES} bytes.")
    try:
        config = json.loads(data.decode("utf-8"))
        too_deep = _nesting(config) > MAX_NESTING
    except RecursionError:
        too_deep = True
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, too many digits
        raise ValueError(f"{config_file} is corrupt: not valid JSON ({exc}).") from None
    if too_deep:
        raise ValueError(f"{config_file} is nested deeper than {MAX_NESTING} levels.")
    return config


def _nesting(value) -> int:
    """Nesting depth of decoded JSON (iterative: hostile input cannot exhaust the stack)."""
    depth, level = 0, [value]
    while level:
        depth += 1
        level = [c for v in level if isinstance(v, (dict, list))
                 for c in (v.values() if isinstance(v, dict) else v)]
    return depth


def weights_name(config) -> str:
    """The weights file named by a decoded config.json, whose schema is checked first."""
    check_schema(config)
    name = config["weights"]
    if not isinstance(name, str) or not _WEIGHTS_NAME.fullmatch(name):
        raise ValueError(f"{CONFIG_FILE}: weights must name a file weights-<16 hex "
                         f"digits>.safetensors, got {name!r:.80}.")
    return name


def check_schema(config) -> None:
    """Check a decoded config.json: its format version (only :data:`FORMAT_VERSION` is read)
    and its keys."""
    if not isinstance(config, dict):
        raise ValueError(f"{CONFIG_FILE} must hold a JSON object, got {type(config).__name__}.")
    if "format_version" in config and (type(config["format_version"]) is not int
                                       or config["format_version"] != FORMAT_VERSION):
        raise ValueError(f"{CONFIG_FILE} has format_version {config['format_version']!r:.20}; "
                         f"this version of interpretable reads format_version {FORMAT_VERSION} "
                         "only.")
    missing = sorted(CONFIG_KEYS - config.keys())
    unknown = sorted(config.keys() - CONFIG_KEYS)
    if missing or unknown:
        raise ValueError(f"{CONFIG_FILE}: missing keys {missing}, unknown keys {unknown}.")
