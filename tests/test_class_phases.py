"""Public before hidden, class-wide: in ``grade bulk`` at ``graded`` (local pool and Dask
alike) every submission's public tests end before any submission's hidden test starts, so no
channel between workers (locks, the page cache, memory counters, timing, one nobody has found
yet) can carry a hidden input of the run into what a public test shows.

The generic proof is the order itself: a conftest in a copy of the project logs, from the
grading processes, when each test starts and ends (``CLOCK_MONOTONIC``, one clock for every
process of the machine); the hidden tests' first start comes after the public tests' last end.
The specific one: a classmate's public test, probing the channels of the third attack round,
shows the same output whether the other submission's hidden calls attack or not.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_of_this_project

from grader import catalog

SLUG = "grid_local_mask"

LOG = '''
import os
import time

_START = {}


def _visibility(item):
    marker = item.get_closest_marker("grading")
    return "public" if marker and marker.kwargs.get("visibility") == "public" else "hidden"


def pytest_runtest_setup(item):
    _START[item.nodeid] = time.monotonic_ns()


def pytest_runtest_teardown(item):
    path = os.environ.get("CLASS_PHASES_LOG")
    if path:
        line = f"{_visibility(item)} {_START.pop(item.nodeid, 0)} {time.monotonic_ns()}\\n"
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, line.encode())
        finally:
            os.close(fd)
'''

# A's hidden calls (those after its public test: the first call is public) use the channels
# of the third round: a record lock on a library every worker may read, a work folder filled
# (tmpfs: /proc/meminfo's Shmem), a library read again and again (the page cache).
ATTACK = '''

import fcntl as _fcntl
import numpy as _np_mod
import os as _os

_CALLS = [0]
_LIB = _os.path.join(_os.path.dirname(_np_mod.__file__), "__init__.py")
_inner = grid_local_mask


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    _CALLS[0] += 1
    if _CALLS[0] > 1:
        try:
            fd = _os.open(_LIB, _os.O_RDONLY)
            _fcntl.fcntl(fd, 37, bytes(32))  # F_OFD_SETLK
        except OSError:
            pass
        try:
            with open("fill.bin", "wb") as f:
                f.write(b"x" * (H_p * W_p * radius * 4096))
        except OSError:
            pass
        for _ in range(20):
            with open(_LIB, "rb") as f:
                f.read()
    return _inner(H_p, W_p, radius, n_prefix)
'''

# B's public test prints what the channels show it (its calls are all probes).
PROBE = '''

import fcntl as _fcntl
import numpy as _np_mod
import os as _os
import struct as _struct

_LIB = _os.path.join(_os.path.dirname(_np_mod.__file__), "__init__.py")
_inner = grid_local_mask


def _probe():
    seen = []
    try:
        fd = _os.open(_LIB, _os.O_RDONLY)
        lock = _struct.pack("hhqqi4x", _fcntl.F_WRLCK, 0, 0, 0, 0)
        seen.append(f"lock {_struct.unpack('hhqqi4x', _fcntl.fcntl(fd, 36, lock))[0]}")
    except OSError as exc:
        seen.append(f"lock refused {exc.errno}")
    try:
        with open("/proc/meminfo") as f:
            seen.append("meminfo " + [x for x in f if x.startswith("Shmem:")][0].split()[1])
    except OSError as exc:
        seen.append(f"meminfo refused {exc.errno}")
    return " | ".join(seen)


def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    print("PROBE", _probe())
    return _inner(H_p, W_p, radius, n_prefix)
'''


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """A copy of the project whose suites log each test's start and end."""
    copy = copy_of_this_project(tmp_path_factory.mktemp("phases") / "project", fresh=True)
    (copy / "grader" / "suites" / "conftest.py").write_text(LOG)
    return copy


def _class(root: Path, attack: bool) -> Path:
    """Four submissions: A (attacking in its hidden calls, or not), B (probing in its public
    test), and two plain references."""
    reference = catalog.get(SLUG).solution.read_text()
    for name, extra in (("a", ATTACK if attack else ""), ("b", PROBE), ("c", ""), ("d", "")):
        (root / name).mkdir(parents=True)
        (root / name / f"{SLUG}.py").write_text(reference + extra)
    return root


def _bulk(project: Path, klass: Path, out: Path, log: Path, *extra: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(project), "CLASS_PHASES_LOG": str(log),
           "HOME": str(klass.parent)}
    done = subprocess.run([sys.executable, "-m", "grader", "bulk", str(klass), "--out",
                           str(out), "--feedback", "graded", "--quiet", *extra],
                          cwd=klass.parent, env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


def _spans(log: Path) -> dict[str, list[tuple[int, int]]]:
    spans: dict[str, list[tuple[int, int]]] = {"public": [], "hidden": []}
    for line in log.read_text().splitlines():
        kind, start, end = line.split()
        spans[kind].append((int(start), int(end)))
    return spans


@pytest.mark.parametrize("where", [["--workers", "2"], ["--scheduler", "local:2"]],
                         ids=["local_pool", "dask"])
def test_every_public_test_of_the_class_ends_before_any_hidden_test_starts(project, tmp_path,
                                                                           where):
    if where[0] == "--scheduler":
        pytest.importorskip("distributed")
    log = tmp_path / "phases.log"
    _bulk(project, _class(tmp_path / "class", attack=True), tmp_path / "out", log, *where)
    spans = _spans(log)
    assert len(spans["public"]) % 4 == 0 and len(spans["hidden"]) % 4 == 0  # the 4 of them
    assert spans["public"] and spans["hidden"]
    assert max(end for _, end in spans["public"]) < min(start for start, _ in spans["hidden"])


def test_grade_submission_keeps_one_worker_and_its_own_order(project, tmp_path):
    """``grade --submission``: public tests first, then hidden ones, in one run."""
    log = tmp_path / "phases.log"
    sub = _class(tmp_path / "class", attack=False) / "c"
    env = {**os.environ, "PYTHONPATH": str(project), "CLASS_PHASES_LOG": str(log),
           "HOME": str(tmp_path)}
    subprocess.run([sys.executable, "-m", "grader", "run", "--submission", str(sub),
                    "--feedback", "graded", "--report-dir", str(tmp_path / "r"), SLUG],
                   cwd=tmp_path, env=env, capture_output=True, timeout=600)
    spans = _spans(log)
    assert max(end for _, end in spans["public"]) < min(start for start, _ in spans["hidden"])


def test_a_classmates_public_output_is_the_same_whatever_hidden_calls_do(project, tmp_path):
    """B's public test probes a record lock on a library, /proc/meminfo and what it prints;
    A's hidden calls lock that library, fill their work folder and read the library again and
    again, or do nothing of the kind: B's report is the same bytes."""
    import json

    shown = []
    for attack in (False, True):
        root = tmp_path / ("attack" if attack else "quiet")
        _bulk(project, _class(root / "class", attack=attack), root / "out",
              root / "phases.log", "--workers", "2")
        report = json.loads((root / "out" / "b" / "results.json").read_text())
        public = [t for e in report["exercises"] for t in e["tests"]
                  if t["visibility"] == "public"]
        assert public and all("PROBE" in t["output"] for t in public)
        shown.append([(t["name"], t["status"], t["message"], t["output"]) for t in public])
    assert shown[0] == shown[1]
    assert "lock refused" in shown[0][0][3] and "meminfo refused" in shown[0][0][3]
