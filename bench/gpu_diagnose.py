"""Which confinement layer stops CUDA in a worker, and which path does Landlock have to allow?

Run by hand on a GPU machine (``bench/gpu_check.sh`` does). Forks children from a parent that
imported torch (never CUDA), confines each and starts CUDA there. Prints one line per layer,
then searches the paths CUDA needs beyond the worker's Landlock rules: leave-one-out over the
top-level folders (every other one allowed in full), then over the children of each one found.
Learner code is not involved.

``--seccomp-log SINCE`` instead reads kernel log lines on stdin (``dmesg``, audit.log) and
prints the system calls that seccomp logged since the epoch second ``SINCE`` (a worker run with
``GRADER_SECCOMP_LOG=1``): the ones the allow-list lacks, and its explicit refusals.
"""

from __future__ import annotations

import collections
import os
import re
import resource
import select
import sys
import tempfile
from pathlib import Path

import torch

from grader.sandbox import isolation
from grader.sandbox.harness import confine, landlock, syscall_filter
from grader.sandbox.harness.confinement import Confinement

_AUDIT = re.compile(r"audit\((\d+)\.\d+:\d+\).*?\bpid=(\d+).*?\bexe=(\S+).*?\bsyscall=(\d+)"
                    r".*?\bcode=(0x[0-9a-f]+)")


def seccomp_log(lines: list[str], since: int) -> None:
    """The seccomp records (audit type 1326) in ``lines`` from ``since`` on, by system call:
    code 0x7ffc0000 is a call the filter lacks (logged, then allowed), 0x50000 a refusal."""
    sc = syscall_filter._library()[0]
    found: collections.Counter = collections.Counter()
    suppressed = 0
    for line in lines:
        if "callbacks suppressed" in line:
            suppressed += int(re.search(r"(\d+) callbacks suppressed", line).group(1))
        m = _AUDIT.search(line)
        if not m or ("type=1326" not in line and "SECCOMP" not in line) or int(m[1]) < since:
            continue
        number = int(m[4])
        try:
            name = sc.resolve_syscall(sc.system_arch(), number).decode() if sc else str(number)
        except (OSError, ValueError):
            name = str(number)
        kind = "not on the list" if m[5] == "0x7ffc0000" else "refused"
        found[(kind, name, number, Path(m[3].strip('"')).name)] += 1
    if not found:
        print("seccomp: nothing logged: every call of the run is on the allow-list")
    for (kind, name, number, exe), count in sorted(found.items()):
        print(f"seccomp {kind}: {name} ({number}) x{count} by {exe}")
    if suppressed:
        print(f"({suppressed} kernel log lines were suppressed by rate limiting: rerun to see "
              "them all)")
    print("an ioctl not on the list shows as syscall 16: strace -f -e trace=ioctl a worker for "
          "its request number")


def _child(apply) -> str:
    try:
        apply()
        x = torch.ones(256, device="cuda")
        return f"ok (sum {float(x.sum())})"
    except BaseException as exc:  # noqa: BLE001 - report anything
        return f"FAILED: {type(exc).__name__}: {str(exc)[-120:]}"


def run_many(applies: list) -> list[str]:
    """Each ``apply`` in its own forked child, 12 at a time; the children's one-line verdicts."""
    results: list[str] = [""] * len(applies)
    todo, running = list(enumerate(applies)), {}
    while todo or running:
        while todo and len(running) < 12:
            i, apply = todo.pop(0)
            r, w = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(r)
                os.write(w, _child(apply).encode())
                os._exit(0)
            os.close(w)
            running[r] = (i, pid, b"")
        ready, _, _ = select.select(list(running), [], [], 60)
        if not ready:
            for fd, (i, pid, _) in running.items():
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                os.close(fd)
                results[i] = "FAILED: hung"
            running.clear()
        for r in ready:
            i, pid, got = running[r]
            chunk = os.read(r, 4096)
            if chunk:
                running[r] = (i, pid, got + chunk)
                continue
            os.close(r)
            os.waitpid(pid, 0)
            results[i] = got.decode()
            del running[r]
    return results


