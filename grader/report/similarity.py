"""The class's similarity check: ``OUT/similarity.html`` and ``OUT/similarity.csv``.

``write_similarity(out, submissions, slugs)`` compares, exercise by exercise, the files of
every pair of submissions (``grader/similarity.py``: the stub's text and what many
submissions share are ignored) and writes:

- ``similarity.html``: one self-contained page (inline CSS, no script, no network): per
  exercise the pairs ranked by score (at most ``TOP_PAIRS``, score >= ``PAGE_MIN``), each
  with both files side by side and the matching regions highlighted and numbered alike;
  learner text is made inert (``grader/inert.py``) and HTML-escaped;
- ``similarity.csv``: every pair found (``exercise,a,b,score,share_a,share_b,
  matched_tokens,regions``; scores in percent), through ``csv_cells.write_csv``.

A high score says two files share long runs of code beyond the skeleton: a reason to look,
not proof of copying.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from grader import catalog, numbers, similarity
from grader.files import atomic_write_text, make_dir
from grader.inert import inert

from .csv_cells import write_csv

TEMPLATES = Path(__file__).resolve().parent / "templates"
PAGE = "similarity.html"
CSV = "similarity.csv"
TOP_PAIRS = 25      # pairs shown per exercise on the page (the CSV has them all)
PAGE_MIN = 0.2      # lowest score shown on the page
SHOW_CHARS = 40_000  # characters of one file shown side by side (the rest is cut)
COLOURS = 6

_ENV = jinja2.Environment(
    loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
    undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)


@dataclass
class ExerciseCheck:
    """The pairs found for one exercise, and the sources they refer to."""

    slug: str
    title: str
    submitted: int
    pairs: list[similarity.Pair]
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
        pairs = similarity.find_pairs(sources, _stub(slug))
        checks.append(ExerciseCheck(slug, title, len(sources), pairs, sources))
    return checks


def _segments(text: str, spans: list[tuple[int, int, int]]) -> list[dict[str, Any]]:
    """``text`` cut into plain and highlighted pieces (``spans``: start, end, region number,
    sorted and disjoint; a region's first piece is labelled), each inert; cut at
    ``SHOW_CHARS``."""
    shown = text[:SHOW_CHARS]
    out, pos, labelled = [], 0, set()
    for start, end, number in spans:
        if start >= len(shown):
            break
        if start > pos:
            out.append({"text": inert(shown[pos:start]), "region": None})
        out.append({"text": inert(shown[start:end]), "region": number,
                    "colour": number % COLOURS, "label": number not in labelled})
        labelled.add(number)
        pos = min(end, len(shown))
    if pos < len(shown):
        out.append({"text": inert(shown[pos:]), "region": None})
    if len(text) > SHOW_CHARS:
        out.append({"text": f"\n[{len(text) - SHOW_CHARS} more characters not shown]",
                    "region": None})
    return out


def _href(submission_id: str) -> str:
    return urllib.parse.quote(submission_id, safe="") + "/index.html"


def _pair_view(check: ExerciseCheck, pair: similarity.Pair, rank: int) -> dict[str, Any]:
    regions = pair.regions
    a_spans = sorted((start, end, n + 1) for n, r in enumerate(regions)
                     for start, end in r.a_spans)
    b_spans = sorted((start, end, n + 1) for n, r in enumerate(regions)
                     for start, end in r.b_spans)
    return {"rank": rank, "a": pair.a, "b": pair.b, "a_href": _href(pair.a),
            "b_href": _href(pair.b), "score": round(100 * pair.score),
            "share_a": round(100 * pair.share_a), "share_b": round(100 * pair.share_b),
            "matched": pair.matched, "regions": len(regions),
            "a_code": _segments(check.sources[pair.a], a_spans),
            "b_code": _segments(check.sources[pair.b], b_spans),
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
        title=title, generated=generated, exercises=exercises, k=similarity.K,
        guarantee=similarity.K + similarity.WINDOW - 1, page_min=round(100 * PAGE_MIN),
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
        rows += [[check.slug, p.a, p.b, round(100 * p.score, 1), round(100 * p.share_a, 1),
                  round(100 * p.share_b, 1), p.matched, len(p.regions)] for p in check.pairs]
    write_csv(out / CSV, rows)
    page = out / PAGE
    atomic_write_text(page, render_similarity(
        checks, title=title, generated=generated or numbers.generated()))
    return page
