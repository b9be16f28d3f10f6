"""Gradebooks: ``grades.csv`` (every submission found), and the LMS gradebooks a teacher
imports as they are, Canvas's (``canvas.csv``) and Moodle's (``moodle.csv``), from a class's
totals and, when given, the roster exported from Canvas.

``grades.csv``: columns ``id,total,max,<one per exercise slug>,late,status``. An exercise that
was not submitted scores ``0`` (the points earned, and what the total counts); the ``status``
cell says ``graded; not submitted: <slugs>`` (and names the files that ``could not be
loaded``). An exercise absent from a result (graded with another ``--exercises`` selection)
is an empty cell. A rejected submission is a row with every score cell empty and ``status`` =
``not graded: <reason>``: an LMS import leaves it ungraded rather than 0; a submission an
interrupted run had not graded is ``pending``. Rows are sorted by id in natural order (``s2``
before ``s10``).

Every gradebook is written by ``csv_cells.write_csv``: a text cell starting with ``= + - @``, a
tab or a carriage return gets a leading ``'`` (numbers excepted) so a spreadsheet never
evaluates it; UTF-8 without BOM, CRLF line ends (RFC 4180).

Canvas imports a CSV whose first columns identify the student (Student, ID, SIS User ID, SIS
Login ID, Section: the same as its gradebook export) and treats every other column as an
assignment; its second row may give each assignment's points ("    Points Possible"). So
``canvas.csv`` holds those columns, copied for every roster student, one column for the
assignment, and nothing else: the total as its score, an empty cell where there is nothing
to grade. Moodle's CSV import maps an identifier column to a user field: ``moodle.csv`` has
``Username`` (the roster's SIS Login ID, else the submission id), ``ID number`` (SIS User ID)
and the assignment's column.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader import numbers
from grader.engine.results import SubmissionResult

from .csv_cells import write_csv
from .plain import entry_get, natural_key

IDENTITY = ("Student", "ID", "SIS User ID", "SIS Login ID", "Integration ID", "Root Account",
            "Section")
CANVAS_COLUMNS = ("Student", "ID", "SIS User ID", "SIS Login ID", "Section")
POINTS_POSSIBLE = "    Points Possible"


class RosterError(ValueError):
    """The roster file is not a Canvas gradebook export (one sentence says why)."""


@dataclass
class Roster:
    columns: list[str]                 # the identity columns, in the export's order
    students: list[dict[str, str]] = field(default_factory=list)


@dataclass
class Person:
    """Who a graded submission belongs to, as the layout found it."""

    id: str
    lms_id: str = ""
    lms_name: str = ""


def read_roster(path: Path) -> Roster:
    """The students of a Canvas gradebook export (its "Points Possible" and other rows
    without a student skipped)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RosterError(f"{path}: cannot be read as a UTF-8 CSV ({exc})") from None
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        raise RosterError(f"{path}: empty")
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
                          f"{' or '.join(repr(c) for c in missing)})")
    roster = Roster(columns)
    for row in rows[1:]:
        cells = dict(zip(columns, (c.strip() for c in row)))
        if not cells.get("ID") or cells.get("Student", "") == POINTS_POSSIBLE.strip():
            continue  # "Points Possible", "Manual Posting", blank lines
        roster.students.append({c: cells.get(c, "") for c in columns})
    return roster


def match(roster: Roster, people: Iterable[Person]) -> tuple[dict[str, str], list[str]]:
    """``({roster ID: submission id}, [submission ids that match no student])``: by the LMS
    user id first, else the submission's id as the ID, SIS User ID or SIS Login ID."""
    keys: dict[str, str] = {}
    for student in roster.students:
        for column in ("SIS Login ID", "SIS User ID", "ID"):
            if student.get(column):
                keys[student[column].casefold()] = student["ID"]
    found, unmatched = {}, []
    for person in people:
        sid = keys.get(person.lms_id.casefold()) if person.lms_id else None
        sid = sid or keys.get(person.id.casefold())
        if sid is None or sid in found:
            unmatched.append(person.id)
        else:
            found[sid] = person.id
    return found, unmatched


def canvas_rows(title: str, totals: dict[str, str], max_points: str, roster: Roster | None,
                people: list[Person]) -> tuple[list[list[str]], list[str]]:
    """The rows of ``canvas.csv`` and the submissions that match no roster student.

    ``totals``: submission id -> the total to import ("" for nothing to grade)."""
    if roster is not None:
        by_student, unmatched = match(roster, people)
        rows = [[*roster.columns, title],
                [POINTS_POSSIBLE, *[""] * (len(roster.columns) - 1), max_points]]
        for student in roster.students:
            sub = by_student.get(student["ID"])
            rows.append([*(student[c] for c in roster.columns),
                         totals.get(sub, "") if sub else ""])
        return rows, unmatched
    rows = [[*CANVAS_COLUMNS, title], [POINTS_POSSIBLE, "", "", "", "", max_points]]
    rows += [[p.lms_name, p.lms_id, "", "", "", totals.get(p.id, "")] for p in people
             if p.lms_id]
    return rows, [p.id for p in people if not p.lms_id]


def write_canvas_csv(path: Path, title: str, totals: dict[str, str], max_points: str,
                     roster: Roster | None, people: list[Person]) -> list[str]:
    """Write ``canvas.csv``; return the submissions it could not place (no roster row, or
    no Canvas user id without a roster)."""
    rows, unmatched = canvas_rows(title, totals, max_points, roster, people)
    write_csv(path, rows)
    return unmatched


def write_moodle_csv(path: Path, title: str, totals: dict[str, str], roster: Roster | None,
                     people: list[Person]) -> None:
    """Write ``moodle.csv``: ``Username``, ``ID number`` and the assignment's column."""
    rows = [["Username", "ID number", title]]
    if roster is not None:
        by_student, _ = match(roster, people)
        for student in roster.students:
            sub = by_student.get(student["ID"])
            rows.append([student.get("SIS Login ID") or student["ID"],
                         student.get("SIS User ID", ""), totals.get(sub, "") if sub else ""])
    else:
        rows += [[p.id, "", totals.get(p.id, "")] for p in people]
    write_csv(path, rows)


def write_grades_csv(path: Path, results: list[SubmissionResult], exercises: list[str],
                     rejected: list, pending: Iterable[str] = (),
                     late: Iterable[str] = ()) -> None:
    """Write the gradebook CSV: ``id,total,max,<exercise slugs...>,late,status``, by id.

    One row per submission found: graded (status ``graded``), rejected (empty scores, status
    ``not graded: <reason>``) or ``pending`` (an interrupted run had not graded it yet, so a
    partial file says it is partial). ``late``: the ids whose upload was marked late (no
    penalty is computed: the LMS does that). See the module docstring for blanks and zeros.
    """
    late = set(late)
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
        sid = str(r.submission)
        rows.append((natural_key(sid), [sid, numbers.points(r.score),
                                        numbers.points(r.max_score), *cells,
                                        "late" if sid in late else "", status]))
    for entry in rejected:
        sid = str(entry_get(entry, "id"))
        reason = " ".join(str(entry_get(entry, "reason") or "unknown reason").split())
        rows.append((natural_key(sid), [sid, "", "", *([""] * len(exercises)),
                                        "late" if sid in late else "",
                                        f"not graded: {reason}"]))
    for sid in pending:
        rows.append((natural_key(sid), [sid, "", "", *([""] * len(exercises)),
                                        "late" if sid in late else "", "pending"]))
    rows.sort(key=lambda kv: kv[0])
    write_csv(path, [["id", "total", "max", *exercises, "late", "status"],
                     *(row for _, row in rows)])
