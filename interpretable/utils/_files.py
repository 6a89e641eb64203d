"""Writing files and folders so that a fault never leaves them half-written.

* :func:`replacing` stages a file or folder next to its target and moves it into place when
  it is complete: readers see the previous or the new version, never a mix, and an error
  (disk full, a crash of the writing code) leaves the target as it was.
* Writers of one target take turns through :func:`exclusive`, a lock file that the operating
  system releases when its process dies. The writer holding it is the only live one, so it can
  delete what killed writers left behind without touching a write in progress.
* :func:`open_regular` / :func:`check_regular` refuse to read anything but a regular file (a
  FIFO would block the reader forever, a device never end) with an ``OSError`` naming it.
* :func:`reporting` turns an ``OSError`` that names no file (a failed ``write``, a writer
  library's own error) into one naming the target.
"""

from __future__ import annotations

import errno
import glob
import os
import secrets
import shutil
import stat
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

from filelock import FileLock

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator

__all__ = ["exclusive", "replacing"]

STAGED, REPLACED = "partial", "replaced"


def exclusive(lock_file: Path) -> FileLock:
    """Context manager holding an exclusive lock on ``lock_file`` (created if needed) across
    threads and processes; it waits while another writer holds it."""
    return FileLock(str(lock_file))


def _not_regular(path, mode: int) -> OSError:
    kinds = [(stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a named pipe"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
             (stat.S_ISSOCK, "a socket")]
    kind = next((name for test, name in kinds if test(mode)), "not a plain file")
    return OSError(errno.EINVAL, f"not a regular file ({kind}), refused", str(path))


def check_regular(path) -> None:
    """Raise an ``OSError`` naming ``path`` unless it is a regular file (or a link to one);
    for files that a library opens by name. ``FileNotFoundError`` if it does not exist."""
    mode = os.stat(path).st_mode
    if not stat.S_ISREG(mode):
        raise _not_regular(path, mode)


def open_regular(path):
    """``open(path, "rb")`` for a regular file (or a link to one) only: a named pipe, a device,
    a socket or a folder raise an ``OSError`` naming ``path``. Opened without blocking and
    checked on the opened file, so that nothing swapped in meanwhile can block the reader."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
                         | getattr(os, "O_BINARY", 0))
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _not_regular(path, mode)
        return os.fdopen(descriptor, "rb")  # O_NONBLOCK changes nothing for regular files
    except BaseException:
        os.close(descriptor)
        raise


@contextmanager
def reporting(path):
    """Re-raise an ``OSError`` from the OS that names no file (e.g. a failed ``write``) as one
    of the same errno naming ``path``."""
    try:
        yield
    except OSError as exc:
        if exc.filename is not None or exc.errno is None:
            raise
        raise OSError(exc.errno, exc.strerror or str(exc), str(path)) from exc


def fsync(path: Path) -> None:
    """Flush a file, or on POSIX a folder's entries, to the disk."""
    folder = path.is_dir()
    if folder and os.name != "posix":
        return
    descriptor = os.open(path, os.O_RDONLY if folder else os.O_RDWR)  # Windows: writable
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def remove(path: Path) -> None:
    """Delete a file or folder if it exists. A folder is first renamed (to ``<name>.removed-*``),
    so that writers still running (e.g. cancelled tasks) cannot add files to it while it is
    deleted. Failures are ignored: what remains is a leftover that the next writer removes."""
    if path.is_dir() and not path.is_symlink():
        doomed = path.with_name(f"{path.name}.removed-{secrets.token_hex(4)}")
        with suppress(OSError):
            os.rename(path, doomed)
            shutil.rmtree(doomed, ignore_errors=True)
    else:
        with suppress(OSError):
            path.unlink()


def leftovers(target: Path, kind: str) -> list[Path]:
    """Hidden entries next to ``target`` left by writes that did not finish: ``kind``
    ``"partial"`` (staged, never published) or ``"replaced"`` (the previous version of a
    folder, moved aside for the new one)."""
    return sorted(target.parent.glob(f".{glob.escape(target.name)}.{kind}-*"))


@contextmanager
def replacing(target: str | os.PathLike[str], *, folder: bool = False,
              companions: Iterable[str | os.PathLike[str]] = ()) -> Iterator[tuple[Path, ...]]:
    """Yield the staging paths of ``target`` and its ``companions`` (files written with it,
    e.g. its schema), next to them; when the block returns, move each into place in one rename,
    companions first. ``folder``: ``target`` is a folder, created by the block (an existing
    one is first renamed aside, then deleted).

    Writers of one target take turns (lock file ``.<name>.lock`` beside it) and each first
    deletes what killed writers left. On any error the staged copies are deleted, the targets
    are unchanged and an OSError from the OS names ``target``.
    """
    target = Path(target)
    targets = [*map(Path, companions), target]
    with reporting(target):
        target.parent.mkdir(parents=True, exist_ok=True)
        lock = exclusive(target.parent / f".{target.name}.lock")
        lock.acquire()
    try:
        for stale in (entry for path in targets for entry in leftovers(path, STAGED)):
            remove(stale)
        staged = [path.parent / f".{path.name}.{STAGED}-{secrets.token_hex(4)}"
                  for path in targets]
        try:
            with reporting(target):
                yield (staged[-1], *staged[:-1])
                for staging, path in zip(staged, targets, strict=True):
                    _publish(staging, path, folder and path == target)
        finally:
            for staging in staged:
                remove(staging)
        for previous in leftovers(target, REPLACED):
            remove(previous)
    finally:
        lock.release()


def _publish(staging: Path, target: Path, folder: bool) -> None:
    """Move the complete ``staging`` to ``target``, flushed to the disk first."""
    for path in staging.rglob("*") if folder else ():
        fsync(path)
    fsync(staging)
    if folder and os.path.lexists(target):
        aside = target.parent / f".{target.name}.{REPLACED}-{secrets.token_hex(4)}"
        os.rename(target, aside)
        try:
            os.rename(staging, target)
        except BaseException:
            os.rename(aside, target)
            raise
    else:
        os.replace(staging, target)
    fsync(target.parent)
