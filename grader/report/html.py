"""Render a ``SubmissionResult`` as one self-contained HTML page (inline CSS and SVG, no
network, no JavaScript; a Content-Security-Policy forbids loading anything)."""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections import Counter
from pathlib import Path
from typing import Any

import jinja2

from grader import catalog
from grader.engine.hints import LABELS
from grader.engine.results import SubmissionResult
from grader.files import atomic_write_text, make_dir

from . import markdown, svg

KIND_LABELS = {k: v[:1].upper() + v[1:] for k, v in LABELS.items()}
SYMBOLS = {"passed": "✓", "failed": "✗", "error": "!", "timeout": "⏱", "crashed": "☠"}
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


def fmt_points(x: float) -> str:
    return f"{x:g}"


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    if isinstance(value, list):
        return "(" + ", ".join(str(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    return str(value)


def _pct(score: float, max_score: float) -> float:
    return round(100 * score / max_score, 1) if max_score else 0.0


def _level(score: float, max_score: float) -> str:
    p = _pct(score, max_score)
    return "" if p >= 80 else ("mid" if p >= 40 else "low")


def summary_counts(result: SubmissionResult) -> dict[str, Any]:
    tests = [t for e in result.exercises for t in e.tests]
    by_status = Counter(t.status for t in tests)
    parts = []
    for vis in ("public", "hidden"):
        group = [t for t in tests if t.visibility == vis]
        if group:
            parts.append(f"{sum(t.passed for t in group)}/{len(group)} {vis} tests pass")
    return {"total": len(tests), "passed": by_status.get("passed", 0),
            "other": [(s, n) for s, n in by_status.items() if s != "passed"],
            "public": "; ".join(parts)}


@functools.lru_cache(maxsize=32)
def _statement_html(text: str) -> str:
    return markdown.render(text)  # the same few statements in every report of a bulk run


def render(result: SubmissionResult) -> str:
    known = catalog.load()
    statements, meta = {}, {}
    for e in result.exercises:
        ex = known.get(e.exercise)
        meta[e.exercise] = ex
        statements[e.exercise] = (_statement_html(ex.statement.read_text())
                                  if ex is not None and ex.statement.is_file() else "")
    return _ENV.get_template("report.html.j2").render(
        r=result, meta=meta, statements=statements, counts=summary_counts(result),
        generated=dt.datetime.now().strftime("%Y-%m-%d %H:%M"), fmt=fmt_points, show=_show,
        pct=_pct, level=_level, symbols=SYMBOLS, diag_rows=DIAG_ROWS, svg=svg.render,
        caption=svg.caption, kind_labels=KIND_LABELS)


def write_report(result: SubmissionResult, report_dir: Path,
                 extra: dict[str, Any] | None = None) -> Path:
    """Write ``index.html`` and ``results.json`` (plus ``extra`` fields) into ``report_dir``.

    Both files are written atomically (a temporary file renamed). Returns the HTML path.
    """
    make_dir(report_dir)
    index = report_dir / "index.html"
    data = {**result.to_dict(), **(extra or {})}
    atomic_write_text(report_dir / "results.json",
                      json.dumps(data, indent=2, allow_nan=False) + "\n")
    atomic_write_text(index, render(result))
    return index
