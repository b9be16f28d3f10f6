"""torch only where it is needed: a release of numpy-only exercises installs and grades without
torch; grading an exercise that needs torch where there is none is a one-line usage error."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest

from grader import catalog
from grader.commands.common import resolve_device

GRADE = str(Path(sys.executable).with_name("grade"))


def _run(*args: str, cwd: Path | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})


def test_the_pack_says_it_needs_torch_before_anything_is_installed():
    """`python3 -m grader.catalog needs-torch` (what ./dev and setup.sh ask) runs on the
    standard library alone: exit 0 for this pack, which has torch exercises."""
    done = _run(sys.executable, "-m", "grader.catalog", "needs-torch",
                cwd=catalog.PROJECT_DIR)
    assert done.returncode == 0, done.stderr
    assert catalog.pack_needs_torch()


def test_a_torch_exercise_without_torch_is_a_usage_error(monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "torch" else real(name, *a))
    with pytest.raises(click.UsageError) as raised:
        resolve_device("auto", ["grid_local_mask", "patch_vit"])
    assert str(raised.value.message).startswith("patch_vit needs torch, which this Python does "
                                                "not have: pip install torch==2.13.0 ")
    assert "--index-url https://download.pytorch.org/whl/cpu" in raised.value.message
    assert resolve_device("auto", ["grid_local_mask"]) == "cpu"  # numpy-only: no torch asked


def test_a_numpy_only_release_installs_and_grades_without_torch(tmp_path):
    assignment = tmp_path / "assignment.toml"
    assignment.write_text('title = "Masks"\nexercises = ["grid_local_mask"]\n')
    made = _run(GRADE, "release", "--assignment", str(assignment), str(tmp_path / "student"))
    assert made.returncode == 0, made.stderr
    student = tmp_path / "student"
    asked = _run(sys.executable, "-m", "grader.catalog", "needs-torch", cwd=student)
    assert asked.returncode == 1, asked.stderr     # what its ./dev setup asks: no torch
    env = tmp_path / "venv"
    for step in ([sys.executable, "-m", "venv", str(env)],
                 [str(env / "bin/python"), "-m", "pip", "install", "-q", str(student)]):
        done = _run(*step)
        assert done.returncode == 0, done.stderr[-2000:]
    probe = _run(str(env / "bin/python"), "-c", "import torch")
    assert probe.returncode == 1 and "No module named 'torch'" in probe.stderr
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "grid_local_mask.py").write_text(
        catalog.get("grid_local_mask").solution.read_text())
    graded = _run(str(env / "bin/grade"), "--submission", str(tmp_path / "work"),
                  "--report-dir", str(tmp_path / "report"), cwd=student)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    assert "passed" in graded.stdout
