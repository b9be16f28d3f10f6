"""The class's similarity check: ``OUT/similarity.html`` and ``OUT/similarity.csv``.

``write_similarity(out, submissions, slugs)`` compares, exercise by exercise, the files of
every pair of submissions (``compare.py``: the stub's text and what many submissions
share are ignored) and writes:

- ``similarity.html``: one self-contained page (inline CSS, no script, no network): per
  exercise the pairs ranked by score (at most ``TOP_PAIRS``), each with both files side by
  side, the matching regions highlighted and numbered alike, and every line that differs
  (``differing_lines``) marked in red whether or not it lies in a region; learner text is
  made inert (``grader/inert.py``) and HTML-escaped;
- ``similarity.csv``: every pair reported (``exercise,a,b,score,share_a,share_b,
  matched_tokens,regions``; scores in percent), through ``csv_cells.write_csv``.

Both list the pairs scoring at least ``compare.REPORT_MIN``. A percentage is rounded, but
never up to 100: 100% means the two files' code is the same once identifiers are made alike.

A high score says two files share long runs of code beyond the skeleton: a reason to look,
not proof of copying.
"""

from __future__ import annotations

import urllib.parse
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape

from grader import catalog, numbers
from grader.files import atomic_write_text, make_dir
from grader.inert import inert
from grader.report.csv_cells import write_csv

from . import compare

# similarity.html.j2 lives with the reports' templates: it includes their _style.css.j2
TEMPLATES = Path(__file__).resolve().parent.parent / "report" / "templates"
PAGE = "similarity.html"
CSV = "similarity.csv"
TOP_PAIRS = 25      # pairs shown per exercise on the page (the CSV has them all)
PAGE_MIN = compare.REPORT_MIN  # lowest score shown on the page: the CSV's
SHOW_CHARS = 40_000  # characters of one file shown side by side (the rest is cut)
COLOURS = 6
DIFFERS = Markup('<span class="differs" title="this line is not in the other file">{}</span>')

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


@dataclass
class ExerciseCheck:
    """The pairs found for one exercise, and the sources they refer to."""

    slug: str
    title: str
    submitted: int
    pairs: list[compare.Pair]
    sources: dict[str, str]


def _read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def _stub(slug: str) -> str:
    try:
        return catalog.get(slug).stub.read_text()
    except (KeyError, OSError):  # an exercise without a stub: nothing is boilerplate
        return ""


def check_class(submissions: Iterable[Any], slugs: Sequence[str]) -> list[ExerciseCheck]:
    """Compare the files of ``submissions`` (objects with ``id`` and ``files``: slug -> path)
    exercise by exercise, in the order of ``slugs``."""
    submissions = list(submissions)
    checks = []
    for slug in slugs:
        sources = {s.id: _read(s.files[slug]) for s in submissions if slug in s.files}
        try:
            title = catalog.get(slug).title
        except KeyError:
            title = slug
        pairs = compare.find_pairs(sources, _stub(slug), min_score=PAGE_MIN)
        checks.append(ExerciseCheck(slug, title, len(sources), pairs, sources))
    return checks


def differing_lines(text: str, other: str) -> list[tuple[int, int]]:
    """The ``(start, end)`` character spans of the lines of ``text`` that differ from
    ``other``: a line (its spacing at both ends aside; blank lines never differ) differs when
    ``other`` holds fewer lines like it than ``text`` has up to it. Each span runs from the
    line's first visible character to its last."""
    left = Counter(line.strip() for line in other.split("\n"))
    spans, pos = [], 0
    for line in text.split("\n"):
        key = line.strip()
        if key and left[key] > 0:
            left[key] -= 1
        elif key:
            start = pos + len(line) - len(line.lstrip())
            spans.append((start, start + len(key)))
        pos += len(line) + 1
    return spans


def _piece(text: str, differs: bool) -> Markup:
    return DIFFERS.format(inert(text)) if differs else escape(inert(text))


