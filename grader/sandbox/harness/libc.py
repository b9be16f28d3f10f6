"""The C library calls the worker's confinement makes (Linux), and their errors.

``libc`` is the process's one handle on the C library (errno kept for ``ctypes.get_errno``);
the harness and the grader's side (``isolation.py``, ``files.py``, ``bulk/serve.py``) all
call through it."""

from __future__ import annotations

import ctypes
import os
import signal

_PR_SET_PDEATHSIG = 1
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long  # a raw system call's result (Landlock's calls)


def check(result: int, what: str) -> None:
    """Raise ``OSError`` naming ``what`` unless a C call's ``result`` is 0."""
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what} failed: {os.strerror(err)}")


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Get ``signum`` when the parent (the thread that forked this process) dies."""
    check(libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0), "PR_SET_PDEATHSIG")
