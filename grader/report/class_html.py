"""The class report: one self-contained HTML page over a whole class's results.

Input: the results (the result model, ``SubmissionResult``) and "rejected" entries (mappings
or objects with ``id``, ``reason``, ``source``); optionally the class's names (submission id
-> student), the roster students with no submission (shown as rows "no submission"), the late
submissions (a column), the files written beside the page and extra pages (the footer lists
both). A teacher's adjustment (``SubmissionResult.adjustment``) is shown beside the computed
total, with its comment; totals, the histogram and the statistics count the adjusted total.
Output: a page with no network references (inline CSS, inline SVG, a small inline script)
that reads fully without JavaScript; the script only makes the submissions table sortable.
"""

from __future__ import annotations

import statistics
import urllib.parse
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from grader import catalog, numbers
from grader.files import atomic_write_text, make_dir
from grader.results import ExerciseResult, MarkKind, SubmissionResult

from . import marks
from .plain import entry_get, natural_key

TEMPLATES = Path(__file__).resolve().parent / "templates"
N_BINS = 10
TOP_MISTAKES = 8

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


def _breakable(slug: str) -> Markup:
    """A slug that may wrap after its underscores (escaped, then ``<wbr>`` inserted)."""
    return escape(slug).replace("_", Markup("_<wbr>"))


def submission_href(submission_id: str) -> str:
    """The relative link to a submission's own report: ``<id>/index.html``, URL-quoted."""
    return urllib.parse.quote(submission_id, safe="") + "/index.html"


