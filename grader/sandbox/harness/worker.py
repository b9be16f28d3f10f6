"""The learner worker: the only process that imports and runs learner code.

It reads requests from one pipe and answers on another (``protocol.py`` frames). It holds no
expected values and decides nothing: it calls what it is asked to call and returns the result
as plain data, with the learner's printed output and, on an exception, the traceback lines
that belong to the learner's files.

Requests (``header["op"]``):
- ``call``: ``module``, ``func``; the value is ``[args, kwargs]``. ``func`` may be a dotted
  attribute path; ``handle`` (an int) calls a method of a stored object instead.
- ``new``: like ``call``, but the result is stored and a ``Handle`` is returned.
- ``apply``: the first argument is a recipe; call the callable it builds with the rest
  (e.g. count the parameters of a learner's module, passed as a handle).
- ``load``: import a learner module (reports import errors early).
"""

from __future__ import annotations

import array
import builtins
import functools
import importlib.util
import io
import json
import mmap
import os
import socket
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import protocol, recipes
from .source_text import NotSourceText, source_text
from .source_text import text_problem as text_problem  # the rule, also read from here

OUTPUT_CAP = 64 * 1024
# The exception type a load reports when the file is not source text at all (``source_text``,
# class ``NotText``): the grader words it "<file> is binary ..." rather than as Python's error.
NOT_TEXT = "NotText"


class CappedWriter(io.TextIOBase):
    """A text stream that keeps the first ``cap`` characters and counts the rest; ``where``
    ends the note on what was dropped (" in this test")."""

    def __init__(self, cap: int = OUTPUT_CAP, where: str = "") -> None:
        self.cap, self.where = cap, where
        self.parts: list[str] = []
        self.kept = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, s: str) -> int:
        s = str(s)
        room = self.cap - self.kept
        if room > 0:
            self.parts.append(s[:room])
            self.kept += min(room, len(s))
        self.dropped += max(0, len(s) - max(room, 0))
        return len(s)

    def text(self) -> str:
        out = "".join(self.parts)
        if self.dropped:
            out += f"\n[output truncated: {self.dropped} more characters{self.where}]"
        return out


