"""What confines one worker, layer by layer: made by ``isolation.Sandbox.confinement()`` in
the grading process, applied by ``confine.confine()`` in the worker.

A ``Confinement`` reaches the worker in one of two ways: as the object itself, to the
``preexec_fn`` of a worker started with ``subprocess``; or as JSON in the fork server's
``spawn`` message (``to_dict`` in the grader, ``from_dict`` in ``zygote.py``), which refuses a
message whose keys are not exactly the fields. Each layer named here was probed to work on
this machine (``isolation.probe``); a layer left off (``None``, ``False``, ``0``, empty) is not
applied. This module imports nothing but the standard library: it runs inside the worker.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

# a folder others cannot pass through, and its entries a worker of another uid must reach
Cover = tuple[str, tuple[str, ...]]


@dataclass(frozen=True)
class Confinement:
    cpu_seconds: int  # rlimits: CPU time (SIGXCPU, then SIGKILL 5 s later)
    file_bytes: int  # rlimits: the largest file the worker may write
    open_files: int  # rlimits: open file descriptors
    address_space_bytes: int | None  # rlimits: address space; None: no cap
    processes: int  # rlimits: processes of the worker's uid (set with ``uid`` only)
    cgroups: tuple[str, ...]  # cgroup v1: the groups the worker joins (none: the sampling)
    namespaces: str | None  # network namespace, and how any is entered: "root" or "userns"
    pid_namespace: bool  # PID namespace: the worker is process 1 of its own
    ipc_namespace: bool  # IPC and UTS namespaces of its own
    tmpfs_bytes: int | None  # mount namespace: the work folder a private tmpfs of this size
    drop_capabilities: bool  # capabilities: every set emptied, secure bits locked
    seccomp: bool  # seccomp: the allow-list (its GPU profile when ``devices`` are given)
    landlock_abi: int  # Landlock: the ABI whose rules are applied; 0: no Landlock
    readable: tuple[str, ...]  # Landlock: trees read-only
    listable: tuple[str, ...]  # Landlock: folders whose entries' names only may be listed
    workdir: str  # Landlock and tmpfs: the work folder, read-write but for device files
    devices: tuple[str, ...]  # GPU: device files (Landlock, its own /proc, seccomp profile)
    uid: int | None  # unprivileged uid: the worker's own; None: the grader's
    reveal: tuple[Cover, ...]  # unprivileged uid: folders made passable in its own mounts

    def to_dict(self) -> dict[str, Any]:
        """The fields as plain data, for the fork server's JSON (where tuples are lists)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Confinement:
        """The inverse of ``to_dict`` (lists back to tuples); ``ValueError`` in one sentence
        when a key is unknown or missing."""
        names = [f.name for f in fields(cls)]
        unknown = sorted(map(str, set(data) - set(names)))
        missing = [name for name in names if name not in data]
        wrong = [f"{what} {', '.join(keys)}"
                 for what, keys in (("unknown", unknown), ("missing", missing)) if keys]
        if wrong:
            raise ValueError("a confinement spec must have exactly the fields of Confinement "
                             f"({'; '.join(wrong)})")
        given = dict(data)
        for name in ("cgroups", "readable", "listable", "devices"):
            given[name] = tuple(given[name])
        given["reveal"] = tuple((cover, tuple(keeps)) for cover, keeps in given["reveal"])
        return cls(**given)