def _histogram(pcts: list[float]) -> dict[str, Any]:
    """Geometry of the score histogram: 10 bins of total score in %, 100% in the last bin."""
    counts = [0] * N_BINS
    for p in pcts:
        counts[min(max(int(p // (100 / N_BINS)), 0), N_BINS - 1)] += 1
    width, height = 640, 250
    left, right, top, bottom = 46, 14, 22, 46
    plot_w, plot_h = width - left - right, height - top - bottom
    peak = max(counts) if any(counts) else 1
    step = max(1, -(-peak // 5))  # at most ~5 y ticks, integer counts
    y_max = step * -(-peak // step)
    bin_w = plot_w / N_BINS
    bars = []
    for i, n in enumerate(counts):
        h = plot_h * n / y_max
        lo = i * 100 // N_BINS
        bars.append({
            "x": round(left + i * bin_w + 3, 2), "w": round(bin_w - 6, 2),
            "y": round(top + plot_h - h, 2), "h": round(h, 2), "n": n,
            "cx": round(left + (i + 0.5) * bin_w, 2),
            "level": "low" if lo < 40 else ("mid" if lo < 80 else "high"),
            "label": f"{lo}–{lo + 100 // N_BINS}%"})
    x_ticks = [{"x": round(left + i * bin_w, 2), "label": str(i * 100 // N_BINS)}
               for i in range(N_BINS + 1)]
    y_ticks = [{"y": round(top + plot_h - plot_h * v / y_max, 2), "label": str(v)}
               for v in range(0, y_max + 1, step)]
    return {"width": width, "height": height, "left": left, "top": top, "plot_w": plot_w,
            "plot_h": plot_h, "bottom_y": top + plot_h, "bars": bars, "x_ticks": x_ticks,
            "y_ticks": y_ticks, "counts": counts}


def _exercise_order(results: list[SubmissionResult]) -> list[tuple[str, str, float]]:
    """(slug, title, max) of every exercise in the results: catalog order, then first seen."""
    seen: dict[str, tuple[str, float]] = {}
    for r in results:
        for e in r.exercises:
            if e.exercise not in seen:
                seen[e.exercise] = (e.title or e.exercise, e.max_score)
    known = list(catalog.load())
    order = sorted(seen, key=lambda s: (known.index(s) if s in known else len(known),
                                        list(seen).index(s)))
    return [(s, seen[s][0], seen[s][1]) for s in order]


def _cell(e: ExerciseResult | None) -> dict[str, Any]:
    if e is None:
        return {"text": "", "sort": -2, "cls": "na", "title": "not graded in this run"}
    if e.status == "not_submitted":
        return {"text": "—", "sort": -1, "cls": "ns", "title": "not submitted"}
    score, max_score = e.score, e.max_score
    p = numbers.percent(score, max_score, 6)
    cls = "full" if score >= max_score > 0 else ("zero" if score <= 0 else "part")
    title = f"{numbers.points(score)}/{numbers.points(max_score)} · {e.status}"
    if e.status == "error":
        cls += " err"
        title += f": {e.message}"
    return {"text": numbers.points(score), "sort": p, "cls": cls, "title": title}


def _exercise_stats(slug: str, title: str, max_score: float,
                    results: list[SubmissionResult]) -> dict[str, Any]:
    """Pass rates, mean score and known mistakes of one exercise over the class."""
    submitted = passed = 0
    not_submitted = 0
    scores: list[float] = []
    tests: dict[str, dict[str, Any]] = {}
    mistake_subs: dict[str, set[int]] = defaultdict(set)
    mistake_tests: dict[str, Counter] = defaultdict(Counter)
    mistake_msg: dict[str, str] = {}
    hints: dict[str, str] = {}
    for k, r in enumerate(results):
        e = next((x for x in r.exercises if x.exercise == slug), None)
        if e is None:
            continue
        if e.status == "not_submitted":
            not_submitted += 1
            continue
        submitted += 1
        passed += e.status == "passed"
        scores.append(e.score)
        for t in e.tests:
            s = tests.setdefault(t.name, {
                "name": t.name, "visibility": t.visibility,
                "description": t.description, "graded": 0, "passed": 0,
                "other": Counter(), "mistakes": Counter()})
            s["graded"] += 1
            if t.status == "passed":
                s["passed"] += 1
            else:
                s["other"][t.status] += 1
            if t.hint and t.name not in hints:
                hints[t.name] = t.hint
            if m := t.mistake:
                s["mistakes"][m] += 1
                mistake_subs[m].add(k)
                mistake_tests[m][t.name] += 1
                mistake_msg.setdefault(m, t.mistake_message)
    test_rows = []
    for s in tests.values():
        test_rows.append({
            **s, "rate": numbers.percent(s["passed"], s["graded"], 6),
            "hint": hints.get(s["name"], ""),
            "level": numbers.level(s["passed"], s["graded"]),
            "mistakes": s["mistakes"].most_common(3),
            "other": sorted(s["other"].items(), key=lambda kv: (-kv[1], kv[0]))})
    mistakes = []
    for m, subs in mistake_subs.items():
        where = mistake_tests[m].most_common()
        mistakes.append({
            "exercise": slug, "title": title, "name": m, "count": len(subs),
            "of": submitted, "message": mistake_msg[m], "tests": where,
            "hint_test": where[0][0], "hint": hints.get(where[0][0], "")})
    mistakes.sort(key=lambda d: (-d["count"], d["name"]))
    return {
        "slug": slug, "title": title, "max": max_score, "submitted": submitted,
        "passed": passed, "not_submitted": not_submitted,
        "rate": numbers.percent(passed, submitted, 6), "level": numbers.level(passed, submitted),
        "mean": statistics.fmean(scores) if scores else None,
        "tests": test_rows, "mistakes": mistakes}


def class_report_context(results: list[SubmissionResult], rejected: list,
                         names: dict[str, str] | None = None, absent: Iterable[str] = (),
                         late: Iterable[str] = ()) -> dict[str, Any]:
    """Everything the template shows, computed from the results (also handy for tests)."""
    results = sorted(results, key=lambda r: natural_key(str(r.submission)))
    names, late, absent = names or {}, set(late), list(absent)
    columns = _exercise_order(results)
    rows, missing, pcts = [], [], []
    for k, r in enumerate(results):
        sid = str(r.submission)
        by_slug = {e.exercise: e for e in r.exercises}
        score, max_score = r.final_score, r.max_score
        pcts.append(numbers.percent(score, max_score, 6))
        rows.append({"id": sid, "href": submission_href(sid), "order": k, "score": score,
                     "max": max_score, "pct": numbers.percent(score, max_score, 6),
                     "level": numbers.level(score, max_score), "name": names.get(sid, ""),
                     "late": sid in late, "computed": r.score if marks.changed(r) else None,
                     "comment": marks.comment(r),
                     "cells": [_cell(by_slug.get(slug)) for slug, _, _ in columns]})
        not_sub = [s for s, e in by_slug.items() if e.status == "not_submitted"]
        errored = [(s, e.message) for s, e in by_slug.items()
                   if e.status == "error"]
        if not_sub or errored:
            missing.append({"id": sid, "href": submission_href(sid), "not_submitted": not_sub,
                            "errored": errored})
    exercises = [_exercise_stats(slug, title, mx, results) for slug, title, mx in columns]
    top = sorted((m for ex in exercises for m in ex["mistakes"]),
                 key=lambda d: (-d["count"], d["exercise"], d["name"]))[:TOP_MISTAKES]
    maxes = {row["max"] for row in rows}
    totals = [row["score"] for row in rows]
    stats = {
        "graded": len(rows), "rejected": len(rejected),
        "mean_pct": statistics.fmean(pcts) if pcts else None,
        "median_pct": statistics.median(pcts) if pcts else None,
        "uniform_max": maxes.pop() if len(maxes) == 1 else None,
        "mean": statistics.fmean(totals) if totals else None,
        "median": statistics.median(totals) if totals else None,
        "full_marks": sum(1 for row in rows if row["max"] and row["score"] >= row["max"]),
    }
    rejected_rows = sorted(
        ({"id": str(entry_get(x, "id")), "reason": str(entry_get(x, "reason") or ""),
          "source": str(entry_get(x, "source") or "")} for x in rejected),
        key=lambda d: natural_key(d["id"]))
    for x in rejected_rows:
        x["name"] = names.get(x["id"], "")
    stats["absent"] = len(absent)
    return {"columns": columns, "rows": rows, "stats": stats, "hist": _histogram(pcts),
            "exercises": exercises, "top_mistakes": top, "rejected": rejected_rows,
            "missing": missing, "absent": absent, "named": bool(names) or bool(absent),
            "any_late": bool(late),
            "penalised": any(m.kind is MarkKind.LATE for r in results for m in r.marks)}


def render_class_report(results: list[SubmissionResult], rejected: list, *, title: str,
                        layout: str, generated: str, scope: str = "",
                        notices: Iterable[str] = (), names: dict[str, str] | None = None,
                        absent: Iterable[str] = (), late: Iterable[str] = (),
                        files: Iterable[str] = (),
                        pages: Iterable[tuple[str, str]] = ()) -> str:
    """The class report as one self-contained HTML page (no network, readable without JS).

    ``results``: result dicts as in ``results.json``; ``rejected``: entries with ``id``,
    ``reason``, ``source``; ``title``: the page heading; ``layout``: the input layout detected
    (shown as is); ``generated``: the timestamp shown; ``scope``: which exercises were graded
    and why (one sentence); ``names``, ``absent``, ``late``: see ``class_report_context``;
    ``files``: the class-level files written beside the page (the footer lists them, with
    each submission's own); ``pages``: other pages of the report, ``(href, label)`` (a
    similarity page, ...), linked from the footer. Every value is HTML-escaped.
    """
    ctx = class_report_context(results, rejected, names, absent, late)
    return _ENV.get_template("class_report.html.j2").render(
        title=title, layout=layout, generated=generated, scope=scope,
        notices=list(notices), fmt=numbers.points, files=list(files), pages=list(pages),
        breakable=_breakable, **ctx)


def write_class_report(out_dir: Path, results: list[SubmissionResult], rejected: list,
                       **kw: Any) -> Path:
    """Render the class report (``kw``: those of ``render_class_report``) and write
    ``out_dir/index.html`` atomically; return its path."""
    make_dir(out_dir)
    index = out_dir / "index.html"
    atomic_write_text(index, render_class_report(results, rejected, **kw))
    return index
