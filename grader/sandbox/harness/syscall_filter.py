"""A seccomp filter for the worker (libseccomp, through ``pyseccomp``): an allow-list.

Only the system calls that Python, numpy, torch (CPU) and the harness make once the filter is
loaded are allowed (measured with ``strace -f`` around ``grade --submission solutions``, with
and without the fork server, plus what ordinary learner code does: threads, ``subprocess``,
files in the work folder, sleeping). Every other call fails, new kernels' calls included:

- a call named in ``REFUSED`` (metadata, mounts, namespaces, tracing, the kernel, other
  processes, watches and page-cache probes, System V IPC, ...) fails with ``EPERM``;
- any call not named at all fails with ``ENOSYS`` (the C library then falls back, e.g.
  ``clone3`` -> ``clone``, ``faccessat2``/``getxattrat``-style calls -> their older forms);
- calls allowed with some arguments only (clone flags, socket families, ioctl requests,
  fcntl commands, prctl options, nice and scheduling policies for itself, ``prlimit64``'s
  target, fadvise advice, preadv2 flags) fail otherwise with ``EPERM`` (``ENOTTY`` for an
  ioctl request, as from a device without it);
- a system call of another ABI (i386's int 0x80, x32) kills the caller with SIGSYS
  (libseccomp's bad-architecture action).

A CUDA worker (``Sandbox.confinement()`` names ``/dev/nvidia*`` devices) gets the GPU
profile: the NVIDIA drivers' ioctls and ``mlock`` on top (``GPU_IOCTL_MASKS``,
``GPU_ALLOWED``).

``GRADER_SECCOMP_LOG=1`` in the grader's environment builds a logging filter instead: what
would fail with ``ENOSYS``/``ENOTTY``/a refused argument is allowed and logged by the kernel
(audit type 1326, ``dmesg``), explicit refusals still fail and are logged too
(``bench/gpu_check.sh`` uses it to find what a GPU machine needs; never grade with it).

``available()`` says whether a filter can be built here; ``install()`` loads it for good (the
process and all it forks or execs keep it).
"""

from __future__ import annotations

import ctypes
import errno
import os
import tempfile
from functools import lru_cache
from typing import Any

from .libc import check, libc

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
_LOW32 = 0xFFFFFFFF
LOG_ENV = "GRADER_SECCOMP_LOG"

