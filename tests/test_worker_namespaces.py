"""Each worker has IPC and UTS namespaces of its own: no System V object it makes is seen by
another worker or outlives it, and its host name is its own. Where the grader is root and
workers can be another uid, each is one of its own."""

from __future__ import annotations

import os

import pytest
from conftest import grade_source

from grader.sandbox import isolation

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
    assert looks[0][0] != looks[1][0]  # two workers, two IPC namespaces


@pytest.mark.skipif(not isolation.probe().drop_uid, reason="workers keep the grader's uid here")
def test_every_worker_runs_as_a_uid_of_its_own(looks):
    for _, _, uid, gid, groups in looks:
        assert int(uid) >= isolation.UID_BASE and gid == uid and groups == "[]", looks
    assert looks[0][2] != looks[1][2]
