"""`grade doctor --require strict`, which CI runs before the tests: a machine that lost a layer
fails, naming it, instead of passing with the sandbox's tests skipped."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from grader.sandbox import isolation

GRADE = str(Path(sys.executable).with_name("grade"))


def _doctor(**env: str) -> subprocess.CompletedProcess:
    return subprocess.run([GRADE, "doctor", "--require", "strict"], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})


@pytest.mark.skipif(isolation.probe().level != "strict", reason="this machine is not strict")
def test_a_strict_machine_passes():
    done = _doctor()
    assert done.returncode == 0 and "Isolation level: strict" in done.stdout


def test_a_layer_turned_off_fails_and_names_it():
    done = _doctor(GRADER_SECCOMP="0")
    assert done.returncode == 1
    assert "seccomp            not available (turned off (GRADER_SECCOMP=0))" in done.stdout
    assert "missing: a seccomp filter" in done.stdout
