"""What every writer of one submission's result says the same way: the status symbols, the
test counts of the summary line, and which tests share one cause (plain Python: the terminal
needs no jinja2)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from grader.results import ExerciseResult, SubmissionResult, TestResult, TestStatus
from grader.sandbox.faults import NOT_IMPLEMENTED

SYMBOLS = {TestStatus.PASSED: "✓", TestStatus.FAILED: "✗", TestStatus.ERROR: "!",
           TestStatus.TIMEOUT: "⏱", TestStatus.CRASHED: "☠",
           TestStatus.NOT_RUN: "–"}
RULE_SYMBOLS = {"kept": "·", "broken": "✗", "unchecked": "–"}  # (``rule_state``)


def summary_counts(result: SubmissionResult) -> dict[str, Any]:
    """``total``, ``passed``, the ``other`` statuses with their counts, and ``public``: the
    "M/N public tests pass; ..." text."""
    tests = [t for e in result.exercises for t in e.tests]
    by_status = Counter(str(t.status) for t in tests)
    parts = []
    for vis in ("public", "hidden"):
        group = [t for t in tests if t.visibility == vis]
        if group:
            parts.append(f"{sum(t.passed for t in group)}/{len(group)} {vis} tests pass")
    return {"total": len(tests), "passed": by_status.get("passed", 0),
            "other": [(s, n) for s, n in by_status.items() if s != "passed"],
            "public": "; ".join(parts)}


def mistake_label(name: str | None) -> str:
    """A known mistake's name as prose, its symbols as written: ``no_wrap_around`` -> "no wrap
    around", ``rows_of_length_H_p`` -> "rows of length H_p" (a capital letter and a one-letter
    subscript stay one symbol)."""
    words: list[str] = []
    for part in str(name or "").split("_"):
        if words and len(words[-1]) == 1 and words[-1].isupper() and len(part) == 1 \
                and part.islower():
            words[-1] += "_" + part
        else:
            words.append(part)
    return " ".join(words)


def rule_state(test: TestResult) -> str | None:
    """How a source rule's test reads: "kept", "broken" or "unchecked" (its functions are
    still stubs, or the file could not be read); None for any other test. A rule's test is
    worth 0 points, always, and is named ``rule_<name>`` (``@source_rule`` decorates a
    ``test_rule_<name>``); a broken one fails with the kind "rule" whatever its name."""
    if test.max_score != 0 or not (test.name.startswith("rule_") or test.kind == "rule"):
        return None
    if test.passed:
        return "kept"
    return "broken" if test.kind == "rule" else "unchecked"


_RULE_NOT_IMPLEMENTED = "not implemented yet: "  # (grader/judge/rules.py's ``enforce``)


def not_implemented(test: TestResult) -> bool:
    """Whether ``test`` failed only because the code it needs is still the stub: a call that
    raised NotImplementedError (``faults.NOT_IMPLEMENTED``, at every feedback level), or a
    source rule not checked yet for that reason ("not implemented yet: ...")."""
    return test.status == TestStatus.FAILED and not test.fault and (
        test.message == NOT_IMPLEMENTED or test.message.startswith(_RULE_NOT_IMPLEMENTED))


def shared_fault(slug: str, test: TestResult) -> tuple[str, str] | None:
    """The (status, message) of a failure that is not about this test but about the exercise's
    file or its run (``TestResult.fault``, a ``FaultKind``: the file not submitted, not
    loadable, lacking the function, or not run after timeouts), or about a function still the
    stub (``not_implemented``: its one message, a rule's included), and so the same for every
    test it stops; None for any other result. The test's own hint never fits such a failure:
    its code never ran."""
    if not_implemented(test):
        return str(test.status), NOT_IMPLEMENTED
    if test.passed or not test.fault:
        return None
    return str(test.status), test.message


@dataclass
class Cause:
    """One cause that several tests of an exercise share, explained once: a known mistake
    (``kind`` "mistake": ``name``, its ``message``) or a shared fault (``kind`` "fault": the
    status and message of ``shared_fault``). ``tests``: the names of the tests it explains;
    ``whole``: it explains every test of the exercise."""

    kind: str
    message: str
    name: str = ""
    status: str = ""
    tests: list[str] = field(default_factory=list)
    whole: bool = False
    hint: str = ""  # a fault's kind hint, the same for every test it stops (how to find a loop)

    @property
    def label(self) -> str:
        return mistake_label(self.name)


def shared_causes(exercise: ExerciseResult) -> list[Cause]:
    """The causes of ``exercise`` that explain two or more of its failing tests, in the order
    of their first test: each known mistake matched more than once, each shared fault
    (``shared_fault``) met more than once. A cause of one test stays with that test."""
    found: dict[tuple[str, ...], Cause] = {}
    for t in exercise.tests:
        if t.passed:
            continue
        fault = shared_fault(exercise.exercise, t)
        if fault is not None:
            cause = found.setdefault(("fault", *fault), Cause(
                kind="fault", status=fault[0], message=fault[1], hint=t.kind_hint))
        elif t.mistake:
            cause = found.setdefault(("mistake", str(t.mistake)), Cause(
                kind="mistake", name=str(t.mistake), message=t.mistake_message))
        else:
            continue
        cause.tests.append(t.name)
    causes = [c for c in found.values() if len(c.tests) >= 2]
    for c in causes:
        c.whole = len(c.tests) == len(exercise.tests)
    return causes


def names(tests: list[str], limit: int = 0) -> str:
    """``a, b and c`` (with ``limit``, the first ``limit`` names and "and N more")."""
    if limit and len(tests) > limit:
        return ", ".join(tests[:limit]) + f" and {len(tests) - limit} more"
    return ", ".join(tests[:-1]) + (" and " if len(tests) > 1 else "") + tests[-1] if tests \
        else ""
