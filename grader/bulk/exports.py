"""Gradebook and dashboard exports of a class's results: CSV, Gradescope JSON, JUnit XML.

Every function reads result dicts exactly as in a ``results.json``
(``SubmissionResult.to_dict()``) and "rejected" entries: mappings or objects with ``id``,
``reason`` and ``source`` (submissions that could not be graded at all). Every writer is
atomic: it writes a temporary file beside the target and renames it over the target, so a
killed run never leaves a half-written file.

Decisions, in one place:

- **CSV** (``write_grades_csv``): columns ``id,total,max,<one per exercise slug>,status``.
  An exercise that was not submitted scores ``0`` (the points earned, and what the total
  counts); the ``status`` cell says ``graded; not submitted: <slugs>`` (and names the files
  that ``could not be loaded``, which score what their tests earned). An exercise absent from a
  result (graded with another ``--exercises`` selection) is an empty cell. A rejected
  submission is a row with every score cell empty (``total`` and ``max`` too) and
  ``status`` = ``not graded: <reason>``: an LMS import leaves it ungraded rather than 0.
  Rows are sorted by id in natural order (``s2`` before ``s10``). Numbers carry no spurious
  decimals (``9``, ``7.5``). A text cell starting with ``= + - @`` gets a leading ``'`` so a
  spreadsheet never evaluates it as a formula. UTF-8 without BOM, CRLF line ends (RFC 4180).
- **Gradescope** (``gradescope_json``): a public test is ``"visible"``; a hidden test is
  ``"after_due_date"`` by default (``hidden_visibility=``): Gradescope lets a student
  resubmit until the deadline, and seeing the hidden suite's verdicts and hints before then
  lets them probe it; after the due date they get the full teaching feedback. The total
  score is top-level and visible. Gradescope's test ``status`` is ``passed``/``failed``; the
  engine's own status (error, timeout, crashed) is kept in the output text and in
  ``extra_data``.
- **JUnit** (``write_junit``): failed -> ``<failure type="failed">``; error, timeout,
  crashed -> ``<error type=STATUS>``; a test of an exercise that was not submitted ->
  ``<skipped message="not submitted"/>``; a rejected submission -> a suite with one
  testcase ``not graded`` holding an ``<error type="rejected">``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from grader import numbers
from grader.files import atomic_write_bytes, atomic_write_text

GRADESCOPE_VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")
GRADESCOPE_OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")
# The keys of Gradescope's autograder results specification, and no others.
GRADESCOPE_TOP_KEYS = frozenset({"score", "execution_time", "output", "output_format",
                                 "test_output_format", "test_name_format", "visibility",
                                 "stdout_visibility", "extra_data", "tests", "leaderboard"})
GRADESCOPE_TEST_KEYS = frozenset({"score", "max_score", "status", "name", "name_format",
                                  "number", "output", "output_format", "tags", "visibility",
                                  "extra_data"})
_ERROR_STATUSES = ("error", "timeout", "crashed")
_OUTPUT_CAP = 2000  # characters of a test's captured output kept in exports
# Characters XML 1.0 cannot carry (control characters, lone surrogates, U+FFFE/U+FFFF).
_XML_BAD = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# -- shared helpers ---------------------------------------------------------------------------

def entry_get(entry: Any, name: str, default: Any = "") -> Any:
    """``entry[name]`` for a mapping, ``entry.name`` otherwise (rejected entries may be either)."""
    if isinstance(entry, Mapping):
        return entry.get(name, default)
    return getattr(entry, name, default)


def natural_key(text: str) -> tuple:
    """Sort key: digit runs compare as numbers (``s2`` < ``s10``), ties broken by the text."""
    parts = re.split(r"(\d+)", text.casefold())
    return tuple(int(p) if i % 2 else p for i, p in enumerate(parts)), text


def test_reason(test: Mapping[str, Any]) -> str:
    """The message without the known-mistake sentence (as ``TestResult.reason``)."""
    message, mistake = test.get("message") or "", test.get("mistake_message") or ""
    if mistake and message.endswith(". " + mistake):
        return message[: -len(mistake) - 2]
    return message


def test_text(test: Mapping[str, Any]) -> str:
    """Plain-text feedback of one test: why, the known mistake, the hint, notes, traceback."""
    if test.get("status") == "passed":
        lines = [test.get("description") or "passed"]
        lines += list(test.get("notes") or [])
        return "\n".join(lines)
    lines = []
    if test.get("status") in _ERROR_STATUSES:
        lines.append(f"[{test['status']}]")
    if reason := test_reason(test):
        lines.append(reason)
    if test.get("mistake"):
        name = str(test["mistake"]).replace("_", " ")
        lines.append(f"Known mistake ({name}): {test.get('mistake_message') or ''}".rstrip())
    if test.get("kind_hint") and not test.get("mistake"):
        lines.append(f"What this kind of failure usually means: {test['kind_hint']}")
    if test.get("hint"):
        lines.append(f"Hint: {test['hint']}")
    lines += list(test.get("notes") or [])
    if test.get("traceback"):
        lines.append("In your code:\n" + "\n".join(test["traceback"]))
    if output := test.get("output") or "":
        if len(output) > _OUTPUT_CAP:
            output = output[:_OUTPUT_CAP] + f"\n... ({len(output) - _OUTPUT_CAP} more characters)"
        lines.append("Captured output:\n" + output)
    return "\n".join(lines)


# -- CSV gradebook ----------------------------------------------------------------------------

def _csv_text(value: str) -> str:
    return "'" + value if value[:1] in ("=", "+", "-", "@", "\t", "\r") else value


def write_grades_csv(path: Path, results: list[dict], exercises: list[str],
                     rejected: list, pending: Iterable[str] = (),
                     late: Iterable[str] = ()) -> None:
    """Write the gradebook CSV: ``id,total,max,<exercise slugs...>,late,status``, by id.

    One row per submission found: graded (status ``graded``), rejected (empty scores, status
    ``not graded: <reason>``) or ``pending`` (an interrupted run had not graded it yet, so a
    partial file says it is partial). ``late``: the ids whose upload was marked late (no
    penalty is computed: the LMS does that). See the module docstring for blanks and zeros.
    """
    late = set(late)
    rows: list[tuple[tuple, list[str]]] = []
    for r in results:
        by_slug = {e["exercise"]: e for e in r.get("exercises", [])}
        cells, missing, broken = [], [], []
        for slug in exercises:
            e = by_slug.get(slug)
            cells.append("" if e is None else numbers.points(e.get("score", 0)))
            if e is not None and e.get("status") == "not_submitted":
                missing.append(slug)
            elif e is not None and e.get("status") == "error":
                broken.append(slug)
        status = "graded" + (f"; not submitted: {', '.join(missing)}" if missing else "")
        status += f"; could not be loaded: {', '.join(broken)}" if broken else ""
        sid = str(r.get("submission", ""))
        rows.append((natural_key(sid), [_csv_text(sid), numbers.points(r.get("score", 0)),
                                        numbers.points(r.get("max_score", 0)), *cells,
                                        "late" if sid in late else "", status]))
    for entry in rejected:
        sid = str(entry_get(entry, "id"))
        reason = " ".join(str(entry_get(entry, "reason") or "unknown reason").split())
        rows.append((natural_key(sid), [_csv_text(sid), "", "", *([""] * len(exercises)),
                                        "late" if sid in late else "",
                                        _csv_text(f"not graded: {reason}")]))
    for sid in pending:
        rows.append((natural_key(sid), [_csv_text(sid), "", "", *([""] * len(exercises)),
                                        "late" if sid in late else "", "pending"]))
    rows.sort(key=lambda kv: kv[0])
    buf = io.StringIO(newline="")
    writer = csv.writer(buf, lineterminator="\r\n")
    writer.writerow(["id", "total", "max", *exercises, "late", "status"])
    writer.writerows(row for _, row in rows)
    atomic_write_text(path, buf.getvalue())


# -- Gradescope -------------------------------------------------------------------------------

def gradescope_json(result: dict, *, hidden_visibility: str = "after_due_date") -> dict:
    """One submission's result in Gradescope's autograder ``results.json`` format.

    Top level: ``score``, ``execution_time`` (s), ``output`` (a summary, with the maximum),
    ``output_format``, ``visibility`` and ``tests`` (Gradescope sums the tests' ``max_score``);
    per test: ``name`` ("exercise: test"), ``number``,
    ``score``, ``max_score``, ``status`` (passed/failed), ``output`` (plain text),
    ``visibility`` (public -> ``visible``, hidden -> ``hidden_visibility``), ``extra_data``.
    """
    if hidden_visibility not in GRADESCOPE_VISIBILITY:
        raise ValueError(f"hidden_visibility must be one of {GRADESCOPE_VISIBILITY}, "
                         f"got {hidden_visibility!r}")
    tests: list[dict[str, Any]] = []
    n_passed = n_tests = 0
    notes: list[str] = []
    missing: list[str] = []
    for i, e in enumerate(result.get("exercises", []), start=1):
        if e.get("status") == "not_submitted":
            missing.append(e["exercise"])
        elif e.get("message"):
            notes.append(f"{e['exercise']}: {e['message']}")
        for j, t in enumerate(e.get("tests", []), start=1):
            n_tests += 1
            n_passed += t.get("status") == "passed"
            tests.append({
                "name": f"{e['exercise']}: {t['name']}",
                "number": f"{i}.{j}",
                "score": float(t.get("score", 0)),
                "max_score": float(t.get("max_score", 0)),
                "status": "passed" if t.get("status") == "passed" else "failed",
                "output": test_text(t),
                "output_format": "text",
                "visibility": "visible" if t.get("visibility") == "public"
                else hidden_visibility,
                "extra_data": {"exercise": e["exercise"], "test": t["name"],
                               "grader_status": t.get("status"), "mistake": t.get("mistake"),
                               "duration_s": t.get("duration_s", 0.0)},
            })
    score, max_score = float(result.get("score", 0)), float(result.get("max_score", 0))
    summary = [f"Score {numbers.points(score)}/{numbers.points(max_score)} · "
               f"{n_passed} of {n_tests} tests passed"]
    if missing:
        summary.append("Not submitted: " + ", ".join(missing))
    summary += notes
    return {
        "score": score,
        "execution_time": round(float(result.get("duration_s", 0.0)), 3),
        "output": "\n".join(summary),
        "output_format": "text",
        "visibility": "visible",
        "tests": tests,
    }


def write_gradescope_json(path: Path, result: dict, **kw: Any) -> None:
    """Write ``gradescope_json(result, **kw)`` to ``path`` atomically (strict JSON, no NaN)."""
    data = gradescope_json(result, **kw)
    atomic_write_text(path, json.dumps(data, indent=1, allow_nan=False) + "\n")


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)


def _check_enum(problems: list[str], where: str, value: Any, allowed: Iterable[str]) -> None:
    allowed = tuple(allowed)
    if value not in allowed:
        problems.append(f"{where}: {value!r} is not one of {', '.join(allowed)}")


def validate_gradescope(data: dict) -> list[str]:
    """The problems that keep ``data`` from being a valid Gradescope ``results.json``.

    Returns an empty list when valid. Checks types, allowed keys and enumerations of the
    Gradescope autograder specification, finiteness of numbers, and that a score is given
    either at the top level or on every test.
    """
    if not isinstance(data, dict):
        return [f"top level: expected an object, got {type(data).__name__}"]
    problems: list[str] = []
    for key in sorted(set(data) - GRADESCOPE_TOP_KEYS):
        problems.append(f"top level: unknown key {key!r}")
    for key in ("score", "execution_time"):
        if key in data and not _is_number(data[key]):
            problems.append(f"{key}: expected a finite number, got {data[key]!r}")
    if _is_number(data.get("execution_time")) and data["execution_time"] < 0:
        problems.append("execution_time: negative")
    if "output" in data and not isinstance(data["output"], str):
        problems.append("output: expected a string")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in data:
            _check_enum(problems, key, data[key], GRADESCOPE_OUTPUT_FORMATS)
    for key in ("visibility", "stdout_visibility"):
        if key in data:
            _check_enum(problems, key, data[key], GRADESCOPE_VISIBILITY)
    if "extra_data" in data and not isinstance(data["extra_data"], dict):
        problems.append("extra_data: expected an object")
    tests = data.get("tests", [])
    if not isinstance(tests, list):
        problems.append("tests: expected a list")
        tests = []
    if "score" not in data and not tests:
        problems.append("score: required when there are no tests")
    for i, t in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(t, dict):
            problems.append(f"{where}: expected an object")
            continue
        for key in sorted(set(t) - GRADESCOPE_TEST_KEYS):
            problems.append(f"{where}: unknown key {key!r}")
        if "score" not in t and "score" not in data:
            problems.append(f"{where}.score: required when there is no top-level score")
        for key in ("score", "max_score"):
            if key in t and not _is_number(t[key]):
                problems.append(f"{where}.{key}: expected a finite number, got {t[key]!r}")
        for key in ("name", "output"):
            if key in t and not isinstance(t[key], str):
                problems.append(f"{where}.{key}: expected a string")
        if "number" in t and not isinstance(t["number"], str | int | float):
            problems.append(f"{where}.number: expected a string")
        if "status" in t:
            _check_enum(problems, f"{where}.status", t["status"], ("passed", "failed"))
        if "visibility" in t:
            _check_enum(problems, f"{where}.visibility", t["visibility"], GRADESCOPE_VISIBILITY)
        for key in ("output_format", "name_format"):
            if key in t:
                _check_enum(problems, f"{where}.{key}", t[key], GRADESCOPE_OUTPUT_FORMATS)
        if "tags" in t and not (isinstance(t["tags"], list)
                                and all(isinstance(x, str) for x in t["tags"])):
            problems.append(f"{where}.tags: expected a list of strings")
        if "extra_data" in t and not isinstance(t["extra_data"], dict):
            problems.append(f"{where}.extra_data: expected an object")
    try:
        json.dumps(data, allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(f"not serialisable as strict JSON: {exc}")
    return problems


# -- JUnit XML --------------------------------------------------------------------------------

def _x(text: Any) -> str:
    """Text XML 1.0 can carry: invalid characters become U+FFFD."""
    return _XML_BAD.sub("\ufffd", str(text))


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _set_counts(elem: ET.Element, counts: dict[str, float]) -> None:
    """The counts common JUnit consumers accept (Jenkins' junit-10.xsd): on a suite and on
    ``<testsuites>``, ``tests``, ``failures``, ``errors`` and ``time``."""
    for key in ("tests", "failures", "errors"):
        elem.set(key, str(int(counts[key])))
    elem.set("time", f"{counts['time']:.3f}")


def write_junit(path: Path, results: list[dict], rejected: list) -> None:
    """Write JUnit XML: one ``<testsuite>`` per submission, one ``<testcase>`` per test.

    ``classname`` is ``SUBMISSION.EXERCISE``, ``name`` the test, ``time`` its duration. Counts
    (tests, failures, errors, time) are set on every suite and on ``<testsuites>``. A
    not-submitted exercise is left out (it would bury the failures). Suites are ordered by
    submission id; a rejected submission is a suite whose single testcase ``not graded`` is an
    error.
    """
    root = ET.Element("testsuites", name="vit-grader")
    total = dict.fromkeys(("tests", "failures", "errors", "time"), 0.0)
    suites: list[tuple[tuple, ET.Element]] = []
    for r in results:
        sid = str(r.get("submission", ""))
        suite = ET.Element("testsuite", name=_x(sid))
        counts = dict.fromkeys(total, 0.0)
        props = ET.SubElement(suite, "properties")
        for key in ("score", "max_score"):
            ET.SubElement(props, "property", name=key, value=numbers.points(r.get(key, 0)))
        for e in r.get("exercises", []):
            if e.get("status") == "not_submitted":
                continue
            for t in e.get("tests", []):
                duration = float(t.get("duration_s") or 0.0)
                case = ET.SubElement(suite, "testcase", classname=_x(f"{sid}.{e['exercise']}"),
                                     name=_x(t["name"]), time=f"{duration:.3f}")
                counts["tests"] += 1
                counts["time"] += duration
                status = t.get("status")
                if status == "passed":
                    pass
                elif status in _ERROR_STATUSES:
                    err = ET.SubElement(case, "error", type=status,
                                        message=_x(_one_line(test_reason(t) or status)))
                    err.text = _x(test_text(t))
                    counts["errors"] += 1
                else:
                    fail = ET.SubElement(case, "failure", type=str(status or "failed"),
                                         message=_x(_one_line(test_reason(t) or "failed")))
                    fail.text = _x(test_text(t))
                    counts["failures"] += 1
        _set_counts(suite, counts)
        suites.append((natural_key(sid), suite))
        for key in total:
            total[key] += counts[key]
    for entry in rejected:
        sid = str(entry_get(entry, "id"))
        reason = str(entry_get(entry, "reason") or "unknown reason")
        suite = ET.Element("testsuite", name=_x(sid))
        case = ET.SubElement(suite, "testcase", classname=_x(sid), name="not graded", time="0.000")
        err = ET.SubElement(case, "error", type="rejected", message=_x(_one_line(reason)))
        source = entry_get(entry, "source", "")
        err.text = _x(f"not graded: {reason}" + (f"\nsource: {source}" if source else ""))
        counts = {"tests": 1, "failures": 0, "errors": 1, "time": 0.0}
        _set_counts(suite, counts)
        suites.append((natural_key(sid), suite))
        for key in total:
            total[key] += counts[key]
    for _, suite in sorted(suites, key=lambda kv: kv[0]):
        root.append(suite)
    _set_counts(root, total)
    ET.indent(root)
    data = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    atomic_write_bytes(path, data + b"\n")
