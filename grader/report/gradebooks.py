"""Gradebooks: ``grades.csv`` (every submission found, and every roster student), and the
LMS gradebooks a teacher imports as they are: Canvas's (``canvas.csv``), Moodle's grade
import (``moodle.csv``) and Moodle's filled-in grading worksheet (``moodle-worksheet.csv``),
from a class's results and, when given, the roster (``--roster``): a Canvas gradebook export
or a Moodle assignment's grading worksheet (``moodle_worksheet.py``).

``grades.csv``: columns ``id,total,max,<one per exercise slug>,late,status``, and ``name``
after ``id`` when the class's names are known (a roster, or a Canvas or Moodle download).
Scores are written for a person (``numbers.points``: at most two decimals, each cell rounded
on its own). ``total`` is the exported total (an ``--adjust`` adjustment's, the status then
saying ``adjusted from <computed>: <comment>``). An exercise that was not submitted scores
``0``; the ``status`` cell says ``graded; not submitted: <slugs>`` (and names the files that
``could not be loaded``). An exercise absent from a result (graded with another
``--exercises`` selection) is an empty cell. A rejected submission is a row with every score
cell empty and ``status`` = ``not graded: <reason>``; a submission an interrupted run had not
graded is ``pending``; a roster student with no submission is a row with an empty id, status
``no submission``. Rows are sorted by id in natural order (``s2`` before ``s10``), the
students without a submission last, in the roster's order.

Every gradebook is written by ``csv_cells.write_csv``: a text cell starting with ``= + - @``, a
tab or a carriage return gets a leading ``'`` (numbers excepted) so a spreadsheet never
evaluates it, except the text an LMS stores as text and compares (``csv_cells.Verbatim``):
canvas.csv's assignment header and every cell of the Moodle worksheet
(``moodle_worksheet.fill``); UTF-8 without BOM, CRLF line ends (RFC 4180). The cells an LMS
reads keep full precision (``numbers.exact``): canvas.csv's assignment column, moodle.csv's
grade column, the worksheet's ``Grade``.

Canvas imports a CSV whose first columns identify the student (Student, ID, SIS User ID, SIS
Login ID, Section: the same as its gradebook export) and treats every other column as an
assignment; its second row may give each assignment's points ("    Points Possible"). So
``canvas.csv`` holds those columns, copied for every roster student, one column for the
assignment, and nothing else: the total as its score, an empty cell where there is nothing
to grade. Canvas finds a column's assignment by the id of a ``Title (id)`` header, else by
a title equal to the whole header, else creates an assignment: the header is the roster's
own column for the assignment when it has one (``canvas_column``), else the title.
Moodle's gradebook CSV import maps an identifier column to a user field, stops at an
identifier it does not know, and commits an empty grade as "no grade": ``moodle.csv`` has
``Username`` (a Canvas roster's SIS Login ID, else the id of a folder or zip submission),
``ID number`` (SIS User ID) and the assignment's column, and only rows whose username is one
and that have a grade; ids made from a Canvas or Moodle download are never usernames, so
those rows are left out (and said).

A Moodle worksheet as the roster gives the names (the ``Identifier``, ``Participant 5101``,
where blind marking writes no ``Full name``), the late flags of its ``Status`` and the
submission times of its ``Last modified (submission)`` (``ClassList.submitted``).
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader import numbers
from grader.results import SubmissionResult

from . import marks
from . import moodle_worksheet as mw
from .csv_cells import Verbatim, write_csv
from .plain import entry_get, natural_key

IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Root Account",
            "Section")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"
_KEYS = {"canvas": ("SIS Login ID", "SIS User ID", "ID"),
         "moodle": (mw.IDENTIFIER, *mw.MATCH_COLUMNS, "ID")}
_TITLE_ID = re.compile(r"(.*)\s\((\d+)\)")  # Canvas's Assignment.title_and_id


class RosterError(ValueError):
    """The roster file is neither a Canvas gradebook export nor a Moodle grading worksheet
    (one sentence says why)."""


@dataclass
class Roster:
    columns: list[str]                 # Canvas: the identity columns, in the export's order
    students: list[dict[str, str]] = field(default_factory=list)  # "ID" and "Student" always
    kind: str = "canvas"               # or "moodle": a grading worksheet
    worksheet: mw.Worksheet | None = None
    assignments: list[str] = field(default_factory=list)  # Canvas: the other columns' headers
    submitted: dict[str, dt.datetime] = field(default_factory=dict)  # Moodle: ID -> naive time


@dataclass
class Person:
    """Who a graded submission belongs to, as the layout found it."""

    id: str
    lms_id: str = ""
    lms_name: str = ""
    lms_kind: str = ""  # "moodle", or "" (Canvas, when there is an lms_id)


@dataclass
class ClassList:
    """What the roster (or the LMS download) says about the class. ``submitted``: submission
    id -> when it was submitted (aware), where a Moodle worksheet's ``Last modified
    (submission)`` gives a time that parses (``moodle_worksheet.submitted_at``)."""

    names: dict[str, str] = field(default_factory=dict)      # submission id -> name
    absent: list[str] = field(default_factory=list)          # roster students, no submission
    late: set[str] = field(default_factory=set)              # late per the roster (Moodle)
    unmatched: list[str] = field(default_factory=list)       # submissions with no student
    by_student: dict[str, str] = field(default_factory=dict)  # roster ID -> submission id
    submitted: dict[str, dt.datetime] = field(default_factory=dict)  # per the roster (Moodle)


def read_roster(path: Path) -> Roster:
    """The students of a Canvas gradebook export (its "Points Possible" and other rows
    without a student skipped) or of a Moodle grading worksheet (every row kept)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot be read as a UTF-8 CSV ({exc})") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise RosterError(f"{path}: empty")
    if mw.is_worksheet([h.strip() for h in rows[0]]):
        return _moodle_roster(path, rows)
    header = [h.strip() for h in rows[0]]
    columns = []
    for name in header:
        if name not in IDENTITY:
            break
        columns.append(name)
    missing = [c for c in ("Student", "ID") if c not in columns]
    if missing:
        raise RosterError(f"{path}: not a Canvas gradebook export (its first columns must be "
                          f"Student, ID, SIS User ID, SIS Login ID, Section; no "
                          f"{' or '.join(repr(c) for c in missing)}) nor a Moodle grading "
                          "worksheet (no Identifier and Grade columns)")
    roster = Roster(columns, assignments=[h for h in header[len(columns):] if h])
    for row in rows[1:]:
        cells = dict(zip(columns, (c.strip() for c in row)))
        if not cells.get("ID") or cells.get("Student", "") == POINTS_POSSIBLE.strip():
            continue  # "Points Possible", "Manual Posting", blank lines
        roster.students.append({c: cells.get(c, "") for c in columns})
    return roster


