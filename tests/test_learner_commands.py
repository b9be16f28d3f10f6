"""`grade reset`, `grade solution`, `grade progress` and the state file behind them."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from cli_driver import invoke as run
from conftest import edit_source

from grader import catalog
from grader.commands import workspace

ROOT = Path(__file__).resolve().parents[1]
SOLUTIONS = ROOT / "solutions"
STATE = Path(".grade") / "state.json"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A learner's working folder: exercises/ holds the stub of grid_local_mask only."""
    (tmp_path / "exercises").mkdir()
    shutil.copy(workspace.pristine_stub("grid_local_mask"), tmp_path / "exercises")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _shipped_working_copy(ex: catalog.Exercise) -> bytes | None:
    """The learner's file as a fresh clone has it: ``exercises/<slug>.py`` at HEAD (None
    outside a git checkout). The file in this work tree is the learner's, never read."""
    rel = ex.working_copy.relative_to(ROOT).as_posix()
    try:
        proc = subprocess.run(["git", "-C", str(ROOT), "show", f"HEAD:{rel}"],
                              capture_output=True, timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


@pytest.mark.parametrize("ex", list(catalog.load().values()), ids=lambda e: e.slug)
def test_a_fresh_clone_starts_every_exercise_from_the_packs_stub(ex):
    assert ex.stub.is_file() and ex.stub == workspace.pristine_stub(ex.slug)
    shipped = _shipped_working_copy(ex)
    if shipped is None:
        pytest.skip("not a git checkout")
    assert shipped == ex.stub.read_bytes(), (
        f"exercises/{ex.slug}.py at HEAD differs from the pack's stub {ex.stub}: "
        f"cp {ex.stub} exercises/{ex.slug}.py")


def test_reset_restores_the_stub_and_keeps_the_learners_version(project):
    mine = project / "exercises" / "grid_local_mask.py"
    mine.write_text("def grid_local_mask(H_p, W_p, radius, n_prefix=1):\n    return 42\n")
    result = run("reset", "grid_local_mask")
    assert result.exit_code == 0, result.output
    assert mine.read_bytes() == workspace.pristine_stub("grid_local_mask").read_bytes()
    backups = list((project / ".grade" / "backups").glob("grid_local_mask-*.py"))
    assert len(backups) == 1 and "return 42" in backups[0].read_text()
    assert f"Your version is kept in {backups[0].relative_to(project)}" in result.output

    again = run("reset", "grid_local_mask")
    assert again.exit_code == 0 and "already the stub: nothing to do" in again.output
    assert len(list((project / ".grade" / "backups").iterdir())) == 1

    mine.write_text("x = 1\n")  # a second reset in the same second keeps both versions
    run("reset", "grid_local_mask")
    assert len(list((project / ".grade" / "backups").iterdir())) == 2


def test_reset_writes_a_missing_file_and_refuses_bad_input(project):
    result = run("reset", "attention_rollout")
    assert result.exit_code == 0
    assert "there was no file of yours to keep" in result.output
    assert (project / "exercises" / "attention_rollout.py").read_bytes() == \
        workspace.pristine_stub("attention_rollout").read_bytes()
    assert run("reset", "no_such_exercise").exit_code == 2
    assert run("reset").exit_code == 2
    shutil.rmtree(project / "exercises")
    missing = run("reset", "grid_local_mask")
    assert missing.exit_code == 2 and "there is no exercises/ folder here" in missing.output


def test_solution_is_shown_only_after_passing_or_when_forced(project):
    reference = catalog.get("grid_local_mask").solution.read_text()
    refused = run("solution", "grid_local_mask")
    assert refused.exit_code == 1
    assert "shown once your file passes it" in refused.output and "--force" in refused.output
    assert reference not in refused.output

    declined = run("solution", "grid_local_mask", "--force", input="n\n")
    assert declined.exit_code == 1
    assert "Show it anyway?" in declined.output and "Not shown." in declined.output
    assert reference not in declined.output

    confirmed = run("solution", "grid_local_mask", "--force", input="y\n")
    assert confirmed.exit_code == 0 and reference in confirmed.output

    scripted = run("solution", "grid_local_mask", "--force", "--yes")
    assert scripted.exit_code == 0 and "Show it anyway?" not in scripted.output
    assert reference in scripted.output
    line = next(ln for ln in run("progress").output.splitlines()
                if ln.startswith("grid_local_mask"))
    assert "(saw the solution)" in line


def test_solution_after_full_marks_needs_no_force(project):
    shutil.copy(SOLUTIONS / "grid_local_mask.py", project / "exercises")
    assert run("grid_local_mask", "-q").exit_code == 0
    shown = run("solution", "grid_local_mask")
    assert shown.exit_code == 0
    assert catalog.get("grid_local_mask").solution.read_text() in shown.output


def test_full_marks_of_a_submission_folder_do_not_unlock_the_solution(project, tmp_path):
    sub = tmp_path / "someone"
    sub.mkdir()
    shutil.copy(SOLUTIONS / "grid_local_mask.py", sub)
    assert run("--submission", str(sub), "grid_local_mask", "-q").exit_code == 0
    assert run("solution", "grid_local_mask").exit_code == 1


def _progress(slug: str) -> dict:
    data = json.loads(run("progress", "--json").output)
    return next(e for e in data["exercises"] if e["exercise"] == slug)


def test_progress_counts_attempts_best_score_and_mastery_across_runs(project):
    mine = project / "exercises" / "grid_local_mask.py"
    run("grid_local_mask", "-q")  # the untouched stub: not an attempt
    assert _progress("grid_local_mask")["attempts"] == 0
    broken = edit_source((SOLUTIONS / "grid_local_mask.py").read_text(), (
        "if radius < 0:", "if radius < -5:"))
    mine.write_text(broken)
    run("grid_local_mask", "-q")
    run("grid_local_mask", "-q")  # the same content again: not a new attempt
    first = _progress("grid_local_mask")
    assert first["attempts"] == 1 and first["best_score"] == 8 and first["max_score"] == 9
    assert first["mastered_at"] is None

    shutil.copy(SOLUTIONS / "grid_local_mask.py", mine)
    run("grid_local_mask", "-q")
    mine.write_text(broken + "\n# worse again\n")
    run("grid_local_mask", "-q")
    done = _progress("grid_local_mask")
    assert done["attempts"] == 3 and done["best_score"] == 9  # the best, not the last
    assert done["mastered_at"] is not None

    table = run("progress")
    assert table.exit_code == 0
    line = next(ln for ln in table.output.splitlines() if ln.startswith("grid_local_mask"))
    assert line.split()[2:4] == ["9/9", "3"]
    assert "1/" in table.output and "exercises mastered" in table.output
    assert "attempts: gradings of a new version" in table.output
    rollout = next(ln for ln in table.output.splitlines() if ln.startswith("attention_rollout"))
    assert rollout.split()[2:4] == ["-", "0"]


def _write_state(data: dict) -> None:
    STATE.parent.mkdir(exist_ok=True)
    STATE.write_text(json.dumps(data))


def test_time_spent_counts_work_and_skips_breaks(project):
    now = time.time()
    _write_state({"progress": {
        "attention_rollout": {"last_active": now - 120, "time_s": 30},
        "grid_local_mask": {"last_active": now - 3 * 3600, "time_s": 30}}})
    run("hint", "attention_rollout")  # 2 minutes after the last event: counted
    run("show", "grid_local_mask")  # 3 hours after: a break, not counted
    assert 150 <= _progress("attention_rollout")["time_s"] < 150 + 60
    assert _progress("grid_local_mask")["time_s"] == 30
    line = next(ln for ln in run("progress").output.splitlines()
                if ln.startswith("attention_rollout"))
    assert "2m 3" in line  # 2m 30s and a little


@pytest.mark.parametrize("content", ["{not json", "[]", '{"progress": 7}', "\u0000\u0001"])
def test_a_corrupt_state_file_is_an_empty_state(project, content):
    STATE.parent.mkdir()
    STATE.write_text(content)
    result = run("progress")
    assert result.exit_code == 0 and "0/" in result.output
    assert run("hint", "grid_local_mask").exit_code == 0
    data = json.loads(STATE.read_text())  # rewritten, whole
    assert data["hints_seen"] == {"grid_local_mask": 1}


def test_a_corrupt_entry_costs_only_itself(project):
    _write_state({"hints_seen": {"grid_local_mask": 2, "attention_rollout": "many"},
                  "progress": {"grid_local_mask": {"attempts": 4, "best": [3, 9]},
                               "attention_rollout": {"attempts": "x"}}})
    assert _progress("grid_local_mask")["attempts"] == 4
    assert "Hint 3 of" in run("hint", "grid_local_mask").output
    assert "Hint 1 of" in run("hint", "attention_rollout").output


def test_help_lists_the_learners_commands():
    out = run("--help").output
    for word in ("reset", "solution", "progress", "interview", "--watch"):
        assert word in out
