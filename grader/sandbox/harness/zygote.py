"""The fork server: a warm process that forks learner workers on request.

It imports numpy (and torch, when started with ``torch``) once, with one thread, and never
runs a torch operation, so that a fork is safe and costs milliseconds instead of an
interpreter start and a torch import. It runs no learner code itself: each child confines
itself (``confine.py``) before it serves any request, exactly as a worker started with
``subprocess`` does.

Control messages are JSON on a Unix socket; file descriptors travel with ``SCM_RIGHTS``:
- ``{"op": "spawn", "env": {...}, "spec": {...}, "submission": DIR, "shared": [key, ...]}``
  with the worker's request-read, response-write and output-write fds, then one sealed
  shared input's fd per key; the answer is ``{"pid": N}``;
- ``{"op": "wait", "pid": N, "timeout": S}``: ``{"status": code}`` once the child has ended
  (``-signal`` when killed by one, like ``subprocess``), ``{"status": null}`` when it has not.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from . import confine

_ENDED: dict[int, int] = {}
MAX_SHARED = 64  # shared inputs a spawn may carry (``shared_inputs.MAX_INPUTS``)


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


def _child(req: dict[str, Any], fds: list[int], control: socket.socket) -> None:
    """In the forked child: become the worker, or exit 70 saying why on fd 2."""
    try:
        control.close()
        os.setsid()
        request_fd, response_fd, output_fd = fds[:3]
        shared = dict(zip(req.get("shared", []), fds[3:]))
        os.dup2(output_fd, 1)
        os.dup2(output_fd, 2)
        os.close(output_fd)
        submission = Path(req["submission"])
        os.chdir(submission)
        os.environ.clear()
        os.environ.update(req["env"])
        confine.confine(req["spec"])
        from .worker import Worker

        sys.path.insert(0, str(submission))
        Worker(submission, request_fd, response_fd, shared).serve()
        os._exit(0)
    except BaseException as exc:  # noqa: BLE001 - report and never return into the server
        try:
            os.write(2, f"worker start failed: {type(exc).__name__}: {exc}\n".encode())
        finally:
            os._exit(70)


def serve(control: socket.socket) -> None:
    while True:
        try:
            msg, fds, _, _ = socket.recv_fds(control, 1 << 20, 3 + MAX_SHARED)
        except OSError:
            return
        if not msg:
            return
        req = json.loads(msg)
        _reap()
        if req["op"] == "spawn":
            pid = os.fork()
            if pid == 0:
                _child(req, fds, control)
            for fd in fds:
                os.close(fd)
            control.sendall(json.dumps({"pid": pid}).encode() + b"\n")
        elif req["op"] == "wait":
            deadline = time.monotonic() + float(req.get("timeout", 0))
            pid = int(req["pid"])
            while pid not in _ENDED and time.monotonic() < deadline:
                time.sleep(0.002)
                _reap()
            control.sendall(json.dumps({"status": _ENDED.pop(pid, None)}).encode() + b"\n")


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

    control = socket.socket(fileno=control_fd)
    control.sendall(b'{"ready": true}\n')  # everything is imported: its folder may go
    serve(control)


if __name__ == "__main__":
    main()
