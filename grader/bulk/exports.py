"""Every file a graded class exports, written from OUT alone: ``write_exports``.

``grade bulk`` calls it when grading ends, ``grade review`` after each save. It reads the run
(``manifest.py``: the students, the copies of the assignment, roster and adjustments) and each
graded submission's ``results.json``, applies the teacher's marks in one order, each to the
total the one before left:

1. the rubric items of ``OUT/review.json`` (``grade review``; ``review/store.py``),
2. the ``--adjust`` file's adjustments (``adjust.py``),
3. the assignment's late policy (``grader/late.py``),

then writes ``gradescope.json`` and the report of each submission, the LMS gradebooks
(canvas.csv, moodle.csv or moodle-worksheet.csv), the class report, grades.csv and junit.xml.
Marks are never written into ``results.json`` (the grading cache): exporting again from the
same files gives the same bytes. Each file is written whole and renamed into place, and OUT is
flushed to the disk once, when the last is written (``files.synced_once``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from grader.files import atomic_write_text, synced_once
from grader.results import SubmissionResult, from_dict
from grader.review import store

from . import manifest as mf
from .adjust import AdjustError, Line, read_adjustments, resolve, student_keys
from .adjust import apply as apply_adjustments
from .reading import Rejected


class ExportError(ValueError):
    """The class's exports cannot be written (one sentence)."""


@dataclass
class Exported:
    """What ``write_exports`` did: the gradebook files written beside ``index.html``, the
    sentences the teacher must see (also in the class report), the results with their marks."""

    files: list[str] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    results: list[SubmissionResult] = field(default_factory=list)


def people(m: mf.ClassManifest) -> list:
    """The class as the gradebooks know it (``gradebooks.Person``), in the class's order."""
    from grader.report.gradebooks import Person

    return [Person(e.id, e.lms_id, e.lms_name, e.lms_kind) if e.status != "rejected"
            else Person(e.id) for e in m.students]


def read_roster(path: Path | None):
    """The roster of ``path`` (``gradebooks.read_roster``), ``None`` without one."""
    from grader.report.gradebooks import read_roster as read

    return read(path) if path is not None else None


def resolve_options(persons: list, roster, klass, adjust_path: Path | None,
                    lines: list[Line] | None, policy) -> tuple[dict[str, Line],
                                                                dict[str, set[str]]]:
    """What the teacher's files name of this class: (submission id -> its adjustment line,
    the student keys a teacher's file may use). ``AdjustError`` for an adjustment naming no
    student of the class, ``late.ExtensionError`` for a late ``policy``'s extensions that do
    not fit (each naming the line): ``grade bulk`` checks both before grading."""
    keys = student_keys(named(persons, roster, klass))
    resolved = resolve(adjust_path, lines, keys) \
        if lines is not None and adjust_path is not None else {}
    if policy is not None:
        from grader import late

        late.check_extensions(policy, keys)
    return resolved, keys


def named(persons: list, roster, klass) -> list[tuple[str, list[str]]]:
    """(submission id, every other name of its student): how a teacher's file (adjustments,
    extensions) may name a student."""
    by_sub = {sub: sid for sid, sub in klass.by_student.items()}
    students = {s["ID"]: s for s in roster.students} if roster is not None else {}
    return [(p.id, [p.lms_id, p.lms_name, klass.names.get(p.id, ""),
                    *students.get(by_sub.get(p.id, ""), {}).values()]) for p in persons]


