"""Where a test's verdict is decided: a finished pytest test becomes a ``TestResult``.

- no exception: ``passed``, full points;
- ``GradeFailure`` (a wrong answer, from ``check``): ``failed``, with diagnostics and the
  known mistake it matches, if any;
- ``LearnerFault`` (the learner's code raised, hung, crashed, ...): the fault's own status
  (``error``, ``timeout``, ``crashed``, or ``failed`` for "not implemented yet");
- anything else is a fault of the suite itself: ``error``, marked as a grader error.
"""

from __future__ import annotations

from typing import Any

import pytest

from grader.sandbox import faults
from grader.sandbox.proxy import CallLog

from .check import Check, GradeFailure
from .results import TestResult


def _test_name(item: pytest.Item) -> str:
    return item.name.removeprefix("test_")


def decide(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None,
           duration_s: float, log: CallLog | None, check: Check | None) -> TestResult:
    marker = item.get_closest_marker("grading")
    points = float(marker.kwargs["points"]) if marker else 0.0
    hint = marker.kwargs.get("hint", "") if marker else ""
    doc = (getattr(item, "function", None).__doc__ or "").strip().splitlines()
    visibility = marker.kwargs.get("visibility", "hidden") if marker else "hidden"
    result = TestResult(name=_test_name(item), status="passed", score=points, max_score=points,
                        duration_s=duration_s, visibility=visibility,
                        description=doc[0] if doc else "", output=log.text() if log else "")
    if check is not None:
        result.notes = list(check.notes)
        if check.comparisons:
            result.diagnostics = check.comparisons[-1].diagnostics()
    if excinfo is None:
        return result
    exc: Any = excinfo.value
    result.score = 0.0
    result.hint = hint
    if isinstance(exc, GradeFailure):
        result.status, result.message = "failed", exc.message
        if exc.comparison is not None:
            result.diagnostics = exc.comparison.diagnostics()
        if exc.mistake is not None:
            result.mistake = exc.mistake.name
            result.mistake_message = exc.mistake.message
    elif isinstance(exc, faults.LearnerFault):
        result.status, result.message = exc.status, exc.message
        result.traceback = list(exc.traceback)
        if isinstance(exc, (faults.NotSubmitted,)):
            result.hint = ""
    else:
        result.status = "error"
        result.message = (f"grader error (not your fault): {type(exc).__name__}: {exc}")
        result.hint = ""
    return result
