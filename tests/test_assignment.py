"""assignment.toml: what every teacher-facing command reads, and its clear refusals; grading
a class out of the assignment's points, and without one out of what the class handed in."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from grader import assignment, catalog

GRADE = str(Path(sys.executable).with_name("grade"))
GOOD = 'title = "W3"\nexercises = ["grid_local_mask"]\n'


def test_a_full_assignment_is_read(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text('title = "Week 3"\nexercises = ["grid_local_mask", "shape_bias"]\n'
                    'due = 2026-12-15T23:59:00Z\nfeedback = "full"\n'
                    '[limits]\ncall_seconds = 5\nsubmission_seconds = 120\n'
                    '[points]\nshape_bias = 20\n')
    task = assignment.load(path)
    assert task.exercises == ("grid_local_mask", "shape_bias") and task.feedback == "full"
    assert task.due.year == 2026 and task.call_seconds == 5
    policy = task.policy()
    assert policy.feedback == "full" and policy.call_timeout_s == 5
    assert dict(policy.points) == {"shape_bias": 20.0}
    (tmp_path / "b.toml").write_text(GOOD)
    assert assignment.load(tmp_path / "b.toml").feedback == "graded"  # the default


@pytest.mark.parametrize("text, words", [
    ("title = \n", "not valid TOML"),
    ('exercises = ["grid_local_mask"]\n', "'title' must be"),
    ('title = "t"\n', "'exercises' must be"),
    ('title = "t"\nexercises = ["nope"]\n', "unknown exercise(s) nope"),
    ('title = "t"\nexercises = ["grid_local_msk"]\n',
     "unknown exercise(s) grid_local_msk (did you mean grid_local_mask?)"),
    ('title = "t"\nexercises = ["shape_bias", "shape_bias"]\n', "names an exercise twice"),
    (GOOD + 'feedback = "some"\n', "'feedback' must be one of full, graded"),
    (GOOD + 'due = "tomorrow"\n', "'due' must be a TOML date"),
    (GOOD + 'colour = "red"\n', "unknown field(s) colour"),
    (GOOD + '[limits]\ncall_seconds = -1\n', "limits.call_seconds must be a positive"),
    (GOOD + '[limits]\nwall = 3\n', "[limits] takes"),
    (GOOD + '[points]\nshape_bias = 3\n', "points.shape_bias: not one of the assignment's"),
    (GOOD + '[points]\ngrid_local_mask = -3\n', "points.grid_local_mask must be a number"),
], ids=["toml", "title", "exercises", "unknown", "mistyped", "twice", "feedback", "due", "field",
        "negative_limit", "limit_name", "points_scope", "negative_points"])
def test_a_wrong_assignment_is_refused_with_its_field(tmp_path, text, words):
    path = tmp_path / "assignment.toml"
    path.write_text(text)
    with pytest.raises(assignment.AssignmentError) as err:
        assignment.load(path)
    assert words in str(err.value) and str(path) in str(err.value)
    done = subprocess.run([GRADE, "bulk", str(tmp_path), "--out", str(tmp_path / "o"),
                           "--assignment", str(path)], capture_output=True, text=True)
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr


def _class(tmp_path: Path) -> Path:
    klass = tmp_path / "class"
    for who, slug in (("ann", "grid_local_mask"), ("bob", "shape_bias")):
        (klass / who).mkdir(parents=True)
        (klass / who / f"{slug}.py").write_bytes(catalog.get(slug).solution.read_bytes())
    return klass


def test_without_an_assignment_the_scope_is_what_the_class_handed_in(tmp_path):
    done = subprocess.run([GRADE, "bulk", str(_class(tmp_path)), "--out", str(tmp_path / "o"),
                           "-q"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    said = "graded the exercises found in at least one submission (grid_local_mask, shape_bias)"
    assert said in done.stderr and said in (tmp_path / "o/index.html").read_text()
    rows = (tmp_path / "o/grades.csv").read_text().splitlines()
    assert rows[0] == "id,total,max,grid_local_mask,shape_bias,late,status"
    total = catalog.get("grid_local_mask").points + catalog.get("shape_bias").points
    assert rows[1].startswith(f"ann,{catalog.get('grid_local_mask').points:g},{total:g},")


def test_an_assignment_sets_the_scope_the_points_and_the_level(tmp_path):
    path = tmp_path / "a.toml"
    path.write_text('title = "Week 3"\nexercises = ["grid_local_mask"]\n'
                    '[points]\ngrid_local_mask = 30\n')
    done = subprocess.run([GRADE, "bulk", str(_class(tmp_path)), "--out", str(tmp_path / "o"),
                           "--assignment", str(path), "-q"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert "Graded the assignment's exercises: grid_local_mask." in done.stderr
    rows = (tmp_path / "o/grades.csv").read_text().splitlines()
    assert rows[0] == "id,total,max,grid_local_mask,late,status"
    assert rows[1].startswith("ann,30,30,30,")
    assert "not graded: no exercise files" in rows[2]  # bob handed in another exercise
    data = json.loads((tmp_path / "o/ann/results.json").read_text())
    hidden = [t for t in data["exercises"][0]["tests"] if t["visibility"] != "public"]
    assert hidden and all(t["description"] == "" for t in hidden)  # the graded level
    assert "Week 3" in (tmp_path / "o/index.html").read_text()


def test_a_release_leaves_out_what_only_the_teacher_reads(tmp_path):
    """The late policy (its extensions name students) and the rubric stay with the teacher:
    a student release and the Gradescope bundle carry the assignment without them, and it
    still loads; a file without them is shipped as written."""
    import zipfile

    from grader.release.gradescope import write_bundle

    path = tmp_path / "assignment.toml"
    path.write_text('# week 1\ntitle = "Week 1"\nexercises = ["grid_local_mask"]\n'
                    'due = 2026-12-01T12:00:00Z\n[points]\ngrid_local_mask = 10\n'
                    '[late]\nper_day = "10%"\n[late.extensions]\n"Jones, Bob" = "2 days"\n')
    task = assignment.load(path)
    assert task.late is not None
    shipped = assignment.released_text(task)
    assert "[late" not in shipped and "per_day" not in shipped and "Jones" not in shipped
    (tmp_path / "shipped.toml").write_text(shipped)
    again = assignment.load(tmp_path / "shipped.toml")
    assert (again.title, again.exercises, again.due, again.points, again.late) == \
        (task.title, task.exercises, task.due, task.points, None)
    write_bundle(task, tmp_path / "bundle.zip")
    with zipfile.ZipFile(tmp_path / "bundle.zip") as zf:
        assert zf.read("assignment.toml").decode() == shipped
    plain = tmp_path / "plain.toml"
    plain.write_text('# week 1\ntitle = "Week 1"\nexercises = ["grid_local_mask"]\n')
    assert assignment.released_text(assignment.load(plain)) == plain.read_text()
