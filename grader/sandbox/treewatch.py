"""A worker's memory, process and CPU budget where no cgroup enforces them: sampled by the
grader.

A worker forked from a warm server starts with the server's pages already counted in its
RSS (a fresh torch maps ~640 MiB), and a CUDA context reserves far more address space than
any RLIMIT_AS would allow. So the memory budget is what the worker's process tree *adds* to
its resident memory after it said it was ready. Without a pids cgroup, and as
root (RLIMIT_NPROC does not bind root), nothing else stops a fork bomb: the tree's processes
are counted too. Over either budget the tree is killed and the crash says why. CPU: a tree
that used more than one CPU's worth of time since the last sample is stopped (SIGSTOP) for
the excess, then resumed, so its processes together get about one CPU, as a cgroup's CPU
quota would give them.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

from .faults import CrashCause
from .isolation import signal_all, signal_group

PAGE = os.sysconf("SC_PAGE_SIZE")
TICK = os.sysconf("SC_CLK_TCK")
INTERVAL_S = 0.05


def tree_pids(pid: int, limit: int = 100_000) -> list[int]:
    """``pid`` and its descendants, through /proc/<pid>/task/<tid>/children."""
    found, todo = [], [pid]
    while todo and len(found) < limit:
        current = todo.pop()
        found.append(current)
        try:
            for task in Path(f"/proc/{current}/task").iterdir():
                todo += [int(c) for c in (task / "children").read_text().split()]
        except (OSError, ValueError):
            continue
    return found


def memory_bytes(pids: list[int]) -> int:
    """Resident memory of ``pids`` summed (from /proc/<pid>/statm, which never waits for a
    process's memory-map lock, unlike smaps: a fork bomb holds those locks). Pages shared
    between forked processes count in each: an upper bound, so the budget errs towards
    killing a forking learner sooner, never later."""
    total = 0
    for pid in pids:
        try:
            total += int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
        except (OSError, ValueError, IndexError):
            continue
    return total


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) of one process so far, 0 when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        fields = stat[stat.rindex(")") + 2:].split()
        return (int(fields[11]) + int(fields[12])) / TICK
    except (OSError, ValueError, IndexError):
        return 0.0


class TreeWatch(threading.Thread):
    """Kills the tree of ``pid`` once it holds more than ``max_procs`` processes or its memory
    grows more than ``max_growth`` bytes over the start.

    ``cause`` says which budget it enforced (None while it has not acted).
    """

    def __init__(self, pid: int, *, max_growth: int, max_procs: int,
                 max_cpus: float = 1.0) -> None:
        super().__init__(daemon=True)
        self.pid, self.max_growth, self.max_procs = pid, max_growth, max_procs
        self.max_cpus = max_cpus
        self.baseline = memory_bytes(tree_pids(pid))
        self.cause: CrashCause | None = None
        self.cpu_seconds = 0.0  # CPU time the tree used while watched (ended processes too)
        self.throttled_s = 0.0
        self._seen: dict[int, float] = {}
        self._halt = threading.Event()

    def run(self) -> None:
        last = time.monotonic()
        while not self._halt.wait(INTERVAL_S):
            pids = tree_pids(self.pid, limit=self.max_procs + 1)
            if len(pids) > self.max_procs:
                self.cause = CrashCause.PROCESSES
            elif memory_bytes(pids) - self.baseline > self.max_growth:
                self.cause = CrashCause.OUT_OF_MEMORY
            else:
                now = time.monotonic()
                used = self._count_cpu(pids)
                excess = used - self.max_cpus * (now - last)
                if excess > 0.01:
                    self._pause(pids, min(excess / self.max_cpus, 1.0))
                last = time.monotonic()
                continue
            self._kill()
            return

    def _count_cpu(self, pids: list[int]) -> float:
        """CPU time the tree used since the last sample (new processes count from 0)."""
        used, seen = 0.0, {}
        for pid in pids:
            seen[pid] = cpu_seconds(pid)
            used += max(0.0, seen[pid] - self._seen.get(pid, 0.0))
        self._seen = seen
        self.cpu_seconds += used
        return used

    def _pause(self, pids: list[int], seconds: float) -> None:
        """Stop the tree for ``seconds`` (it used more than its CPUs' worth), then resume it."""
        signal_all(set(pids), signal.SIGSTOP)
        self._halt.wait(seconds)
        signal_all(set(tree_pids(self.pid)) | set(pids), signal.SIGCONT)
        self.throttled_s += seconds

    def _kill(self) -> None:
        """Stop the whole tree first (a stopped process cannot fork, and its children stay
        findable under it), then kill it: none is orphaned out of reach holding the pipe."""
        signal_group(self.pid, signal.SIGSTOP)  # the worker leads its own process group
        stopped: set[int] = set()
        for _ in range(100):
            new = set(tree_pids(self.pid)) - stopped
            if not new:
                break
            signal_all(new, signal.SIGSTOP)
            stopped |= new
        signal_all(stopped, signal.SIGKILL)
        signal_group(self.pid, signal.SIGKILL)

    def stop(self) -> None:
        self._halt.set()