def read_results(out: Path, ids: Iterable[str]) -> list[SubmissionResult]:
    """The graded results of ``ids`` from their ``results.json``."""
    found = []
    for sid in ids:
        path = out / sid / "results.json"
        try:
            found.append(from_dict(json.loads(path.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ExportError(f"{path}: cannot be read ({type(exc).__name__}); grade the "
                              "class again") from None
    return found


def write_exports(out: Path, only: Iterable[str] | None = None) -> list[str]:
    """Write every export of the class folder ``out`` again (the student reports that show
    marks, did, or are in ``only``) and return the sentences for the teacher. ``ExportError``,
    ``ManifestError``, ``AdjustError`` or a review's ``ReviewError`` when a file it reads does
    not fit (nothing is written then)."""
    return export(out, only).notices


def export(out: Path, only: Iterable[str] | None = None,
           results: list[SubmissionResult] | None = None) -> Exported:
    """``write_exports`` with what it did; ``results``: the graded results when the caller
    has them already (``grade bulk``), else read from OUT."""
    from grader.report import gradebooks

    m = mf.read(out)
    task = m.assignment()
    try:
        roster = read_roster(m.copy("roster"))
        if roster is not None and roster.kind == "canvas":
            gradebooks.canvas_column(roster, m.title)  # one column for the assignment
    except gradebooks.RosterError as exc:
        raise ExportError(str(exc)) from None
    persons = people(m)
    klass = gradebooks.class_list(roster, persons)
    policy = task.late if task is not None and task.due is not None else None
    if policy is not None and (copy := m.copy("extensions")) is not None:
        policy = dataclasses.replace(policy, extensions_file=copy)  # the run's copy, as read
    adjust_path = m.copy("adjust")
    lines = read_adjustments(adjust_path) if adjust_path is not None else None
    # (the extensions are read and checked once, by late.apply below)
    resolved, keys = resolve_options(persons, roster, klass, adjust_path, lines, None)
    if results is None:
        results = read_results(out, m.graded())
    for r in results:  # marks are applied from scratch each time
        r.marks.clear()
        r.review = None
    done = Exported(results=results)
    done.notices += store.apply(out, results, task.rubric if task is not None else None)
    done.notices += apply_adjustments(results, resolved)
    late_ids = {e.id for e in m.students if e.late} | set(klass.late)
    if policy is not None:
        from grader import late

        times = {e.id: dt.datetime.fromisoformat(e.submitted_at) for e in m.students
                 if e.submitted_at}
        times.update(klass.submitted)
        flagged = {sid for sid in late_ids if sid not in times}
        done.notices += late.apply(results, policy, task.due, times, flagged, keys)
    with synced_once(out):  # each file whole and renamed; all flushed once, at the end
        _write(out, m, done, klass, roster, persons, sorted(late_ids), only)
    return done


def _write(out: Path, m: mf.ClassManifest, done: Exported, klass, roster, persons: list,
           late: list[str], only: Iterable[str] | None) -> None:
    from grader.report import class_html, gradebooks, gradescope, junit
    from grader.report.submission_html import write_html

    # a student's page is written at grading time without marks: written again where it
    # shows marks now or did when last exported (.class/marked.json), and for ``only``
    marked_file = out / mf.FOLDER / "marked.json"
    try:
        was = set(json.loads(marked_file.read_text()))
    except (OSError, ValueError, TypeError):
        was = set()
    now = {r.submission for r in done.results if r.marks or r.review is not None}
    rewrite = was | now | set(only or ())
    for r in done.results:
        gradescope.write_gradescope_json(out / r.submission / "gradescope.json", r)
        if r.submission in rewrite:
            write_html(out / r.submission / "index.html", r)
    atomic_write_text(marked_file, json.dumps(sorted(now)))
    files, lms_notices = _gradebooks(out, m.title, done.results, persons, roster, klass)
    done.files = files
    done.notices += lms_notices
    rejected = [Rejected(id=e.id, reason=e.reason, source=e.source) for e in m.students
                if e.status == "rejected"]
    pending = [e.id for e in m.students if e.status == "pending"]
    class_html.write_class_report(out, done.results, rejected, title=m.title, layout=m.layout,
                                  generated=m.generated, scope=m.scope,
                                  notices=done.notices, names=klass.names,
                                  absent=klass.absent, late=late,
                                  files=["grades.csv", *files, "junit.xml"],
                                  pages=list(m.pages))
    gradebooks.write_grades_csv(out / "grades.csv", done.results, list(m.exercises), rejected,
                                pending=pending, late=late, names=klass.names,
                                absent=klass.absent)
    junit.write_junit(out / "junit.xml", done.results, rejected)


def _gradebooks(out: Path, title: str, results: list, people: list, roster,
                klass) -> tuple[list[str], list[str]]:
    """Write the LMS gradebooks: canvas.csv (a Canvas roster, or a Canvas download's user
    ids), moodle-worksheet.csv (a Moodle grading worksheet as the roster) or moodle.csv;
    return (the files written, the sentences the summary and the class report must show)."""
    from grader import numbers
    from grader.report.gradebooks import (
        lms_totals,
        write_canvas_csv,
        write_moodle_csv,
        write_moodle_worksheet,
    )

    totals = lms_totals(results)
    # every result of a run has the same exercises and points (scaled by the assignment)
    most = max((r.max_score for r in results), default=0)
    files, notices = [], []
    for stale in ("canvas.csv", "moodle.csv", "moodle-worksheet.csv"):  # an earlier run's
        (out / stale).unlink(missing_ok=True)
    moodle = roster is not None and roster.kind == "moodle"
    if klass.unmatched and roster is not None:
        book = "moodle-worksheet.csv" if moodle else "canvas.csv"
        notices.append(f"{len(klass.unmatched)} submission(s) match no student of the "
                       f"roster and are not in {book}: {', '.join(klass.unmatched)}.")
    if moodle:
        write_moodle_worksheet(out / "moodle-worksheet.csv", roster, results, people, klass.late)
        return ["moodle-worksheet.csv"], notices
    if roster is not None or any(p.lms_id and not p.lms_kind for p in people):
        unplaced = write_canvas_csv(out / "canvas.csv", title, totals, numbers.exact(most),
                                    roster, people)
        files.append("canvas.csv")
        if unplaced and roster is None:
            notices.append(f"{len(unplaced)} submission(s) have no Canvas user id and are "
                           f"not in canvas.csv: {', '.join(unplaced)}.")
    if any(p.lms_kind == "moodle" for p in people):
        notices.append("No moodle.csv: a Moodle download's names are not Moodle usernames; "
                       "pass the assignment's grading worksheet as --roster to get "
                       "moodle-worksheet.csv.")
        return files, notices
    left_out = write_moodle_csv(out / "moodle.csv", title, totals, roster, people)
    if left_out is None:
        notices.append("No moodle.csv: no student has a username Moodle could know (a "
                       "Canvas download's names are not usernames).")
        return files, notices
    files.append("moodle.csv")
    if left_out:
        notices.append(f"{len(left_out)} row(s) left out of moodle.csv (no username Moodle "
                       f"knows): {', '.join(left_out)}.")
    return files, notices


__all__ = ["AdjustError", "ExportError", "Exported", "export", "write_exports"]
