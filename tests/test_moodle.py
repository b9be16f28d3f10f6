"""Moodle, both files: the "Download all submissions" zip as a layout, and the offline grading
worksheet as the roster, written back filled in column by column (Moodle 3.x-4.x formats:
``mod/assign/classes/downloader.php``, ``gradingtable.php``, ``feedback/offline``)."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from conftest import csv_rows, edit_source

from grader import catalog
from grader.bulk.layouts import discover
from grader.report import gradebooks, moodle_worksheet

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG, OTHER = "grid_local_mask", "attention_rollout"
SLUGS = [SLUG, OTHER]
REF = catalog.get(SLUG).solution.read_text()
WRONG = edit_source(REF, ("return mask", "return ~mask"))
# A worksheet as Moodle 4.x writes it (English, online text and feedback comments enabled).
HEADER = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
          "Grade can be changed", "Last modified (submission)", "Online text",
          "Last modified (grade)", "Feedback comments"]
SHEET = [
    ["Participant 5101", "Alice Smith", "alice@example.com", "Submitted for grading", "",
     "100.00", "Yes", "Monday, 1 December 2026, 10:00 AM", "", "-", ""],
    ["Participant 5102", "Bob Jones", "bob@example.com",
     "Submitted for grading - 2 days 3 hours late", "", "100.00", "Yes",
     "Wednesday, 3 December 2026, 1:00 PM", "<p>see file</p>", "-", ""],
    ["Participant 5103", "Cy Lee", "cy@example.com", "No submission", "", "100.00", "Yes", "-",
     "", "-", ""],
    ["Participant 5104", "Dee Quinn", "=cmd|' /C calc'!A0", "Submitted for grading - Graded",
     "70.00", "100.00", "Yes", "Monday, 1 December 2026, 9:00 AM", "",
     "Tuesday, 2 December 2026, 9:00 AM", "Good start"],
]
ASSIGNMENT = f'title = "Week 3"\nexercises = ["{SLUG}"]\n[points]\n{SLUG} = 10\n'


def _zip(path: Path, members: dict[str, str | bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _zip_bytes(members: dict[str, str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _csv(rows: list[list[str]]) -> str:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\r\n").writerows(rows)
    return buf.getvalue()


# --- the layout -------------------------------------------------------------------------------


def test_every_moodle_naming_is_read(tmp_path: Path) -> None:
    """4.1+ folders, 3.1-4.0 folders (trailing ``_``), flat names, a nested zip; online text
    and other files ignored; a member named otherwise rejected, never unpacked."""
    class_zip = _zip(tmp_path / "C1-Week 3-42.zip", {
        f"Alice Smith_5101_assignsubmission_file/{SLUG}.py": "a = 1\n",
        "Alice Smith_5101_assignsubmission_onlinetext/onlinetext.html": "<p>hi</p>",
        f"Bob Jones_5102_assignsubmission_file_/work/deep/{SLUG}.py": "deep = 1\n",
        f"Bob Jones_5102_assignsubmission_file_/work/{SLUG}.py": "shallow = 1\n",
        "Bob Jones_5102_assignsubmission_file_/hw.zip": _zip_bytes({f"x/{OTHER}.py": "r = 1\n"}),
        f"Eve Ng_5105_assignsubmission_file_{SLUG}.py": "flat = 1\n",
        "Eve Ng_5105_assignsubmission_file_notes.txt": "n",
        "stray.py": "?",
    })
    found = discover([class_zip], SLUGS, tmp_path / "work")
    assert found.layout == "moodle" and "Moodle" in found.description
    subs = {s.id: s for s in found.submissions}
    assert list(subs) == ["Alice_Smith_5101", "Bob_Jones_5102", "Eve_Ng_5105"]
    alice, bob, eve = subs.values()
    assert (alice.lms_id, alice.lms_name, alice.lms_kind) == ("5101", "Alice Smith", "moodle")
    assert alice.notes == ["ignored 1 other file: onlinetext.html (the onlinetext plugin)"]
    assert bob.files[SLUG].read_text() == "shallow = 1\n"  # the shallowest copy
    assert bob.files[OTHER].read_text() == "r = 1\n"       # from the zip the learner uploaded
    assert eve.files[SLUG].read_text() == "flat = 1\n"
    assert [r.id for r in found.rejected] == ["stray.py"]
    assert "not named like a Moodle submission" in found.rejected[0].reason


def test_an_unzipped_moodle_download_is_a_moodle_folder(tmp_path: Path) -> None:
    root = tmp_path / "unzipped"
    for rel, text in {f"Alice Smith_5101_assignsubmission_file/{SLUG}.py": "a = 1\n",
                      "Alice Smith_5101_assignsubmission_onlinetext/onlinetext.html": "x",
                      f"Bob Jones_5102_assignsubmission_file_/{SLUG}.py": "b = 1\n"}.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    found = discover([root], SLUGS, tmp_path / "work")
    assert found.layout == "moodle"
    assert [(s.id, s.lms_id, s.lms_name) for s in found.submissions] == [
        ("Alice_Smith_5101", "5101", "Alice Smith"), ("Bob_Jones_5102", "5102", "Bob Jones")]


def test_a_canvas_zip_is_still_canvas_and_other_zips_name_both(tmp_path: Path) -> None:
    canvas = _zip(tmp_path / "c.zip", {f"smithann_101_900_{SLUG}.py": "a = 1\n"})
    assert discover([canvas], SLUGS, tmp_path / "w1").layout == "canvas"
    other = _zip(tmp_path / "o.zip", {f"alice/{SLUG}.py": "a = 1\n"})
    with pytest.raises(ValueError, match="neither a Canvas .* nor a Moodle"):
        discover([other], SLUGS, tmp_path / "w2")


def test_a_hostile_moodle_member_rejects_that_participant(tmp_path: Path) -> None:
    class_zip = _zip(tmp_path / "m.zip", {
        "Evil One_7_assignsubmission_file/hw.zip": _zip_bytes({f"../{SLUG}.py": "x = 1\n"}),
        f"Good Two_8_assignsubmission_file/{SLUG}.py": "g = 1\n"})
    found = discover([class_zip], SLUGS, tmp_path / "work")
    assert [s.id for s in found.submissions] == ["Good_Two_8"]
    assert "unsafe path" in found.rejected[0].reason
    assert not (tmp_path / "work" / "Evil_One_7").exists()


# --- the worksheet ----------------------------------------------------------------------------


def test_the_worksheet_is_a_roster(tmp_path: Path) -> None:
    (tmp_path / "w.csv").write_text("\ufeff" + _csv([HEADER, *SHEET]), encoding="utf-8")
    roster = gradebooks.read_roster(tmp_path / "w.csv")
    assert roster.kind == "moodle" and roster.worksheet is not None
    assert [(s["ID"], s["Student"], s["late"]) for s in roster.students] == [
        ("5101", "Alice Smith", ""), ("5102", "Bob Jones", "late"), ("5103", "Cy Lee", ""),
        ("5104", "Dee Quinn", "")]
    people = [gradebooks.Person("Alice_Smith_5101", "5101", "Alice Smith", "moodle"),
              gradebooks.Person("bob@example.com"), gradebooks.Person("zed")]
    klass = gradebooks.class_list(roster, people)
    assert klass.names == {"Alice_Smith_5101": "Alice Smith", "bob@example.com": "Bob Jones"}
    assert klass.absent == ["Cy Lee", "Dee Quinn"] and klass.unmatched == ["zed"]
    assert klass.late == {"bob@example.com"}


@pytest.mark.parametrize("header, words", [
    (["Identifier", "Full name", "Status", "Grade", "Maximum Grade"], r"Last modified \(grade\)"),
    (["Identifier", "Full name", "Status", "Grade", "Scale", "Last modified (grade)"],
     "graded on a scale"),
])
def test_a_worksheet_the_upload_cannot_take_is_refused(tmp_path: Path, header, words) -> None:
    (tmp_path / "w.csv").write_text(_csv([header]))
    with pytest.raises(gradebooks.RosterError, match=words):
        gradebooks.read_roster(tmp_path / "w.csv")


@pytest.mark.parametrize("score, most, sheet_max, text", [
    (5, 10, "100.00", "50.00"), (1, 3, "100.00", "33.33333"), (10, 10, "10,00", "10,00"),
    (2, 3, "10", "6.66667"), (0, 10, "100.00", "0.00"), (7.5, 10, "20.0", "15.0")])
def test_grades_are_scaled_to_the_maximum_grade_in_its_notation(score, most, sheet_max, text):
    assert moodle_worksheet.grade_text(score, most, sheet_max) == text


# --- grade bulk: a Moodle class, end to end ---------------------------------------------------


@pytest.fixture(scope="module")
def moodle_class(tmp_path_factory):
    base = tmp_path_factory.mktemp("moodle")
    (base / "a.toml").write_text(ASSIGNMENT)
    (base / "worksheet.csv").write_text("\ufeff" + _csv([HEADER, *SHEET]), encoding="utf-8")
    (base / "adjust.csv").write_text("student,points,comment\r\n"
                                     "Participant 5102,+2,\"regrade: the mask, transposed\"\r\n")
    _zip(base / "subs.zip", {
        f"Alice Smith_5101_assignsubmission_file/{SLUG}.py": REF,
        f"Bob Jones_5102_assignsubmission_file/{SLUG}.py": WRONG,
        "Bob Jones_5102_assignsubmission_onlinetext/onlinetext.html": "<p>see file</p>",
        f"Zed Unknown_5999_assignsubmission_file/{SLUG}.py": REF,
    })
    done = subprocess.run([GRADE, "bulk", str(base / "subs.zip"), "--out", str(base / "out"),
                           "--assignment", str(base / "a.toml"), "--roster",
                           str(base / "worksheet.csv"), "--adjust", str(base / "adjust.csv"),
                           "-q"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    return {"base": base, "out": base / "out", "said": done.stderr}


def test_the_filled_worksheet_matches_moodle_column_by_column(moodle_class):
    rows = csv_rows(moodle_class["out"] / "moodle-worksheet.csv")
    assert rows[0] == HEADER  # Moodle's header, in its order, nothing added
    assert len(rows) == 1 + len(SHEET) and all(len(r) == len(HEADER) for r in rows)
    g, f = HEADER.index("Grade"), HEADER.index("Feedback comments")
    for was, now in zip(SHEET, rows[1:]):
        for i, column in enumerate(HEADER):
            if column in ("Grade", "Feedback comments") and was[1] in ("Alice Smith",
                                                                       "Bob Jones"):
                continue
            assert now[i] == was[i], (was[1], column)  # as read, never escaped
    alice, bob, cy, dee = rows[1:]
    assert alice[g] == "100.00" and alice[f].startswith("Autograded: 10 of 10 points")
    computed = json.loads((moodle_class["out"] / "Bob_Jones_5102/results.json").read_text())[
        "score"]
    assert float(bob[g]) == pytest.approx((computed + 2) * 10)  # adjusted, scaled to 100
    assert bob[g].count(".") == 1 and len(bob[g].split(".")[1]) >= 2
    assert "Submitted late." in bob[f] and "regrade: the mask, transposed" in bob[f]
    assert cy[g] == "" and cy[f] == ""              # no submission: left as it was
    assert dee[g] == "70.00" and dee[f] == "Good start"  # graded in Moodle: untouched
    assert dee[2] == "=cmd|' /C calc'!A0"          # as Moodle wrote it (Verbatim)


def test_the_moodle_class_has_names_no_moodle_csv_and_says_who_is_unknown(moodle_class):
    out = moodle_class["out"]
    assert not (out / "moodle.csv").exists() and not (out / "canvas.csv").exists()
    said = "1 submission(s) match no student of the roster and are not in moodle-worksheet.csv"
    assert said in moodle_class["said"]
    grades = {r[1]: r for r in csv_rows(out / "grades.csv")}
    assert grades.pop("name")[:3] == ["id", "name", "total"]
    assert grades["Alice Smith"][0] == "Alice_Smith_5101"
    assert grades["Bob Jones"][-2] == "late"  # from Moodle's status
    assert grades["Cy Lee"][0] == "" and grades["Cy Lee"][-1] == "no submission"
    page = (out / "index.html").read_text()
    for name in ("Alice Smith", "Bob Jones", "Cy Lee", "Dee Quinn"):
        assert f'<td class="name" data-sort="{name}">{name}</td>' in page
    assert page.count("no submission</td>") == 2  # Cy and Dee
    assert '<a href="moodle-worksheet.csv">' in page
