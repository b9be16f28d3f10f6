"""Where a test's verdict is decided: a finished pytest test becomes a ``TestResult``.

- no exception: ``passed``, full points;
- ``GradeFailure`` (a wrong answer, from ``check``): ``failed``, with diagnostics and the
  known mistake it matches, if any;
- ``LearnerFault`` (the learner's code raised, hung, crashed, ...): the fault's own status
  (``error``, ``timeout``, ``crashed``, or ``failed`` for "not implemented yet");
- anything else is a fault of the suite itself: ``error``, marked as a grader error; so is a
  test that passed with ``check.raises`` on a function it never confirmed with a right value
  (``Check.unconfirmed``).

A public test's result carries its inputs, the expected and actual values and their
heatmaps; a hidden test's carries the size and place of the error only (its message is the
comparison's ``hidden_reason``, its diagnostics and figures leave out expected values).
Every failure also gets the hint for its kind (``hints.classify``). The test's own hint is
shown only where it fits: on a failure of a kind its ``hint_for`` names
(``hints.failure_kinds``), and never beside a known mistake (its message names the cause) or
a fault that says everything itself (not submitted, not implemented, not loaded, not run).

``decide`` never raises: an exception while it handles the learner's value (diagnostics,
figures, values shown, hints) makes the test the learner's failure "the grader could not
interpret the returned value: ..." (``check.uninterpretable``), so that the pytest session
goes on and grades the next test and submission as if nothing had happened.
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import catalog
from grader.failure_kinds import FailureKind
from grader.feedback import hints
from grader.inert import inert
from grader.judge import figures
from grader.judge.check import Check, GradeFailure, SuiteError, uninterpretable
from grader.judge.compare import Comparison
from grader.results import TestResult, TestStatus
from grader.sandbox import faults
from grader.sandbox.proxy import CallLog

MAX_VALUES_CHARS = 3000
# Per slug, the (size, passed, learner functions checked) of the tests that compared values,
# in the order they ran.
_HISTORY = pytest.StashKey[dict[str, list[tuple[int, bool, frozenset[str]]]]]()
# Faults whose message says everything: no kind hint.
_SELF_EXPLAINED = (faults.NotSubmitted, faults.NotImplementedYet, faults.ImportFailed,
                   faults.MissingName, faults.NotRun, faults.ArgumentsModified)
# The failure kind (``hints.HINT_KINDS``) of a learner fault, by its status.
_FAULT_KINDS = {"error": FailureKind.RAISED, "timeout": FailureKind.TIMEOUT,
                "crashed": FailureKind.CRASHED}


@dataclass(frozen=True)
class _Facts:
    """What a collected test says of itself, read once per item (the session keeps its
    items: every submission's verdict reads the same facts)."""

    slug: str
    name: str
    grading: Any  # its ``grading`` mark, or None
    description: str


_FACTS = pytest.StashKey[_Facts]()


def _facts(item: pytest.Item) -> _Facts:
    found = item.stash.get(_FACTS, None)
    if found is None:
        # the description: the docstring's first paragraph, whole (a line may end mid-sentence)
        doc = inspect.cleandoc(getattr(item, "function", None).__doc__ or "").split("\n\n")[0]
        found = item.stash[_FACTS] = _Facts(
            slug=Path(str(item.path)).stem.removeprefix("test_"),
            name=item.name.removeprefix("test_"), grading=item.get_closest_marker("grading"),
            description=" ".join(doc.split()))
    return found


def slug_of(item: pytest.Item) -> str:
    """The exercise of test ``item``: its suite's file name without ``test_``."""
    return _facts(item).slug


def grading_mark(item: pytest.Item) -> Any:
    """Test ``item``'s ``grading`` mark (its points, hint, limit, visibility), or None."""
    return _facts(item).grading


def _test_name(item: pytest.Item) -> str:
    return _facts(item).name



def _as_text(value: np.ndarray | None) -> str:
    if value is None:
        return ""
    arr = value.astype(np.int8) if value.dtype.kind == "b" else value
    text = np.array2string(arr, precision=6, threshold=400, edgeitems=4, max_line_width=100,
                           suppress_small=False)
    if value.dtype.kind == "b":
        text += "\n(1 = True, 0 = False)"
    return text if len(text) <= MAX_VALUES_CHARS else text[:MAX_VALUES_CHARS] + "\n..."


def _values(cmp: Comparison) -> dict[str, str] | None:
    if cmp.actual_array is None or cmp.expected_array is None:
        return None
    return {"expected": _as_text(cmp.expected_array), "actual": _as_text(cmp.actual_array)}


Sizes = dict[str, list[tuple[int, bool, frozenset[str]]]]


def forget_sizes(config: pytest.Config, earlier: Sizes | None = None) -> None:
    """A new submission: the sizes its earlier tests passed at start empty, or as ``earlier``
    (a hidden round's: what its public round left, ``sizes``)."""
    config.stash[_HISTORY] = {slug: list(seen) for slug, seen in (earlier or {}).items()}


def sizes(config: pytest.Config) -> Sizes:
    """A copy of the sizes' history of the submission being graded (``forget_sizes``)."""
    return {slug: list(seen) for slug, seen in config.stash.get(_HISTORY, {}).items()}


@functools.cache
def _has_tokens(slug: str) -> bool:
    """Whether exercise ``slug`` counts tokens (a function of it takes ``n_prefix``)."""
    try:
        return "n_prefix" in catalog.get(slug).stub.read_text()
    except (KeyError, OSError):
        return True


def _sizes(item: pytest.Item, check: Check | None) -> hints.SizeContext:
    tokens = _has_tokens(slug_of(item))
    if check is None or not check.tally.valued:
        return hints.SizeContext(tokens=tokens)
    tally = check.tally
    history = item.config.stash.setdefault(_HISTORY, {}).get(slug_of(item), [])
    funcs = frozenset(tally.functions)
    # the earlier tests of the same functions: another function's tests say nothing of size
    same = [(size, ok) for size, ok, f in history if size < tally.size
            and (f & funcs or not (f or funcs))]
    # "large inputs" needs every smaller one passed, and some at most a quarter of the size
    smaller = [(size, ok) for size, ok in same if 0 < 4 * size <= tally.size]
    if not smaller or not all(ok for _, ok in same):
        return hints.SizeContext(size=tally.size, tokens=tokens)
    return hints.SizeContext(size=tally.size, smaller_passed=len(smaller),
                             smaller_max=max(size for size, _ in smaller), tokens=tokens)


def sizes_of(item: pytest.Item) -> list[tuple[int, bool, frozenset[str]]]:
    """The sizes' history of ``item``'s exercise (the list itself: ``_remember`` adds to it)."""
    return item.config.stash.setdefault(_HISTORY, {}).setdefault(slug_of(item), [])


def _remember(item: pytest.Item, check: Check | None, passed: bool,
              kind: str | None = None) -> None:
    """Record the test's size, outcome and functions (every test that called the learner:
    one that raised before any value was compared counts as a failed one), for the "large
    inputs" hint's precondition; a failure on invalid arguments (``kind`` ``not_raised`` or
    ``wrong_exception``) says nothing of sizes and is not recorded."""
    if kind in (FailureKind.NOT_RAISED, FailureKind.WRONG_EXCEPTION):
        return
    if check is not None and (check.tally.valued or check.tally.checks):
        history = item.config.stash.setdefault(_HISTORY, {})
        history.setdefault(slug_of(item), []).append((check.tally.size, passed,
                                                    frozenset(check.tally.functions)))


def decide(item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None,
           duration_s: float, log: CallLog | None, check: Check | None) -> TestResult:
    """The verdict of a finished test; never raises (see the module's docstring)."""
    result = _base(item, duration_s, log)
    exc = excinfo.value if excinfo is not None else None
    result.fault = faults.shared_kind(exc)
    try:
        return _decide(item, result, exc, check)
    except Exception as err:  # noqa: BLE001 - the learner's value defeated the grader
        return _uninterpretable(item, result, err, check)


def _uninterpretable(item: pytest.Item, result: TestResult, err: Exception,
                     check: Check | None) -> TestResult:
    """``result`` made the learner's failed test for an error raised while deciding it."""
    failure = uninterpretable(err)
    result.status, result.score, result.message = TestStatus.FAILED, 0.0, failure.message
    result.diagnostics = result.values = result.mistake = None
    result.mistake_message = result.hint = ""
    result.figures = list(check.figures) if check is not None else []
    result.kind, result.kind_hint = hints.classify(status="failed", kind=FailureKind.TYPE)
    _remember(item, check, False)
    return result


def unnamed(exc: GradeFailure, func: str, fix_first: str | None) -> GradeFailure:
    """``exc`` without its known mistake (the exercise's evidence refutes it: ``evidence.py``);
    ``fix_first``: a function ``func`` calls whose own tests failed, said in the kind hint."""
    suffix = ". " + exc.mistake.message if exc.mistake is not None else ""
    message, hidden = (m[:-len(suffix)] if suffix and m.endswith(suffix) else m
                       for m in (exc.message, exc.hidden_message))
    plain = GradeFailure(message, exc.comparison, None, hidden_message=hidden, kind=exc.kind,
                         exc_type=exc.exc_type, what=exc.what)
    plain.fix_first = (func, fix_first) if fix_first else None
    return plain


def visibility(item: pytest.Item) -> str:
    """``public`` or ``hidden``: what the test's ``grading`` marker says (hidden without one)."""
    marker = grading_mark(item)
    return marker.kwargs.get("visibility", "hidden") if marker else "hidden"


def points(item: pytest.Item) -> float:
    """What test ``item`` is worth: its ``grading`` marker's points (0 without one)."""
    marker = grading_mark(item)
    return float(marker.kwargs["points"]) if marker else 0.0


def _base(item: pytest.Item, duration_s: float, log: CallLog | None) -> TestResult:
    """A test's result before its verdict: passed, full points, its description and output."""
    worth = points(item)
    return TestResult(name=_test_name(item), status=TestStatus.PASSED, score=worth,
                      max_score=worth, duration_s=duration_s, visibility=visibility(item),
                      description=_facts(item).description, output=log.text() if log else "")


def _decide(item: pytest.Item, result: TestResult, exc: Any, check: Check | None) -> TestResult:
    """``result`` given the verdict of ``exc`` (None: the test passed), as the module says."""
    marker = grading_mark(item)
    hint = marker.kwargs.get("hint", "") if marker else ""
    hint_for = frozenset(marker.kwargs.get("hint_for", hints.DEFAULT_HINT_FOR) if marker
                         else ())
    hidden = result.visibility != "public"
    if check is not None:
        result.notes = list(check.notes)
        result.figures = list(check.figures)
        if not hidden:
            result.inputs = list(check.inputs)
        if check.comparisons:
            result.diagnostics = check.comparisons[-1].diagnostics(hidden)
    if exc is None and check is not None and check.unconfirmed():
        exc = SuiteError(f"check.raises on {', '.join(check.unconfirmed())} without a passing "
                         "check.call of it in the same test")
    if exc is None:
        _remember(item, check, True)
        return result
    result.score = 0.0
    sizes = _sizes(item, check)
    base: str | None = ""  # the failure's own kind ("" : none fits a test's hint)
    if isinstance(exc, GradeFailure):
        result.status = TestStatus.FAILED
        # a source rule quotes the learner's file (its names, its strings): shown inert
        result.message = inert(exc.hidden_message if hidden else exc.message)
        cmp = exc.comparison
        base = exc.kind if exc.mistake is None else ""
        if cmp is None:
            result.diagnostics = None  # an earlier, passing comparison's are not this one's
        else:
            result.diagnostics = cmp.diagnostics(hidden)
            figure = figures.from_comparison(cmp, hidden=hidden, title=exc.what or "result")
            if figure is not None:
                result.figures.insert(0, figure)
            if not hidden:
                result.values = _values(cmp)
        if exc.mistake is not None:
            result.mistake = exc.mistake.name
            result.mistake_message = exc.mistake.message
            if exc.agreed > 1 and result.message.endswith(". " + exc.mistake.message):
                said = " " + hints.agreed(exc.agreed, exc.mistake.func)
                result.mistake_message += said
                result.message += said
        result.kind, result.kind_hint = hints.classify(
            status="failed", kind=exc.kind, comparison=cmp, expected_exc=exc.exc_type,
            mistake=exc.mistake is not None, sizes=sizes)
        if exc.fix_first is not None:  # the cause may lie in a function it calls
            result.kind_hint = hints.fix_first(*exc.fix_first)
    elif isinstance(exc, faults.LearnerFault):
        result.status, result.message = TestStatus(exc.status), exc.message
        result.traceback = list(exc.traceback)
        if isinstance(exc, faults.NotRun):
            result.kind, result.kind_hint = hints.of_fault(FailureKind.NOT_RUN)
        if isinstance(exc, faults.ArgumentsModified):
            result.kind, result.kind_hint = hints.of_fault(FailureKind.MODIFIED)
        if isinstance(exc, faults.BadReturn):
            base = FailureKind.TYPE
            result.kind, result.kind_hint = hints.classify(status="failed", kind=FailureKind.TYPE)
        elif not isinstance(exc, _SELF_EXPLAINED):
            base = _FAULT_KINDS.get(exc.status, "")
            result.kind, result.kind_hint = hints.classify(
                status=exc.status, kind=None,
                exc_type=exc.exc_type if isinstance(exc, faults.LearnerRaised) else None,
                exc_message=getattr(exc, "raw_message", exc.message), sizes=sizes)
    else:
        result.status = TestStatus.ERROR
        result.message = inert(f"grader error (not your fault): {type(exc).__name__}: {exc}")
    if base != "":
        kinds = hints.failure_kinds(base, result.kind, large=sizes.large_only)
        if result.kind is None:  # no kind hint: still say what kind of failure it is
            result.kind = next(iter(kinds - {FailureKind.LARGE}), None)
        result.hint = hints.own(hint, hint_for, kinds)
    _remember(item, check, False, result.kind)
    return result
