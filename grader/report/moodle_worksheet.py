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

``fill`` changes only ``Grade`` (the score scaled to the row's ``Maximum Grade``, with the
sheet's decimal separator, at most five decimals, what Moodle stores) and ``Feedback
comments`` of the rows of graded participants; every other cell, column and row is written as
it was read (through ``csv_cells``, which quotes a formula-like text cell).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader import numbers

from .csv_cells import write_csv

IDENTIFIER, FULL_NAME, STATUS, GRADE = "Identifier", "Full name", "Status", "Grade"
MAXIMUM, MODIFIED, FEEDBACK = "Maximum Grade", "Last modified (grade)", "Feedback comments"
REQUIRED = (IDENTIFIER, FULL_NAME, STATUS, GRADE, MODIFIED)
PARTICIPANT = "Participant "
MATCH_COLUMNS = ("Email address", "ID number", "Username")  # a submission id may be one
_LATE = re.compile(r"(?:^| - )[^-]* late(?: - |$)")


class WorksheetError(ValueError):
    """The file is not a usable Moodle grading worksheet (one sentence says why)."""


@dataclass
class Worksheet:
    header: list[str]
    rows: list[list[str]] = field(default_factory=list)  # every row after the header, as read

    def index(self, column: str) -> int | None:
        return self.header.index(column) if column in self.header else None

    def cell(self, row: list[str], column: str) -> str:
        i = self.index(column)
        return row[i].strip() if i is not None and i < len(row) else ""


def is_worksheet(header: list[str]) -> bool:
    """Whether a CSV header is a Moodle grading worksheet's."""
    return IDENTIFIER in header and GRADE in header


def read_worksheet(path: Path, rows: list[list[str]]) -> Worksheet:
    """The worksheet of ``rows`` (read from ``path``); ``WorksheetError`` when a column the
    upload needs is missing, or the assignment is graded on a scale."""
    header = rows[0]
    missing = [c for c in REQUIRED if c not in header]
    if missing:
        raise WorksheetError(f"{path}: not a Moodle grading worksheet (no "
                             f"{', '.join(repr(c) for c in missing)} column)")
    if MAXIMUM not in header:
        raise WorksheetError(f"{path}: the assignment is graded on a scale (no "
                             f"{MAXIMUM!r} column): set it to points in Moodle")
    return Worksheet(header, [r for r in rows[1:] if any(c.strip() for c in r)])


def participant(sheet: Worksheet, row: list[str]) -> str:
    """The participant number of a row (``Participant 123`` -> ``123``), or ``""``."""
    ident = sheet.cell(row, IDENTIFIER)
    return ident[len(PARTICIPANT):].strip() if ident.startswith(PARTICIPANT) else ""


def is_late(sheet: Worksheet, row: list[str]) -> bool:
    """Whether Moodle's status says the submission was late ("... - 2 days 3 hours late")."""
    return _LATE.search(sheet.cell(row, STATUS)) is not None


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
    (score, maximum, feedback). Other rows and cells are written as read."""
    g, f = sheet.index(GRADE), sheet.index(FEEDBACK)
    out = [list(sheet.header)]
    for row in sheet.rows:
        row = list(row) + [""] * (len(sheet.header) - len(row))
        pid = participant(sheet, row)
        if pid in grades:
            score, max_score, feedback = grades[pid]
            assert g is not None
            row[g] = grade_text(score, max_score, sheet.cell(row, MAXIMUM))
            if f is not None:
                row[f] = feedback
        out.append(row)
    write_csv(path, out)
