"""Confine the current process for good: the worker's side of ``grader/sandbox/isolation.py``.

``confine(confinement)`` runs in a fresh worker before any learner code: between fork and
exec for a worker started with ``subprocess`` (``preexec_fn``), or right after the fork in a
fork server's child. ``confinement`` (``confinement.py``) is made by
``isolation.Sandbox.confinement()``; the layers it names were probed to work on this machine.
Each layer is applied by a function that reads only its own fields. The order matters: limits
and cgroups first, then the namespaces (a tmpfs work folder, process 1 of a PID namespace),
then the Landlock rules (bound to the tmpfs), then the uid and every capability dropped, and
the seccomp filter last (it denies the calls the steps before it make).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path

from . import landlock, namespaces, privileges, syscall_filter
from .confinement import Confinement
from .libc import die_with_parent


def enter_netns(mode: str) -> None:
    """A network namespace of its own (no interfaces up): as root, or via a user namespace."""
    namespaces.enter(mode, net=True)


def _rlimits(c: Confinement) -> None:
    """rlimits: no core dumps, CPU time, file size, open files, address space."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    resource.setrlimit(resource.RLIMIT_CPU, (c.cpu_seconds, c.cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (c.file_bytes, c.file_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (c.open_files, c.open_files))
    if c.address_space_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (c.address_space_bytes, c.address_space_bytes))


def _cgroups(c: Confinement) -> None:
    """cgroup v1: join each of the worker's groups."""
    # "0" is the writing thread itself, the only thread of this fresh process (its threads
    # to come start in its cgroups): moving one thread spares the kernel the process-wide
    # lock a process id takes, whose first use after a pause waits an RCU grace period
    # (about 8 ms of every worker's start, measured on Linux 6.18)
    for path in c.cgroups:
        Path(path, "tasks").write_text("0")


def _namespaces(c: Confinement, in_netns: bool, is_init: bool) -> None:
    """Namespaces (when ``c.namespaces`` names how to enter them): network, mounts with the
    uid's passable folders and the tmpfs work folder, PID (process 1), IPC and UTS, and a
    GPU worker's own /proc."""
    if not c.namespaces:
        return
    pids = c.pid_namespace and not is_init
    namespaces.enter(c.namespaces, net=not in_netns, mounts=bool(c.tmpfs_bytes), pids=pids,
                     ipc=c.ipc_namespace)
    if c.tmpfs_bytes and c.reveal:
        namespaces.reveal(c.reveal)  # before the work folder, which may lie under one
    if c.tmpfs_bytes:
        cwd = os.getcwd()
        namespaces.private_tmpfs(c.workdir, c.tmpfs_bytes, c.uid)
        os.chdir(cwd)  # the same path, now on the tmpfs
    if pids:
        namespaces.become_init()
    if c.devices and c.tmpfs_bytes and (pids or is_init):
        namespaces.own_proc()  # a CUDA worker: /proc as its PID namespace sees it


def _landlock_rules(c: Confinement) -> landlock.Ruleset | None:
    """Landlock's rules, made (not yet applied) while every path can still be opened; None
    without Landlock."""
    if not c.landlock_abi:
        return None
    ruleset = landlock.Ruleset(c.landlock_abi)
    for root in c.readable:
        ruleset.allow(root, landlock.READ)
    for folder in c.listable:  # names only: a site folder's other packages
        ruleset.allow(folder, landlock.READ_DIR)
    # its own /proc entry only: not the grader's (environ, cmdline) nor any other. By its
    # number as /proc shows it (in a PID namespace of its own, os.getpid() is 1).
    # CUDA's start writes there (error 304 without it); gVisor keeps /proc/self apart.
    own = landlock.READ
    if c.devices:
        own |= landlock.WRITE_FILE | landlock.TRUNCATE
    for entry in (f"/proc/{os.readlink('/proc/self')}", "/proc/self"):
        ruleset.allow(entry, own)
    ruleset.allow("/dev/null", landlock.READ | landlock.WRITE_FILE)
    # everything in the work folder but device files
    ruleset.allow(c.workdir,
                  landlock.all_fs(c.landlock_abi) & ~(landlock.MAKE_CHAR | landlock.MAKE_BLOCK))
    for dev in c.devices:
        ruleset.allow(dev, landlock.READ | landlock.WRITE_FILE | landlock.IOCTL_DEV)
    return ruleset


def _credentials(c: Confinement) -> None:
    """The unprivileged uid (with its process limit) and the capabilities dropped."""
    if c.uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (c.processes, c.processes))
    if c.drop_capabilities:
        privileges.drop_all(c.uid)
    elif c.uid is not None:
        os.setgroups([])
        os.setgid(c.uid)
        os.setuid(c.uid)


def confine(c: Confinement, *, in_netns: bool = False, is_init: bool = False) -> None:
    """Apply every layer of ``c`` to this process, for good. ``in_netns``: this process is in
    a network namespace of its own already (a fork server's: ``zygote.py``); ``is_init``: it
    is process 1 of a new PID namespace already (forked into it), so no waiter is forked."""
    _rlimits(c)
    _cgroups(c)
    _namespaces(c, in_netns, is_init)
    ruleset = _landlock_rules(c)
    _credentials(c)
    die_with_parent()  # after any change of credentials, which clears it
    if ruleset is not None:
        ruleset.restrict_self()
    if c.seccomp:  # the GPU profile for a worker given the NVIDIA devices
        syscall_filter.install(gpu=bool(c.devices))
