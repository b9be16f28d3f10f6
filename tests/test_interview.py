"""`grade interview`, driven through the installed command with keys on a pipe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from cli_driver import Session
from click.testing import CliRunner

from grader import catalog
from grader.cli import main
from grader.commands import workspace

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"
OPEN = ("grid_local_mask", "shape_bias")  # the two quick exercises left to master


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A learner who has mastered every exercise but two; their stubs are in exercises/."""
    (tmp_path / "exercises").mkdir()
    for slug in OPEN:
        shutil.copy(workspace.pristine_stub(slug), tmp_path / "exercises")
    (tmp_path / ".grade").mkdir()
    mastered = {s: {"attempts": 1, "best": [e.points, e.points], "mastered_at": 1.0}
                for s, e in catalog.load().items() if s not in OPEN}
    (tmp_path / ".grade" / "state.json").write_text(json.dumps({"progress": mastered}))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _report(project: Path) -> tuple[Path, dict]:
    [folder] = (project / "reports").glob("interview-*")
    return folder, json.loads((folder / "results.json").read_text())


def test_submitting_each_exercise_grades_it_and_reports_the_time(project):
    shutil.copy(SOLUTIONS / "grid_local_mask.py", project / "exercises")
    s = Session(["interview", "--count", "3", "--seed", "7"], project)
    try:
        intro = s.until("Exercise 1/2: ")  # three asked, two left to master
        assert "Mock interview: 2 exercises in 45:00" in intro
        first = s.until("Enter (or s): submit")
        assert "## The interview question" in first  # the statement
        s.until("left · exercise 1/2")  # the clock
        s.send("\n")
        s.until("Exercise 2/2: ")
        s.until("left · exercise 2/2")
        s.send("s\n")
        code, rest = s.finish()
    finally:
        s.close()
    assert code == 1  # one of the two is still a stub
    assert "Traceback" not in s.output
    folder, data = _report(project)
    assert (folder / "index.html").is_file()
    assert f"Report: {folder.relative_to(project) / 'index.html'}" in rest
    per = {e["exercise"]: e for e in data["interview"]["exercises"]}
    assert set(per) == set(OPEN)
    assert all(e["outcome"] == "submitted" and e["time_s"] >= 0 for e in per.values())
    assert per["grid_local_mask"]["score"] == 9 and per["shape_bias"]["score"] == 0
    assert data["interview"]["seed"] == 7 and data["interview"]["minutes"] == 45
    assert {e["exercise"] for e in data["exercises"]} == set(OPEN)
    assert "grid_local_mask" in rest and "submitted" in rest and "Score 9/" in rest
    # full marks in an interview count: the reference is now open to the learner
    assert CliRunner().invoke(main, ["solution", "grid_local_mask"]).exit_code == 0


def test_the_deadline_grades_what_is_there(project):
    s = Session(["interview", "--minutes", "0.02", "--count", "2", "--seed", "1"], project)
    try:
        code, rest = s.finish()  # no key: the clock runs out (1.2 seconds)
    finally:
        s.close()
    assert code == 1
    assert "Time is up." in s.output and "left · exercise 1/2" in s.output
    _, data = _report(project)
    outcomes = [(e["outcome"], e["time_s"]) for e in data["interview"]["exercises"]]
    assert outcomes[0] == ("time up", pytest.approx(1.2, abs=0.01))
    assert outcomes[1] == ("not reached", 0)
    assert data["interview"]["time_s"] == pytest.approx(1.2, abs=0.01)
    assert all(e["score"] == 0 for e in data["interview"]["exercises"])  # stubs, graded
    assert "not reached" in rest


def test_giving_up_ends_the_interview_and_the_seed_repeats_the_choice(project):
    order = []
    for _ in range(2):
        s = Session(["interview", "--count", "1", "--seed", "3"], project)
        try:
            order.append(s.until("Exercise 1/1: ").strip().splitlines()[-1])
            s.send("q\n")
            code, _ = s.finish()
        finally:
            s.close()
        assert code == 1 and "You gave up." in s.output
    assert order[0] == order[1]
    reports = sorted((project / "reports").glob("interview-*"))
    assert len(reports) == 2  # two interviews in the same second: two reports
    outcome = json.loads((reports[0] / "results.json").read_text())["interview"]["exercises"]
    assert [e["outcome"] for e in outcome] == ["gave up"]


def test_nothing_left_to_master(project):
    state = json.loads((project / ".grade" / "state.json").read_text())
    for slug in OPEN:
        state["progress"][slug] = {"mastered_at": 2.0, "best": [1, 1]}
    (project / ".grade" / "state.json").write_text(json.dumps(state))
    result = CliRunner().invoke(main, ["interview"])
    assert result.exit_code == 0 and "nothing is left for an interview" in result.output


@pytest.mark.parametrize("args", [["--minutes", "0"], ["--count", "0"], ["--minutes", "x"]])
def test_bad_options_are_usage_errors(project, args):
    result = CliRunner().invoke(main, ["interview", *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
