"""The grader's side of the fork server (``harness/zygote.py``): warm workers in milliseconds.

One server per grading process and per preload (``numpy``, or ``torch`` for the exercises that
need it), started on first use and stopped with the process. A server that cannot start is
not an error: workers are then started with ``subprocess`` as before. ``GRADER_FORKSERVER=0``
turns the fork server off.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from . import isolation
from .harness import confine
from .harness.confinement import Confinement


class ForkServer:
    START_TIMEOUT_S = 120.0

    def __init__(self, preload: str) -> None:
        self.preload = preload
        self.home = Path(tempfile.mkdtemp(prefix="grade-zygote-"))
        shutil.copytree(isolation.HARNESS_SRC, self.home / isolation.HARNESS_NAME,
                        ignore=shutil.ignore_patterns("__pycache__"))
        ours, theirs = socket.socketpair()
        bootstrap = (f"import sys; sys.path.insert(0, {str(self.home)!r}); "
                     f"from {isolation.HARNESS_NAME}.zygote import main; main()")
        env = {k: os.environ[k] for k in isolation.PASSTHROUGH_ENV if k in os.environ}
        env.update({"HOME": str(self.home), "LANG": "C.UTF-8", "MALLOC_ARENA_MAX": "2",
                    "PYTHONDONTWRITEBYTECODE": "1"})
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-u", "-c", bootstrap, str(theirs.fileno()), preload],
                pass_fds=(theirs.fileno(),), env=env, cwd=self.home, stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=confine.die_with_parent)
        finally:
            theirs.close()
        isolation.register_child(self.proc.pid, alive=True)
        self.sock = ours
        self._buffer = b""
        self.owner = os.getpid()
        self.ready = False

    def wait_ready(self) -> None:
        """Wait for ``{"ready": true}`` (numpy, and torch, imported); raise OSError if it
        never comes."""
        if self.ready:
            return
        try:
            self._answer(self.START_TIMEOUT_S)
        except (OSError, ValueError):
            self.stop()
            raise OSError("the fork server did not start") from None
        finally:
            shutil.rmtree(self.home, ignore_errors=True)  # nothing is read from it any more
        self.ready = True

    def _answer(self, timeout: float) -> dict[str, Any]:
        self.sock.settimeout(timeout)
        while b"\n" not in self._buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("the fork server ended")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def spawn(self, *, env: dict[str, str], confinement: Confinement, submission: Path,
              fds: list[int], handout: int | None = None,
              timeout: float = 60.0) -> tuple[int, bool]:
        """Fork a worker: ``(pid, init)``, ``init`` when it is process 1 of its own PID
        namespace (no waiter); ``fds`` are its request-read, response-write, output-write
        ends; ``handout``: its end of the socket it is handed shared inputs on
        (``shared_inputs.Handout``), or None. No shared input travels with a spawn;
        ``confinement`` travels as JSON (``Confinement.to_dict``)."""
        msg = json.dumps({"op": "spawn", "env": env, "spec": confinement.to_dict(),
                          "submission": str(submission),
                          "handout": handout is not None}).encode()
        fds = [*fds, *(() if handout is None else (handout,))]
        socket.send_fds(self.sock, [msg], fds)
        answer = self._answer(timeout)
        return int(answer["pid"]), bool(answer.get("init"))

    def wait(self, pid: int, timeout: float = 5.0) -> int | None:
        """The worker's exit status (``-signal`` when killed), or None if it has not ended."""
        self.sock.sendall(json.dumps({"op": "wait", "pid": pid, "timeout": timeout}).encode())
        return self._answer(timeout + 30)["status"]

    def stop(self) -> None:
        if self.owner == os.getpid():
            try:
                self.sock.close()
                self.proc.kill()
                self.proc.wait()
            except OSError:
                pass
            isolation.register_child(self.proc.pid, alive=False)
            shutil.rmtree(self.home, ignore_errors=True)


class ForkedWorker:
    """A worker forked by a server: the parts of ``subprocess.Popen`` that grading uses."""

    def __init__(self, server: ForkServer, pid: int, stdout: Any, init: bool = False) -> None:
        self.server, self.pid, self.stdout = server, pid, stdout
        self.init = init  # process 1 of its own PID namespace: it runs the learner's code
        self.returncode: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            status = self.server.wait(self.pid, 30.0 if timeout is None else timeout)
            if status is None:  # still running: it was killed already, so this is brief
                os.kill(self.pid, signal.SIGKILL)
                status = self.server.wait(self.pid, 30.0)
            self.returncode = status if status is not None else -signal.SIGKILL
        return self.returncode


_SERVERS: dict[tuple[int, str], ForkServer | None] = {}


def start(preload: str) -> None:
    """Start this process's server for ``preload`` without waiting for it (it imports numpy
    or torch while the grader imports its own modules); ``get`` waits."""
    if os.environ.get("GRADER_FORKSERVER", "1") == "0":
        return
    key = (os.getpid(), preload)  # a forked process (a bulk pool worker) starts its own
    if key not in _SERVERS:
        try:
            _SERVERS[key] = ForkServer(preload)
        except OSError:
            _SERVERS[key] = None


def get(preload: str) -> ForkServer | None:
    """This process's fork server for ``preload``, started on first use; None when off."""
    start(preload)
    key = (os.getpid(), preload)
    server = _SERVERS.get(key)  # absent when the fork server is turned off
    if server is not None:
        try:
            server.wait_ready()
        except OSError:
            server = _SERVERS[key] = None
    return server


def drop(server: ForkServer) -> None:
    """Forget a server that stopped answering (the next worker starts a new one)."""
    server.stop()
    for key, value in list(_SERVERS.items()):
        if value is server:
            del _SERVERS[key]


@atexit.register
def _stop_all() -> None:
    for server in _SERVERS.values():
        if server is not None:
            server.stop()
