"""Large, read-only suite inputs shared with workers through sealed memory, not the pipe.

A ViT-sized input (``@cached_input``, built once per grading process) is copied once into a
``memfd`` that is then sealed (no write, no resize, no further seal): its pages can never
change again, whoever holds the file. Every worker forked afterwards receives the sealed
files at its start (``forkserver.spawn``) and maps an input privately when a request names it
(``{"$m": key}``): the learner gets a writable array whose pages are shared until written, a
write making a private copy. So a worker reads ViT-sized inputs without a copy through the
pipe, and no learner can change what the next worker reads.

Only arrays of at least ``MIN_BYTES`` are shared, at most ``MAX_INPUTS`` per process (a spawn
message carries their descriptors); anything else crosses the pipe as before.
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass

import numpy as np

from .harness import protocol, zygote

MIN_BYTES = 1 << 20
MAX_INPUTS = zygote.MAX_SHARED
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


@dataclass(frozen=True)
class _Shared:
    key: str
    fd: int
    array: np.ndarray  # kept alive: its id() names it


_BY_ID: dict[int, _Shared] = {}
_OWNER = os.getpid()


def share(array: np.ndarray) -> None:
    """Offer ``array`` (read-only, never changed again) to the workers started from now on."""
    _forget_if_forked()
    if not enabled() or id(array) in _BY_ID or array.nbytes < MIN_BYTES or \
            len(_BY_ID) >= MAX_INPUTS or array.dtype.hasobject:
        return
    blob = protocol.array_to_npy(array)
    fd = os.memfd_create(f"grade-input-{len(_BY_ID)}", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        view = memoryview(blob)
        while view:
            view = view[os.write(fd, view):]
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, _SEALS)
    except OSError:
        os.close(fd)
        return
    _BY_ID[id(array)] = _Shared(f"i{len(_BY_ID)}", fd, array)


def offered() -> list[tuple[str, int]]:
    """``(key, fd)`` of every input shared so far, for a worker's start."""
    _forget_if_forked()
    return [(s.key, s.fd) for s in _BY_ID.values()]


def lookup(keys: frozenset[str]):
    """The encoder's test: the key of an array the worker holds (one of ``keys``), or None."""
    def key_of(array: np.ndarray) -> str | None:
        shared = _BY_ID.get(id(array))
        return shared.key if shared is not None and shared.key in keys and \
            shared.array is array else None
    return key_of


def enabled() -> bool:
    return os.environ.get("GRADER_SHARED_INPUTS", "1") != "0"


def _forget_if_forked() -> None:
    """A forked process (a bulk pool process) builds and shares its own inputs."""
    global _OWNER
    if os.getpid() != _OWNER:
        for shared in _BY_ID.values():
            try:
                os.close(shared.fd)
            except OSError:
                pass
        _BY_ID.clear()
        _OWNER = os.getpid()
