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


@pytest.mark.skipif(not isolation.probe().ipcns, reason="no IPC namespace on this machine")
def test_every_worker_has_ipc_and_uts_namespaces_of_its_own(tmp_path):
    seen = []
    for run in range(2):
        (tmp_path / str(run)).mkdir()
        result = grade_source(tmp_path / str(run), "grid_local_mask", LEARNER)
        lines = [ln for t in result.tests for ln in t.output.splitlines()
                 if ln.startswith("NS ")]
        assert lines, [t.message for t in result.tests]
        seen.append(lines[0].split()[1:3])
    ours = [os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/uts")]
    for ipc, uts in seen:
        assert ipc != ours[0] and uts != ours[1]
    assert seen[0][0] != seen[1][0]  # two workers, two IPC namespaces


@pytest.mark.skipif(not isolation.probe().drop_uid, reason="workers keep the grader's uid here")
def test_every_worker_runs_as_a_uid_of_its_own(tmp_path):
    uids = []
    for run in range(2):
        (tmp_path / str(run)).mkdir()
        result = grade_source(tmp_path / str(run), "grid_local_mask", LEARNER)
        line = next(ln for t in result.tests for ln in t.output.splitlines()
                    if ln.startswith("NS "))
        uid, gid, groups = line.split(" ", 5)[3:]
        assert int(uid) >= isolation.UID_BASE and gid == uid and groups == "[]", line
        uids.append(uid)
    assert uids[0] != uids[1]
