"""Each worker has IPC and UTS namespaces of its own: no System V object it makes is seen by
another worker or outlives it, and its host name is its own. Where the grader is root and
workers can be another uid, each is one of its own."""

from __future__ import annotations

import os

import pytest
from conftest import grade_source

from grader.sandbox import isolation
from grader.sandbox.process import WorkerProcess

LEARNER = """
import os

def grid_local_mask(*args, **kwargs):
    print("NS", os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/uts"), os.getuid(),
          os.getgid(), os.getgroups())
    raise RuntimeError("a look around, not an answer")
"""


@pytest.fixture(scope="module")
def looks(tmp_path_factory) -> list[list[str]]:
    """What two workers, of two gradings, printed of themselves: ``[ipc, uts, uid, gid,
    groups]`` each."""
    seen = []
    for run in range(2):
        folder = tmp_path_factory.mktemp(f"run{run}")
        result = grade_source(folder, "grid_local_mask", LEARNER)
        lines = [ln for t in result.tests for ln in t.output.splitlines()
                 if ln.startswith("NS ")]
        assert lines, [t.message for t in result.tests]
        seen.append(lines[0].split(" ", 5)[1:])
    return seen


@pytest.mark.skipif(not isolation.probe().ipcns, reason="no IPC namespace on this machine")
def test_every_worker_has_ipc_and_uts_namespaces_of_its_own(looks):
    ours = [os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/uts")]
    for ipc, uts, *_ in looks:
        assert ipc != ours[0] and uts != ours[1]


@pytest.mark.skipif(not isolation.probe().ipcns, reason="no IPC namespace on this machine")
def test_two_workers_alive_at_once_have_two_ipc_namespaces(tmp_path):
    """(Alive at once: a namespace's number is reused once its last process has ended.)"""
    (tmp_path / "m.py").write_text("import os\n\ndef ns():\n"
                                   "    return os.readlink('/proc/self/ns/ipc')\n")
    workers = [WorkerProcess({"m": tmp_path / "m.py"}) for _ in range(2)]
    try:
        seen = [w.request("call", module="m", func="ns", timeout=30).value for w in workers]
    finally:
        for w in workers:
            w.stop()
    assert seen[0] != seen[1] and seen[0].startswith("ipc:[")


@pytest.mark.skipif(not isolation.probe().drop_uid, reason="workers keep the grader's uid here")
def test_every_worker_runs_as_a_uid_of_its_own(looks):
    for _, _, uid, gid, groups in looks:
        assert int(uid) >= isolation.UID_BASE and gid == uid and groups == "[]", looks
    assert looks[0][2] != looks[1][2]
