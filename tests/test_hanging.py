"""A file that hangs costs two call limits, not one per test: after two timed-out calls of an
exercise, its remaining tests are not run, reported as such, and score nothing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from grader import catalog

GRADE = str(Path(sys.executable).with_name("grade"))
HANGS = "def grid_local_mask(H_p, W_p, radius, n_prefix=1):\n    while True:\n        pass\n"


def test_a_class_with_a_hanging_file_stops_calling_it_after_two_timeouts(tmp_path):
    class_dir = tmp_path / "class"
    for sid, source in [("ada", catalog.get("grid_local_mask").solution.read_text()),
                        ("bob", HANGS)]:
        (class_dir / sid).mkdir(parents=True)
        (class_dir / sid / "grid_local_mask.py").write_text(source)
    task = tmp_path / "a.toml"
    task.write_text('title = "W1"\nexercises = ["grid_local_mask"]\nfeedback = "full"\n'
                    '[limits]\ncall_seconds = 1\n')
    out = tmp_path / "out"
    run = subprocess.run([GRADE, "bulk", str(class_dir), "--out", str(out), "--assignment",
                          str(task), "-q"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr

    ada = json.loads((out / "ada" / "results.json").read_text())
    assert ada["score"] == ada["max_score"] > 0
    bob = json.loads((out / "bob" / "results.json").read_text())
    tests = bob["exercises"][0]["tests"]
    statuses = [t["status"] for t in tests]
    assert statuses.count("timeout") == 2, statuses
    first_not_run = statuses.index("not_run")
    assert set(statuses[first_not_run:]) == {"not_run"} and len(statuses) > first_not_run + 2
    assert bob["score"] == 0
    skipped = tests[first_not_run]
    assert skipped["message"] == "not run: two calls already timed out after 1 s"
    assert skipped["kind"] == "not_run" and "Ctrl-C" in skipped["kind_hint"]
    report = (out / "bob" / "index.html").read_text()
    assert "not run: two calls already timed out after 1 s" in report
    assert "press Ctrl-C while it hangs" in report  # how to find the loop, once
    grades = (out / "grades.csv").read_text().splitlines()
    assert any(line.startswith("bob,") for line in grades)