# -- allowed without conditions, by group ------------------------------------------------------
ALLOWED: dict[str, tuple[str, ...]] = {
    # the process's own memory (mbind/*_mempolicy: torch's NUMA-aware allocator; memfd_create:
    # an anonymous file, also libffi's trampolines; the shared inputs arrive as descriptors)
    "memory": ("brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "msync", "mbind",
               "get_mempolicy", "set_mempolicy", "memfd_create"),
    # files, as far as Landlock lets it open them (the work folder read-write); importing,
    # writing .pyc files (mkdir, rename), shutil.copyfile (sendfile, copy_file_range); the
    # xattr calls are the read-only ones (shutil.copystat)
    "files": ("read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev",
              "lseek", "open", "openat", "creat", "close", "close_range", "stat", "fstat",
              "lstat", "newfstatat", "statx", "statfs", "fstatfs", "access", "faccessat",
              "faccessat2", "getdents", "getdents64", "getcwd", "chdir", "fchdir", "mkdir",
              "mkdirat", "rmdir", "unlink", "unlinkat", "rename", "renameat", "renameat2",
              "link", "linkat", "symlink", "symlinkat", "readlink", "readlinkat", "truncate",
              "ftruncate", "fallocate", "fsync", "fdatasync", "umask", "dup",
              "dup2", "dup3", "pipe", "pipe2", "sendfile", "copy_file_range", "getxattr",
              "lgetxattr", "fgetxattr", "listxattr", "llistxattr", "flistxattr"),
    # waiting on descriptors (the harness's pipes, selectors, asyncio), timers as descriptors
    "events": ("select", "pselect6", "poll", "ppoll", "epoll_create", "epoll_create1",
               "epoll_ctl", "epoll_wait", "epoll_pwait", "epoll_pwait2", "eventfd",
               "eventfd2", "timerfd_create", "timerfd_settime", "timerfd_gettime", "signalfd",
               "signalfd4"),
    # clocks (mostly the vDSO), sleeping, interval timers (signal.setitimer)
    "time": ("clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep",
             "clock_nanosleep", "alarm", "getitimer", "setitimer", "timer_create",
             "timer_settime", "timer_gettime", "timer_getoverrun", "timer_delete", "times"),
    # threads (pthreads: clone below, futex, robust lists, rseq) and reading its scheduling
    "threads": ("futex", "set_robust_list", "rseq", "set_tid_address", "gettid",
                "sched_yield", "sched_getaffinity", "sched_getparam", "sched_getscheduler",
                "sched_get_priority_max", "sched_get_priority_min", "sched_rr_get_interval",
                "getcpu"),
    # signals (Landlock's scope and the PID namespace keep kill to the worker's own tree)
    "signals": ("rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending",
                "rt_sigsuspend", "rt_sigtimedwait", "sigaltstack", "kill", "tkill", "tgkill",
                "pause", "restart_syscall"),
    # its own process: start programs (the probe's sh and cat, subprocess), wait, exit, ask
    # who it is and what it may use; arch_prctl: TLS and AMX state (oneDNN)
    "processes": ("fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4",
                  "waitid", "getpid", "getppid", "getuid", "geteuid", "getgid", "getegid",
                  "getgroups", "getresuid", "getresgid", "getpgid", "getpgrp", "getsid",
                  "setsid", "setpgid", "uname", "sysinfo", "getrusage", "getrlimit",
                  "setrlimit", "getpriority", "capget", "arch_prctl", "getrandom"),
    # sockets once made (only AF_INET/AF_INET6 can be, in a network namespace with no
    # interface up: socket below)
    "sockets": ("bind", "listen", "accept", "accept4", "connect", "getsockname",
                "getpeername", "sendto", "recvfrom", "sendmsg", "recvmsg", "sendmmsg",
                "recvmmsg", "shutdown", "setsockopt", "getsockopt"),
}
# CUDA: page-locked host memory (bounded by RLIMIT_MEMLOCK)
GPU_ALLOWED = ("mlock", "mlock2", "munlock")

# -- refused outright with EPERM (everything unnamed gets ENOSYS) -------------------------------
REFUSED: dict[str, tuple[str, ...]] = {
    # file metadata: Landlock does not cover it, and a root worker could change root-owned
    # files outside (chattr through ioctl is refused below)
    "metadata": ("chmod", "fchmod", "fchmodat", "chown", "fchown", "lchown", "fchownat",
                 "setxattr", "lsetxattr", "fsetxattr", "removexattr", "lremovexattr",
                 "fremovexattr", "utime", "utimes", "utimensat", "futimesat", "mknod",
                 "mknodat"),
    # mounts, namespaces, identities (clone3: ENOSYS, below)
    "namespaces": ("mount", "umount2", "chroot", "pivot_root", "unshare", "setns", "open_tree",
                   "move_mount", "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr",
                   "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid",
                   "setfsuid", "setfsgid", "setgroups", "capset"),
    # other processes and the kernel
    "kernel": ("ptrace", "process_vm_readv", "process_vm_writev", "process_madvise",
               "process_mrelease", "pidfd_getfd", "kcmp", "bpf", "perf_event_open",
               "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register",
               "keyctl", "add_key", "request_key", "syslog", "init_module", "finit_module",
               "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
               "swapoff", "acct", "settimeofday", "clock_settime", "clock_adjtime",
               "adjtimex", "quotactl", "name_to_handle_at", "open_by_handle_at", "sethostname",
               "setdomainname", "modify_ldt", "iopl", "ioperm", "move_pages", "migrate_pages",
               "sync", "syncfs", "seccomp"),
    # watching others' files (inotify on the report folder lists classmates' ids) and
    # probing the page cache (mincore on a shared library reads what another submission
    # touched: a channel between workers)
    "watches": ("inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
                "fanotify_init", "fanotify_mark", "mincore"),
    # shared between workers of one IPC namespace: System V IPC, POSIX message queues,
    # flock on shared read-only files (fcntl's record locks: FCNTLS, below); socketpair: Unix
    # sockets, which can bind abstract names in the shared network namespace
    "shared": ("shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd", "msgrcv", "msgctl",
               "semget", "semop", "semtimedop", "semctl", "mq_open", "mq_unlink",
               "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr", "flock",
               "socketpair"),
    # scheduling: pinning itself to a CPU another worker is using would make its own call
    # wait for a CPU and win an unfair-timeout retry (and crowd that neighbour)
    "scheduling": ("sched_setaffinity", "sched_setattr", "sched_setparam"),
}
# Newer than libseccomp 2.5 knows by name (the same numbers on every architecture since 5.x)
REFUSED_NUMBERS = {"cachestat": 451, "fchmodat2": 452, "setxattrat": 463,
                   "removexattrat": 466, "open_tree_attr": 467, "file_getattr": 468,
                   "file_setattr": 469}

