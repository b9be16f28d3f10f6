"""One CSV writer for every gradebook: a cell a spreadsheet would evaluate as a formula is
written with a leading ``'`` in grades.csv, canvas.csv and moodle.csv alike; numbers are not;
text an LMS reads back as text (canvas.csv's assignment header) is written as given."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import csv_rows

import grader
from grader.report import csv_cells, gradebooks
from grader.report.gradebooks import CANVAS_COLUMNS, Person, Roster

CELLS = [  # (a student id / name / title as given, the cell a spreadsheet reads)
    ("\t=1+1", "'\t=1+1"),
    ('=HYPERLINK("http://evil.example","click")', '\'=HYPERLINK("http://evil.example","click")'),
    ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    ("\r=1", "'\r=1"),
    ("-1+1", "'-1+1"),
    ("+cmd|' /C calc'!A0", "'+cmd|' /C calc'!A0"),
    ("-inf", "'-inf"),
    ("+1", "+1"),            # numbers: kept as they are
    ("-1", "-1"),
    ("-1.5", "-1.5"),
    ("-2e3", "-2e3"),
    ("-", "-"),              # a lone sign is no formula (Moodle's worksheet writes "-")
    ("Ann Smith", "Ann Smith"),  # normal values
    ("s-1", "s-1"),
    ("Smith, Ann", "Smith, Ann"),
    ("", ""),
]


def _grades_pending(path: Path, value: str) -> str:
    gradebooks.write_grades_csv(path, [], ["grid_local_mask"], [], pending=[value])
    return csv_rows(path)[1][0]


def _grades_rejected(path: Path, value: str) -> str:
    gradebooks.write_grades_csv(path, [], ["grid_local_mask"], [{"id": value, "reason": "x"}])
    return csv_rows(path)[1][0]


def _roster(**cells: str) -> Roster:
    student = {"Student": "Lee, Cy", "ID": "101", "SIS User ID": "S-1", "SIS Login ID": "cy",
               "Section": "A"}
    return Roster(list(CANVAS_COLUMNS), [{**student, **cells}])


def _canvas_roster_name(path: Path, value: str) -> str:
    gradebooks.write_canvas_csv(path, "Week 3", {"101": "7"}, "10", _roster(Student=value),
                                [Person("101")])
    return csv_rows(path)[2][0]


def _canvas_roster_sis(path: Path, value: str) -> str:
    gradebooks.write_canvas_csv(path, "Week 3", {"cy": "7"}, "10",
                                _roster(**{"SIS User ID": value}), [Person("cy")])
    return csv_rows(path)[2][2]


def _canvas_download_name(path: Path, value: str) -> str:
    gradebooks.write_canvas_csv(path, "Week 3", {"s1": "7"}, "10", None,
                                [Person("s1", lms_id="123", lms_name=value)])
    return csv_rows(path)[2][0]


def _canvas_title(path: Path, value: str) -> str:
    gradebooks.write_canvas_csv(path, value, {}, "10", None, [])
    return csv_rows(path)[0][-1]


def _moodle_id(path: Path, value: str) -> str:
    gradebooks.write_moodle_csv(path, "Week 3", {value: "7"}, None, [Person(value)])
    return csv_rows(path)[1][0]


def _moodle_roster_login(path: Path, value: str) -> str:
    gradebooks.write_moodle_csv(path, "Week 3", {"101": "7"},
                                _roster(**{"SIS Login ID": value or "x"}), [Person("101")])
    return csv_rows(path)[1][0]


WRITERS: dict[str, Callable[[Path, str], str]] = {
    "grades.csv pending id": _grades_pending,
    "grades.csv rejected id": _grades_rejected,
    "canvas.csv roster name": _canvas_roster_name,
    "canvas.csv roster SIS id": _canvas_roster_sis,
    "canvas.csv download name": _canvas_download_name,
}


@pytest.mark.parametrize("given, written", CELLS, ids=[repr(c[0]) for c in CELLS])
@pytest.mark.parametrize("writer", WRITERS, ids=list(WRITERS))
def test_every_gradebook_writes_the_same_cell(tmp_path: Path, writer: str, given: str,
                                              written: str) -> None:
    assert WRITERS[writer](tmp_path / "book.csv", given) == written


@pytest.mark.parametrize("given, written", CELLS, ids=[repr(c[0]) for c in CELLS])
def test_the_one_cell_rule(given: str, written: str) -> None:
    assert csv_cells.cell(given) == written


@pytest.mark.parametrize("given", [c[0] for c in CELLS], ids=[repr(c[0]) for c in CELLS])
def test_text_an_lms_reads_back_is_written_as_given(tmp_path: Path, given: str) -> None:
    """canvas.csv's assignment header: Canvas compares it with its assignments' titles, so a
    ``'`` would make it another assignment; moodle.csv's username (a submission's id, or a
    roster's login): Moodle matches it as text, so a ``'`` would match no one."""
    assert csv_cells.cell(csv_cells.Verbatim(given)) == given
    assert _canvas_title(tmp_path / "book.csv", given) == given
    if given:
        assert _moodle_id(tmp_path / "m.csv", given) == given
        assert _moodle_roster_login(tmp_path / "r.csv", given) == given


def test_real_numbers_and_line_ends() -> None:
    assert csv_cells.csv_text([[1, -2.5, "-3", "=1"], ["a\r\nb"]]) == \
        "1,-2.5,-3,'=1\r\n\"a\r\nb\"\r\n"


def test_no_file_is_written_without_bom(tmp_path: Path) -> None:
    csv_cells.write_csv(tmp_path / "x.csv", [["id"], ["é"]])
    assert (tmp_path / "x.csv").read_bytes() == "id\r\né\r\n".encode()


def test_the_grader_has_no_other_csv_writer() -> None:
    """Every CSV the project writes goes through ``csv_cells`` (none bypasses the escaping)."""
    root = Path(grader.__file__).parent
    writers = [str(p.relative_to(root)) for p in root.rglob("*.py")
               if re.search(r"csv\.(writer|DictWriter)\b", p.read_text(encoding="utf-8"))]
    assert writers == ["report/csv_cells.py"]
