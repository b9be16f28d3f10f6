"""A seccomp filter for the worker (libseccomp, through ``pyseccomp``): the system calls that
reach past the worker's own process and files fail with ``EPERM``.

Modelled on Docker's default profile, as a deny list (everything else is allowed, so numpy,
torch and CUDA work unchanged). Landlock confines which files the worker may open, but not
what it may do to a file's metadata, so the metadata calls are denied outright; the rest are
also covered by having no capabilities, and are denied here as a second layer:

- file metadata: ``chmod``/``chown``/``*xattr*``/``utime*`` families, file-flag ioctls
  (``chattr``), ``mknod*``;
- mounts and namespaces: ``mount`` and the new mount API, ``chroot``, ``pivot_root``,
  ``unshare``, ``setns``, ``clone`` with a namespace flag (``clone3`` answers ``ENOSYS``, so
  that the C library falls back to ``clone``, whose flags can be checked);
- other processes and the kernel: ``ptrace``, ``process_vm_*``, ``pidfd_getfd``, ``kcmp``,
  ``bpf``, ``perf_event_open``, ``userfaultfd``, ``io_uring_*`` (it would bypass this filter),
  keyrings, ``syslog``, modules, ``kexec``, ``reboot``, swap, clocks, ``quotactl``,
  file handles, ``sethostname``/``setdomainname``;
- scheduling: ``setpriority`` below nice 0, ``sched_setscheduler`` to a real-time policy,
  ``sched_setattr``;
- sockets of the families that reach outside the network namespace: ``AF_UNIX`` (sockets by
  path), ``AF_NETLINK`` (configuring interfaces) and ``AF_PACKET``.

``available()`` says whether a filter can be built here; ``install()`` loads it for good (the
process and all it forks or execs keep it).
"""

from __future__ import annotations

import ctypes
import errno
import tempfile
from functools import lru_cache
from typing import Any

from .libc import check, libc

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

DENIED = (
    "chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat",
    "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr", "fremovexattr",
    "utime", "utimes", "utimensat", "futimesat", "mknod", "mknodat",
    "mount", "umount2", "chroot", "pivot_root", "unshare", "setns",
    "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "bpf", "perf_event_open", "userfaultfd",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "keyctl", "add_key", "request_key", "syslog",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot",
    "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
    "quotactl", "name_to_handle_at", "open_by_handle_at", "sethostname", "setdomainname",
    "sched_setattr",
)
# Newer than libseccomp 2.5 knows by name; the same number on every architecture since 5.x.
DENIED_NUMBERS = {"fchmodat2": 452, "setxattrat": 463, "removexattrat": 466,
                  "open_tree_attr": 467}
# CLONE_NEWNS, _NEWCGROUP, _NEWUTS, _NEWIPC, _NEWUSER, _NEWPID, _NEWNET
NAMESPACE_FLAGS = (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000,
                   0x40000000)
SOCKET_FAMILIES = {"AF_UNIX": 1, "AF_NETLINK": 16, "AF_PACKET": 17}
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
FILE_FLAG_IOCTLS = (FS_IOC_SETFLAGS, 0x40046602, 0x401C5820)  # and FS_IOC32_SETFLAGS, FSSETXATTR
REALTIME_POLICIES = (1, 2, 6)  # SCHED_FIFO, SCHED_RR, SCHED_DEADLINE
_LOW32 = 0xFFFFFFFF


_SONAMES = {"seccomp": "libseccomp.so.2", "c": "libc.so.6"}


@lru_cache(maxsize=1)
def _library() -> tuple[Any, str]:
    """``pyseccomp`` (imported on first use), or None and why not.

    pyseccomp looks its libraries up with ``ctypes.util.find_library``, which runs
    ``ldconfig -p`` (~16 ms at every ``grade``): the usual sonames are tried first."""
    import ctypes.util

    real = ctypes.util.find_library

    def find(name: str) -> str | None:
        try:
            ctypes.CDLL(_SONAMES[name])
            return _SONAMES[name]
        except (KeyError, OSError):
            return real(name)

    ctypes.util.find_library = find
    try:
        import pyseccomp
    except (ImportError, RuntimeError, OSError) as exc:  # no package, or no libseccomp.so
        return None, f"{type(exc).__name__}: {exc}"
    finally:
        ctypes.util.find_library = real
    return pyseccomp, ""


def available() -> str | None:
    """None when a filter can be built on this machine, else why not."""
    if _library()[0] is None:
        return f"libseccomp cannot be loaded ({_library()[1]})"
    try:
        prepare()
    except (OSError, RuntimeError, ValueError) as exc:
        return f"the filter cannot be built: {exc}"
    return None


@lru_cache(maxsize=1)
def prepare() -> Any:
    """The filter as a ``pyseccomp.SyscallFilter``, built once per process (a fork server
    builds and compiles it before forking; each worker only loads it)."""
    sc = _library()[0]
    if sc is None:
        raise OSError(errno.ENOSYS, f"seccomp is not available: {_library()[1]}")
    deny = sc.ERRNO(errno.EPERM)
    f = sc.SyscallFilter(sc.ALLOW)
    for name in DENIED:
        try:
            f.add_rule(deny, name)
        except (OSError, ValueError, RuntimeError):
            pass  # a call this architecture does not have (e.g. chmod on arm64)
    for number in DENIED_NUMBERS.values():
        f.add_rule(deny, number)
    f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    for flag in NAMESPACE_FLAGS:
        f.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, flag, flag))
    for family in SOCKET_FAMILIES.values():
        f.add_rule(deny, "socket", sc.Arg(0, sc.MASKED_EQ, _LOW32, family))
    for request in FILE_FLAG_IOCTLS:
        f.add_rule(deny, "ioctl", sc.Arg(1, sc.MASKED_EQ, _LOW32, request))
    f.add_rule(deny, "setpriority", sc.Arg(2, sc.MASKED_EQ, 0x80000000, 0x80000000))
    for policy in REALTIME_POLICIES:
        f.add_rule(deny, "sched_setscheduler", sc.Arg(1, sc.MASKED_EQ, _LOW32, policy))
    return f


@lru_cache(maxsize=1)
def program() -> bytes:
    """The filter compiled to classic BPF by libseccomp, once per process."""
    with tempfile.TemporaryFile() as out:
        prepare().export_bpf(out)
        out.seek(0)
        return out.read()


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install() -> None:
    """Load the filter into this process for good (and set ``no_new_privs``): the compiled
    program, loaded with one ``prctl`` (libseccomp would compile it again, ~1 ms)."""
    code = program()
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    check(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
          "loading the seccomp filter")