class Worker:
    def __init__(self, submission_dir: Path, request_fd: int, response_fd: int,
                 handout_fd: int | None = None) -> None:
        """``handout_fd``: this worker's end of the socket the grader hands it the sealed
        shared inputs its requests name on (``shared_inputs.py``), or None."""
        self.submission_dir = submission_dir
        self.request_fd = request_fd
        self.response_fd = response_fd
        self.modules: dict[str, Any] = {}
        self.objects: dict[int, Any] = {}
        self.shared = _Handed(handout_fd) if handout_fd is not None else None

    # -- learner code -----------------------------------------------------------------
    def learner_files(self) -> set[str]:
        return {str(p.resolve()) for p in self.submission_dir.glob("*.py")}

    def load(self, slug: str) -> Any:
        if slug in self.modules:
            return self.modules[slug]
        path = self.submission_dir / f"{slug}.py"
        if not path.is_file():
            raise _ImportFailed(FileNotFoundError(f"there is no file {slug}.py"))
        try:
            text = source_text(path.read_bytes())
        except OSError as exc:
            raise _ImportFailed(exc) from None
        except NotSourceText as exc:
            raise _ImportFailed(NotText(str(exc))) from None
        spec = importlib.util.spec_from_file_location(slug, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[slug] = module
        try:  # the text checked is the text run: the file is not read again
            exec(compile(text, str(path), "exec", dont_inherit=True), vars(module))
        except BaseException as exc:
            sys.modules.pop(slug, None)
            raise _ImportFailed(exc) from None
        self.modules[slug] = module
        return module

    def resolve(self, header: dict[str, Any]) -> Any:
        if header.get("handle") is not None:
            target = self.objects[int(header["handle"])]
            path = str(header["func"]).split(".")
        else:
            target = self.load(str(header["module"]))
            path = str(header["func"]).split(".")
        for name in path:
            if not hasattr(target, name):
                raise _Missing(name)
            target = getattr(target, name)
        return target

    def materialise(self, value: Any) -> Any:
        """Turn recipes and handles received from the grader into live objects."""
        def live(leaf: Any) -> Any:
            if isinstance(leaf, protocol.Recipe):
                return recipes.build(leaf.name, self.materialise(leaf.params))
            if isinstance(leaf, protocol.Handle):
                return self.objects[leaf.id]
            return leaf

        return protocol.map_leaves(value, live)

    # -- the request loop ---------------------------------------------------------------
    def handle(self, header: dict[str, Any], blobs: list[bytes]) -> protocol.Frame:
        op = header.get("op")
        out = CappedWriter()
        saved = sys.stdout, sys.stderr
        sys.stdout = sys.stderr = out
        started = time.perf_counter()
        modified = False
        try:
            if op == "load":  # import the module; answer which of ``names`` it lacks
                module = self.load(str(header["module"]))
                result: Any = [str(n) for n in header.get("names") or ()
                               if not hasattr(module, str(n))]
            else:
                args, kwargs = self.materialise(
                    protocol.decode_value(header, blobs, allow_recipes=True,
                                          shared=self.shared))
                if op == "apply":  # a trusted recipe applied to learner objects
                    fn, args = args[0], args[1:]
                else:
                    fn = self.resolve(header)
                watched = op == "call" and header.get("handle") is None
                before = _state((args, kwargs)) if watched else None
                result = fn(*args, **kwargs)
                modified = watched and _state((args, kwargs)) != before
                if op == "new":
                    handle = protocol.Handle(len(self.objects) + 1)
                    self.objects[handle.id] = result
                    result = handle
        except BaseException as exc:  # noqa: BLE001 - every learner failure is reported
            sys.stdout, sys.stderr = saved
            _restore_builtins()
            return self.failure(header, exc, out, time.perf_counter() - started)
        finally:
            sys.stdout, sys.stderr = saved
            _restore_builtins()  # before the harness encodes anything
        elapsed = time.perf_counter() - started
        reply = {"ok": True, "output": out.text(), "duration_s": elapsed}
        if modified:
            reply["modified"] = True
        try:
            return protocol.encode_frame(reply, result)
        except protocol.ProtocolError as exc:
            return protocol.encode_frame(
                {"ok": False, "kind": "bad_return", "type": "TypeError",
                 "message": str(exc), "output": out.text(), "duration_s": elapsed},
                None)

    def failure(self, header: dict[str, Any], exc: BaseException, out: CappedWriter,
                elapsed: float) -> protocol.Frame:
        where = "call"
        if isinstance(exc, _ImportFailed):
            where, exc = "import", exc.inner
        if isinstance(exc, _Missing):
            kind, message = "missing", f"does not define {exc.args[0]!r}"
        else:
            kind, message = "exception", _exception_message(exc)
        mro = [c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"]
        reply = {"ok": False, "kind": kind, "where": where, "type": type(exc).__name__,
                 "mro": mro, "message": message, "traceback": self.learner_frames(exc),
                 "output": out.text(), "duration_s": elapsed}
        if isinstance(exc, SyntaxError):
            reply["lineno"] = exc.lineno
        return protocol.encode_frame(reply, None)

    def learner_frames(self, exc: BaseException) -> list[str]:
        files = self.learner_files()
        lines = []
        for frame in traceback.extract_tb(exc.__traceback__):
            if str(Path(frame.filename).resolve()) in files:
                lines.append(f"{Path(frame.filename).name}, line {frame.lineno}, in {frame.name}:"
                             f" {(frame.line or '').strip()}")
        if isinstance(exc, SyntaxError) and exc.filename and \
                str(Path(exc.filename).resolve()) in files:
            lines.append(f"{Path(exc.filename).name}, line {exc.lineno}: "
                         f"{(exc.text or '').strip()}")
        return lines[-20:]

    def serve(self) -> None:
        protocol.write_frame(self.response_fd, protocol.encode_message({"ready": True}, None))
        while True:
            try:
                header, blobs = protocol.read_frame(self.request_fd)
            except protocol.PeerClosed:
                return
            frame = self.handle(header, blobs)
            protocol.write_frame(self.response_fd, frame)


class _Handed(Mapping):
    """The shared inputs handed to this worker so far, key -> a fresh private mapping of each:
    a key not held yet is looked for among what the grader sent on the handout socket (sent
    before the request that names it), read without waiting."""

    def __init__(self, fd: int) -> None:
        self.sock = socket.socket(fileno=fd)
        self.held: dict[str, Callable[[], np.ndarray]] = {}

    def _receive(self) -> None:
        room = socket.CMSG_SPACE(MAX_HANDED * 4)
        while True:
            try:  # (``socket.recv_fds`` drops its flags before Python 3.13: recvmsg itself)
                msg, ancillary, _, _ = self.sock.recvmsg(
                    65536, room, socket.MSG_DONTWAIT | socket.MSG_CMSG_CLOEXEC)
                keys = json.loads(msg) if msg else None
            except (OSError, ValueError):  # nothing more to read (or the learner broke it)
                return
            fds = array.array("i")
            for level, kind, data in ancillary:
                if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                    fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
            if not isinstance(keys, list):
                return
            for key, fd in zip(keys, fds):
                self.held[str(key)] = functools.partial(_map_shared, fd)

    def __getitem__(self, key: str) -> Callable[[], np.ndarray]:
        if key not in self.held:
            self._receive()
        return self.held[key]

    def __contains__(self, key: object) -> bool:
        if key not in self.held:
            self._receive()
        return key in self.held

    def __iter__(self) -> Iterator[str]:
        return iter(self.held)

    def __len__(self) -> int:
        return len(self.held)


MAX_HANDED = 64  # descriptors one handout message carries (``shared_inputs.MAX_PER_MESSAGE``)


def _map_shared(fd: int) -> np.ndarray:
    """A fresh private, writable mapping of a sealed shared input: its pages stay shared until
    the learner writes one, which then becomes this worker's own copy (the file is sealed
    against writes: no worker can change what the next one maps)."""
    size = os.fstat(fd).st_size
    memory = mmap.mmap(fd, size, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
    return protocol.array_from_npy(memory)


class _Missing(Exception):
    pass


class NotText(Exception):
    """The learner's file is not source text (``source_text``): it is never imported. (Its
    name is ``NOT_TEXT``, the type its reply carries.)"""


class _ImportFailed(Exception):
    def __init__(self, inner: BaseException) -> None:
        super().__init__(inner)
        self.inner = inner


def _state(value: Any, depth: int = 0) -> Any:
    """What the data in a call's arguments is (arrays and tensors by a checksum of their
    bytes), to tell whether the call changed it; objects other than plain data are left out
    (a learner's object may change: that is what its methods are for)."""
    if depth > 8:
        return None
    if isinstance(value, np.ndarray):
        if value.dtype.hasobject or not value.flags.writeable:  # (sealed shared inputs)
            return None
        return ("a", value.dtype.str, value.shape,
                zlib.crc32(memoryview(np.ascontiguousarray(value)).cast("B")))
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        try:
            return _state(value.detach().cpu().numpy(), depth)
        except Exception:  # noqa: BLE001 - a tensor numpy cannot hold: left out
            return None
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_state(v, depth + 1) for v in value))
    if isinstance(value, dict):
        return ("d", tuple((repr(k), _state(v, depth + 1)) for k, v in value.items()))
    if value is None or isinstance(value, (bool, int, float, str, complex, np.generic)):
        return value
    return None


def _exception_message(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):
        return f"the learner's code called sys.exit({exc.code!r})"
    if isinstance(exc, SyntaxError):
        return f"{exc.msg} (line {exc.lineno})"
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - a hostile __str__
        text = "<unprintable message>"
    return text[:2000]


_BUILTINS = dict(vars(builtins))


def _restore_builtins() -> None:
    """Undo a learner's changes to ``builtins``: they must not break the harness itself."""
    names = vars(builtins)
    for name in [n for n in names if n not in _BUILTINS]:
        del names[name]
    names.update(_BUILTINS)


def configure_threads() -> None:
    """One thread everywhere: a deterministic, fork-safe and fair worker."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    submission_dir, request_fd, response_fd = Path(argv[0]), int(argv[1]), int(argv[2])
    configure_threads()
    sys.path.insert(0, str(submission_dir))
    Worker(submission_dir, request_fd, response_fd).serve()


if __name__ == "__main__":
    main()
