"""``grade bulk --adjust FILE``: a teacher's adjustments, checked line by line before anything
is written, applied after grading to every export, never cached."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import csv_rows

from grader import catalog
from grader.bulk import adjust
from grader.results import SubmissionResult, from_dict

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
REF = catalog.get(SLUG).solution.read_text()
ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
    "    Points Possible,,,,\r\n"
    '"Smith, Ann",101,S-1,ann,Section A\r\n'
    '"Jones, Bob",102,S-2,bob,Section A\r\n'
    '"Lee, Cy",103,S-3,cy,Section B\r\n'
)
ASSIGNMENT = f'title = "Week 3"\nexercises = ["{SLUG}"]\n[points]\n{SLUG} = 10\n'


def _write(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path / name


# --- reading ----------------------------------------------------------------------------------


def test_csv_and_toml_adjustments(tmp_path: Path) -> None:
    lines = adjust.read_adjustments(_write(tmp_path, "a.csv", (
        "# adjustments after the regrade requests\r\n"
        "student,points,total,comment\r\n"
        "ann,-2,,late penalty\r\n"
        "\r\n"
        'bob,,0,"integrity case, see file 12"\r\n')))
    assert [(a.line, a.student, a.points, a.total, a.comment) for a in lines] == [
        (3, "ann", -2.0, None, "late penalty"),
        (5, "bob", None, 0.0, "integrity case, see file 12")]
    lines = adjust.read_adjustments(_write(tmp_path, "a.toml", (
        '# regrades\n[[adjust]]\nstudent = "ann"\npoints = 1.5\ncomment = "partial credit"\n\n'
        '[[adjust]]\nstudent = "bob"\ntotal = 7\n')))
    assert [(a.line, a.student, a.points, a.total, a.comment) for a in lines] == [
        (2, "ann", 1.5, None, "partial credit"), (7, "bob", None, 7.0, "")]


@pytest.mark.parametrize("name, text, words", [
    ("a.csv", "student,points,comment\r\nann,,x\r\n", "line 2: give either points or total"),
    ("a.csv", "student,points,total,comment\r\nann,1,2,x\r\n", "line 2: .* not both"),
    ("a.csv", "student,points,comment\r\nann,lots,x\r\n", "line 2: points 'lots' is not a"),
    ("a.csv", "student,points,comment\r\nann,nan,x\r\n", "line 2: points 'nan' is not a"),
    ("a.csv", "student,total,comment\r\nann,-1,x\r\n", "line 2: a total cannot be negative"),
    ("a.csv", "student,points,comment\r\nann,1,a,b\r\n", "line 2: 4 cells for 3 columns"),
    ("a.csv", "student,points,comment\r\n,1,x\r\n", "line 2: no student"),
    ("a.csv", "name,score\r\nann,1\r\n", "line 1: the header must name"),
    ("a.csv", "student,points\r\nann,1\r\nANN,2\r\n", "line 3: 'ANN' is adjusted already on "
                                                    "line 2"),
    ("a.csv", "", "no header"),
    ("a.toml", '[[adjust]]\nstudent = "ann"\npoints = 1\n\n[[adjust]]\nstudent = "bob"\n'
     'score = 1\n', "line 5: unknown field 'score'"),
    ("a.toml", '[[adjust]]\nstudent = "ann"\npoints = "x"\n', r"line 1: points 'x' is not"),
    ("a.toml", "student = 'ann'\n", "only \\[\\[adjust\\]\\] tables"),
    ("a.toml", "[[adjust]\n", "not valid TOML"),
])
def test_a_malformed_line_is_named(tmp_path: Path, name: str, text: str, words: str) -> None:
    with pytest.raises(adjust.AdjustError, match=words) as err:
        adjust.read_adjustments(_write(tmp_path, name, text))
    assert "\n" not in str(err.value)


def test_students_are_resolved_by_any_of_their_names(tmp_path: Path) -> None:
    keys = adjust.student_keys([("s1", ["Smith, Ann", "101", "ann"]), ("s2", ["Jones, Bob"]),
                                ("s3", ["Jones, Bob"])])
    path = tmp_path / "a.csv"
    lines = [adjust.Line(2, "ANN", 1.0, None, ""), adjust.Line(3, "101", 1.0, None, "")]
    with pytest.raises(adjust.AdjustError, match="line 3: '101' is adjusted already on line 2"):
        adjust.resolve(path, lines, keys)
    assert adjust.resolve(path, lines[:1], keys)["s1"].line == 2
    with pytest.raises(adjust.AdjustError, match="line 4: no student 'zed' in this class"):
        adjust.resolve(path, [adjust.Line(4, "zed", 1.0, None, "")], keys)
    with pytest.raises(adjust.AdjustError, match="line 5: 'Jones, Bob' names 2 submissions"):
        adjust.resolve(path, [adjust.Line(5, "Jones, Bob", 1.0, None, "")], keys)


def _result(sid: str, score: float, most: float) -> SubmissionResult:
    return from_dict({"submission": sid, "device": "cpu", "exercises": [
        {"exercise": SLUG, "status": "failed", "tests": [
            {"name": "t", "status": "failed", "score": score, "max_score": most}]}]})


def test_apply_keeps_a_total_within_zero_and_the_maximum() -> None:
    results = [_result("a", 4, 10), _result("b", 9, 10), _result("c", 5, 10)]
    notices = adjust.apply(results, {
        "a": adjust.Line(2, "a", -6.0, None, "integrity"),
        "b": adjust.Line(3, "b", 3.0, None, ""),
        "c": adjust.Line(4, "c", None, 7.25, "regrade"),
        "gone": adjust.Line(5, "gone", 1.0, None, "")})
    assert [(r.score, r.final_score) for r in results] == [(4, 0), (9, 10), (5, 7.25)]
    assert [m.label for m in results[2].marks] == ["regrade"]
    assert "kept at 0" in notices[0] and "kept at 10" in notices[1]
    assert "gone (line 5) was not applied" in notices[2]
    assert "adjustment" not in results[0].to_dict()  # never in results.json (the cache)


# --- grade bulk --adjust, end to end ----------------------------------------------------------


def _bulk(base: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([GRADE, "bulk", str(base / "class"), "--out", str(base / "out"),
                           "--assignment", str(base / "a.toml"), "--roster",
                           str(base / "roster.csv"), "-q", *extra],
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def adjusted(tmp_path_factory):
    base = tmp_path_factory.mktemp("adjust")
    (base / "roster.csv").write_text(ROSTER)
    (base / "a.toml").write_text(ASSIGNMENT)
    for who in ("ann", "bob"):
        (base / "class" / who).mkdir(parents=True)
        (base / "class" / who / f"{SLUG}.py").write_text(REF)
    (base / "adjust.csv").write_text("student,points,comment\r\n"
                                     '"Jones, Bob",-2.5,"late penalty, decided by hand"\r\n')
    done = _bulk(base, "--adjust", str(base / "adjust.csv"))
    assert done.returncode == 0, done.stderr
    return base


def test_an_adjustment_reaches_every_export_with_its_comment(adjusted):
    out = adjusted / "out"
    grades = {r[0]: r for r in csv_rows(out / "grades.csv")}
    assert grades["ann"][:3] == ["ann", "Smith, Ann", "10"] and grades["ann"][-1] == "graded"
    assert grades["bob"][:3] == ["bob", "Jones, Bob", "7.5"]
    assert grades["bob"][-1] == "graded; adjusted from 10: late penalty, decided by hand"
    assert grades[""][1:3] == ["Lee, Cy", ""] and grades[""][-1] == "no submission"
    canvas = {r[1]: r[-1] for r in csv_rows(out / "canvas.csv")[2:]}
    assert canvas == {"101": "10", "102": "7.5", "103": ""}
    moodle = {r[0]: r[-1] for r in csv_rows(out / "moodle.csv")[1:]}
    assert moodle == {"ann": "10", "bob": "7.5"}  # cy: no grade, no row (a blank clears one)
    bob = json.loads((out / "bob" / "gradescope.json").read_text())
    assert bob["score"] == 7.5 and sum(t["score"] for t in bob["tests"]) == pytest.approx(10)
    assert "Adjusted by the teacher from 10 to 7.5: late penalty, decided by hand" in \
        bob["output"]
    assert json.loads((out / "ann" / "gradescope.json").read_text())["score"] == 10
    page = (out / "index.html").read_text()
    assert ("<strong>7.5</strong> / 10<div class=\"meta adjusted\">adjusted · computed 10: "
            "late penalty, decided by hand</div>") in page
    assert '<td class="name" data-sort="Lee, Cy">Lee, Cy</td>' in page  # absent, yet listed
    assert json.loads((out / "bob" / "results.json").read_text())["score"] == 10


def test_a_rerun_regrades_nothing_and_drops_a_removed_adjustment(adjusted):
    done = _bulk(adjusted)
    assert done.returncode == 0 and "Graded 0, 2 from cache" in done.stdout
    out = adjusted / "out"
    assert json.loads((out / "bob" / "gradescope.json").read_text())["score"] == 10
    assert {r[0]: r[2] for r in csv_rows(out / "grades.csv")}["bob"] == "10"


@pytest.mark.parametrize("text, words", [
    ("student,points\r\nann,1\r\nzed,1\r\n", "adj.csv line 3: no student 'zed' in this class"),
    ("student,points\r\nann,one\r\n", "adj.csv line 2: points 'one' is not a number"),
])
def test_a_bad_adjustment_is_exit_2_and_nothing_is_written(adjusted, tmp_path, text, words):
    base = tmp_path / "run"
    base.mkdir()
    for name in ("roster.csv", "a.toml"):
        (base / name).write_text((adjusted / name).read_text())
    (base / "class").symlink_to(adjusted / "class")
    (base / "adj.csv").write_text(text)
    done = _bulk(base, "--adjust", str(base / "adj.csv"))
    assert done.returncode == 2 and words in done.stderr and "Traceback" not in done.stderr
    assert not (base / "out").exists()
