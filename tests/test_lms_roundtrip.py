"""Every LMS export read back as the LMS's own importer reads it: Moodle's worksheet upload
(``mod/assign/feedback/offline``: rows by ``Identifier``, feedback compared as text), Moodle's
gradebook CSV import (``grade/import/csv``: a blank grade is "no grade"), Canvas's gradebook
import (``gradebook_importer.rb``: a ``Title (id)`` header first, then the exact title, else a
new assignment) and Gradescope's ``results.json`` (its JSON numbers)."""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import re
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from grader import numbers
from grader.report import gradebooks, gradescope, moodle_worksheet
from grader.report.gradebooks import Person
from grader.results import ExerciseResult, SubmissionResult, TestResult

SLUG = "grid_local_mask"


def _result(sid: str, *exercises: list[tuple[float, float]]) -> SubmissionResult:
    """A graded submission: one exercise per list of (score, max_score) tests."""
    return SubmissionResult(sid, "cpu", [
        ExerciseResult(f"ex{i}", f"Exercise {i}", "graded", [
            TestResult(f"t{j}", "passed" if score >= top else "failed", score, top)
            for j, (score, top) in enumerate(tests, 1)])
        for i, tests in enumerate(exercises, 1)])


def _write(path: Path, rows: list[list[str]]) -> Path:
    """A CSV as an LMS writes it (every cell quoted), with a BOM."""
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(rows)
    path.write_text("\ufeff" + buf.getvalue(), encoding="utf-8")
    return path


