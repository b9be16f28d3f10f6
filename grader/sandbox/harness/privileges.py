"""Give up every capability for good: the worker owns nothing outside itself (Linux).

``drop_all()`` runs in a fresh worker after its namespaces are set up and before any learner
code: it locks the secure bits (uid 0 regains nothing at ``execve``), empties the bounding
and ambient sets, then the effective, permitted and inheritable sets, and sets
``no_new_privs``. A worker that runs as uid 0 (when no other uid can run this Python) is then
an ordinary user: it cannot ``mknod``, change another user's files' metadata through a
capability, raise its priority, or configure a network.
"""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from .libc import check, libc

_PR_CAPBSET_DROP, _PR_SET_SECUREBITS, _PR_SET_NO_NEW_PRIVS = 24, 28, 38
_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
# SECBIT_NOROOT, _NO_SETUID_FIXUP, _KEEP_CAPS_LOCKED (not KEEP_CAPS), _NO_CAP_AMBIENT_RAISE,
# each with its lock bit
_SECUREBITS = 0x01 | 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80
_CAP_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _last_cap() -> int:
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 63


def drop_all(uid: int | None = None) -> None:
    """Drop every capability from every set, for this process and what it will exec; with
    ``uid``, become that user (and group, with no supplementary groups) on the way."""
    if _has_setpcap():
        check(libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS, 0, 0, 0), "PR_SET_SECUREBITS")
        for cap in range(_last_cap() + 1):
            if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 and ctypes.get_errno() != 22:
                check(-1, f"PR_CAPBSET_DROP({cap})")
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)  # EINVAL before 4.3
    header, data = _CapHeader(_CAP_VERSION_3, 0), (_CapData * 2)()
    check(libc.capset(ctypes.byref(header), data), "capset")
    check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")


def _has_setpcap() -> bool:
    return bool(held().get("CapEff", 0) & (1 << 8))


def held(status: str | None = None) -> dict[str, int]:
    """The capability sets of this process (or of a ``/proc/<pid>/status`` text), by name:
    ``CapInh``, ``CapPrm``, ``CapEff``, ``CapBnd``, ``CapAmb`` as bit masks, and
    ``NoNewPrivs``, ``Seccomp`` as numbers."""
    text = Path("/proc/self/status").read_text() if status is None else status
    found = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.startswith("Cap"):
            found[key] = int(value.strip(), 16)
        elif key in ("NoNewPrivs", "Seccomp"):
            found[key] = int(value.strip())
    return found