# -- allowed with some arguments only -------------------------------------------------------
# clone without a namespace flag: CLONE_NEWNS, _NEWCGROUP, _NEWUTS, _NEWIPC, _NEWUSER,
# _NEWPID, _NEWNET (clone3 passes its flags in memory, which seccomp cannot read: ENOSYS)
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | \
    0x20000000 | 0x40000000
# socket: AF_INET and AF_INET6 only (the namespace has no interface up); never AF_UNIX
# (sockets by path, abstract names), AF_NETLINK, AF_PACKET, AF_VSOCK (not in any namespace)...
SOCKET_FAMILIES = {"AF_INET": 2, "AF_INET6": 10}
# a CUDA worker's too: CUDA's start opens a Unix socket (seen on an H200: refused, it fails with
# "cudaGetDeviceCount ... Error 304"); Landlock (ABI >= 6) scopes its abstract names to the
# worker, and a socket file it may reach is one of its own work folder
GPU_SOCKET_FAMILIES = {"AF_UNIX": 1}
# ioctl: the terminal and descriptor requests Python makes (isatty, get_terminal_size,
# set_inheritable, setblocking, FIONREAD); nothing that writes a terminal (TIOCSTI)
IOCTLS = {"TCGETS": 0x5401, "TIOCGWINSZ": 0x5413, "FIONREAD": 0x541B, "FIONBIO": 0x5421,
          "FIONCLEX": 0x5450, "FIOCLEX": 0x5451}
# ioctl types refused with EPERM rather than ENOTTY: 'f' (FS_IOC_*FLAGS: chattr), 'v'
# (FS_IOC_*VERSION: an inode changed through a read-only descriptor), 'X' (FS_IOC_FSSETXATTR)
REFUSED_IOCTL_TYPES = (0x66, 0x76, 0x58)
FS_IOC_GETFLAGS, FS_IOC_SETFLAGS = 0x80086601, 0x40086602
# CUDA: the NVIDIA driver's requests are type 'F' (_IOWR('F', nr, size)); nvidia-uvm numbers
# its own 1..2047 (UVM_IOCTL_BASE(i) = i) plus UVM_INITIALIZE/DEINITIALIZE (0x3000000x).
# Landlock lets the worker issue device ioctls on /dev/nvidia* only.
GPU_IOCTL_MASKS = ((0xFF00, 0x4600), (0xFFFFF800, 0), (0xFFFFFFFC, 0x30000000))
# fcntl: descriptors (F_DUPFD, F_GETFD, F_SETFD, F_DUPFD_CLOEXEC), status flags (F_GETFL,
# F_SETFL), pipe sizes, seals; not F_SETOWN/F_SETSIG (signals to others), F_SETLEASE (blocks
# others' opens), F_NOTIFY (dnotify: a watch), nor any record lock (RECORD_LOCKS): a lock on
# a file every worker may read (a shared library) is seen by every other worker that tests it
FCNTLS = (0, 1, 2, 3, 4, 1030, 1031, 1032, 1033, 1034)
# F_GETLK, F_SETLK, F_SETLKW (POSIX, also lockf) and F_OFD_GETLK, F_OFD_SETLK, F_OFD_SETLKW
# (open file description locks): refused with EPERM, like every command not in FCNTLS
RECORD_LOCKS = {"F_GETLK": 5, "F_SETLK": 6, "F_SETLKW": 7, "F_OFD_GETLK": 36,
                "F_OFD_SETLK": 37, "F_OFD_SETLKW": 38}