def _moodle_roster(path: Path, rows: list[list[str]]) -> Roster:
    try:
        sheet = mw.read_worksheet(path, rows)
    except mw.WorksheetError as exc:
        raise RosterError(str(exc)) from None
    roster = Roster([], kind="moodle", worksheet=sheet)
    for row in sheet.rows:
        pid = mw.participant(sheet, row)
        if not pid:
            continue
        student = {c: sheet.cell(row, c) for c in (mw.IDENTIFIER, *mw.MATCH_COLUMNS)}
        name = sheet.cell(row, mw.FULL_NAME) or student[mw.IDENTIFIER]  # blind marking
        student.update({"ID": pid, "Student": name,
                        "late": "late" if mw.is_late(sheet, row) else ""})
        roster.students.append(student)
        when = mw.submitted_at(sheet, row)
        if when is not None:
            roster.submitted[pid] = when
    return roster


def match(roster: Roster, people: Iterable[Person]) -> tuple[dict[str, str], list[str]]:
    """``({roster ID: submission id}, [submission ids that match no student])``: by the LMS
    user id first (a download of the roster's own LMS), else the submission's id as one of the
    roster's identifiers (Canvas: ID, SIS User ID or SIS Login ID; Moodle: the participant
    number or identifier, email address, ID number or username)."""
    keys: dict[str, str] = {}
    for student in roster.students:
        for column in _KEYS[roster.kind]:
            if student.get(column):
                keys[student[column].casefold()] = student["ID"]
    found, unmatched = {}, []
    for person in people:
        own = person.lms_id and (person.lms_kind or "canvas") == roster.kind
        sid = keys.get(person.lms_id.casefold()) if own else None
        sid = sid or keys.get(person.id.casefold())
        if sid is None or sid in found:
            unmatched.append(person.id)
        else:
            found[sid] = person.id
    return found, unmatched


def class_list(roster: Roster | None, people: list[Person],
               tz: dt.tzinfo | None = None) -> ClassList:
    """Names, absent students, late flags and submission times of the class: from the
    roster when given, else the names a Canvas or Moodle download gave its files. A
    worksheet's times are read in ``tz``, by default the machine's local time zone (``TZ``):
    Moodle writes them in the downloading user's zone without naming it."""
    if roster is None:
        return ClassList(names={p.id: p.lms_name for p in people if p.lms_name})
    by_student, unmatched = match(roster, people)
    found = ClassList(unmatched=unmatched, by_student=by_student)
    for student in roster.students:
        sub = by_student.get(student["ID"])
        if sub is None:
            found.absent.append(student["Student"] or student["ID"])
            continue
        found.names[sub] = student["Student"]
        if student.get("late"):
            found.late.add(sub)
        when = roster.submitted.get(student["ID"])
        if when is not None:
            found.submitted[sub] = when.replace(tzinfo=tz) if tz else when.astimezone()
    return found


