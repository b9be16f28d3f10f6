"""The `grade` command line, driven as a learner would."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_driver import invoke as run
from click.testing import CliRunner

from grader import catalog
from grader.cli import main

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


def test_help_lists_the_commands():
    result = run("--help")
    assert result.exit_code == 0
    for word in ("list", "show", "hint", "--submission"):
        assert word in result.output
    assert "--report-dir" in run("run", "--help").output


def test_fresh_stub_fails_with_not_implemented_and_writes_report(project):
    result = run("grid_local_mask")
    assert result.exit_code == 1
    assert "not implemented yet" in result.output
    assert "Traceback" not in result.output
    assert "Report: reports/index.html" in result.output
    assert (project / "reports" / "index.html").is_file()
    data = json.loads((project / "reports" / "results.json").read_text())
    assert data["score"] == 0 and data["max_score"] == 9


def test_implemented_exercise_passes_with_exit_0(project):
    shutil.copy(SOLUTIONS / "grid_local_mask.py", project / "exercises")
    result = run("grid_local_mask")
    assert result.exit_code == 0, result.output
    assert result.output.count("✓ passed") == 9
    assert "Score 9/9" in result.output


def test_bare_grade_grades_every_file_present(project):
    result = run()
    assert result.exit_code == 1
    assert "grid_local_mask" in result.output and "attention_rollout" not in result.output


def test_unknown_exercise_is_a_usage_error_listing_valid_names(project):
    result = run("no_such_exercise")
    assert result.exit_code == 2
    assert "unknown exercise 'no_such_exercise'" in result.output
    assert "grid_local_mask" in result.output


def test_missing_exercises_folder_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = run()
    assert result.exit_code == 2
    assert "there is no exercises/ folder here" in result.output


def test_submission_folder_reports_not_submitted(project, tmp_path):
    sub = tmp_path / "alice"
    sub.mkdir()
    shutil.copy(SOLUTIONS / "grid_local_mask.py", sub)
    result = run("--submission", str(sub), "grid_local_mask", "attention_rollout",
                 "--report-dir", str(tmp_path / "out"))
    assert result.exit_code == 1
    assert "not submitted" in result.output
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    assert data["submission"] == "alice"
    assert [e["status"] for e in data["exercises"]] == ["passed", "not_submitted"]


def test_json_goes_to_stdout(project):
    result = CliRunner().invoke(main, ["grid_local_mask", "--json", "-q"])
    data = json.loads(result.stdout)
    assert data["exercises"][0]["exercise"] == "grid_local_mask"
    assert result.exit_code == 1


def test_list_shows_last_score(project):
    run("grid_local_mask")
    result = run("list")
    assert result.exit_code == 0
    line = next(ln for ln in result.output.splitlines() if ln.startswith("grid_local_mask"))
    assert "easy" in line and "0/9" in line


def test_hints_come_one_at_a_time(project):
    hints = catalog.get("attention_rollout").hints
    first = run("hint", "attention_rollout")
    assert "Hint 1 of" in first.output and hints[0] in first.output
    second = run("hint", "attention_rollout")
    assert "Hint 2 of" in second.output and hints[1] in second.output
    for _ in range(len(hints)):
        last = run("hint", "attention_rollout")
    assert "hints for attention_rollout are shown" in last.output


def test_show_prints_the_statement(project):
    result = run("show", "attention_rollout")
    assert result.exit_code == 0
    assert "last layer on the left" in result.output


def test_cuda_without_a_gpu_is_a_usage_error(project):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    result = run("grid_local_mask", "--device", "cuda")
    assert result.exit_code == 2
    assert "no CUDA device is available" in result.output


def test_installed_entry_point_runs(project):
    exe = Path(sys.executable).with_name("grade")
    proc = subprocess.run([str(exe), "grid_local_mask", "-q"], capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "Score 0/9" in proc.stdout
    assert proc.stderr == ""


def test_exercise_names_tab_complete(project):
    exe = Path(sys.executable).with_name("grade")
    env = {"PATH": str(exe.parent), "_GRADE_COMPLETE": "bash_complete", "COMP_WORDS": "grade gr",
           "COMP_CWORD": "1"}
    out = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "grid_local_mask" in out
    env.update(COMP_WORDS="grade show att", COMP_CWORD="2")
    out = subprocess.run([str(exe)], env=env, capture_output=True, text=True, timeout=60).stdout
    assert "attention_rollout" in out
