"""Atomic file writes: a temporary file in the same folder, fsynced, then renamed over the
target, so a reader (or a run killed half-way) never sees a half-written file.

A run that writes many files (``grade bulk``, an export) writes them inside ``synced_once``:
each file is then still written whole and renamed (a killed run leaves whole files or none),
but flushed to the disk once, by ``sync_tree()`` when the block ends, instead of one ``fsync``
per file.

Files are written readable by the group and others (0644, folders 0755): a web server or a
teaching assistant can read a report. ``use_private()`` (``--private``) makes them 0600 and
0700 instead.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

_MODES = {"file": 0o644, "dir": 0o755}
_DEFERRED: ContextVar[bool] = ContextVar("grader_files_deferred", default=False)


def use_private(private: bool = True) -> None:
    """Files and folders written from now on are for their owner only (or readable by all)."""
    if private:
        _MODES.update(file=0o600, dir=0o700)
    else:
        _MODES.update(file=0o644, dir=0o755)


def has_file_mode(path: Path) -> bool:
    """Whether the file ``path`` has the mode files are written with now (``use_private``)."""
    return (path.stat().st_mode & 0o777) == _MODES["file"]


def make_dir(path: Path) -> Path:
    """``path`` and its missing parents, the new ones with the current folder mode."""
    missing: list[Path] = []
    for p in itertools.chain([path], path.parents):  # above the first that exists: all do
        if p.exists():
            break
        missing.append(p)
    path.mkdir(parents=True, exist_ok=True)
    for p in missing:
        os.chmod(p, _MODES["dir"])
    return path


@contextlib.contextmanager
def synced_once(path: Path) -> Iterator[None]:
    """Files this thread writes inside the block (and the processes it forks there) are not
    fsynced one by one: the filesystem that holds ``path`` is flushed once when the block
    ends (``sync_tree``; when it raises, as far as it can without hiding the error)."""
    token = _DEFERRED.set(True)
    try:
        yield
    except BaseException:
        with contextlib.suppress(OSError):
            sync_tree(path)  # what was written before the error
        raise
    finally:
        _DEFERRED.reset(token)
    sync_tree(path)


def sync_tree(path: Path) -> None:
    """Flush the filesystem that holds ``path`` to its disk (``syncfs``; ``sync`` where the C
    library has no ``syncfs``)."""
    from grader.sandbox.harness.libc import libc

    fd = os.open(path, os.O_RDONLY)
    try:
        try:
            if libc.syncfs(fd) == 0:
                return
        except AttributeError:
            pass
        os.sync()
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    except FileNotFoundError:  # its folder is made on first use only (no stat per parent)
        make_dir(path.parent)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), _MODES["file"])  # mkstemp's 0600 otherwise
            if not _DEFERRED.get():
                os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` as UTF-8 (unencodable characters replaced)."""
    atomic_write_bytes(path, text.encode("utf-8", errors="replace"))