def lms_totals(results: list[SubmissionResult]) -> dict[str, str]:
    """Submission id -> the total an LMS imports (the adjusted one), at full precision."""
    return {r.submission: numbers.exact(r.final_score) for r in results}


def _folded(text: str) -> str:
    return " ".join(text.split()).casefold()


def canvas_column(roster: Roster | None, title: str) -> str:
    """The header of the assignment's column in ``canvas.csv``: the Canvas roster's own
    column for ``title``, ``title (id)`` as Canvas exports it (the title compared as written,
    else with case and spaces folded), or ``title`` itself when it is one of the roster's
    columns (``--title "Week 3 (4321)"``); else ``title``. ``RosterError`` when the roster has
    several columns for ``title`` (two assignments with that title)."""
    if roster is None or roster.kind != "canvas" or title in roster.assignments:
        return title
    titled = [(m[1], h) for h in roster.assignments if (m := _TITLE_ID.fullmatch(h))]
    for same in (lambda t: t == title, lambda t: _folded(t) == _folded(title)):
        found = [h for t, h in titled if same(t)]
        if len(found) > 1:
            raise RosterError(f"the roster has {len(found)} assignments titled {title!r} "
                              f"({', '.join(found)}): name the one to grade with --title, "
                              f"e.g. --title {found[0]!r}")
        if found:
            return found[0]
    return title


def canvas_rows(title: str, totals: dict[str, str], max_points: str, roster: Roster | None,
                people: list[Person]) -> tuple[list[list[str]], list[str]]:
    """The rows of ``canvas.csv`` and the submissions that match no roster student.

    ``totals``: submission id -> the total to import ("" for nothing to grade). The
    assignment's header is ``canvas_column``'s (``RosterError`` when it is ambiguous)."""
    header = Verbatim(canvas_column(roster, title))
    if roster is not None:
        by_student, unmatched = match(roster, people)
        rows = [[*roster.columns, header],
                [POINTS_POSSIBLE, *[""] * (len(roster.columns) - 1), max_points]]
        for student in roster.students:
            sub = by_student.get(student["ID"])
            rows.append([*(student[c] for c in roster.columns),
                         totals.get(sub, "") if sub else ""])
        return rows, unmatched
    canvas = [p for p in people if p.lms_id and not p.lms_kind]
    rows = [[*CANVAS_COLUMNS, header], [POINTS_POSSIBLE, "", "", "", "", max_points]]
    rows += [[p.lms_name, p.lms_id, "", "", "", totals.get(p.id, "")] for p in canvas]
    return rows, [p.id for p in people if p not in canvas]


def write_canvas_csv(path: Path, title: str, totals: dict[str, str], max_points: str,
                     roster: Roster | None, people: list[Person]) -> list[str]:
    """Write ``canvas.csv``; return the submissions it could not place (no roster row, or
    no Canvas user id without a roster)."""
    rows, unmatched = canvas_rows(title, totals, max_points, roster, people)
    write_csv(path, rows)
    return unmatched


def moodle_rows(title: str, totals: dict[str, str], roster: Roster | None,
                people: list[Person]) -> tuple[list[list[str]], list[str] | None]:
    """The rows of ``moodle.csv`` and who is left out (no username Moodle could know): a
    Canvas roster's students without an SIS Login ID, submissions made from a download;
    ``None`` for them when no student has a username. A student with a username and no
    grade (no submission, not graded) has no row: Moodle would clear their grade."""
    left_out: list[str] = []
    keyed: list[tuple[list[str], str]] = []  # ([username, ID number], submission id or "")
    if roster is not None:
        by_student, _ = match(roster, people)
        for student in roster.students:
            if not student.get("SIS Login ID"):
                left_out.append(student["Student"] or student["ID"])
                continue
            keyed.append(([student["SIS Login ID"], student.get("SIS User ID", "")],
                          by_student.get(student["ID"], "")))
    else:
        left_out = [p.id for p in people if p.lms_id]
        keyed = [([p.id, ""], p.id) for p in people if not p.lms_id]
    # the username and ID number are keys Moodle matches as text: written as they are (an
    # escaped '-x or '@x would match no one)
    rows = [["Username", "ID number", title]]
    rows += [[*(Verbatim(w) for w in who), totals[sub]] for who, sub in keyed
             if totals.get(sub)]
    return rows, left_out if keyed else None


