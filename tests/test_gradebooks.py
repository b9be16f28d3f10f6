"""Gradebooks an LMS imports as they are: canvas.csv from a Canvas roster (column by column),
or from a Canvas download's user ids; moodle.csv; grades.csv with late and pending rows."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import csv_rows, edit_source

from grader import catalog
from grader.report import gradebooks

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
REF = catalog.get(SLUG).solution.read_text()
ROSTER = (
    "Student,ID,SIS User ID,SIS Login ID,Section,Week 2 (4321)\r\n"
    "    Points Possible,,,,,10\r\n"
    '"Smith, Ann",101,S-1,ann,Section A,7\r\n'
    '"Jones, Bob",102,S-2,bob,Section A,\r\n'
    '"Lee, Cy",103,S-3,cy,Section B,3\r\n'
)
ASSIGNMENT = f'title = "Week 3 masks"\nexercises = ["{SLUG}"]\n[points]\n{SLUG} = 10\n'


@pytest.fixture(scope="module")
def with_roster(tmp_path_factory):
    base = tmp_path_factory.mktemp("roster")
    (base / "roster.csv").write_text(ROSTER)
    (base / "assignment.toml").write_text(ASSIGNMENT)
    for who, src in (("ann", REF), ("bob", edit_source(REF, ("return mask", "return ~mask"))),
                     ("zed", REF)):
        (base / "class" / who).mkdir(parents=True)
        (base / "class" / who / f"{SLUG}.py").write_text(src)
    done = subprocess.run([GRADE, "bulk", str(base / "class"), "--out", str(base / "out"),
                           "--assignment", str(base / "assignment.toml"), "--roster",
                           str(base / "roster.csv"), "-q"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return {"base": base, "out": base / "out", "said": done.stderr}


def test_canvas_csv_from_a_roster_column_by_column(with_roster):
    rows = csv_rows(with_roster["out"] / "canvas.csv")
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section",
                       "Week 3 masks"]  # Canvas's identity columns, then one assignment
    assert rows[1] == ["    Points Possible", "", "", "", "", "10"]
    by_id = {r[1]: r for r in rows[2:]}
    assert list(by_id) == ["101", "102", "103"]  # every roster student, in its order
    assert by_id["101"] == ["Smith, Ann", "101", "S-1", "ann", "Section A", "10"]
    assert by_id["102"][:5] == ["Jones, Bob", "102", "S-2", "bob", "Section A"]
    assert float(by_id["102"][5]) < 10
    assert by_id["103"] == ["Lee, Cy", "103", "S-3", "cy", "Section B", ""]  # nothing to grade
    assert all(len(r) == 6 for r in rows)  # no total, max or status columns


def test_a_submission_without_a_student_is_said_not_dropped(with_roster):
    said = "1 submission(s) match no student of the roster and are not in canvas.csv: zed."
    assert said in with_roster["said"]
    assert said in (with_roster["out"] / "index.html").read_text()
    assert "zed" in (with_roster["out"] / "grades.csv").read_text()


def test_a_canvas_class_has_names_and_its_absent_student(with_roster):
    """The roster's names reach grades.csv and the class report; a roster student with no
    submission is a row "no submission" in both, as in canvas.csv's empty cell."""
    rows = csv_rows(with_roster["out"] / "grades.csv")
    assert rows[0] == ["id", "name", "total", "max", "grid_local_mask", "late", "status"]
    by_id = {r[0]: r for r in rows[1:]}
    assert by_id["ann"][:3] == ["ann", "Smith, Ann", "10"]
    assert by_id["zed"][1] == ""  # matches no student: no name
    assert rows[-1] == ["", "Lee, Cy", "", "", "", "", "no submission"]
    page = (with_roster["out"] / "index.html").read_text()
    for name in ("Smith, Ann", "Jones, Bob", "Lee, Cy"):
        assert f'<td class="name" data-sort="{name}">{name}</td>' in page
    absent = page[page.index('<tr class="absent"'):]
    assert "Lee, Cy" in absent[:400] and "no submission</td>" in absent[:400]
    files = page[page.index('<p id="files">'):]
    for name in ("grades.csv", "canvas.csv", "moodle.csv", "junit.xml"):
        assert f'<a href="{name}"><code>{name}</code></a>' in files


def test_moodle_csv_maps_the_roster_logins(with_roster):
    rows = csv_rows(with_roster["out"] / "moodle.csv")
    assert rows[0] == ["Username", "ID number", "Week 3 masks"]
    assert rows[1] == ["ann", "S-1", "10"]
    assert [r[0] for r in rows[1:]] == ["ann", "bob"]  # cy: no grade, no row (not a blank)


def _canvas_zip(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"smithann_12345_900_{SLUG}.py", REF)
        zf.writestr(f"jonesbob_late_67890_901_{SLUG}.py", edit_source(REF, ("return mask",
                                                                     "return ~mask")))
    return path


