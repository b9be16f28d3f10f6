"""The header of a learner file generated from a notebook, and relabelling with it.

A generated file starts with ``HEADER_LINES`` comment lines: what it was made from, the line
map (runs ``[generated line, cell label, cell line]``: the lines after a run's first follow
it one for one) and the note on what was left out. ``relabel`` turns "SLUG.py, line 12" in
traceback lines and messages into "SLUG.ipynb, cell 4, line 7". A ``.py`` that merely copies
such a header only relabels its own tracebacks; nothing else reads the header. Since any
learner's ``.py`` may hold such a header, it is read within bounds: JSON nesting checked before
decoding, runs that start in order within the file's lines; anything else is no header.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import bounded

HEADER_LINES = 3
_TAG = "# vit-grader notebook: "
_MAP = "# vit-grader line map: "
_NOTE = "# "
_MAP_DEPTH = 2  # [[generated line, cell label, cell line], ...]


def header(name: str, note: str, line_map: dict[int, tuple[str, int]]) -> list[str]:
    """The header lines of a file generated from ``name`` (map keys: generated lines)."""
    runs: list[list[object]] = []
    previous: tuple[int, str, int] | None = None
    for g in sorted(line_map):
        label, line = line_map[g]
        if previous is None or (g - previous[0], label, line - previous[2]) != (1, previous[1],
                                                                                 1):
            runs.append([g, label, line])
        previous = (g, label, line)
    return [f"{_TAG}{json.dumps(name)} (its definitions only; the rest is not run)",
            _MAP + json.dumps(runs, separators=(",", ":")),
            _NOTE + (" ".join(note.split()) or "nothing was left out")]


def read(path: Path | None) -> tuple[str, dict[int, tuple[str, int]], str] | None:
    """``(notebook name, line map, note)`` of a generated file; None for any other file."""
    if path is None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return parse(fh.read())
    except OSError:
        return None


def parse(text: str) -> tuple[str, dict[int, tuple[str, int]], str] | None:
    """``read``, from the file's text."""
    head = text.split("\n", HEADER_LINES)
    if len(head) < HEADER_LINES or not head[0].startswith(_TAG) or \
            not head[1].startswith(_MAP):
        return None
    tagged = head[0][len(_TAG):]
    if not tagged.startswith('"'):
        return None
    try:
        name = json.JSONDecoder().raw_decode(tagged)[0]  # a string: nothing nests
        runs = bounded.loads(head[1][len(_MAP):], _MAP_DEPTH)
        total = text.count("\n") + (0 if text.endswith("\n") else 1)
        if not _runs_fit(runs, total):
            return None
        line_map: dict[int, tuple[str, int]] = {}
        ends = [r[0] for r in runs[1:]] + [total + 1]
        for (g, label, line), end in zip(runs, ends, strict=True):
            for k in range(end - g):
                line_map[g + k] = (label, line + k)
    except (ValueError, TypeError, IndexError):
        return None
    note = head[2][len(_NOTE):]
    return str(name), line_map, "" if note == "nothing was left out" else note


def _runs_fit(runs: object, total: int) -> bool:
    """Whether ``runs`` is a line map a generated file of ``total`` lines could hold: runs
    ``[generated line, label, cell line]`` of ints and a string, starting in order within the
    file (so the map has at most ``total`` entries)."""
    if not isinstance(runs, list):
        return False
    previous = 0
    for run in runs:
        if not (isinstance(run, list) and len(run) == 3 and type(run[0]) is int
                and isinstance(run[1], str) and type(run[2]) is int):
            return False
        if not previous < run[0] <= total or run[2] < 1:
            return False
        previous = run[0]
    return True


def where(text: str | None, line: int) -> str:
    """``line N`` of a learner file, or ``cell C, line M`` when it was made from a notebook."""
    found = parse(text) if text is not None else None
    cell = found[1].get(line) if found is not None else None
    return f"{cell[0]}, line {cell[1]}" if cell else f"line {line}"


def relabel(text: str, slug: str, path: Path | None) -> str:
    """``text`` with ``SLUG.py, line N`` of the generated file at ``path`` pointing at cells."""
    found = read(path)
    if found is None:
        return text
    return relabel_with(text, slug, found[0], found[1])


def relabel_with(text: str, slug: str, name: str, line_map: dict[int, tuple[str, int]]) -> str:
    """``text`` with each ``SLUG.py, line N`` mapped by ``line_map``, then ``SLUG.py`` named
    ``name``."""
    def cell(m: re.Match[str]) -> str:
        where = line_map.get(_line(m.group(1)))
        return f"{name}, {where[0]}, line {where[1]}" if where else m.group(0)

    def at(m: re.Match[str]) -> str:
        where = line_map.get(_line(m.group(2)))
        return f"{name} has a {m.group(1)} at {where[0]}, line {where[1]}" if where \
            else m.group(0)

    text = re.sub(rf"\b{re.escape(slug)}\.py, line (\d+)", cell, text)
    text = re.sub(rf"\b{re.escape(slug)}\.py has an? (\w+) at line (\d+)", at, text)
    return re.sub(rf"\b{re.escape(slug)}\.py\b", name, text)


def _line(digits: str) -> int:
    """The line number ``digits`` spell, or 0 (no line) for more digits than a file has lines:
    the text may be the learner's (an exception's message), and ``int`` refuses over 4,300."""
    return int(digits) if len(digits) <= 12 else 0