def write_moodle_csv(path: Path, title: str, totals: dict[str, str], roster: Roster | None,
                     people: list[Person]) -> list[str] | None:
    """Write ``moodle.csv`` (``Username``, ``ID number``, the assignment's column); return who
    was left out (``moodle_rows``), or ``None`` (and nothing written) when no student has a
    username."""
    rows, left_out = moodle_rows(title, totals, roster, people)
    if left_out is None:
        return None
    write_csv(path, rows)
    return left_out


def feedback_text(result: SubmissionResult, late: bool) -> str:
    """The worksheet's ``Feedback comments`` for one graded submission: one plain-text line."""
    parts = [f"Autograded: {numbers.points(result.score)} of "
             f"{numbers.points(result.max_score)} points"]
    for e in result.exercises:
        what = "not submitted" if e.status == "not_submitted" else \
            f"{numbers.points(e.score)}/{numbers.points(e.max_score)}"
        parts.append(f"{e.exercise} {what}")
    text = "; ".join(parts) + "."
    if late:
        text += " Submitted late."
    said = marks.comment(result)
    if marks.changed(result):
        text += f" Adjusted to {numbers.points(result.final_score)} points"
        text += f": {said}" if said else "."
    elif said:
        text += f" {said}"
    return text


def write_moodle_worksheet(path: Path, roster: Roster, results: list[SubmissionResult],
                           people: list[Person], late: set[str]) -> None:
    """Write the roster's grading worksheet filled in (``moodle_worksheet.fill``): the
    graded participants' Grade and Feedback comments."""
    assert roster.worksheet is not None
    by_student, _ = match(roster, people)
    by_sub = {sub: pid for pid, sub in by_student.items()}
    grades = {by_sub[r.submission]: (r.final_score, r.max_score,
                                     feedback_text(r, r.submission in late))
              for r in results if r.submission in by_sub}
    mw.fill(roster.worksheet, path, grades)


def _adjusted(r: SubmissionResult) -> str:
    said = marks.comment(r)
    if not marks.changed(r):
        return f"; {said}" if said else ""
    text = f"; adjusted from {numbers.points(r.score)}"
    return text + (f": {said}" if said else "")


def write_grades_csv(path: Path, results: list[SubmissionResult], exercises: list[str],
                     rejected: list, pending: Iterable[str] = (),
                     late: Iterable[str] = (), names: dict[str, str] | None = None,
                     absent: Iterable[str] = ()) -> None:
    """Write the gradebook CSV: ``id,[name,]total,max,<exercise slugs...>,late,status``.

    One row per submission found: graded (status ``graded``), rejected (empty scores, status
    ``not graded: <reason>``) or ``pending`` (an interrupted run had not graded it yet, so a
    partial file says it is partial), then one per ``absent`` roster student (``no
    submission``). ``late``: the ids whose upload was marked late (no penalty is computed: the
    LMS does that). ``names`` (submission id -> name) adds the ``name`` column. See the module
    docstring for blanks and zeros.
    """
    late, absent = set(late), list(absent)
    named = bool(names) or bool(absent)
    names = names or {}

    def who(sid: str) -> list[str]:
        return [sid, names.get(sid, "")] if named else [sid]

    rows: list[tuple[tuple, list[str]]] = []
    for r in results:
        by_slug = {e.exercise: e for e in r.exercises}
        cells, missing, broken = [], [], []
        for slug in exercises:
            e = by_slug.get(slug)
            cells.append("" if e is None else numbers.points(e.score))
            if e is not None and e.status == "not_submitted":
                missing.append(slug)
            elif e is not None and e.status == "error":
                broken.append(slug)
        status = "graded" + (f"; not submitted: {', '.join(missing)}" if missing else "")
        status += f"; could not be loaded: {', '.join(broken)}" if broken else ""
        status += _adjusted(r)
        sid = str(r.submission)
        rows.append((natural_key(sid), [*who(sid), numbers.points(r.final_score),
                                        numbers.points(r.max_score), *cells,
                                        "late" if sid in late else "", status]))
    for entry in rejected:
        sid = str(entry_get(entry, "id"))
        reason = " ".join(str(entry_get(entry, "reason") or "unknown reason").split())
        rows.append((natural_key(sid), [*who(sid), "", "", *([""] * len(exercises)),
                                        "late" if sid in late else "",
                                        f"not graded: {reason}"]))
    for sid in pending:
        rows.append((natural_key(sid), [*who(sid), "", "", *([""] * len(exercises)),
                                        "late" if sid in late else "", "pending"]))
    rows.sort(key=lambda kv: kv[0])
    body = [row for _, row in rows]
    body += [["", name, "", "", *([""] * len(exercises)), "", "no submission"]
             for name in absent]
    header = ["id", *(["name"] if named else []), "total", "max", *exercises, "late", "status"]
    write_csv(path, [header, *body])
