"""The one CSV writer of every file the grader writes for a spreadsheet or an LMS
(``grades.csv``, ``canvas.csv``, ``moodle.csv``, ``moodle-worksheet.csv``, ``similarity.csv``):
UTF-8 without BOM, CRLF line ends (RFC 4180), and no cell a spreadsheet would evaluate, but
those an LMS reads back as text.

A text cell starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a
leading ``'`` (OWASP's advice against CSV formula injection), in every row, the header
included. Numbers are written as they are: an ``int`` or ``float`` cell, and a text cell
that is entirely a decimal number (``-1``, ``+2``, ``-1.5``, ``-2e3``; ASCII digits only, no
``nan`` or ``inf``), and a lone ``-`` or ``+`` (no formula: Moodle's worksheet writes ``-`` for
a date it does not have, and must read back what it wrote).

A ``Verbatim`` cell is written exactly as it is: text an LMS stores as text and compares with
what it has (a feedback comment, an assignment's title in a header, every cell of a Moodle
worksheet read back), where a ``'`` would change what the teacher wrote.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from grader.files import atomic_write_text

Cell = str | int | float
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


class Verbatim(str):
    """A text cell written as it is, never escaped: what an LMS reads back as text."""

    __slots__ = ()


def cell(value: Cell) -> str:
    """``value`` as the text of a cell no spreadsheet evaluates, a ``Verbatim`` one as it is
    (see the module docstring)."""
    if isinstance(value, (int, float, Verbatim)):
        return str(value)
    if value.startswith(FORMULA_STARTS) and _NUMBER.fullmatch(value) is None \
            and value not in ("-", "+"):
        return "'" + value
    return value


def uncell(text: str) -> str:
    """A text cell ``cell`` wrote, read back as the text it was given (its guard ``'``
    dropped): how the grader reads its own CSV files (``grade review``'s similarity pairs)."""
    return text[1:] if text.startswith("'") and text[1:].startswith(FORMULA_STARTS) else text


def csv_text(rows: Iterable[Sequence[Cell]]) -> str:
    """The CSV text of ``rows``, every cell through ``cell``, CRLF line ends."""
    buf = io.StringIO(newline="")
    csv.writer(buf, lineterminator="\r\n").writerows([cell(c) for c in row] for row in rows)
    return buf.getvalue()


def write_csv(path: Path, rows: Iterable[Sequence[Cell]]) -> None:
    """Write ``rows`` to ``path`` as ``csv_text`` does, atomically, as UTF-8 without BOM."""
    atomic_write_text(path, csv_text(rows))
