"""Confine the current process for good: the worker's side of ``grader/sandbox/isolation.py``.

``confine(spec)`` runs in a fresh worker before any learner code: between fork and exec for
a worker started with ``subprocess`` (``preexec_fn``), or right after the fork in a fork
server's child. ``spec`` is plain data made by ``isolation.Sandbox.spec()``; the layers it
names were probed to work on this machine.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
from pathlib import Path
from typing import Any

from . import landlock

_CLONE_NEWUSER, _CLONE_NEWNET = 0x10000000, 0x40000000
_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True)


def unshare(flags: int) -> None:
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        raise OSError(ctypes.get_errno(), "unshare failed")


def enter_netns(mode: str) -> None:
    """A network namespace of its own (no interfaces up): as root, or via a user namespace."""
    if mode == "root":
        unshare(_CLONE_NEWNET)
        return
    uid, gid = os.getuid(), os.getgid()
    unshare(_CLONE_NEWUSER | _CLONE_NEWNET)
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def die_with_parent(signum: int = signal.SIGKILL) -> None:
    """Get ``signum`` when the parent (the thread that forked this process) dies (Linux)."""
    _libc.prctl(_PR_SET_PDEATHSIG, signum, 0, 0, 0)


def confine(spec: dict[str, Any]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = int(spec["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["file_bytes"], spec["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (spec["open_files"], spec["open_files"]))
    if spec.get("address_space"):
        resource.setrlimit(resource.RLIMIT_AS, (spec["address_space"], spec["address_space"]))
    for path in spec.get("cgroups", []):
        Path(path, "tasks").write_text(str(os.getpid()))
    if spec.get("netns"):
        enter_netns(spec["netns"])
    ruleset = None
    abi = int(spec.get("landlock_abi", 0))
    if abi:
        ruleset = landlock.Ruleset(abi)
        for root in spec["readable"]:
            ruleset.allow(root, landlock.READ)
        # its own /proc entry only: not the grader's (environ, cmdline) nor any other.
        # CUDA's start writes there (error 304 without it); gVisor keeps /proc/self apart.
        own = landlock.READ
        if spec.get("devices"):
            own |= landlock.WRITE_FILE | landlock.TRUNCATE
        for entry in (f"/proc/{os.getpid()}", "/proc/self"):
            ruleset.allow(entry, own)
        ruleset.allow("/dev/null", landlock.READ | landlock.WRITE_FILE)
        ruleset.allow(spec["workdir"], landlock.all_fs(abi))
        for dev in spec.get("devices", []):
            ruleset.allow(dev, landlock.READ | landlock.WRITE_FILE | landlock.IOCTL_DEV)
    uid = spec.get("uid")
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (spec["pids"], spec["pids"]))
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    die_with_parent()  # after any change of credentials, which clears it
    if ruleset is not None:
        ruleset.restrict_self()