def _read(path: Path) -> list[list[str]]:
    with path.open(newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


# --- Moodle's grading worksheet ---------------------------------------------------------------

# Blind marking: Moodle writes no "Full name" (nor identity fields).
BLIND = ["Identifier", "Status", "Grade", "Maximum Grade", "Grade can be changed",
         "Last modified (submission)", "Online text", "Last modified (grade)",
         "Feedback comments"]
NAMED = ["Identifier", "Full name", "Email address", *BLIND[1:]]
FEEDBACK_TEXTS = ["-2 for missing docstring", "=1+1 is not 3", "+1 for style", "@Bob see me",
                  "\tindented", "plain words", ""]


def _sheet(header: list[str], feedback: str) -> list[list[str]]:
    """A worksheet of four participants: 5101 and 5102 submitted this run, 5103 did not,
    5104 was graded in Moodle (with ``feedback``) and did not submit this run either."""
    rows = [header]
    for pid, name, status, grade, when, comment in (
            ("5101", "Alice Smith", "Submitted for grading", "",
             "Monday, 1 December 2026, 10:15 AM", ""),
            ("5102", "Bob Jones", "Submitted for grading - 2 days 3 hours late", "",
             "Wednesday, 3 December 2026, 1:00 PM", ""),
            ("5103", "Cy Lee", "No submission", "", "-", feedback),
            ("5104", "Dee Quinn", "Submitted for grading - Graded", "70.00",
             "Monday, 1 December 2026, 9:00 AM", feedback)):
        cells = {"Identifier": f"Participant {pid}", "Full name": name,
                 "Email address": f"=cmd|' /C {pid}'!A0", "Status": status, "Grade": grade,
                 "Maximum Grade": "100.00", "Grade can be changed": "Yes",
                 "Last modified (submission)": when, "Online text": "-1 line",
                 "Last modified (grade)": "-" if not grade else
                 "Tuesday, 2 December 2026, 9:00 AM", "Feedback comments": comment}
        rows.append([cells[c] for c in header])
    return rows


def _moodle_upload(path: Path) -> dict[str, dict[str, str]]:
    """What Moodle's worksheet upload reads of each row (``assignfeedback_offline``'s
    importer): the row's participant from ``Identifier`` (its text after "Participant "), its
    ``Grade``, ``Last modified (grade)`` and feedback column, each as text."""
    rows = _read(path)
    columns = {name: rows[0].index(name) for name in
               ("Identifier", "Grade", "Last modified (grade)", "Feedback comments")}
    return {row[columns["Identifier"]][len("Participant "):]:
            {name: row[i] for name, i in columns.items()} for row in rows[1:]}


def _graded_worksheet(tmp_path: Path, header: list[str], feedback: str = ""):
    sheet = _sheet(header, feedback)
    roster = gradebooks.read_roster(_write(tmp_path / "worksheet.csv", sheet))
    people = [Person("Alice_5101", "5101", "Alice Smith", "moodle"),
              Person("Bob_5102", "5102", "Bob Jones", "moodle")]
    results = [_result("Alice_5101", [(1, 1), (1, 1)]), _result("Bob_5102", [(1, 1), (0, 1)])]
    klass = gradebooks.class_list(roster, people)
    out = tmp_path / "moodle-worksheet.csv"
    gradebooks.write_moodle_worksheet(out, roster, results, people, klass.late)
    return sheet, klass, out, results


@pytest.mark.parametrize("header", [BLIND, NAMED], ids=["blind marking", "named"])
def test_a_worksheet_with_or_without_names_is_filled_for_moodle(tmp_path, header):
    """Blind marking (no "Full name") is read; the upload finds each graded participant's
    grade and feedback by its Identifier; the class knows participants by their Identifier
    where there is no name."""
    sheet, klass, out, results = _graded_worksheet(tmp_path, header)
    upload = _moodle_upload(out)
    assert upload["5101"]["Grade"] == "100.00" and upload["5102"]["Grade"] == "50.00"
    assert upload["5101"]["Feedback comments"] == gradebooks.feedback_text(results[0], False)
    assert upload["5102"]["Feedback comments"] == gradebooks.feedback_text(results[1], True)
    blind = "Full name" not in header
    alice, bob, cy, dee = (("Participant " + p) if blind else n for p, n in (
        ("5101", "Alice Smith"), ("5102", "Bob Jones"), ("5103", "Cy Lee"),
        ("5104", "Dee Quinn")))
    assert klass.names == {"Alice_5101": alice, "Bob_5102": bob}
    assert klass.absent == [cy, dee] and klass.late == {"Bob_5102"}
    gradebooks.write_grades_csv(tmp_path / "grades.csv", results, ["ex1"], [],
                                names=klass.names, absent=klass.absent)
    assert [row[:2] for row in _read(tmp_path / "grades.csv")] == [
        ["id", "name"], ["Alice_5101", alice], ["Bob_5102", bob], ["", cy], ["", dee]]


@pytest.mark.parametrize("feedback", FEEDBACK_TEXTS, ids=repr)
@pytest.mark.parametrize("header", [BLIND, NAMED], ids=["blind marking", "named"])
def test_rows_not_graded_are_written_as_read(tmp_path, header, feedback):
    """Moodle writes a feedback column whenever its text differs from what it has: a row this
    run did not grade reads back cell for cell as downloaded (no ``'`` added), and so do the
    header and the graded rows' other cells."""
    sheet, _, out, _ = _graded_worksheet(tmp_path, header, feedback)
    written = _read(out)
    assert written[0] == sheet[0]
    for was, now in zip(sheet[1:], written[1:], strict=True):
        if was[0] in ("Participant 5101", "Participant 5102"):
            keep = [i for i, c in enumerate(header) if c not in ("Grade", "Feedback comments")]
            assert [now[i] for i in keep] == [was[i] for i in keep]
        else:
            assert now == was
    upload = _moodle_upload(out)
    assert upload["5103"]["Feedback comments"] == feedback
    assert upload["5104"]["Feedback comments"] == feedback
    assert (upload["5103"]["Grade"], upload["5104"]["Grade"]) == ("", "70.00")


def test_graded_feedback_is_written_as_given(tmp_path):
    """The feedback of a graded row is the grader's text, verbatim; the worksheet's
    ``Grade`` is a number, never escaped."""
    sheet = _sheet(NAMED, "")
    sheet_path = _write(tmp_path / "w.csv", sheet)
    roster = gradebooks.read_roster(sheet_path)
    assert roster.worksheet is not None
    for text in FEEDBACK_TEXTS:
        moodle_worksheet.fill(roster.worksheet, tmp_path / "out.csv", {"5101": (0, 1, text)})
        upload = _moodle_upload(tmp_path / "out.csv")
        assert upload["5101"]["Feedback comments"] == text
        assert upload["5101"]["Grade"] == "0.00"


@pytest.mark.parametrize("cell, when", [
    ("Monday, 1 December 2026, 10:15 AM", dt.datetime(2026, 12, 1, 10, 15)),
    ("Wednesday, 3 December 2026, 1:00 PM", dt.datetime(2026, 12, 3, 13, 0)),
    ("Tuesday, 1 December 2026, 12:05 AM", dt.datetime(2026, 12, 1, 0, 5)),
    ("Tuesday, 1 December 2026, 12:05 PM", dt.datetime(2026, 12, 1, 12, 5)),
    ("Monday, 01 December 2026, 09:05 AM", dt.datetime(2026, 12, 1, 9, 5)),
    ("Monday, December 1, 2026, 10:15 AM", dt.datetime(2026, 12, 1, 10, 15)),  # en_us
    ("Monday, 1 Dec 2026, 10:15 am", dt.datetime(2026, 12, 1, 10, 15)),
    ("1 December 2026, 22:15", dt.datetime(2026, 12, 1, 22, 15)),
    ("-", None),                                        # Moodle: no submission
    ("", None),
    ("lundi 1 décembre 2026, 10:15", None),             # another language: not read
    ("Monday, 31 February 2026, 10:15 AM", None),
    ("Monday, 1 December 2026, 13:15 PM", None),
    ("Monday, 1 Decembre 2026, 10:15 AM", None),
    ("2026-12-01T10:15", None),
])
def test_submission_times_are_read_as_moodle_writes_them(cell, when):
    sheet = moodle_worksheet.Worksheet(["Identifier", "Last modified (submission)"])
    assert moodle_worksheet.submitted_at(sheet, ["Participant 1", cell]) == when


def test_the_class_list_gives_submission_times(tmp_path):
    """``ClassList.submitted``: submission id -> aware time, only where the worksheet gives
    one that parses; in the zone asked for, else the machine's."""
    sheet = _sheet(NAMED, "")
    sheet[2][NAMED.index("Last modified (submission)")] = "sometime"
    roster = gradebooks.read_roster(_write(tmp_path / "w.csv", sheet))
    people = [Person("a", "5101", "", "moodle"), Person("b", "5102", "", "moodle")]
    paris = gradebooks.class_list(roster, people, tz=ZoneInfo("Europe/Paris")).submitted
    assert paris == {"a": dt.datetime(2026, 12, 1, 10, 15, tzinfo=ZoneInfo("Europe/Paris"))}
    assert paris["a"] == dt.datetime(2026, 12, 1, 9, 15, tzinfo=dt.UTC)
    local = gradebooks.class_list(roster, people).submitted
    assert list(local) == ["a"] and local["a"].tzinfo is not None
    assert local["a"] == dt.datetime(2026, 12, 1, 10, 15).astimezone()
    assert gradebooks.class_list(None, people).submitted == {}


# --- Canvas ----------------------------------------------------------------------------------

TITLE_ID = re.compile(r"(.*)\s\((\d+)\)")  # Assignment.title_and_id


def _canvas_assignment(header: str, course: dict[int, str]) -> int | str:
    """The assignment Canvas's importer gives a column (``parse_assignments``): the id of a
    ``Title (id)`` header when the course has it, else the first assignment whose title is
    the whole header, else a new one."""
    m = TITLE_ID.fullmatch(header)
    if m and int(m[2]) in course:
        return int(m[2])
    return next((i for i, t in sorted(course.items()) if t == header), "new")


EXPORT = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
COURSE = {4321: "Week 2", 4390: "Week 3 masks", 4400: "Week 3 masks",
          4401: "Week 3 (draft)", 4402: "week 3  Masks"}


@pytest.mark.parametrize("title, columns, header", [
    # the roster's column for the assignment (last year's copy, 4390, not in this export)
    ("Week 3 masks", ["Week 2 (4321)", "Week 3 masks (4400)", "Current Score"],
     "Week 3 masks (4400)"),
    ("Week 3 (draft)", ["Week 3 (draft) (4401)"], "Week 3 (draft) (4401)"),
    ("Week 3 masks", ["week 3  Masks (4402)"], "week 3  Masks (4402)"),  # case, spaces
    ("Week 3 masks (4400)", ["Week 3 masks (4400)", "Week 3 masks (4390)"],
     "Week 3 masks (4400)"),                             # --title names one of two
    ("Week 3 masks", ["Week 2 (4321)", "Week 3 masks extra (4500)"], "Week 3 masks"),
    ("Week 3 masks", None, "Week 3 masks"),              # no roster: the title
])
def test_canvas_csv_names_the_rosters_column(tmp_path, title, columns, header):
    roster = None
    if columns is not None:
        roster = gradebooks.read_roster(_write(tmp_path / "r.csv", [
            [*EXPORT, *columns], ["Smith, Ann", "101", "S-1", "ann", "A", *[""] * len(columns)]]))
    gradebooks.write_canvas_csv(tmp_path / "canvas.csv", title, {"ann": "7"}, "10", roster,
                                [Person("ann")])
    rows = _read(tmp_path / "canvas.csv")
    assert rows[0][-1] == header
    m = TITLE_ID.fullmatch(header)
    if m:
        assert _canvas_assignment(header, COURSE) == int(m[2])
    if roster is not None:
        assert rows[2] == ["Smith, Ann", "101", "S-1", "ann", "A", "7"]


def test_two_assignments_with_the_title_are_refused_in_one_sentence(tmp_path):
    roster = gradebooks.read_roster(_write(tmp_path / "r.csv", [
        [*EXPORT, "Week 3 masks (4390)", "Week 3 masks (4400)"]]))
    with pytest.raises(gradebooks.RosterError, match=r"2 assignments titled 'Week 3 masks' "
                       r"\(Week 3 masks \(4390\), Week 3 masks \(4400\)\): name the one"):
        gradebooks.canvas_column(roster, "Week 3 masks")
    with pytest.raises(gradebooks.RosterError):
        gradebooks.write_canvas_csv(tmp_path / "c.csv", "Week 3 masks", {}, "10", roster, [])


# --- Moodle's gradebook CSV import -----------------------------------------------------------

def _moodle_import(path: Path) -> dict[str, str]:
    """Username -> the grade Moodle's CSV import commits (a blank: "no grade", clearing it)."""
    rows = _read(path)
    assert rows[0][:2] == ["Username", "ID number"]
    return {row[0]: row[2] for row in rows[1:]}


@pytest.mark.parametrize("with_roster", [True, False], ids=["roster", "folders"])
def test_moodle_csv_leaves_out_students_without_a_grade(tmp_path, with_roster):
    """A student with no submission, or whose submission was not graded, has no row: a blank
    would clear a grade the teacher entered in Moodle."""
    roster = gradebooks.read_roster(_write(tmp_path / "r.csv", [
        EXPORT, ["Smith, Ann", "101", "S-1", "ann", "A"], ["Jones, Bob", "102", "S-2", "bob", "A"],
        ["Lee, Cy", "103", "S-3", "cy", "A"]])) if with_roster else None
    people = [Person("ann"), Person("bob")]  # bob's submission was rejected; cy sent none
    left_out = gradebooks.write_moodle_csv(tmp_path / "moodle.csv", "Week 3", {"ann": "7.5"},
                                           roster, people)
    assert left_out == []
    assert _moodle_import(tmp_path / "moodle.csv") == {"ann": "7.5"}
    gradebooks.write_moodle_csv(tmp_path / "none.csv", "Week 3", {}, roster, people)
    assert _moodle_import(tmp_path / "none.csv") == {}  # nothing to grade: a header only


@pytest.mark.parametrize("username", ["-dash", "@at", "=eq", "+plus", "plain"])
def test_moodle_csv_usernames_are_the_keys_moodle_matches(tmp_path, username):
    """A Moodle username may start with '-' or '@': the import matches the cell as text, so
    it is written as it is (an escaped "'-dash" would match no one)."""
    gradebooks.write_moodle_csv(tmp_path / "moodle.csv", "Week 3", {username: "7.5"}, None,
                                [Person(username)])
    assert _moodle_import(tmp_path / "moodle.csv") == {username: "7.5"}


# --- Gradescope ------------------------------------------------------------------------------

def _decimals(x: Decimal) -> int:
    return max(0, -int(x.as_tuple().exponent))


def _total(tests: list[dict]) -> Decimal:
    """The tests' maximum as Gradescope adds it up, in decimals (as written)."""
    return sum((t["max_score"] for t in tests), Decimal(0))


@pytest.mark.parametrize("exercises", [
    [[(10 / 9, 10 / 9)] * 9],                            # 9 tests summing to 9.999999999999998
    [[(1 / 3, 1 / 3), (0.1, 1 / 3), (0, 1 / 3)], [(2 / 7, 2 / 7)] * 7],
    [[(0.5, 0.5), (0, 0)], [(1 / 6, 1 / 6)] * 5 + [(0.1, 1 / 6)]],
    [[]],                                                # an exercise without tests
])
def test_gradescope_tests_add_up_to_the_maximum(tmp_path, exercises):
    """Read as JSON numbers (decimals): each test's score and max_score have at most six
    decimals, the tests' max_score add up exactly to each exercise's and to the submission's
    maximum, a test that scored its maximum scores its written max_score, the top-level score
    is the total."""
    result = _result("s1", *exercises)
    gradescope.write_gradescope_json(tmp_path / "gradescope.json", result)
    text = (tmp_path / "gradescope.json").read_text()
    data = json.loads(text, parse_float=Decimal, parse_int=Decimal)
    tests = data["tests"]
    assert _total(tests) == Decimal(numbers.exact(result.max_score))
    for i, e in enumerate(result.exercises, 1):
        mine = [t for t in tests if t["number"].startswith(f"{i}.")]
        assert _total(mine) == Decimal(numbers.exact(e.max_score))
        for t, was in zip(mine, e.tests, strict=True):
            assert _decimals(t["max_score"]) <= 6 and _decimals(t["score"]) <= 6
            assert 0 <= t["score"] <= t["max_score"]
            assert (t["score"] == t["max_score"]) == (was.score >= was.max_score)
            assert abs(t["score"] - Decimal(was.score)) < Decimal("1e-5")
    assert data["score"] == Decimal(numbers.exact(result.final_score))
    assert gradescope.validate_gradescope(json.loads(text)) == []