def test_a_canvas_download_fills_id_and_student_and_marks_late(tmp_path):
    (tmp_path / "a.toml").write_text(ASSIGNMENT)
    done = subprocess.run([GRADE, "bulk", str(_canvas_zip(tmp_path / "subs.zip")), "--out",
                           str(tmp_path / "out"), "--assignment", str(tmp_path / "a.toml"),
                           "-q"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    rows = csv_rows(tmp_path / "out/canvas.csv")
    assert rows[0][:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
    placed = {r[1]: (r[0], r[5]) for r in rows[2:]}
    assert placed["12345"] == ("smithann", "10") and set(placed) == {"12345", "67890"}
    assert placed["67890"][0] == "jonesbob" and float(placed["67890"][1]) < 10
    grades = {r[0]: r for r in csv_rows(tmp_path / "out/grades.csv")}
    header = grades.pop("id")
    assert header[-2:] == ["late", "status"]
    late = {sid: r[header.index("late")] for sid, r in grades.items()}
    assert sorted(late.values()) == ["", "late"]
    page = (tmp_path / "out/index.html").read_text()
    assert '<td class="late" data-sort="late">late</td>' in page  # a column, not a banner
    assert "<th class=\"sortable\" data-type=\"text\">Late</th>" in page
    assert "<td class=\"name\" data-sort=\"jonesbob\">jonesbob</td>" in page  # Canvas's names
    assert not (tmp_path / "out/moodle.csv").exists()  # a Canvas download has no usernames


def test_grades_csv_says_which_rows_are_pending(tmp_path):
    path = tmp_path / "grades.csv"
    gradebooks.write_grades_csv(path, [], [SLUG], [], pending=["amy"], late=["amy"])
    assert csv_rows(path) == [["id", "total", "max", SLUG, "late", "status"],
                           ["amy", "", "", "", "late", "pending"]]


@pytest.mark.parametrize("text, words", [
    ("Name,Email\r\nAnn,a@x\r\n", "not a Canvas gradebook export"),
    ("", "empty"),
])
def test_a_file_that_is_not_a_canvas_export_is_refused(tmp_path, text, words):
    (tmp_path / "r.csv").write_text(text)
    with pytest.raises(gradebooks.RosterError, match=words):
        gradebooks.read_roster(tmp_path / "r.csv")


def test_a_hostile_roster_is_written_inert(tmp_path):
    """A roster's cells reach canvas.csv and moodle.csv through the one CSV writer
    (``csv_cells``): formulas get a leading ``'``, numbers do not, Canvas's assignment header
    and moodle.csv's keys are as given (Canvas compares it with its assignments' titles)."""
    (tmp_path / "r.csv").write_text(
        "Student,ID,SIS User ID,SIS Login ID,Section\r\n"
        '"=HYPERLINK(""http://x"",""y"")",101,-1,@SUM(A1),"\t=1+1"\r\n')
    roster = gradebooks.read_roster(tmp_path / "r.csv")
    people = [gradebooks.Person("101")]
    gradebooks.write_canvas_csv(tmp_path / "c.csv", "+W", {"101": "-2"}, "10", roster, people)
    gradebooks.write_moodle_csv(tmp_path / "m.csv", "+W", {"101": "-2"}, roster, people)
    assert csv_rows(tmp_path / "c.csv")[0][-1] == "+W"
    assert csv_rows(tmp_path / "c.csv")[2] == ['\'=HYPERLINK("http://x","y")', "101", "-1",
                                            "'@SUM(A1)", "'=1+1", "-2"]
    # moodle.csv's username and ID number: keys Moodle matches as text, written as they are
    assert csv_rows(tmp_path / "m.csv")[1] == ["@SUM(A1)", "-1", "-2"]


def test_moodle_csv_holds_only_usernames_moodle_knows():
    """Moodle's import stops at an unknown username: Canvas's Test Student (no login) and ids
    made from a download are left out, and said."""
    roster = gradebooks.Roster(["Student", "ID", "SIS User ID", "SIS Login ID"], [
        {"Student": "Smith, Ann", "ID": "101", "SIS User ID": "S-1", "SIS Login ID": "ann"},
        {"Student": "Student, Test", "ID": "999", "SIS User ID": "", "SIS Login ID": ""}])
    rows, left_out = gradebooks.moodle_rows("W", {"ann": "7"}, roster,
                                            [gradebooks.Person("ann")])
    assert rows == [["Username", "ID number", "W"], ["ann", "S-1", "7"]]
    assert left_out == ["Student, Test"]
    people = [gradebooks.Person("jo"), gradebooks.Person("smithjo_101", "101", "smithjo"),
              gradebooks.Person("Al_Ng_5", "5", "Al Ng", "moodle")]
    rows, left_out = gradebooks.moodle_rows("W", {"jo": "3"}, None, people)
    assert rows[1:] == [["jo", "", "3"]] and left_out == ["smithjo_101", "Al_Ng_5"]