# prctl: PDEATHSIG get/set, GET_DUMPABLE, NAME set/get, GET_SECCOMP, CAPBSET_READ, TIMERSLACK
# set/get, GET_CHILD_SUBREAPER, NO_NEW_PRIVS set (again)/get, GET_TID_ADDRESS, THP_DISABLE
# set/get, GET_SPECULATION_CTRL, SET_VMA (naming its own mappings)
PRCTLS = (1, 2, 3, 15, 16, 21, 23, 29, 30, 37, 38, 39, 40, 41, 42, 52, 0x53564D41)
# sched_setscheduler for itself to SCHED_OTHER, SCHED_BATCH, SCHED_IDLE (no real time)
SCHED_POLICIES = (0, 3, 5)
RWF_NOWAIT = 0x8  # preadv2 with it says whether pages are cached: a page-cache probe
# posix_fadvise: NORMAL, RANDOM, SEQUENTIAL, WILLNEED, NOREUSE (cat asks SEQUENTIAL); not
# DONTNEED, which drops shared libraries' cached pages (slowing others, resetting a channel)
FADVICES = (0, 1, 2, 3, 5)


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
    """None when a filter can be built on this machine, else why not (``GRADER_SECCOMP=0``
    turns it off: the level is then ``basic``)."""
    if os.environ.get("GRADER_SECCOMP", "1") == "0":
        return "turned off (GRADER_SECCOMP=0)"
    if _library()[0] is None:
        return f"libseccomp cannot be loaded ({_library()[1]})"
    try:
        prepare()
    except (OSError, RuntimeError, ValueError) as exc:
        return f"the filter cannot be built: {exc}"
    return None


def logging() -> bool:
    """Whether ``GRADER_SECCOMP_LOG=1`` asks for the logging filter."""
    return os.environ.get(LOG_ENV, "") == "1"


def _add(f: Any, action: int, name: str | int, *args: Any) -> None:
    try:
        f.add_rule(action, name, *args)
    except (OSError, ValueError, RuntimeError):
        pass  # a call this architecture does not have (e.g. chmod on arm64)


