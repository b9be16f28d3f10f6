"""Gradescope's autograder ``results.json`` for one submission, exactly the specification's
fields, and a validator of that specification.

A public test is ``"visible"``; a hidden test is ``"after_due_date"`` by default
(``hidden_visibility=``): Gradescope lets a student resubmit until the deadline, and seeing the
hidden suite's verdicts before then lets them probe it. The total score is top-level and
visible (Gradescope sums the tests' ``max_score``); with a teacher's adjustment (``--adjust``) it is
the adjusted total, and the output says so with the comment. Gradescope's test ``status`` is
``passed``/``failed``; the engine's own status (error, timeout, crashed) is kept in the
output text and in ``extra_data``.

Numbers: Gradescope's specification says nothing of rounding; every score is written with at
most six decimals (``numbers.exact``'s precision), and an exercise's tests' ``max_score`` are
``numbers.apportion``'s (the rounding's remainder on its first largest test), so that, as
written, they add up exactly to the exercise's maximum, and the exercises' to the
submission's (``max_score``). A test that scored its maximum scores its written
``max_score``; another its score rounded (never above its ``max_score``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from grader import numbers
from grader.files import atomic_write_text
from grader.results import SubmissionResult

from . import marks
from .plain import test_text

GRADESCOPE_VISIBILITY = ("visible", "hidden", "after_due_date", "after_published")
GRADESCOPE_OUTPUT_FORMATS = ("text", "html", "simple_format", "md", "ansi")
# The keys of Gradescope's autograder results specification, and no others.
GRADESCOPE_TOP_KEYS = frozenset({"score", "execution_time", "output", "output_format",
                                 "test_output_format", "test_name_format", "visibility",
                                 "stdout_visibility", "extra_data", "tests", "leaderboard"})
GRADESCOPE_TEST_KEYS = frozenset({"score", "max_score", "status", "name", "name_format",
                                  "number", "output", "output_format", "tags", "visibility",
                                  "extra_data"})


def gradescope_json(result: SubmissionResult, *,
                    hidden_visibility: str = "after_due_date") -> dict:
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
    for i, e in enumerate(result.exercises, start=1):
        if e.status == "not_submitted":
            missing.append(e.exercise)
        elif e.message:
            notes.append(f"{e.exercise}: {e.message}")
        tops = numbers.apportion([t.max_score for t in e.tests], e.max_score)
        for j, (t, top) in enumerate(zip(e.tests, tops, strict=True), start=1):
            n_tests += 1
            n_passed += t.status == "passed"
            tests.append({
                "name": f"{e.exercise}: {t.name}",
                "number": f"{i}.{j}",
                "score": top if t.score >= t.max_score else min(round(t.score, 6), top),
                "max_score": top,
                "status": "passed" if t.status == "passed" else "failed",
                "output": test_text(t),
                "output_format": "text",
                "visibility": "visible" if t.visibility == "public"
                else hidden_visibility,
                "extra_data": {"exercise": e.exercise, "test": t.name,
                               "grader_status": str(t.status), "mistake": t.mistake,
                               "duration_s": t.duration_s},
            })
    score, max_score = result.final_score, result.max_score
    summary = [f"Score {numbers.points(score)}/{numbers.points(max_score)} · "
               f"{n_passed} of {n_tests} tests passed"]
    said = marks.comment(result)
    if marks.changed(result):
        summary.append(f"Adjusted by the teacher from {numbers.points(result.score)} to "
                       f"{numbers.points(score)}" + (f": {said}" if said else ""))
    elif said:
        summary.append(f"The teacher's comment: {said}")
    if missing:
        summary.append("Not submitted: " + ", ".join(missing))
    summary += notes
    return {
        "score": score,
        **({} if result.duration_s is None else
           {"execution_time": round(result.duration_s, 3)}),
        "output": "\n".join(summary),
        "output_format": "text",
        "visibility": "visible",
        "tests": tests,
    }


def write_gradescope_json(path: Path, result: SubmissionResult, **kw: Any) -> None:
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
