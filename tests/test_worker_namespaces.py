"""Each worker has IPC and UTS namespaces of its own: no System V object it makes is seen by
another worker or outlives it, and its host name is its own."""

from __future__ import annotations

import os

import pytest
from conftest import grade_source

from grader.sandbox import isolation

LEARNER = """
import os

def grid_local_mask(*args, **kwargs):
    print("NS", os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/uts"))
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
        seen.append(lines[0].split()[1:])
    ours = [os.readlink("/proc/self/ns/ipc"), os.readlink("/proc/self/ns/uts")]
    for ipc, uts in seen:
        assert ipc != ours[0] and uts != ours[1]
    assert seen[0][0] != seen[1][0]  # two workers, two IPC namespaces