@lru_cache(maxsize=4)
def prepare(gpu: bool = False, log: bool | None = None) -> Any:
    """The filter as a ``pyseccomp.SyscallFilter``, built once per process and profile
    (``gpu``: a CUDA worker's; ``log``: the logging filter, from the environment if None)."""
    sc = _library()[0]
    if sc is None:
        raise OSError(errno.ENOSYS, f"seccomp is not available: {_library()[1]}")
    log = logging() if log is None else log
    refuse = sc.ERRNO(errno.EPERM)
    # what is not allowed: ENOSYS for unnamed calls, EPERM for arguments, ENOTTY for ioctls
    unknown, other_args, other_ioctl = (sc.LOG,) * 3 if log else (
        sc.ERRNO(errno.ENOSYS), refuse, sc.ERRNO(errno.ENOTTY))
    f = sc.SyscallFilter(unknown)
    if log:
        f.set_attr(sc.Attr.CTL_LOG, 1)  # the refusals are logged too
    for names in ALLOWED.values():
        for name in names:
            _add(f, sc.ALLOW, name)
    for name in GPU_ALLOWED if gpu else ():
        _add(f, sc.ALLOW, name)
    for names in REFUSED.values():
        for name in names:
            _add(f, refuse, name)
    for number in REFUSED_NUMBERS.values():
        f.add_rule(refuse, number)
    if log:  # (otherwise the default already)
        f.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")

    def arg(index: int, value: int, mask: int = _LOW32) -> Any:
        return sc.Arg(index, sc.MASKED_EQ, mask, value)

    # a call allowed with some arguments: its other arguments get ``action`` (libseccomp
    # tests the equality rules before this catch-all comparison, which is always a refusal:
    # another order could refuse more, never allow more; tests check it). libseccomp refuses
    # a rule whose action is the default one (the logging filter's)
    def otherwise(name: str, action: int, index: int = 0) -> None:
        if action != unknown:
            f.add_rule(action, name, sc.Arg(index, sc.GE, 0))

    f.add_rule(sc.ALLOW, "clone", arg(0, 0, NAMESPACE_FLAGS))
    otherwise("clone", other_args)
    for family in [*SOCKET_FAMILIES.values(), *(GPU_SOCKET_FAMILIES.values() if gpu else ())]:
        f.add_rule(sc.ALLOW, "socket", arg(0, family))
    otherwise("socket", other_args)
    for request in IOCTLS.values():
        f.add_rule(sc.ALLOW, "ioctl", arg(1, request))
    for mask, value in GPU_IOCTL_MASKS if gpu else ():
        f.add_rule(sc.ALLOW, "ioctl", arg(1, value, mask))
    for kind in REFUSED_IOCTL_TYPES:
        f.add_rule(refuse, "ioctl", arg(1, kind << 8, 0xFF00))
    otherwise("ioctl", other_ioctl, 1)
    for command in FCNTLS:
        f.add_rule(sc.ALLOW, "fcntl", arg(1, command))
    otherwise("fcntl", other_args, 1)
    for option in PRCTLS:
        f.add_rule(sc.ALLOW, "prctl", arg(0, option))
    otherwise("prctl", other_args)
    # itself (PRIO_PROCESS, pid 0), nice 0 or more
    f.add_rule(sc.ALLOW, "setpriority", arg(0, 0), arg(1, 0), arg(2, 0, 0x80000000))
    otherwise("setpriority", other_args)
    for policy in SCHED_POLICIES:
        f.add_rule(sc.ALLOW, "sched_setscheduler", arg(0, 0), arg(1, policy))
    otherwise("sched_setscheduler", other_args)
    f.add_rule(sc.ALLOW, "prlimit64", arg(0, 0))  # its own limits only
    otherwise("prlimit64", other_args)
    for advice in FADVICES:
        f.add_rule(sc.ALLOW, "fadvise64", arg(3, advice))
    otherwise("fadvise64", other_args, 3)
    for name in ("preadv2", "pwritev2"):
        f.add_rule(sc.ALLOW, name, arg(5, 0, RWF_NOWAIT))
        otherwise(name, other_args, 5)
    return f


@lru_cache(maxsize=4)
def _compiled(gpu: bool, log: bool) -> bytes:
    with tempfile.TemporaryFile() as out:
        prepare(gpu, log).export_bpf(out)
        out.seek(0)
        return out.read()


def _gpu_machine() -> bool:
    return os.path.exists("/dev/nvidiactl")


def program(gpu: bool = False) -> bytes:
    """The filter compiled to classic BPF by libseccomp, once per process and profile. On a
    machine with NVIDIA devices the GPU profile is compiled along with the CPU one, so that a
    CUDA worker does not compile after its fork."""
    if not gpu and _gpu_machine():
        _compiled(True, logging())
    return _compiled(gpu, logging())


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]


def install(gpu: bool = False) -> None:
    """Load the filter into this process for good (and set ``no_new_privs``): the compiled
    program, loaded with one ``prctl`` (libseccomp would compile it again, ~1 ms).
    ``gpu``: the GPU profile, for a worker given the NVIDIA devices. The logging filter is
    loaded by libseccomp, with ``SECCOMP_FILTER_FLAG_LOG`` (so that refusals are logged)."""
    if logging():
        prepare(gpu, True).load()
        return
    code = _compiled(gpu, False)
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "PR_SET_NO_NEW_PRIVS")
    check(libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0),
          "loading the seccomp filter")