def _segments(text: str, spans: Sequence[tuple[int, int, int]],
              differs: Sequence[tuple[int, int]] = ()) -> list[dict[str, Any]]:
    """``text`` cut into plain and highlighted pieces (``spans``: start, end, region number,
    sorted and disjoint; a region's first piece is labelled), the lines ``differs`` (sorted,
    disjoint spans) marked within them; each piece inert and escaped (``Markup``); cut at
    ``SHOW_CHARS``."""
    shown = text[:SHOW_CHARS]
    cuts = sorted({0, len(shown), *(min(x, len(shown)) for s, e, _ in spans for x in (s, e)),
                   *(min(x, len(shown)) for s, e in differs for x in (s, e))})
    out: list[dict[str, Any]] = []
    labelled: set[int] = set()
    r = d = 0
    for start, end in pairwise(cuts):
        while r < len(spans) and spans[r][1] <= start:
            r += 1
        while d < len(differs) and differs[d][1] <= start:
            d += 1
        region = spans[r][2] if r < len(spans) and spans[r][0] <= start else None
        piece = _piece(shown[start:end], d < len(differs) and differs[d][0] <= start)
        if out and out[-1]["region"] == region and out[-1]["end"] == start:
            out[-1]["text"] += piece
            out[-1]["end"] = end
            continue
        segment: dict[str, Any] = {"text": piece, "region": region, "end": end}
        if region is not None:
            segment.update(colour=region % COLOURS, label=region not in labelled)
            labelled.add(region)
        out.append(segment)
    if len(text) > SHOW_CHARS:
        out.append({"text": f"\n[{len(text) - SHOW_CHARS} more characters not shown]",
                    "region": None})
    return out


def _href(submission_id: str) -> str:
    return urllib.parse.quote(submission_id, safe="") + "/index.html"


def _pair_view(check: ExerciseCheck, pair: compare.Pair, rank: int) -> dict[str, Any]:
    regions = pair.regions
    a_src, b_src = check.sources[pair.a], check.sources[pair.b]
    a_spans = sorted((start, end, n + 1) for n, r in enumerate(regions)
                     for start, end in r.a_spans)
    b_spans = sorted((start, end, n + 1) for n, r in enumerate(regions)
                     for start, end in r.b_spans)
    return {"rank": rank, "a": pair.a, "b": pair.b, "a_href": _href(pair.a),
            "b_href": _href(pair.b), "score": round(numbers.share(pair.score)),
            "share_a": round(numbers.share(pair.share_a)),
            "share_b": round(numbers.share(pair.share_b)),
            "matched": pair.matched, "regions": len(regions),
            "a_code": _segments(a_src, a_spans, differing_lines(a_src, b_src)),
            "b_code": _segments(b_src, b_spans, differing_lines(b_src, a_src)),
            "anchor": f"{check.slug}-{rank}"}


def render_similarity(checks: list[ExerciseCheck], *, title: str, generated: str) -> str:
    """The similarity page (see the module docstring); every value HTML-escaped."""
    exercises = []
    for check in checks:
        shown = [p for p in check.pairs if p.score >= PAGE_MIN][:TOP_PAIRS]
        exercises.append({
            "slug": check.slug, "title": check.title, "submitted": check.submitted,
            "found": len(check.pairs), "hidden": len(check.pairs) - len(shown),
            "pairs": [_pair_view(check, p, n + 1) for n, p in enumerate(shown)]})
    return _ENV.get_template("similarity.html.j2").render(
        title=title, generated=generated, exercises=exercises, k=compare.K,
        guarantee=compare.K + compare.WINDOW - 1, page_min=round(100 * PAGE_MIN),
        top=TOP_PAIRS, csv=CSV)


def write_similarity(out: Path, submissions: Iterable[Any], slugs: Sequence[str], *,
                     title: str = "Class report", generated: str = "") -> Path:
    """Compare the class (``check_class``), write ``out/similarity.html`` and
    ``out/similarity.csv`` atomically, and return the page's path."""
    checks = check_class(submissions, slugs)
    make_dir(out)
    rows: list[list[str | int | float]] = [
        ["exercise", "a", "b", "score", "share_a", "share_b", "matched_tokens", "regions"]]
    for check in checks:
        rows += [[check.slug, p.a, p.b, numbers.share(p.score, 1), numbers.share(p.share_a, 1),
                  numbers.share(p.share_b, 1), p.matched, len(p.regions)] for p in check.pairs]
    write_csv(out / CSV, rows)
    page = out / PAGE
    atomic_write_text(page, render_similarity(
        checks, title=title, generated=generated or numbers.generated()))
    return page
