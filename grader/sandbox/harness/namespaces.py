"""The worker's own namespaces (Linux): no network, its own mounts, its own process tree, its
own System V IPC objects and host name.

- ``enter(mode, net=..., mounts=..., pids=..., ipc=...)``: new namespaces, as root or through an
  unprivileged user namespace (``mode`` ``"root"`` or ``"userns"``).
- ``private_tmpfs(path, size)``: in the new mount namespace, a size-limited tmpfs replaces
  the work folder, with the folder's files copied in. What the learner writes is bounded by
  the size (``ENOSPC`` past it) and vanishes with the worker's last process, whatever flags or
  modes were set on it; nothing it writes reaches the grader's disk.
- ``become_init()``: after ``enter(pids=True)``, fork: the child is process 1 of the new PID
  namespace and goes on to be the worker; the parent stays outside as a waiter that ends
  with the child's status. When process 1 ends, the kernel kills every process left in its
  namespace, so nothing the learner started (``setsid`` or not) outlives the worker; process
  1 gets SIGKILL when its waiter dies, which dies with the grader.
"""

from __future__ import annotations

import ctypes
import os
import signal
import stat
from collections.abc import Iterable
from pathlib import Path

from .confinement import Cover
from .libc import check, die_with_parent, libc

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = \
    0x00020000, 0x04000000, 0x08000000, 0x10000000, 0x20000000, 0x40000000
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC, _MS_PRIVATE = \
    0x1, 0x2, 0x4, 0x20, 0x1000, 0x4000, 0x40000
_MS_NOEXEC = 0x8


def unshare(flags: int) -> None:
    check(libc.unshare(ctypes.c_int(flags)), "unshare")


def setns(fd: int, flags: int) -> None:
    check(libc.setns(ctypes.c_int(fd), ctypes.c_int(flags)), "setns")


def enter(mode: str, *, net: bool = True, mounts: bool = False, pids: bool = False,
          ipc: bool = False) -> None:
    """New network (``net``), mount (``mounts``), PID (``pids``, for the next child) and IPC
    and UTS (``ipc``: no System V object or host name shared with a neighbour, none outliving
    the worker) namespaces: as root, or inside a new user namespace where this uid maps to
    itself."""
    flags = (CLONE_NEWNET if net else 0) | (CLONE_NEWNS if mounts else 0) | \
        (CLONE_NEWPID if pids else 0) | (CLONE_NEWIPC | CLONE_NEWUTS if ipc else 0)
    if mode == "root":
        unshare(flags)
        return
    uid, gid = os.getuid(), os.getgid()
    unshare(CLONE_NEWUSER | flags)
    Path("/proc/self/setgroups").write_text("deny")
    Path("/proc/self/uid_map").write_text(f"{uid} {uid} 1")
    Path("/proc/self/gid_map").write_text(f"{gid} {gid} 1")


def _mount(source: str | None, target: str | None, fstype: str | None, flags: int,
           data: str | None) -> None:
    def enc(text: str | None) -> bytes | None:
        return None if text is None else text.encode()

    check(libc.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags),
                       enc(data)), f"mount {target}")


def reveal(covers: Iterable[Cover]) -> None:
    """Make folders that other users cannot enter passable, in this process's own mount
    namespace: each ``(cover, (keep, ...))`` puts a read-only tmpfs (mode 0755) over ``cover``
    holding only each ``keep`` (a path under it) bound back at its own path. A worker of
    another uid then reaches the interpreter under, say, a home folder of mode 0700, and
    nothing else of that folder."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)  # nothing propagates to the host
    for cover, keeps in covers:
        held = [(keep, os.open(keep, os.O_PATH | os.O_CLOEXEC)) for keep in keeps]
        try:
            _mount("grade-reveal", cover, "tmpfs", _MS_NOSUID | _MS_NODEV,
                   "size=1m,mode=0755")
            for keep, fd in held:
                if stat.S_ISDIR(os.fstat(fd).st_mode):
                    os.makedirs(keep, 0o755, exist_ok=True)
                else:
                    os.makedirs(os.path.dirname(keep), 0o755, exist_ok=True)
                    os.close(os.open(keep, os.O_CREAT | os.O_WRONLY, 0o644))
                _mount(f"/proc/self/fd/{fd}", keep, None, _MS_BIND | _MS_REC, None)
            _mount(None, cover, None, _MS_REMOUNT | _MS_RDONLY | _MS_NOSUID | _MS_NODEV, None)
        finally:
            for _, fd in held:
                os.close(fd)


def private_tmpfs(path: str, size_bytes: int, uid: int | None = None) -> None:
    """Replace the folder ``path`` by a tmpfs of ``size_bytes`` holding a copy of its files
    (in this process's own mount namespace; the original is left untouched)."""
    _mount(None, "/", None, _MS_REC | _MS_PRIVATE, None)  # nothing propagates to the host
    original = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        owner = f",uid={uid},gid={uid}" if uid is not None else ""
        _mount("grade-work", path, "tmpfs", _MS_NOSUID | _MS_NODEV,
               f"size={size_bytes},mode=0700{owner}")
        target = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            _copy_tree(original, target, uid)
        finally:
            os.close(target)
    finally:
        os.close(original)


def _copy_tree(src: int, dst: int, uid: int | None, depth: int = 0) -> None:
    """Copy the regular files and folders under the directory fd ``src`` into ``dst``."""
    if depth > 8:
        return
    for name in os.listdir(src):
        info = os.stat(name, dir_fd=src, follow_symlinks=False)
        if stat.S_ISDIR(info.st_mode):
            os.mkdir(name, 0o700, dir_fd=dst)
            inner_src = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=src)
            inner_dst = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=dst)
            try:
                _copy_tree(inner_src, inner_dst, uid, depth + 1)
            finally:
                os.close(inner_src)
                os.close(inner_dst)
        elif stat.S_ISREG(info.st_mode):
            fin = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=src)
            fout = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=dst)
            try:
                while chunk := os.read(fin, 1 << 20):
                    os.write(fout, chunk)
            finally:
                os.close(fin)
                os.close(fout)
        else:
            continue
        if uid is not None:
            os.chown(name, uid, uid, dir_fd=dst, follow_symlinks=False)


def own_proc() -> None:
    """Mount a /proc of this process's PID namespace over the host's, in its own mount
    namespace (call it as process 1 of that namespace): there ``getpid()`` and the entries of
    /proc agree. CUDA's start opens ``/proc/<getpid()>/...``: on the host's /proc that is the
    host's process 1, which Landlock rightly refuses ("cudaGetDeviceCount ... Error 304")."""
    _mount("proc", "/proc", "proc", _MS_NOSUID | _MS_NODEV | _MS_NOEXEC, None)


def become_init() -> None:
    """Fork into the new PID namespace; return only in the child (process 1 there)."""
    pid = os.fork()
    if pid == 0:
        die_with_parent(signal.SIGKILL)
        if os.getppid() == 0:  # the waiter is outside this namespace: 0 means it is alive
            return
        os._exit(70)  # the waiter died before the prctl took effect
    _wait_and_mirror(pid)


def _wait_and_mirror(pid: int) -> None:
    """The waiter: hold nothing, wait for process 1, end the way it ended."""
    os.closerange(0, 65536)  # none of the worker's pipes stays open in here
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(70)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)  # (not possible, nor needed, for SIGKILL)
        except (OSError, ValueError):
            pass
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
        os._exit(128 + sig)
    os._exit(os.WEXITSTATUS(status))
