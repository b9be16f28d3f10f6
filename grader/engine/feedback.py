"""Feedback levels: how much a hidden test's result tells. The one place that decides it.

- ``full`` (a learner's own ``grade`` in this repository, where the answers are on disk
  anyway): everything the verdict found, as ``verdict.decide`` made it.
- ``graded`` (``grade bulk``, ``--gradescope``, a student release): a hidden test says its
  status, the kind of failure (wrong type, shape, dtype, NaN/inf, values out of tolerance, an
  exception, a timeout, a crash), the known mistake when one matched, and for values only the
  share of elements out of tolerance in a coarse band (under 1%, 1-10%, 10-50%, over 50%) and
  the largest error as an order of magnitude of one kind (relative, or absolute where the
  expected values are 0). Never a size, an element count or a shape (they tell an input's
  size), a difference map, an index, an input, an expected value, a description or the test's
  own hint (both may state inputs), the learner's printed output or exception message, an exit
  code or signal number, or a measured note: a submission that prints or raises the arguments
  it receives, or encodes them in its exit status, reads nothing back. Its duration is rounded
  to whole seconds. Public tests are shown in full at every level.

Every writer (terminal, HTML, ``results.json``, Gradescope, JUnit) renders the result it is
given, so each obeys the level the result was made at.
"""

from __future__ import annotations

import math
from typing import Any

from grader.sandbox import faults

from .results import TestResult

LEVELS = ("full", "graded")
# failure kinds whose generic hint states nothing about the expected value
_SAFE_KIND_HINTS = {"rule", "raised", "crashed", "timeout", "known_mistake", "nan", "inf",
                    "precision", "large", "not_run"}


def graded(result: TestResult, exc: BaseException | None) -> TestResult:
    """``result`` as a hidden test shows it at the ``graded`` level (a public test, or a
    passed one, as it is but for its printed output); ``exc`` is what made it fail."""
    if result.visibility == "public":
        return result
    result.description = ""
    result.output = ""
    result.notes = []
    result.figures = []
    result.inputs = []
    result.values = None
    diagnostics, result.diagnostics = result.diagnostics, None
    result.duration_s = float(round(result.duration_s))  # a sleep could spell out an input
    if result.status == "passed":
        return result
    result.hint = ""  # written for the test: it may name its inputs ("the 32x32 grid")
    if result.kind not in _SAFE_KIND_HINTS:
        result.kind_hint = ""
    result.message = _message(result, exc, diagnostics or {})
    if result.mistake_message:
        result.message += ". " + result.mistake_message
    return result


def _message(result: TestResult, exc: BaseException | None, diag: dict[str, Any]) -> str:
    from .check import GradeFailure  # (check imports the sandbox proxy: keep this light)

    if isinstance(exc, GradeFailure):
        kind = exc.comparison.kind if exc.comparison is not None else exc.kind
        if kind == "rule":
            return result.message  # about the learner's own source
        if kind == "not_raised":
            return f"should raise {exc.exc_type}, but it did not"
        if kind == "wrong_exception":
            return f"should raise {exc.exc_type}, but it raised another exception"
        return _comparison_message(kind, diag)
    if isinstance(exc, faults.DiskFull | faults.TimedOut | faults.NotSubmitted |
                  faults.NotImplementedYet | faults.ImportFailed | faults.MissingName |
                  faults.NotRun | faults.ObjectLost):
        return result.message  # the grader's words, or about the learner's own file
    if isinstance(exc, faults.LearnerRaised):
        return f"raised {exc.exc_type}"
    if isinstance(exc, faults.Crashed):
        why = exc.message.rpartition(" (")[2].rstrip(")") if exc.message.endswith(")") else ""
        return "the learner's process ended" + (f" ({why})" if why else "")
    if isinstance(exc, faults.BadReturn):
        return "returned a value the grader cannot read (not plain data, or malformed)"
    return result.message  # a grader error: nothing of the learner's in it


def _comparison_message(kind: str, diag: dict[str, Any]) -> str:
    if kind in ("type", "none"):
        return "wrong type: the result is not what the contract asks for"
    if kind == "device":
        return "the result is on another device than its input"
    if kind == "shape":
        return "wrong shape"  # the learner's shape, made from a hidden input, tells its size
    if kind == "dtype":
        return "wrong dtype class (bool / int / float / complex)"
    if kind == "layout":
        return "the model's parameters are not laid out as the contract documents"
    share = _share(diag)
    if kind in ("nan", "inf"):
        return f"NaN or inf where the expected values are finite{share}"
    if kind == "values":
        return f"values differ{share}"
    if kind == "tolerance":
        return f"values out of tolerance{share}{_magnitude(diag)}"
    return "the result does not have the property this test checks"


# (upper bound in percent, band): a share in coarse bands, so that repeated submissions cannot
# count wrong cells one by one, and with no element count, which would tell an input's size
SHARE_BANDS = ((1, "under 1%"), (10, "1-10%"), (50, "10-50%"), (100, "over 50%"))


def _share(diag: dict[str, Any]) -> str:
    n, total = diag.get("n_outside"), diag.get("n_total")
    if not isinstance(n, int) or not isinstance(total, int) or total <= 1 or n <= 0:
        return ""
    percent = 100 * n / total
    band = next((b for upper, b in SHARE_BANDS if percent < upper), SHARE_BANDS[-1][1])
    return f": {band} of the values"


def _magnitude(diag: dict[str, Any]) -> str:
    """The largest error as a power of ten, relative where defined, else absolute."""
    for key, what in (("max_rel_error", "relative"), ("max_abs_error", "absolute")):
        value = diag.get(key)
        if isinstance(value, (int, float)) and math.isfinite(value) and value > 0:
            return f"; the largest error is about 1e{math.floor(math.log10(value) + 0.5)} {what}"
    return ""
