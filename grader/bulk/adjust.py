"""Teachers' adjustments of graded totals (``grade bulk --adjust FILE``).

A CSV file (a header with ``student``, ``points`` and/or ``total``, ``comment``; blank lines
and lines starting with ``#`` skipped) or a TOML file (``.toml``: ``[[adjust]]`` tables with
``student``, ``points`` or ``total``, ``comment``). Each adjustment names one student, by
submission id or by what the roster or the LMS download knows of them (a name, a Canvas ID,
SIS id or login, a Moodle participant number or ``Participant NNN``, an email address), and
gives either ``points`` to add to the computed total (negative to take away) or a new
``total``, and optionally a comment. The adjusted total is kept within 0 and the maximum.

Everything is checked before anything is written: ``AdjustError`` (one sentence naming the
file and the line) for a malformed line, an unknown or ambiguous student, a student named
twice. Adjustments are applied after grading (``apply``) and never enter the cache.
"""

from __future__ import annotations

import csv
import io
import math
import re
import tomllib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import numbers
from grader.results import MarkKind, SubmissionResult

_FIELDS = ("student", "points", "total", "comment")


class AdjustError(ValueError):
    """The adjustments file cannot be used (one sentence naming the line)."""


@dataclass
class Line:
    """One adjustment as written: ``line`` its line number in the file."""

    line: int
    student: str
    points: float | None
    total: float | None
    comment: str


def read_adjustments(path: Path) -> list[Line]:
    """The adjustments of ``path`` (TOML when it ends in ``.toml``, else CSV)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise AdjustError(f"{path}: cannot be read as UTF-8 text ({exc})") from None
    lines = _toml(path, text) if path.suffix.lower() == ".toml" else _csv(path, text)
    seen: dict[str, int] = {}
    for a in lines:
        key = a.student.casefold()
        if key in seen:
            raise AdjustError(f"{path} line {a.line}: {a.student!r} is adjusted already on "
                              f"line {seen[key]}")
        seen[key] = a.line
    return lines


def _csv(path: Path, text: str) -> list[Line]:
    rows = [(n, row) for n, row in _numbered_rows(text)
            if any(c.strip() for c in row) and not row[0].lstrip().startswith("#")]
    if not rows:
        raise AdjustError(f"{path}: no header (student, points or total, comment)")
    n, header = rows[0]
    names = [h.strip().lower() for h in header]
    unknown = [h for h in names if h not in _FIELDS]
    if unknown or "student" not in names or not {"points", "total"} & set(names):
        raise AdjustError(f"{path} line {n}: the header must name student, points or total, "
                          f"and comment (found {', '.join(header)})")
    out = []
    for n, row in rows[1:]:
        if len(row) > len(names):
            raise AdjustError(f"{path} line {n}: {len(row)} cells for {len(names)} columns "
                              "(quote a comment that holds a comma)")
        cells = dict(zip(names, (c.strip() for c in row)))
        out.append(_line(path, n, {k: v for k, v in cells.items() if v != ""}))
    return out


def _numbered_rows(text: str) -> Iterable[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text))
    start = 1
    for row in reader:
        yield start, row
        start = reader.line_num + 1


def _toml(path: Path, text: str) -> list[Line]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AdjustError(f"{path}: not valid TOML ({exc})") from None
    starts = [n for n, line in enumerate(text.splitlines(), 1)
              if re.match(r"\s*\[\[\s*adjust\s*\]\]", line)]
    extra = sorted(set(data) - {"adjust"})
    if extra or not isinstance(data.get("adjust", []), list):
        raise AdjustError(f"{path}: only [[adjust]] tables are read (found "
                          f"{', '.join(extra) or 'adjust as a value'})")
    out = []
    for k, table in enumerate(data.get("adjust", [])):
        n = starts[k] if k < len(starts) else 0
        unknown = sorted(set(table) - set(_FIELDS))
        if unknown:
            raise AdjustError(f"{path} line {n}: unknown field {unknown[0]!r} (expected "
                              "student, points or total, comment)")
        out.append(_line(path, n, table))
    return out


def _line(path: Path, n: int, cells: dict[str, Any]) -> Line:
    where = f"{path} line {n}"
    student = cells.get("student")
    if not isinstance(student, str) or not student.strip():
        raise AdjustError(f"{where}: no student")
    given = [k for k in ("points", "total") if k in cells]
    if len(given) != 1:
        raise AdjustError(f"{where}: give either points or total for {student!r}, not "
                          f"{'both' if given else 'neither'}")
    value = _number(where, given[0], cells[given[0]])
    if given[0] == "total" and value < 0:
        raise AdjustError(f"{where}: a total cannot be negative ({cells['total']})")
    comment = cells.get("comment", "")
    if not isinstance(comment, str):
        raise AdjustError(f"{where}: the comment must be text")
    return Line(n, student.strip(), value if given[0] == "points" else None,
                value if given[0] == "total" else None, " ".join(comment.split()))


def _number(where: str, key: str, raw: Any) -> float:
    try:
        value = float(raw) if not isinstance(raw, bool) else math.nan
    except (TypeError, ValueError):
        value = math.nan
    if not math.isfinite(value):
        raise AdjustError(f"{where}: {key} {raw!r} is not a number")
    return value


def resolve(path: Path, lines: list[Line], keys: dict[str, set[str]]) -> dict[str, Line]:
    """Submission id -> its adjustment. ``keys``: each way a student may be named (casefolded)
    -> the submission ids it names; one naming none or several is an ``AdjustError``."""
    out: dict[str, Line] = {}
    for a in lines:
        subs = keys.get(a.student.casefold(), set())
        if not subs:
            raise AdjustError(f"{path} line {a.line}: no student {a.student!r} in this class "
                              "(name a submission id, or a student of the roster)")
        if len(subs) > 1:
            raise AdjustError(f"{path} line {a.line}: {a.student!r} names "
                              f"{len(subs)} submissions ({', '.join(sorted(subs))}): use one "
                              "of their ids")
        (sid,) = subs
        if sid in out:
            raise AdjustError(f"{path} line {a.line}: {a.student!r} is adjusted already on "
                              f"line {out[sid].line}")
        out[sid] = a
    return out


def apply(results: list[SubmissionResult], adjustments: dict[str, Line]) -> list[str]:
    """Set each result's ``adjustment``; return sentences for the terminal and the report
    (a total kept within 0 and the maximum, an adjustment whose submission was not graded)."""
    notices = []
    by_id = {r.submission: r for r in results}
    for sid, a in sorted(adjustments.items()):
        r = by_id.get(sid)
        if r is None:
            notices.append(f"The adjustment of {sid} (line {a.line}) was not applied: it has "
                           "no graded result.")
            continue
        # an adjustment applies to the total the marks before it left (rubric items)
        before = r.final_score
        total = a.total if a.total is not None else before + (a.points or 0.0)
        mark = r.add_mark(MarkKind.ADJUST, total - before, a.comment)
        if mark.kept:
            kept = before + mark.points
            notices.append(f"The adjusted total of {sid} (line {a.line}) is "
                           f"{numbers.points(total)}, kept at {numbers.points(kept)} (within 0 "
                           f"and {numbers.points(r.max_score)}).")
    return notices


def student_keys(named: Iterable[tuple[str, Iterable[str]]]) -> dict[str, set[str]]:
    """The ``keys`` of ``resolve`` from (submission id, the other names of its student)."""
    keys: dict[str, set[str]] = {}
    for sid, others in named:
        for name in (sid, *others):
            if name and name.strip():
                keys.setdefault(name.strip().casefold(), set()).add(sid)
    return keys
