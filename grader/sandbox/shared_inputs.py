"""Large, read-only suite inputs shared with workers through sealed memory, not the pipe.

A ViT-sized input (``@cached_input``, built once per grading process) is copied once into a
``memfd`` that is then sealed (no write, no resize, no further seal): its pages can never
change again, whoever holds the file. A worker is handed such a file only with the request
that names it (``{"$m": key}``), never the set built so far: its ``Handout`` sends the file's
descriptor over a Unix socket pair the grader made for that worker (``SCM_RIGHTS``), just
before the request is written, and only the first time one of its requests names it. The
worker maps an input privately for each request that names it: the learner gets a writable
array whose pages are shared until written, a write making a private copy. So a worker
reads ViT-sized inputs without a copy through the pipe, no learner can change what the next
worker reads, and no worker holds an input built for another submission or another test.

Only arrays of at least ``MIN_BYTES`` are shared, at most ``MAX_INPUTS`` per process; anything
else crosses the pipe as before.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from .harness import protocol

MIN_BYTES = 1 << 20
MAX_INPUTS = 64
MAX_PER_MESSAGE = 64  # descriptors one handout message carries (the worker reads as many)
_SEALS = fcntl.F_SEAL_SEAL | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_WRITE


@dataclass(frozen=True)
class _Shared:
    key: str
    fd: int
    array: np.ndarray  # kept alive: its id() names it


_BY_ID: dict[int, _Shared] = {}
_BY_KEY: dict[str, _Shared] = {}
_OWNER = os.getpid()


def share(array: np.ndarray) -> None:
    """Offer ``array`` (read-only, never changed again) to the requests that name it from now
    on."""
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
    shared = _Shared(f"i{len(_BY_ID)}", fd, array)
    _BY_ID[id(array)] = _BY_KEY[shared.key] = shared


def key_of(array: np.ndarray) -> str | None:
    """The key of ``array`` when it is shared (this very object), else None."""
    _forget_if_forked()
    shared = _BY_ID.get(id(array))
    return shared.key if shared is not None and shared.array is array else None


def descriptor(key: str) -> int:
    """The sealed memory file of the input ``key`` (``KeyError`` when none)."""
    return _BY_KEY[key].fd


def shared_count() -> int:
    """How many inputs this process has shared so far."""
    _forget_if_forked()
    return len(_BY_ID)


class Handout:
    """One worker's side of the shared inputs: the grader's end of the socket pair its worker
    holds the other end of, and the keys handed to it so far.

    ``for_request()`` gives the encoder's test for one request: the key of a shared array it
    names, the array's descriptor sent to the worker the first time (before the request
    itself is written). ``pending`` holds the keys the last request named: a fresh worker
    that replaces this one for that same request (a fair-timeout retry) is handed them first.
    """

    def __init__(self) -> None:
        self.sock, self.theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.setblocking(False)  # the worker may stop reading: never wait for it
        self.given: set[str] = set()
        self.pending: frozenset[str] = frozenset()
        self.retries = 0  # the owner's count of requests sent again, when this one started

    def worker_end(self) -> int:
        """The descriptor to hand the worker at its start (closed here by ``started``)."""
        return self.theirs.fileno()

    def started(self, pending: Iterable[str] = ()) -> None:
        """The worker holds its end now: close ours of it, and hand it ``pending`` at once."""
        self.theirs.close()
        self.hand(frozenset(pending))

    def for_request(self):
        """The encoder's test for the next request (see the class)."""
        named: set[str] = set()
        self.pending = frozenset()

        def key(array: np.ndarray) -> str | None:
            found = key_of(array)
            if found is not None and found not in named:
                named.add(found)
                self.pending = frozenset(named)
                self.hand(frozenset((found,)))
            return found

        return key

    def hand(self, keys: frozenset[str]) -> None:
        """Send the worker the descriptors of ``keys`` it does not hold yet. A worker that
        stopped reading its end gets nothing more: the request that names one then fails in
        it (the learner's failed test), never here."""
        new = sorted(k for k in keys if k not in self.given and k in _BY_KEY)
        for start in range(0, len(new), MAX_PER_MESSAGE):
            part = new[start:start + MAX_PER_MESSAGE]
            try:
                socket.send_fds(self.sock, [json.dumps(part).encode()],
                                [_BY_KEY[k].fd for k in part])
            except OSError:
                return
            self.given.update(part)

    def close(self) -> None:
        for end in (self.sock, self.theirs):
            end.close()


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
        _BY_KEY.clear()
        _OWNER = os.getpid()
