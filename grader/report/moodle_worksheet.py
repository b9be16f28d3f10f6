"""Moodle's offline grading worksheet: read it as a roster, write it back filled in.

The worksheet is what a Moodle assignment's "Download grading worksheet" gives (the
``assignfeedback_offline`` plugin; ``mod/assign/gradingtable.php`` writes it, Moodle 3.x to
4.x): one row per participant, the columns ``Identifier`` ("Participant NNN", the number
also naming the submissions zip's folders), ``Full name``, the site's identity fields
(``Email address``, ``ID number``, ...), ``Status`` ("Submitted for grading - 2 days late -
Graded"), ``Group`` (group submissions), ``Grade``, ``Maximum Grade`` (or ``Scale``),
``Marking workflow state``, ``Grade can be changed``, ``Last modified (submission)``, the
online text, ``Last modified (grade)``, ``Feedback comments`` and other feedback plugins.
Its upload ("Upload grading worksheet") reads ``Identifier``, ``Grade`` (skipped when empty,
unchanged or above the assignment's maximum), ``Last modified (grade)`` (a row whose grade
changed in Moodle after it is skipped) and each feedback plugin's column by its name.

Under blind marking Moodle writes no ``Full name`` (nor identity fields): such a worksheet is
read all the same, its participants known by their ``Identifier``. ``Last modified
(submission)`` is Moodle's ``userdate``, the downloading user's local time with no zone named:
``Monday, 1 December 2026, 10:15 AM`` in English (``strftimedaydatetime``: ``%A, %d %B %Y,
%I:%M %p``, day and hour without a leading zero), ``Monday, December 1, 2026, 10:15 AM`` in US
English; ``-`` when there is no submission (``submitted_at``).

``fill`` changes only ``Grade`` (the score scaled to the row's ``Maximum Grade``, with the
sheet's decimal separator, at most five decimals, what Moodle stores) and ``Feedback
comments`` of the rows of graded participants; every other cell, column and row is written as
it was read, unescaped (``csv_cells.Verbatim``): the upload writes a feedback column whenever
its text differs from what Moodle has, so a ``'`` added to a comment would change it (and
the file's cells are those Moodle itself wrote in the download).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader import numbers

from .csv_cells import Verbatim, write_csv

IDENTIFIER, FULL_NAME, STATUS, GRADE = "Identifier", "Full name", "Status", "Grade"
MAXIMUM, MODIFIED, FEEDBACK = "Maximum Grade", "Last modified (grade)", "Feedback comments"
SUBMITTED = "Last modified (submission)"
REQUIRED = (IDENTIFIER, STATUS, GRADE, MODIFIED)  # "Full name" is absent under blind marking
PARTICIPANT = "Participant "
MATCH_COLUMNS = ("Email address", "ID number", "Username")  # a submission id may be one
_LATE = re.compile(r"(?:^| - )[^-]* late(?: - |$)")
_MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august",
           "september", "october", "november", "december")
_DATE = re.compile(r"(?:[a-z]+,\s*)?(?:(?P<day>\d{1,2})\s+(?P<month>[a-z]+)|(?P<month_us>[a-z]+)"
                   r"\s+(?P<day_us>\d{1,2}),?)\s+(?P<year>\d{4}),?\s+(?P<hour>\d{1,2}):"
                   r"(?P<minute>\d{2})(?:\s*(?P<half>[ap])\.?m\.?)?", re.ASCII)


class WorksheetError(ValueError):
    """The file is not a usable Moodle grading worksheet (one sentence says why)."""


@dataclass
class Worksheet:
    head: list[str]                                      # the header row, as read
    rows: list[list[str]] = field(default_factory=list)  # every row after it, as read
    header: list[str] = field(init=False)                # its names stripped, to look up

    def __post_init__(self) -> None:
        self.header = [h.strip() for h in self.head]

    def index(self, column: str) -> int | None:
        return self.header.index(column) if column in self.header else None

    def cell(self, row: list[str], column: str) -> str:
        i = self.index(column)
        return row[i].strip() if i is not None and i < len(row) else ""


def is_worksheet(header: list[str]) -> bool:
    """Whether a CSV header is a Moodle grading worksheet's."""
    return IDENTIFIER in header and GRADE in header


