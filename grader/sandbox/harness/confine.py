"""Confine the current process for good: the worker's side of ``grader/sandbox/isolation.py``.

``confine(spec)`` runs in a fresh worker before any learner code: between fork and exec for
a worker started with ``subprocess`` (``preexec_fn``), or right after the fork in a fork
server's child. ``spec`` is plain data made by ``isolation.Sandbox.spec()``; the layers it
names were probed to work on this machine. The order matters: limits and cgroups first, then
the namespaces (a tmpfs work folder, process 1 of a PID namespace), then the Landlock rules
(bound to the tmpfs), then every capability dropped, and the seccomp filter last (it denies
the calls the steps before it make).
"""

from __future__ import annotations

import os
import resource
from pathlib import Path
from typing import Any

from . import landlock, namespaces, privileges, syscall_filter
from .libc import die_with_parent


def enter_netns(mode: str) -> None:
    """A network namespace of its own (no interfaces up): as root, or via a user namespace."""
    namespaces.enter(mode, net=True)


def _limits(spec: dict[str, Any]) -> None:
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    cpu = int(spec["cpu_s"])
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (spec["file_bytes"], spec["file_bytes"]))
    resource.setrlimit(resource.RLIMIT_NOFILE, (spec["open_files"], spec["open_files"]))
    if spec.get("address_space"):
        resource.setrlimit(resource.RLIMIT_AS, (spec["address_space"], spec["address_space"]))
    # "0" is the writing thread itself, the only thread of this fresh process (its threads
    # to come start in its cgroups): moving one thread spares the kernel the process-wide
    # lock a process id takes, whose first use after a pause waits an RCU grace period
    # (about 8 ms of every worker's start, measured on Linux 6.18)
    for path in spec.get("cgroups", []):
        Path(path, "tasks").write_text("0")


def _landlock_rules(spec: dict[str, Any], abi: int) -> landlock.Ruleset:
    ruleset = landlock.Ruleset(abi)
    for root in spec["readable"]:
        ruleset.allow(root, landlock.READ)
    for folder in spec.get("listable", []):  # names only: a site folder's other packages
        ruleset.allow(folder, landlock.READ_DIR)
    # its own /proc entry only: not the grader's (environ, cmdline) nor any other. By its
    # number as /proc shows it (in a PID namespace of its own, os.getpid() is 1).
    # CUDA's start writes there (error 304 without it); gVisor keeps /proc/self apart.
    own = landlock.READ
    if spec.get("devices"):
        own |= landlock.WRITE_FILE | landlock.TRUNCATE
    for entry in (f"/proc/{os.readlink('/proc/self')}", "/proc/self"):
        ruleset.allow(entry, own)
    ruleset.allow("/dev/null", landlock.READ | landlock.WRITE_FILE)
    # everything in the work folder but device files
    ruleset.allow(spec["workdir"],
                  landlock.all_fs(abi) & ~(landlock.MAKE_CHAR | landlock.MAKE_BLOCK))
    for dev in spec.get("devices", []):
        ruleset.allow(dev, landlock.READ | landlock.WRITE_FILE | landlock.IOCTL_DEV)
    return ruleset


def confine(spec: dict[str, Any], *, in_netns: bool = False, is_init: bool = False) -> None:
    """``in_netns``: this process is in a network namespace of its own already (a fork
    server's: ``zygote.py``); ``is_init``: it is process 1 of a new PID namespace already
    (forked into it), so no waiter is forked."""
    _limits(spec)
    mode = spec.get("netns")  # how namespaces are entered here: "root" or "userns"
    pids = bool(spec.get("pidns")) and not is_init
    if mode:
        namespaces.enter(mode, net=not in_netns, mounts=bool(spec.get("disk_bytes")),
                         pids=pids, ipc=bool(spec.get("ipcns")))
    if mode and spec.get("disk_bytes") and spec.get("reveal"):
        namespaces.reveal(spec["reveal"])  # before the work folder, which may lie under one
    if mode and spec.get("disk_bytes"):
        cwd = os.getcwd()
        namespaces.private_tmpfs(spec["workdir"], int(spec["disk_bytes"]), spec.get("uid"))
        os.chdir(cwd)  # the same path, now on the tmpfs
    if mode and pids:
        namespaces.become_init()
    if mode and spec.get("devices") and spec.get("disk_bytes") and (pids or is_init):
        namespaces.own_proc()  # a CUDA worker: /proc as its PID namespace sees it
    abi = int(spec.get("landlock_abi", 0))
    ruleset = _landlock_rules(spec, abi) if abi else None
    uid = spec.get("uid")
    if uid is not None:
        resource.setrlimit(resource.RLIMIT_NPROC, (spec["pids"], spec["pids"]))
    if spec.get("drop_caps"):
        privileges.drop_all(uid)
    elif uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)
    die_with_parent()  # after any change of credentials, which clears it
    if ruleset is not None:
        ruleset.restrict_self()
    if spec.get("seccomp"):  # the GPU profile for a worker given the NVIDIA devices
        syscall_filter.install(gpu=bool(spec.get("devices")))
