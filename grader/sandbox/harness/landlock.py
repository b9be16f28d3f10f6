"""Landlock (Linux >= 5.13): confine a process's filesystem access to a few trees.

Used from the worker's ``preexec_fn`` (after fork, before exec): ``Ruleset.allow(...)`` opens
each allowed tree, ``restrict_self()`` applies the rules for good (the exec'd program and all
its descendants inherit them). With ABI >= 6 the ruleset also scopes signals and abstract Unix
sockets to the sandbox, so the learner cannot signal the grader.
"""

from __future__ import annotations

import ctypes
import os
import platform
from pathlib import Path

from .libc import libc

_SYSCALLS = {"create_ruleset": 444, "add_rule": 445, "restrict_self": 446}  # x86_64, arm64
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

# access rights (filesystem), by ABI version
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR, MAKE_REG = 1 << 4, 1 << 5, 1 << 6, 1 << 7, 1 << 8
MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
READ = EXECUTE | READ_FILE | READ_DIR
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def abi_version() -> int:
    """The kernel's Landlock ABI version, or 0 when Landlock is unavailable."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "aarch64"):
        return 0
    version = libc.syscall(_SYSCALLS["create_ruleset"], None, ctypes.c_size_t(0),
                           ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(0, int(version))


def all_fs(abi: int) -> int:
    access = (1 << 13) - 1
    if abi >= 2:
        access |= REFER
    if abi >= 3:
        access |= TRUNCATE
    if abi >= 5:
        access |= IOCTL_DEV
    return access


class Ruleset:
    def __init__(self, abi: int) -> None:
        self.abi = abi
        self.handled = all_fs(abi)
        attr = _RulesetAttr(self.handled, 0,
                            (SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL) if abi >= 6 else 0)
        size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else 8
        fd = libc.syscall(_SYSCALLS["create_ruleset"], ctypes.byref(attr), ctypes.c_size_t(size),
                          ctypes.c_uint32(0))
        if fd < 0:
            raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
        self.fd = int(fd)

    def allow(self, path: str | Path, access: int) -> None:
        """Allow ``access`` under ``path`` (a missing path is skipped)."""
        try:
            target = os.open(str(path), os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return
        try:
            if not os.path.isdir(path):  # directory-only rights do not apply to files
                access &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
            rule = _PathBeneath(access & self.handled, target)
            if libc.syscall(_SYSCALLS["add_rule"], ctypes.c_int(self.fd),
                            ctypes.c_int(_RULE_PATH_BENEATH), ctypes.byref(rule),
                            ctypes.c_uint32(0)) < 0:
                raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
        finally:
            os.close(target)

    def restrict_self(self) -> None:
        """Apply the ruleset to this process (and everything it will exec or fork)."""
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(_SYSCALLS["restrict_self"], ctypes.c_int(self.fd),
                        ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
        os.close(self.fd)