def read_worksheet(path: Path, rows: list[list[str]]) -> Worksheet:
    """The worksheet of ``rows`` (read from ``path``, every row kept as read);
    ``WorksheetError`` when a column the upload needs is missing, or the assignment is graded
    on a scale."""
    header = [h.strip() for h in rows[0]]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise WorksheetError(f"{path}: not a Moodle grading worksheet (no "
                             f"{', '.join(repr(c) for c in missing)} column)")
    if MAXIMUM not in header:
        raise WorksheetError(f"{path}: the assignment is graded on a scale (no "
                             f"{MAXIMUM!r} column): set it to points in Moodle")
    return Worksheet(list(rows[0]), [list(r) for r in rows[1:]])


def participant(sheet: Worksheet, row: list[str]) -> str:
    """The participant number of a row (``Participant 123`` -> ``123``), or ``""``."""
    ident = sheet.cell(row, IDENTIFIER)
    return ident[len(PARTICIPANT):].strip() if ident.startswith(PARTICIPANT) else ""


def is_late(sheet: Worksheet, row: list[str]) -> bool:
    """Whether Moodle's status says the submission was late ("... - 2 days 3 hours late")."""
    return _LATE.search(sheet.cell(row, STATUS)) is not None


def submitted_at(sheet: Worksheet, row: list[str]) -> dt.datetime | None:
    """The row's ``Last modified (submission)`` as a naive datetime (the zone Moodle wrote it
    in is not said), or ``None``: no such column, ``-`` (no submission), or a date that is not
    in an English format Moodle writes (see the module docstring)."""
    m = _DATE.fullmatch(sheet.cell(row, SUBMITTED).lower())
    if m is None:
        return None
    name = m["month"] or m["month_us"]
    months = [i for i, full in enumerate(_MONTHS, 1)
              if name == full or (len(name) == 3 and full.startswith(name))]
    hour = int(m["hour"])
    if m["half"]:  # 12:05 AM is 00:05, 12:05 PM is 12:05
        hour = hour % 12 + (12 if m["half"] == "p" else 0) if 1 <= hour <= 12 else 24
    try:
        return dt.datetime(int(m["year"]), months[0] if months else 0,
                           int(m["day"] or m["day_us"]), hour, int(m["minute"]))
    except ValueError:  # an unknown month, 31 February, 13 PM, 24:00
        return None


def grade_text(score: float, max_score: float, sheet_max: str) -> str:
    """``score`` of ``max_score`` scaled to the worksheet's maximum grade ``sheet_max`` (as the
    sheet writes it: ``10.00``, ``10,00``), in the same notation: at least its decimals, at
    most 5 (what Moodle stores)."""
    comma = "," in sheet_max and "." not in sheet_max
    try:
        top = float(sheet_max.replace(",", ".")) if comma else float(sheet_max.replace(",", ""))
    except ValueError:
        raise WorksheetError(f"the worksheet's {MAXIMUM} {sheet_max!r} is not a number") from None
    text = numbers.exact(top * score / max_score if max_score else 0.0, 5)
    decimals = len(re.split(r"[.,]", sheet_max)[1]) if re.search(r"[.,]", sheet_max) else 0
    whole, _, frac = text.partition(".")
    frac = frac.ljust(decimals, "0")
    return whole + ((("," if comma else ".") + frac) if frac else "")


def fill(sheet: Worksheet, path: Path, grades: dict[str, tuple[float, float, str]]) -> None:
    """Write ``sheet`` to ``path`` with ``grades`` filled in: participant number ->
    (score, maximum, feedback), the feedback as given. Every other cell, and every row of a
    participant not in ``grades``, is written as read (no cell escaped, none added)."""
    g, f = sheet.index(GRADE), sheet.index(FEEDBACK)
    assert g is not None
    out = [sheet.head]
    for row in sheet.rows:
        pid = participant(sheet, row)
        if pid in grades:
            score, max_score, feedback = grades[pid]
            row = list(row) + [""] * (len(sheet.header) - len(row))
            row[g] = grade_text(score, max_score, sheet.cell(row, MAXIMUM))
            if f is not None:
                row[f] = feedback
        out.append(row)
    write_csv(path, [[Verbatim(c) for c in row] for row in out])
