"""The fork server: a warm process that forks learner workers on request.

It imports numpy (and torch, when started with ``torch``) once, with one thread, and never
runs a torch operation, so that a fork is safe and costs milliseconds instead of an
interpreter start and a torch import. It runs no learner code itself: each child confines
itself (``confine.py``) before it serves any request, exactly as a worker started with
``subprocess`` does.

As root, the server does once what every worker would otherwise do (the kernel's costliest
steps of a worker's start and end): it leaves the host's network for a namespace of its own,
with no interface up, which its workers share (none can bring an interface up, nor open a Unix
socket, once confined); and it forks each worker straight into a new PID namespace, as its
process 1, so no waiter process is forked inside the worker (``namespaces.become_init``).

Control messages are JSON on a Unix socket; file descriptors travel with ``SCM_RIGHTS``:
- ``{"op": "spawn", "env": {...}, "spec": {...}, "submission": DIR, "handout": B}`` with the
  worker's request-read, response-write and output-write fds (``spec``: its ``Confinement``,
  ``to_dict``; one whose keys are not exactly the fields ends the server, and the grader
  starts its workers with ``subprocess`` from then on), then, when ``handout`` is true,
  its end of the socket the grader hands it sealed shared inputs on, each with the request
  that names it (``shared_inputs.Handout``: never at the spawn); the answer is ``{"pid": N,
  "init": B}``, ``init`` true when the worker is process 1 of its own PID namespace (its
  learner code runs in that process);
- ``{"op": "wait", "pid": N, "timeout": S}``: ``{"status": code}`` once the child has ended
  (``-signal`` when killed by one, like ``subprocess``), ``{"status": null}`` when it has not.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys
import time
from pathlib import Path
from typing import Any

from . import confine, namespaces
from .confinement import Confinement
from .libc import die_with_parent

_ENDED: dict[int, int] = {}
SPAWN_FDS = 4  # descriptors a spawn carries: three pipes' ends and the handout socket


class _Own:
    """The namespaces this server prepared for its workers (``prepare``), as root only."""

    netns = False  # it left the host's network: its workers share its empty namespace
    pidns_fd = -1  # its own PID namespace, returned to after forking a worker into a new one
    alive = (-1, -1)  # a pipe only it holds the write end of: EOF once it has died

    @classmethod
    def prepare(cls) -> None:
        if os.geteuid() != 0:
            return
        try:
            namespaces.unshare(namespaces.CLONE_NEWNET)
            cls.netns = True
        except OSError:
            pass
        try:
            fd = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:  # both steps of every spawn, tried once here
            namespaces.unshare(namespaces.CLONE_NEWPID)
            namespaces.setns(fd, namespaces.CLONE_NEWPID)
        except OSError:
            os.close(fd)
            return
        cls.pidns_fd, cls.alive = fd, os.pipe()

    @classmethod
    def fork_as_init(cls, confinement: Confinement) -> bool:
        """Make the next child process 1 of a new PID namespace, when ``confinement`` asks for
        one and it is entered as root; ``forked()`` undoes it for the children after."""
        if cls.pidns_fd < 0 or not confinement.pid_namespace or \
                confinement.namespaces != "root":
            return False
        try:
            namespaces.unshare(namespaces.CLONE_NEWPID)
        except OSError:
            return False
        return True

    @classmethod
    def forked(cls) -> None:
        namespaces.setns(cls.pidns_fd, namespaces.CLONE_NEWPID)

    @classmethod
    def in_child(cls, is_init: bool) -> None:
        """In a forked child: process 1 dies with this server, like a waiter would; exit 70
        if the server died before that took effect. None of the server's descriptors stays
        open in the worker (the learner's code runs in this process, without an exec)."""
        read, write = cls.alive
        if write >= 0:
            os.close(write)
        if cls.pidns_fd >= 0:
            os.close(cls.pidns_fd)
        if is_init:
            die_with_parent()
            if select.select([read], [], [], 0)[0]:  # EOF: the server is gone
                os._exit(70)
        if read >= 0:
            os.close(read)


def _reap() -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        _ENDED[pid] = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else \
            os.WEXITSTATUS(status)


def _await(pid: int, deadline: float) -> None:
    """Reap children until ``pid`` has ended or ``deadline`` has passed."""
    try:
        ended = os.pidfd_open(pid)  # readable once it has ended: no polling
    except OSError:  # reaped already, or a kernel without pidfds
        ended = -1
    try:
        while pid not in _ENDED and (left := deadline - time.monotonic()) > 0:
            if ended >= 0 and select.select([ended], [], [], left)[0]:
                _reap()
                if pid not in _ENDED:  # ended, but not a child of ours: poll from now on
                    os.close(ended)
                    ended = -1
            else:
                time.sleep(0.002)
                _reap()
    finally:
        if ended >= 0:
            os.close(ended)


def _child(req: dict[str, Any], confinement: Confinement, fds: list[int],
           control: socket.socket, is_init: bool) -> None:
    """In the forked child: become the worker, or exit 70 saying why on fd 2."""
    try:
        _Own.in_child(is_init)
        control.close()
        os.setsid()
        request_fd, response_fd, output_fd = fds[:3]
        handout = fds[3] if req.get("handout") and len(fds) > 3 else None
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        submission = Path(req["submission"])
        os.chdir(submission)
        os.environ.clear()
        os.environ.update(req["env"])
        confine.confine(confinement, in_netns=_Own.netns, is_init=is_init)
        from .worker import Worker

        sys.path.insert(0, str(submission))
        Worker(submission, request_fd, response_fd, handout).serve()
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - report and never return into the server
        try:
            os.write(2, f"worker start failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(70)


def serve(control: socket.socket) -> None:
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 1 << 20, SPAWN_FDS)
        except OSError:
            return
        if not msg:
            return
        req = json.loads(msg)
        _reap()
        if req["op"] == "spawn":
            confinement = Confinement.from_dict(req["spec"])
            is_init = _Own.fork_as_init(confinement)
            try:
                pid = os.fork()
                if pid == 0:
                    _child(req, confinement, fds, control, is_init)
            finally:
                if is_init:
                    _Own.forked()
            for fd in fds:
                os.close(fd)
            control.sendall(json.dumps({"pid": pid, "init": is_init}).encode() + b"\n")
        elif req["op"] == "wait":
            deadline = time.monotonic() + float(req.get("timeout", 0))
            pid = int(req["pid"])
            _await(pid, deadline)
            control.sendall(json.dumps({"status": _ENDED.pop(pid, None)}).encode() + b"\n")


# A trusted module the server runs once through the worker's own request handling
# (``_warm_up``): an import, arrays and a tuple returned, an exception, a missing name.
_WARM_MODULE = "_grader_warm_up"
_WARM_SOURCE = """import numpy as np


def array(n):
    return np.arange(4.0 * n).reshape(n, 4) * 0.5


def pair(n):
    return np.eye(n, dtype=bool), (float(n), n, "n")


def fails(n):
    raise ValueError(f"warm up {n}")
"""


def _warm_up() -> None:
    """Run the worker's own paths once before any fork, on a trusted module (load, values
    returned and encoded, an exception and its traceback, a missing name), so that what Python
    and numpy build on first use is built here once and shared by every forked worker instead
    of written, page by page, in each. Leaves nothing behind: the module is unloaded, its
    folder removed, the pipe closed."""
    import gc
    import shutil
    import tempfile

    from . import protocol, worker

    folder = Path(tempfile.mkdtemp(prefix="grade-warm-up-"))
    r, w = os.pipe()
    try:
        (folder / f"{_WARM_MODULE}.py").write_text(_WARM_SOURCE)
        serving = worker.Worker(folder, r, w)
        requests = [("load", "", ()), ("call", "array", (3,)), ("call", "pair", (2,)),
                    ("call", "fails", (1,)), ("call", "absent", ())]
        for op, func, args in requests:
            header = {"op": op, "module": _WARM_MODULE, "func": func, "handle": None}
            protocol.write_frame(w, protocol.encode_frame(header, [list(args), {}]))
            request, blobs = protocol.read_frame(r)
            protocol.write_frame(w, serving.handle(request, blobs))
            protocol.read_frame(r)
    finally:
        os.close(r)
        os.close(w)
        sys.modules.pop(_WARM_MODULE, None)
        shutil.rmtree(folder, ignore_errors=True)
        gc.collect()


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    control_fd, preload = int(argv[0]), argv[1]
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = "1"
    import numpy  # noqa: F401 - imported once here, shared by every forked worker

    if preload == "torch":
        import torch

        torch.set_num_threads(1)
    from . import protocol, recipes, syscall_filter, worker  # noqa: F401 - warm the harness

    if syscall_filter.available() is None:
        syscall_filter.program()  # compiled once here; each forked worker only loads it
    try:
        _warm_up()
    except Exception as exc:  # noqa: BLE001 - workers are only slower without it
        os.write(2, f"fork server: warm-up skipped: {type(exc).__name__}: {exc}\n".encode())
    _Own.prepare()

    control = socket.socket(fileno=control_fd)
    control.sendall(b'{"ready": true}\n')  # everything is imported: its folder may go
    serve(control)


if __name__ == "__main__":
    main()
