"""Render a ``SubmissionResult`` as one self-contained HTML page (inline CSS and SVG, no
network, no JavaScript; a Content-Security-Policy forbids loading anything)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

from grader import catalog, numbers
from grader.failure_kinds import LABELS
from grader.files import atomic_write_text, make_dir
from grader.results import SubmissionResult

from . import markdown, marks, svg
from .summary import (
    RULE_SYMBOLS,
    SYMBOLS,
    mistake_label,
    names,
    rule_state,
    shared_causes,
    shared_fault,
    summary_counts,
)

KIND_LABELS = {k: v[:1].upper() + v[1:] for k, v in LABELS.items()}
DIAG_ROWS = [
    ("expected_shape", "expected shape"), ("actual_shape", "actual shape"),
    ("max_abs_error", "largest absolute error"), ("max_rel_error", "largest relative error"),
    ("worst_index", "at index"), ("expected_at_worst", "expected there"),
    ("actual_at_worst", "yours there"), ("n_outside", "values out of tolerance"),
    ("tolerance", "tolerance"),
]

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
    autoescape=True, undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _show(value: Any) -> str:
    if isinstance(value, float):
        return numbers.value(value)
    if isinstance(value, list):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


@functools.lru_cache(maxsize=32)
def _statement_html(text: str) -> str:
    return markdown.render(text)  # the same few statements in every report of a bulk run


def render(result: SubmissionResult) -> str:
    known = catalog.load()
    statements, meta, causes, cause_of = {}, {}, {}, {}
    for e in result.exercises:
        # a cause several tests share is told once, above the tests (summary.shared_causes)
        causes[e.exercise] = shared_causes(e)
        cause_of[e.exercise] = {name: c for c in causes[e.exercise] for name in c.tests}
        ex = known.get(e.exercise)
        meta[e.exercise] = ex
        statements[e.exercise] = (_statement_html(ex.statement.read_text())
                                  if ex is not None and ex.statement.is_file() else "")
    return _ENV.get_template("report.html.j2").render(
        r=result, meta=meta, statements=statements, counts=summary_counts(result),
        generated=numbers.generated(), fmt=numbers.points, seconds=numbers.seconds,
        show=_show, pct=numbers.percent, level=numbers.level, symbols=SYMBOLS,
        diag_rows=DIAG_ROWS, svg=svg.render, caption=svg.caption, kind_labels=KIND_LABELS,
        causes=causes, cause_of=cause_of, shared_fault=shared_fault, names=names,
        mistake_label=mistake_label, rule_state=rule_state, rule_symbols=RULE_SYMBOLS,
        mark_title=marks.title, signed=numbers.signed_points)


def write_html(path: Path, result: SubmissionResult) -> None:
    """Write the report page of ``result`` to ``path`` atomically."""
    atomic_write_text(path, render(result))


def write_report(result: SubmissionResult, report_dir: Path,
                 extra: dict[str, Any] | None = None) -> Path:
    """A submission's report folder: ``index.html`` (this module) and ``results.json``
    (``results_json.py``, plus ``extra`` fields), each written atomically. Returns the HTML
    path."""
    from .results_json import write_results_json

    make_dir(report_dir)
    write_results_json(report_dir / "results.json", result, extra)
    write_html(report_dir / "index.html", result)
    return report_dir / "index.html"