def landlocked(spec: Confinement, extra: list[tuple[str, int]], abi: int | None = None):
    """The worker's Landlock rules (as ``confine.confine`` made them for CPU workers) plus
    ``extra`` (``{pid}`` in a path is the child's pid)."""
    def apply() -> None:
        ruleset = landlock.Ruleset(abi or spec.landlock_abi)
        for root in spec.readable:
            ruleset.allow(root, landlock.READ)
        ruleset.allow(f"/proc/{os.getpid()}", landlock.READ)
        ruleset.allow("/dev/null", landlock.READ | landlock.WRITE_FILE)
        ruleset.allow(spec.workdir, landlock.all_fs(ruleset.abi))
        for dev in spec.devices:
            ruleset.allow(dev, landlock.READ | landlock.WRITE_FILE | landlock.IOCTL_DEV)
        for path, access in extra:
            ruleset.allow(path.format(pid=os.getpid()), access)
        ruleset.restrict_self()
    return apply


def children(path: str) -> list[str]:
    try:
        names = sorted(os.listdir(path))
    except OSError:
        return []
    return [os.path.join(path, n) for n in names if not (path == "/proc" and n.isdigit())]


def leave_one_out(spec: Confinement, fixed: list[str], candidates: list[str]) -> list[str]:
    """The candidates without which CUDA fails (all others and ``fixed`` allowed in full)."""
    full = landlock.all_fs(spec.landlock_abi)
    verdicts = run_many([landlocked(spec, [(p, full) for p in fixed + candidates if p != c])
                         for c in candidates])
    return [c for c, v in zip(candidates, verdicts) if not v.startswith("ok")]


def main() -> None:
    if sys.argv[1:2] == ["--seccomp-log"]:
        seccomp_log(sys.stdin.read().splitlines(), int(sys.argv[2]))
        return
    workdir = tempfile.mkdtemp(prefix="gpu-diagnose-")
    sandbox = isolation.Sandbox("cuda")
    spec = sandbox.confinement(Path(workdir))
    print("layers:", [layer.name for layer in sandbox.caps.layers if layer.active])
    print("devices:", spec.devices)
    if not spec.landlock_abi:
        print("no Landlock here")
        return

    def address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (isolation.ADDRESS_SPACE,) * 2)

    full = landlock.all_fs(spec.landlock_abi)
    cases = {"nothing": lambda: None, "RLIMIT_AS 8 GiB": address_space,
             "netns": lambda: confine.enter_netns(spec.namespaces) if spec.namespaces else None,
             "worker's landlock": landlocked(spec, []),
             "worker's landlock, no scopes (ABI 5)": landlocked(spec, [], abi=5),
             "+ / read": landlocked(spec, [("/", landlock.READ)]),
             "+ / full": landlocked(spec, [("/", full)]),
             "+ /proc/self read, write": landlocked(
                 spec, [("/proc/self", landlock.READ | landlock.WRITE_FILE)]),
             "+ /proc/self read, write, truncate": landlocked(
                 spec, [("/proc/self", landlock.READ | landlock.WRITE_FILE | landlock.TRUNCATE)]),
             "+ /proc/<pid> read, write": landlocked(
                 spec, [("/proc/{pid}", landlock.READ | landlock.WRITE_FILE)]),
             "+ /dev full": landlocked(spec, [("/dev", full)]),
             "+ /proc read": landlocked(spec, [("/proc", landlock.READ)]),
             "+ /proc/devices, /proc/modules, /sys/module read": landlocked(
                 spec, [(p, landlock.READ) for p in ("/proc/devices", "/proc/modules",
                                                       "/sys/module")]),
             "the CPU seccomp profile": lambda: syscall_filter.install(),
             "the GPU seccomp profile": lambda: syscall_filter.install(gpu=True),
             "the worker's whole spec (GPU seccomp profile)": lambda: confine.confine(spec)}
    verdicts = dict(zip(cases, run_many(list(cases.values()))))
    for name, verdict in verdicts.items():
        print(f"{name:50s} {verdict}", flush=True)
    if not (verdicts["nothing"].startswith("ok") and verdicts["+ / full"].startswith("ok")
            and not verdicts["worker's landlock"].startswith("ok")):
        return
    top = children("/")
    needed = leave_one_out(spec, [], top)
    print("needed top-level folders:", needed, flush=True)
    for folder in needed:
        others = [p for p in top if p != folder]
        inner = children(folder)
        if not inner or len(inner) > 80:
            print(f"{folder}: {len(inner)} entries, not searched")
            continue
        print(f"needed inside {folder}:", leave_one_out(spec, others, inner), flush=True)


if __name__ == "__main__":
    main()
