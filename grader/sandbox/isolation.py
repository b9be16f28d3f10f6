"""The one place that decides how a learner worker is started and confined.

``probe()`` finds out once which layers this machine offers; every worker is then started
through all of them (``Sandbox``):

- **always**: a fresh work directory holding only the learner's files and the public
  harness; a clean environment; ``python -I -u``; one thread; its own session; rlimits on CPU
  time, file size, open files and core dumps; a per-call and per-submission wall clock; the
  worker dies with the grader (``PR_SET_PDEATHSIG``); the grader is not dumpable.
- **Landlock** (filesystem): read-only access to the system and the Python installation,
  read-write to the work directory (no device files), nothing else (no solutions, suites,
  reports, home, other submissions, cgroups); with ABI >= 6 also no signals to processes
  outside the sandbox.
- **network namespace**: the worker has no network at all (``unshare(CLONE_NEWNET)``, through
  an unprivileged user namespace when the grader is not root).
- **mount namespace + tmpfs**: the work folder is a size-limited tmpfs of the worker's own,
  gone with it.
- **PID namespace**: the worker is process 1 of its own; when it ends, so does its whole tree.
- **no capabilities**: every set emptied, secure bits locked, ``no_new_privs``.
- **seccomp** (``harness/syscall_filter.py``): an allow-list of what Python, numpy, torch
  and the harness need; every other call fails (new kernels' calls included).
- **cgroup v1** (root): a memory limit on what the worker adds, a process-count limit and one
  CPU's worth of time; the whole tree is killed through it.
- **unprivileged uid** (root, when the Python installation is readable by other users).
- Without cgroups, escaped descendants are found through ``PR_SET_CHILD_SUBREAPER``.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from . import readable
from .harness import confine, landlock, privileges, syscall_filter
from .harness.confinement import Confinement, Cover
from .harness.libc import libc

HARNESS_SRC = Path(__file__).parent / "harness"
HARNESS_NAME = "gradeharness"
PASSTHROUGH_ENV = ("PATH", "LD_LIBRARY_PATH", "CUDA_VISIBLE_DEVICES", "CUDA_HOME",
                   "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE", "SYSTEMROOT")

CPU_SECONDS = 600            # CPU time of one worker (SIGXCPU, then SIGKILL 5 s later)
FILE_BYTES = 64 * 2**20      # largest file the worker may write
OPEN_FILES = 256
MEMORY_BYTES = 3 * 2**30     # cgroup limit on the worker's own memory
PIDS = 128                   # cgroup limit on the worker's processes and threads
DISK_BYTES = 256 * 2**20     # the work folder's tmpfs
CPU_PERIOD_US = 100_000      # cgroup CPU bandwidth: one CPU's worth of time per period
ADDRESS_SPACE = 8 * 2**30    # RLIMIT_AS backstop of CPU workers when no cgroup limits memory
UID_BASE = 2_000_000         # workers run as UID_BASE + n (root only, when possible)

_PR_SET_DUMPABLE, _PR_SET_CHILD_SUBREAPER = 4, 36
CGROUP_ROOT = Path("/sys/fs/cgroup")
CGROUP_NAME = "vit-grader"


_CGROUP_SETTINGS: dict[str, dict[str, int]] = {
    "memory": {"memory.limit_in_bytes": MEMORY_BYTES, "memory.swappiness": 0},
    "pids": {"pids.max": PIDS},
    # one CPU's worth per worker tree: a submission's spinning processes share it
    "cpu": {"cpu.cfs_period_us": CPU_PERIOD_US, "cpu.cfs_quota_us": CPU_PERIOD_US},
    "cpuacct": {},  # CPU time used, to judge a timeout fairly
}
_OPTIONAL_CONTROLLERS = {"cpu", "cpuacct"}


class SandboxError(RuntimeError):
    """The sandbox could not be set up: the submission is ungradable, not wrong."""


@dataclass(frozen=True)
class Layer:
    name: str
    active: bool
    detail: str  # what it does when active, why not otherwise


@dataclass(frozen=True)
class Capabilities:
    landlock_abi: int
    netns: str | None          # "root" | "userns" | None: how namespaces are entered
    cgroup: bool
    drop_uid: bool
    no_privileges: bool = False   # every capability dropped and no_new_privs, verified
    seccomp: bool = False
    private_mounts: bool = False  # mount namespace with a tmpfs work folder
    pidns: bool = False
    ipcns: bool = False          # IPC and UTS namespaces of its own
    uid_paths: tuple[str, ...] = ()  # what a worker of another uid must reach (reveal_plan)
    layers: tuple[Layer, ...] = field(default_factory=tuple)

    @property
    def filesystem_isolated(self) -> bool:
        return self.landlock_abi > 0

    @property
    def network_isolated(self) -> bool:
        return self.netns is not None

    def missing(self) -> list[str]:
        """The layers ``strict`` needs that this machine does not offer, in words."""
        return [what for what, ok in (
            ("filesystem isolation", self.filesystem_isolated),
            ("network isolation", self.network_isolated),
            ("a tmpfs work folder", self.private_mounts), ("a PID namespace", self.pidns),
            ("an IPC namespace", self.ipcns),
            ("dropping every capability", self.no_privileges),
            ("a seccomp filter", self.seccomp)) if not ok]

    @property
    def level(self) -> str:
        """``strict`` when every layer that keeps the worker to itself is active (Landlock,
        network, mount and PID namespaces, no capabilities, seccomp), else ``basic``."""
        return "basic" if self.missing() else "strict"

    def summary(self) -> dict[str, object]:
        return {"level": self.level,
                "layers": [layer.name for layer in self.layers if layer.active]}


def _probe_in_child(fn: Callable[[], None], argv: list[str] | None = None,
                    check: Callable[[str], str | None] | None = None) -> str | None:
    """Run ``fn`` in a forked child (then ``argv``, if given); None when it works, else why.
    ``check`` judges what the child printed (None when it is right, else why not)."""
    try:
        proc = subprocess.run(argv or [sys.executable, "-I", "-c", "pass"], preexec_fn=fn,
                              stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    except (subprocess.SubprocessError, OSError) as exc:
        return str(exc).split(":")[0] or type(exc).__name__
    if proc.returncode != 0:
        return f"exit status {proc.returncode}"
    return check(proc.stdout.decode(errors="replace")) if check else None


def _no_privileges(status: str) -> str | None:
    """Why a ``/proc/<pid>/status`` shows a process that still holds a capability or lacks
    ``no_new_privs``; None when it holds nothing."""
    held = privileges.held(status)
    kept = [f"{k} {v:x}" for k, v in held.items() if k.startswith("Cap") and v]
    if kept:
        return "capabilities left: " + ", ".join(kept)
    return None if held.get("NoNewPrivs") == 1 else "no_new_privs is not set"


def _probe_together(mode: str) -> str | None:
    """The ``/proc/<pid>/status`` of a child confined as a worker is (a tmpfs folder,
    process 1 of a PID namespace, no capabilities, the seccomp filter), when every layer
    works at once; None when any fails (then each is probed alone, to say which)."""
    folder = tempfile.mkdtemp(prefix="grade-probe-")
    status: list[str] = []

    def confine_like_a_worker() -> None:
        confine.namespaces.enter(mode, mounts=True, pids=True, ipc=True)
        confine.namespaces.private_tmpfs(folder, 1 << 20)
        confine.namespaces.become_init()
        privileges.drop_all()
        syscall_filter.install()

    def judge(out: str) -> str | None:
        pid, _, text = out.partition("\n")
        status.append(text)
        return None if pid.strip() == "1" and _no_privileges(text) is None else "no"

    try:
        why = _probe_in_child(confine_like_a_worker,
                              ["/bin/sh", "-c", "echo $$; exec cat /proc/self/status"], judge)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return status[0] if why is None else None


def _probe_namespaces(mode: str) -> tuple[str | None, str | None]:
    """Why a tmpfs work folder in a mount namespace, and process 1 of a PID namespace,
    cannot be had in ``mode`` (None for each that works)."""
    folder = tempfile.mkdtemp(prefix="grade-probe-")
    try:
        mounts = _probe_in_child(lambda: (confine.namespaces.enter(mode, mounts=True),
                                          confine.namespaces.private_tmpfs(folder, 1 << 20)),
                                 ["/bin/true"])
        pids = _probe_in_child(lambda: (confine.namespaces.enter(mode, pids=True),
                                        confine.namespaces.become_init()),
                               ["/bin/sh", "-c", "echo $$"],
                               lambda out: None if out.strip() == "1" else
                               f"the worker is process {out.strip()}, not 1")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return mounts, pids


def _uid_plan(mode: str | None, mounts: bool) -> tuple[tuple[Cover, ...], str | None]:
    """Whether workers can run as another uid: the folders a worker must make passable in its
    own mounts to reach the interpreter and its packages (``readable.reveal_plan``), and None;
    or why not."""
    if os.geteuid() != 0:
        return (), "not needed: the grader is not root"
    if os.environ.get("GRADER_UID", "1") == "0":
        return (), "turned off (GRADER_UID=0)"
    view = readable.worker_view("cpu")
    staging = tempfile.tempdir or staging_root() or tempfile.gettempdir()
    plan = readable.reveal_plan(view.read + view.list + (_real_path(staging), ))
    if plan and not (mode == "root" and mounts):
        return (), f"{plan[0][0]} is not searchable by other users, and no mount namespace " \
                   "can make it so"
    needed = [str(Path(sys.executable).resolve()), os.path.join(
        sysconfig.get_paths()["stdlib"], "os.py")]
    try:
        import numpy

        needed.append(numpy.__file__)
    except ImportError:
        pass

    def become() -> None:
        if plan:
            confine.namespaces.enter("root", net=False, mounts=True)
            confine.namespaces.reveal(plan)
        os.setgroups([])
        os.setgid(UID_BASE)
        os.setuid(UID_BASE)

    test = " && ".join(f"test -r '{path}'" for path in needed if "'" not in path)
    why = _probe_in_child(become, ["/bin/sh", "-c", test])
    if why:
        return (), f"a worker of uid {UID_BASE} cannot read the interpreter or numpy ({why})"
    return plan, None


def _uid_paths() -> tuple[str, ...]:
    view = readable.worker_view("cpu")
    return view.read + view.list


def _real_path(path: str) -> str:
    return str(Path(path).resolve())


def _cgroup_available() -> str | None:
    if os.environ.get("GRADER_CGROUP", "1") == "0":
        return "turned off (GRADER_CGROUP=0)"
    if os.geteuid() != 0:
        return "needs root (cgroup v1 memory and pids controllers are writable by root only)"
    for controller in ("memory", "pids"):
        base = CGROUP_ROOT / controller
        if not (base / "tasks").exists():
            return f"no cgroup v1 {controller} controller at {base}"
        try:
            (base / CGROUP_NAME).mkdir(exist_ok=True)
        except OSError as exc:
            return f"cannot create {base / CGROUP_NAME}: {exc.strerror}"
    for controller in _OPTIONAL_CONTROLLERS:
        try:
            (CGROUP_ROOT / controller / CGROUP_NAME).mkdir(exist_ok=True)
        except OSError:
            pass  # no such controller: memory and pids still bound the worker
    return None


@lru_cache(maxsize=1)
def probe() -> Capabilities:
    """Find out once which isolation layers work on this machine."""
    layers = [Layer("rlimits", True, f"CPU {CPU_SECONDS} s, files {FILE_BYTES >> 20} MiB, "
                                     f"{OPEN_FILES} open files, no core dumps")]
    abi = landlock.abi_version()
    if abi:
        def restrict() -> None:
            ruleset = landlock.Ruleset(abi)
            ruleset.allow("/", landlock.READ)
            ruleset.restrict_self()

        why = _probe_in_child(restrict, ["/bin/true"])
        if why:
            abi = 0
    else:
        why = "the kernel has no Landlock (Linux >= 5.13 with Landlock enabled)"
    layers.append(Layer("landlock", abi > 0,
                        f"filesystem: read-only system and Python, read-write work folder only "
                        f"(ABI {abi}{', signals scoped' if abi >= 6 else ''})" if abi else
                        f"not available: {why}"))
    netns = None
    reasons = []
    for mode in (["root"] if os.geteuid() == 0 else []) + ["userns"]:
        why = _probe_in_child(lambda m=mode: confine.enter_netns(m), ["/bin/true"])
        if why is None:
            netns = mode
            break
        reasons.append(f"{mode}: {why}")
    layers.append(Layer("network namespace", netns is not None,
                        "no network inside the worker" if netns else
                        "not available (" + "; ".join(reasons) + ")"))
    filter_why = syscall_filter.available()
    together = _probe_together(netns) if netns and filter_why is None else None
    if together is not None:  # one child showed every layer at once: no need to ask each
        mounts_why = pids_why = ipc_why = None
    else:
        mounts_why, pids_why = _probe_namespaces(netns) if netns else (
            "needs the namespaces the network namespace needs", ) * 2
        ipc_why = _probe_in_child(lambda: confine.namespaces.enter(netns, net=False, ipc=True),
                                  ["/bin/true"]) if netns else \
            "needs the namespaces the network namespace needs"
    layers.append(Layer("tmpfs work folder", mounts_why is None,
                        f"a mount namespace of its own; the work folder is a {DISK_BYTES >> 20} "
                        "MiB tmpfs, gone with the worker" if mounts_why is None else
                        f"not available ({mounts_why}); only the {FILE_BYTES >> 20} MiB file "
                        "size limit bounds the disk"))
    layers.append(Layer("PID namespace", pids_why is None,
                        "the worker is process 1 of its own PID namespace: when it ends, the "
                        "kernel ends every process it started" if pids_why is None else
                        f"not available ({pids_why}); escaped processes are found and killed "
                        "through the cgroup or as orphans"))
    layers.append(Layer("IPC namespace", ipc_why is None,
                        "IPC and UTS namespaces of its own: no System V shared memory, queue or "
                        "semaphore shared with another worker or left behind, a host name of "
                        "its own" if ipc_why is None else f"not available ({ipc_why})"))
    status: list[str] = [] if together is None else [together]
    priv_why = None if together is not None else _probe_in_child(
        lambda: (privileges.drop_all(), filter_why is None and syscall_filter.install()),
        ["/bin/cat", "/proc/self/status"], lambda out: status.append(out))
    priv_why = priv_why or _no_privileges(status[0])
    layers.append(Layer("no capabilities", priv_why is None,
                        "every capability dropped (bounding, permitted, effective, "
                        "inheritable, ambient), secure bits locked, no_new_privs"
                        if priv_why is None else f"not available ({priv_why})"))
    seccomp_why = filter_why or priv_why or (
        None if privileges.held(status[0]).get("Seccomp") == 2 else "no filter was loaded")
    layers.append(Layer("seccomp", seccomp_why is None,
                        "an allow-list (a GPU profile for CUDA workers): calls Python, numpy "
                        "and torch do not need fail (ENOSYS); refused (EPERM): chmod/chown/"
                        "xattr/utime, chattr and FS_IOC ioctls, mknod, mount, namespaces, "
                        "ptrace, bpf, perf, io_uring, keyrings, inotify/fanotify, mincore/"
                        "cachestat, file_setattr, SysV IPC, CPU pinning, nice < 0, real-time "
                        "scheduling, sockets but inet/inet6"
                        if seccomp_why is None else f"not available ({seccomp_why})"))
    sweep_stale_staging()
    cgroup_why = _cgroup_available()
    if cgroup_why is None:
        sweep_stale_cgroups()
    layers.append(Layer("cgroup", cgroup_why is None,
                        f"memory {MEMORY_BYTES >> 30} GiB, {PIDS} processes and one CPU per "
                        "worker; the whole process tree is killed through it"
                        if cgroup_why is None else
                        f"not used: {cgroup_why}; instead the grader kills a worker whose "
                        f"resident memory grows by over {MEMORY_BYTES >> 30} GiB or that holds "
                        f"over {PIDS} processes (sampled every 50 ms), and CPU workers' address "
                        f"space is capped at {ADDRESS_SPACE >> 30} GiB (CUDA needs more)"))
    plan, uid_why = _uid_plan(netns, mounts_why is None)
    drop = uid_why is None
    passable = "; ".join(f"{cover} made passable in its own mounts, with only "
                         f"{', '.join(keeps)} inside" for cover, keeps in plan)
    plan = () if uid_why else plan
    layers.append(Layer("unprivileged uid", drop,
                        f"workers run as uid {UID_BASE}+n, one each, without any group"
                        + (f" ({passable})" if passable else "") if drop else
                        f"not used: {uid_why}"))
    layers.append(Layer("bubblewrap", False, "not used: Landlock, namespaces and seccomp cover "
                        "the same ground without a setuid or external binary"))
    return Capabilities(landlock_abi=abi, netns=netns, cgroup=cgroup_why is None,
                        drop_uid=drop, no_privileges=priv_why is None,
                        seccomp=seccomp_why is None,
                        private_mounts=mounts_why is None, pidns=pids_why is None,
                        ipcns=ipc_why is None, uid_paths=_uid_paths() if drop else (),
                        layers=tuple(layers))


def _owner_ended(rest: str) -> bool:
    """Whether the grader named at the start of ``rest`` ("<pid>-...", the part of a cgroup's
    or staging folder's name after its prefix) has ended."""
    owner = rest.split("-")[0]
    return owner.isdigit() and not Path(f"/proc/{owner}").exists()


def sweep_stale_cgroups() -> None:
    """Remove the empty cgroups of graders that were killed before they could clean up."""
    for controller in _CGROUP_SETTINGS:
        for path in (CGROUP_ROOT / controller / CGROUP_NAME).glob("w*-*"):
            if _owner_ended(path.name[1:]):
                try:
                    path.rmdir()
                except OSError:
                    pass


def harden_grader() -> None:
    """Make the grading process hard to inspect from a worker and adopt escaped orphans."""
    libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


@dataclass
class LaunchSpec:
    """How one worker is started: with ``subprocess`` (``argv``, ``env``, ``cwd`` and
    ``preexec_fn``, which confines it) or by the fork server (``env``, ``cwd`` and
    ``confinement``, sent as JSON)."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path
    preexec_fn: Callable[[], None] | None
    confinement: Confinement


@lru_cache(maxsize=1)
def staging_root() -> str | None:
    """Where workers' folders are made when no temporary folder is set: the ``TMPDIR`` asked
    for, else ``/dev/shm`` when it is a writable folder (making and removing a worker's few
    files there costs a fraction of a disk file system's inode work), else the system's
    temporary folder. None means tempfile's choice."""
    shm = "/dev/shm"
    if os.environ.get("TMPDIR") or not (os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK)):
        return None
    return shm


# Folders made in staging_root() are named "<prefix><pid>-...", so that a later grader can
# remove those of a grader that was killed (SIGKILL) before it could (sweep_stale_staging).
STAGING_PREFIXES = ("grade-worker-", "grade-bulk-", "grade-serve-")
STALE_AFTER_S = 3600  # and untouched this long: a live run makes a folder per submission


def staging_folder(prefix: str) -> tempfile.TemporaryDirectory:
    """A temporary folder in ``staging_root()`` for a run's workers' folders, named after this
    process (``prefix`` is one of ``STAGING_PREFIXES``)."""
    folder = tempfile.TemporaryDirectory(prefix=f"{prefix}{os.getpid()}-", dir=staging_root())
    # a worker of another uid passes through to its own folder (0700, its own) by path;
    # others may not list what is in it
    os.chmod(folder.name, 0o711)
    return folder


def sweep_stale_staging() -> None:
    """Remove the staging folders of graders that were killed before they could: their
    process has ended and nothing was made in them for ``STALE_AFTER_S``."""
    root = staging_root()
    if root is None:
        return
    now = time.time()
    for prefix in STAGING_PREFIXES:
        for path in Path(root).glob(f"{prefix}*-*"):
            try:
                stale = now - path.lstat().st_mtime > STALE_AFTER_S
            except OSError:
                continue
            if stale and _owner_ended(path.name[len(prefix):]):
                shutil.rmtree(path, ignore_errors=True)


def prepare_workdir(files: dict[str, Path], *, harness: bool = True) -> Path:
    """Make a fresh work directory: ``submission/<slug>.py`` copies and, for a worker started
    with ``subprocess`` (``harness``), the harness package it runs from (a worker forked by
    the fork server has the harness imported already)."""
    workdir = Path(tempfile.mkdtemp(prefix=f"grade-worker-{os.getpid()}-",
                                    dir=tempfile.tempdir or staging_root()))
    if harness:
        add_harness(workdir)
    sub = workdir / "submission"
    sub.mkdir()
    (workdir / "tmp").mkdir()
    for slug, path in files.items():
        if path.is_file():
            shutil.copyfile(path, sub / f"{slug}.py")
    return workdir


def add_harness(workdir: Path, uid: int | None = None) -> None:
    """Copy the harness package into ``workdir`` (owned by ``uid`` when given)."""
    shutil.copytree(HARNESS_SRC, workdir / HARNESS_NAME,
                    ignore=shutil.ignore_patterns("__pycache__"))
    if uid is not None:
        for path in [workdir / HARNESS_NAME, *(workdir / HARNESS_NAME).rglob("*")]:
            os.chown(path, uid, uid, follow_symlinks=False)


class Sandbox:
    """Starts one worker with every layer ``probe()`` found, and cleans up after it."""

    _counter = 0

    def __init__(self, device: str = "cpu") -> None:
        self.caps = probe()
        self.device = device
        self._cpuacct: str | None = None  # the cpuacct.usage file, once found ("" if none)
        Sandbox._counter += 1
        self.name = f"w{os.getpid()}-{Sandbox._counter}"
        self.uid = UID_BASE + (os.getpid() * 64 + Sandbox._counter) % 1_000_000 \
            if self.caps.drop_uid else None
        self.cgroups: list[Path] = []

    # -- cgroups ----------------------------------------------------------------------------
    def _make_cgroups(self) -> None:
        if not self.caps.cgroup:
            return
        for controller, settings in _CGROUP_SETTINGS.items():
            path = CGROUP_ROOT / controller / CGROUP_NAME / self.name
            if controller in _OPTIONAL_CONTROLLERS and not path.parent.is_dir():
                continue
            path.mkdir(exist_ok=True)
            for key, value in settings.items():
                try:
                    (path / key).write_text(str(value))
                except OSError:
                    if key != "memory.swappiness":
                        raise
            self.cgroups.append(path)

    def cpu_seconds(self) -> float | None:
        """CPU time the worker's whole tree has used so far (cpuacct), or None without it.
        Asked at every call's start: its file is found once, read without pathlib."""
        if self._cpuacct is None:
            self._cpuacct = next((str(path / "cpuacct.usage") for path in self.cgroups
                                  if (path / "cpuacct.usage").exists()), "")
        if not self._cpuacct:
            return None
        try:
            with open(self._cpuacct, "rb") as f:
                return int(f.read()) / 1e9
        except (OSError, ValueError):
            return None

    def out_of_memory(self) -> bool:
        """Whether the memory cgroup hit its limit (the kernel's OOM killer acted)."""
        for path in self.cgroups:
            control = path / "memory.oom_control"
            if control.exists() and "oom_kill 0" not in control.read_text():
                return "oom_kill" in control.read_text()
            failcnt = path / "memory.failcnt"
            if failcnt.exists() and failcnt.read_text().strip() not in ("", "0"):
                return True
        return False

    # -- the worker's start -----------------------------------------------------------------
    def launch(self, workdir: Path, request_fd: int, response_fd: int) -> LaunchSpec:
        self._make_cgroups()
        if self.uid is not None:
            os.chown(workdir, self.uid, self.uid)
            for path in workdir.rglob("*"):
                os.chown(path, self.uid, self.uid, follow_symlinks=False)
        bootstrap = (f"import sys; sys.path.insert(0, {str(workdir)!r}); "
                     f"from {HARNESS_NAME}.worker import main; main()")
        env = {k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ}
        env.update({
            "HOME": str(workdir), "TMPDIR": str(workdir / "tmp"), "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1", "MALLOC_ARENA_MAX": "2",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        })
        argv = [sys.executable, "-I", "-u", "-c", bootstrap,
                str(workdir / "submission"), str(request_fd), str(response_fd)]
        confinement = self.confinement(workdir)
        if confinement.seccomp:
            syscall_filter.program()  # compiled here, loaded by the child
        return LaunchSpec(argv=argv, env=env, cwd=workdir / "submission",
                          preexec_fn=lambda: confine.confine(confinement),
                          confinement=confinement)

    def confinement(self, workdir: Path) -> Confinement:
        """Every layer ``probe()`` found, for this worker in ``workdir`` (applied by
        ``harness/confine.py``)."""
        caps, cuda = self.caps, self.device.startswith("cuda")
        view = readable.worker_view(self.device)
        return Confinement(
            cpu_seconds=CPU_SECONDS, file_bytes=FILE_BYTES, open_files=OPEN_FILES,
            # a CUDA context reserves far more address space than any useful cap
            address_space_bytes=None if caps.cgroup or cuda else ADDRESS_SPACE,
            processes=PIDS, cgroups=tuple(str(p) for p in self.cgroups),
            namespaces=caps.netns, pid_namespace=caps.pidns, ipc_namespace=caps.ipcns,
            tmpfs_bytes=DISK_BYTES if caps.private_mounts else None,
            drop_capabilities=caps.no_privileges, seccomp=caps.seccomp,
            landlock_abi=caps.landlock_abi, readable=view.read, listable=view.list,
            workdir=str(workdir),
            devices=tuple(str(d) for d in Path("/dev").glob("nvidia*")) if cuda else (),
            uid=self.uid,
            reveal=readable.reveal_plan((*caps.uid_paths, str(workdir)))
            if self.uid is not None else ())

    # -- the end ----------------------------------------------------------------------------
    def kill_all(self, leader_pid: int | None) -> None:
        """Kill every process the worker started, including ones that left its session."""
        if leader_pid is not None:
            signal_group(leader_pid, signal.SIGKILL)
        for attempt in range(60):
            pids = self._tree_pids()
            if not pids:
                return
            signal_all(pids, signal.SIGKILL)
            _reap(pids)
            time.sleep(min(0.01, 0.0005 * 2 ** attempt))  # most trees are gone within 1 ms

    def _tree_pids(self) -> set[int]:
        pids: set[int] = set()
        for path in self.cgroups:
            try:
                pids |= {int(p) for p in (path / "cgroup.procs").read_text().split()}
            except OSError:
                pass
        if not self.cgroups:
            pids |= _orphans_of(os.getpid())
        pids.discard(os.getpid())
        return pids

    def cleanup(self) -> None:
        for path in self.cgroups:
            for _ in range(100):
                try:
                    path.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:
                    time.sleep(0.01)
        self.cgroups = []


_UNDELETABLE = 0x00000010 | 0x00000020  # FS_IMMUTABLE_FL, FS_APPEND_FL


def remove_workdir(path: Path) -> str | None:
    """Remove a worker's folder and check that it is gone. Whatever resists a plain removal
    (immutable or append-only flags, folders without write permission) is made removable
    and removed; None when the folder is gone, else what is left and why."""
    shutil.rmtree(path, ignore_errors=True)
    if not os.path.lexists(path):
        return None
    for entry in [path, *path.rglob("*")]:
        _make_removable(entry)
    errors: list[str] = []

    def note(_fn: object, where: str, exc: object) -> None:
        errors.append(f"{where}: {exc[1] if isinstance(exc, tuple) else exc}")

    if sys.version_info >= (3, 12):
        shutil.rmtree(path, onexc=note)
    else:
        shutil.rmtree(path, onerror=note)
    if not os.path.lexists(path):
        return None
    return f"the work folder {path} could not be removed: " + "; ".join(errors[:3])


def _make_removable(path: Path) -> None:
    import fcntl
    import struct

    try:
        if path.is_symlink():
            return
        if path.is_dir():
            os.chmod(path, 0o700)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return
    try:
        flags = struct.unpack("l", fcntl.ioctl(fd, syscall_filter.FS_IOC_GETFLAGS, b"\0" * 8))[0]
        if flags & _UNDELETABLE:
            fcntl.ioctl(fd, syscall_filter.FS_IOC_SETFLAGS, struct.pack("l", flags & ~_UNDELETABLE))
    except OSError:
        pass
    finally:
        os.close(fd)


def signal_all(pids: set[int], signum: int) -> None:
    """Send ``signum`` to each of ``pids``; one that is gone already is skipped."""
    for pid in pids:
        try:
            os.kill(pid, signum)
        except (ProcessLookupError, PermissionError):
            pass


def signal_group(pgid: int, signum: int) -> None:
    """Send ``signum`` to the process group ``pgid``, if it still exists."""
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def _reap(pids: set[int]) -> None:
    """Collect killed orphans that were adopted by us (the subreaper): no zombies linger."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


_KNOWN_CHILDREN: set[int] = set()


def register_child(pid: int, alive: bool) -> None:
    """Workers and other children the grader started itself are never taken for orphans."""
    (_KNOWN_CHILDREN.add if alive else _KNOWN_CHILDREN.discard)(pid)


def _orphans_of(parent: int) -> set[int]:
    """Children of ``parent`` it did not start: learner processes re-parented to it."""
    import multiprocessing

    known = _KNOWN_CHILDREN | {p.pid for p in multiprocessing.active_children()}
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        if ppid == parent and int(entry.name) not in known:
            found.add(int(entry.name))
    return found
