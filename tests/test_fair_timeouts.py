"""A timeout is judged fairly: a call that ran out of wall time while its worker waited for a
CPU taken by load it did not cause is sent once more to a fresh worker; a call that sleeps,
or that its own processes slow down, is a timeout at once."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from grader.sandbox import faults, isolation
from grader.sandbox.process import WorkerProcess

COMPUTE = "def work(seconds):\n    import time\n    end = time.process_time() + seconds\n" \
          "    while time.process_time() < end:\n        pass\n    return 'done'\n"
SLEEP = "def work(seconds):\n    import time\n    time.sleep(1000)\n"

can_starve = pytest.mark.skipif(
    os.geteuid() != 0 or os.cpu_count() < 2 or not isolation.probe().pidns,
    reason="needs root (a real-time competitor), 2 CPUs and the worker's PID namespace")


def _worker(tmp_path, source: str) -> WorkerProcess:
    (tmp_path / "m.py").write_text(source)
    worker = WorkerProcess({"m": tmp_path / "m.py"})
    worker.start()
    return worker


def _competitor(cpu: int, seconds: float) -> subprocess.Popen:
    """A real-time busy loop on ``cpu`` for ``seconds``: a CFS task there gets only what RT
    throttling leaves (5% by default)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time\n"
                             f"end = time.monotonic() + {seconds}\n"
                             "while time.monotonic() < end:\n    pass"])
    os.sched_setaffinity(proc.pid, {cpu})
    os.sched_setscheduler(proc.pid, os.SCHED_FIFO, os.sched_param(1))
    return proc


@can_starve
def test_a_call_starved_by_someone_else_is_retried_once(tmp_path):
    worker = _worker(tmp_path, COMPUTE)
    competitor = None
    try:
        worker.request("call", module="m", func="work", args=(0.01,), timeout=5)  # imported
        os.sched_setaffinity(worker._main_pid(), {0})
        competitor = _competitor(0, 3.5)
        # pinned beside the competitor, the worker gets what RT throttling leaves (about 5% of
        # CPU 0: 0.15 s of the 3 s) and times out; the competitor is gone by then (it spins
        # for 3.5 s, from before the call), and the fresh worker, not pinned, has 3 s for
        # 0.25 s of CPU: enough on a machine whose cores are both busy with other work
        reply = worker.request("call", module="m", func="work", args=(0.25,), timeout=3)
        assert reply.value == "done"
        assert worker.starved_retries == 1
    finally:
        if competitor is not None:
            competitor.kill()
            competitor.wait()
        worker.stop()


def test_a_call_that_sleeps_times_out_at_once(tmp_path):
    """A sleeping call waits for no CPU, whatever the machine's load: no retry."""
    worker = _worker(tmp_path, SLEEP)
    try:
        with pytest.raises(faults.TimedOut):
            worker.request("call", module="m", func="work", args=(30,), timeout=1.5)
        assert worker.starved_retries == 0  # not sent a second time
    finally:
        worker.stop()


@pytest.mark.parametrize("waited, used, starved", [
    (0.9, 0.95, False),  # its own busy processes took its CPU: its own fault
    (0.9, 0.05, True),   # it waited for a CPU and used almost none: someone else's load
    (0.0, 0.0, False),   # it slept: no CPU wanted, none waited for
    (0.4, 0.05, False),  # waited under half its time: not starved
])
def test_starved_means_it_waited_for_a_cpu_and_used_little(tmp_path, monkeypatch, waited,
                                                            used, starved):
    """The decision behind a retry, on a fake clock: over one second of wall time the call's
    main process waited ``waited`` s for a CPU and its tree used ``used`` s of CPU. (End to
    end, a call slowed by its own processes is slowed more on a loaded machine, which can
    starve it too: its outcome there is the load's, so the decision is tested here.)"""
    from grader.sandbox import process

    worker = WorkerProcess({"m": tmp_path / "m.py"})
    monkeypatch.setattr(process.time, "monotonic", lambda: 101.0)
    monkeypatch.setattr(process, "_run_delay", lambda pid: waited)
    monkeypatch.setattr(worker, "_tree_cpu", lambda: used)
    monkeypatch.setattr(worker, "_main_pid", lambda: 1)
    assert worker._was_starved((100.0, 0.0, 0.0)) is starved


SPIN_WALL = ("def work(seconds):\n    import os, time\n    for _ in range(3):\n"
             "        if os.fork() == 0:\n            while True:\n                pass\n"
             "    end = time.monotonic() + seconds\n    while time.monotonic() < end:\n"
             "        pass\n    return 'done'\n")


@pytest.mark.skipif(os.cpu_count() < 2, reason="one CPU is all there is")
def test_a_worker_tree_gets_one_cpu_at_most(tmp_path):
    """Four busy processes of one worker share one CPU (the cgroup's quota, or the grader's
    sampling where there is no cgroup)."""
    worker = _worker(tmp_path, SPIN_WALL)
    try:
        cpu0, t0 = worker._tree_cpu(), time.monotonic()
        assert worker.request("call", module="m", func="work", args=(2.0,), timeout=10).value \
            == "done"
        used, wall = worker._tree_cpu() - cpu0, time.monotonic() - t0
        assert used / wall < 1.3, (used, wall)
        if worker._watch is not None:  # (on a loaded machine the ratio alone proves little)
            assert worker._watch.throttled_s > 0
        else:
            cpu = [p for p in worker.sandbox.cgroups if p.parent.parent.name == "cpu"]
            assert cpu and (cpu[0] / "cpu.cfs_quota_us").read_text().strip() == \
                (cpu[0] / "cpu.cfs_period_us").read_text().strip()
    finally:
        worker.stop()
