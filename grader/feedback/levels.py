"""Feedback levels: what a test's result tells. The one place that decides it.

- ``full`` (a learner's own ``grade`` in this repository, where the answers are on disk
  anyway): everything the verdict found, as ``verdict.decide`` made it.
- ``graded`` (``grade bulk``, ``--gradescope``, a student release): a hidden test's entry is
  **built** from grader-owned facts only (``Facts``), never filtered out of the full verdict:
  its name and points (the suite's), its status, a failure kind from a closed set (``KINDS``),
  the known mistake it matched (the suite's name and message), the fault that stops the
  whole exercise (``FaultKind``, decided from the load the grader recorded before any hidden
  input was sent), the share of values off in a coarse band (``ShareBand``), and sentences
  from the grader's own templates (``SENTENCES``, ``hints.graded``) whose only variables are
  the suite's, the pack's and the grader's settings (an exception class the contract names, a
  call limit, a function's name). Never learner text (an exception's class or message,
  errno text, printed output, a traceback), never a number the learner can scale (an error's
  magnitude, a count, a size, a duration), never a fault taken from the worker's word.
  Public tests are shown in full, but for their durations (no clock reading is written at
  this level: a report is the same bytes whenever and however fast it was graded).

What a graded hidden test can tell, whatever its inputs (``docs/security.md``): its status
(6 values), its failure kind and sentence (at most ``len(Said) * len(KINDS)`` pairs, far fewer
in practice), a band (5 values with none), a known mistake of its exercise (one of the
suite's or none): ``bits_per_hidden_test`` counts them.

Every writer (terminal, HTML, ``results.json``, Gradescope, JUnit, the class report and the
gradebooks' comments) renders the result it is given, so each obeys the level the result was
made at.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from enum import StrEnum

from grader.failure_kinds import FailureKind
from grader.feedback import hints
from grader.judge.confirm import Unconfirmed
from grader.results import FaultKind, TestResult, TestStatus
from grader.sandbox import faults
from grader.suite import GradeFailure

LEVELS = ("full", "graded")


class Said(StrEnum):
    """The sentence a graded hidden test says about how it failed (``SENTENCES``)."""

    WRONG_TYPE = "wrong_type"
    DEVICE = "device"
    SHAPE = "shape"
    DTYPE = "dtype"
    LAYOUT = "layout"
    NAN_INF = "nan_inf"
    VALUES = "values"
    TOLERANCE = "tolerance"
    PROPERTY = "property"
    RULE = "rule"
    NOT_RAISED = "not_raised"
    WRONG_EXCEPTION = "wrong_exception"
    RAISED = "raised"
    NOT_IMPLEMENTED = "not_implemented"
    BAD_RETURN = "bad_return"
    UNINTERPRETABLE = "uninterpretable"
    NOT_SUBMITTED = "not_submitted"
    UNLOADABLE = "unloadable"
    MISSING_NAME = "missing_name"
    DISK_FULL = "disk_full"
    TIMEOUT = "timeout"
    BUDGET = "budget"
    NOT_RUN = "not_run"
    CRASHED = "crashed"
    OUT_OF_MEMORY = "out_of_memory"
    PROCESSES = "processes"
    OBJECT_LOST = "object_lost"
    GRADER_ERROR = "grader_error"
    UNCONFIRMED = "unconfirmed"
    MODIFIED = "modified"


# The only variables: {share} (a ShareBand's words), {exc} (the exception class the suite's
# contract names), {seconds} (a call limit or the submission's budget, the grader's settings),
# {module} and {name} (the exercise's file and a function of its contract).
SENTENCES: dict[Said, str] = {
    Said.WRONG_TYPE: "wrong type: the result is not what the contract asks for",
    Said.DEVICE: "the result is on another device than its input",
    Said.SHAPE: "wrong shape",
    Said.DTYPE: "wrong dtype class (bool / int / float / complex)",
    Said.LAYOUT: "the model's parameters are not laid out as the contract documents",
    Said.NAN_INF: "NaN or inf where the expected values are finite{share}",
    Said.VALUES: "values differ{share}",
    Said.TOLERANCE: "values out of tolerance{share}",
    Said.PROPERTY: "the result does not have the property this test checks",
    Said.RULE: "the file breaks a source rule of this exercise",
    Said.NOT_RAISED: "should raise {exc}, but it did not",
    Said.WRONG_EXCEPTION: "should raise {exc}, but it raised another exception",
    Said.RAISED: "raised an exception (its class and message are not shown for a hidden test)",
    Said.NOT_IMPLEMENTED: faults.NOT_IMPLEMENTED,
    Said.BAD_RETURN: "returned a value the grader cannot read (not plain data, or malformed)",
    Said.UNINTERPRETABLE: "the grader could not interpret the returned value",
    Said.NOT_SUBMITTED: "{module}.py was not submitted",
    Said.UNLOADABLE: "{module}.py could not be loaded (the exercise's message says why)",
    Said.MISSING_NAME: "{module}.py does not define {name!r}",
    Said.DISK_FULL: "wrote more than {disk} MiB to its work folder",
    Said.TIMEOUT: "timed out after {seconds:g} s",
    Said.BUDGET: "timed out: the submission's time budget of {seconds:g} s for all its calls "
                 "is used up",
    Said.NOT_RUN: "{not_run}",
    Said.CRASHED: "the learner's process ended",
    Said.OUT_OF_MEMORY: "the learner's process ended (out of memory)",
    Said.PROCESSES: "the learner's process ended (too many processes)",
    Said.OBJECT_LOST: "the learner's object was lost: its process was restarted after an "
                      "earlier failure",
    Said.GRADER_ERROR: "grader error (not your fault)",
    Said.MODIFIED: "changed its arguments in place (the caller's inputs must be left as they "
                   "were)",
    Said.UNCONFIRMED: "passes, but not counted: `{name}` is right on no hidden input where "
                      "`{param}` takes another value",
}

# The failure kinds a graded hidden test can name, each with a fixed text (``hints.graded``,
# the ``[graded]`` table of hints.toml); another kind is shown as no kind.
KINDS = hints.GRADED_KINDS


class ShareBand(StrEnum):
    """The share of a result's values out of tolerance, in coarse bands: repeated submissions
    cannot count wrong cells one by one, and no element count tells an input's size."""

    UNDER_1 = "under 1%"
    UNDER_10 = "1-10%"
    UNDER_50 = "10-50%"
    OVER_50 = "over 50%"


_BAND_UPPER = ((1, ShareBand.UNDER_1), (10, ShareBand.UNDER_10), (50, ShareBand.UNDER_50))


def share_band(n_outside: object, n_total: object) -> ShareBand | None:
    """The band of ``n_outside`` wrong values out of ``n_total``; None for one value or none."""
    if type(n_outside) is not int or type(n_total) is not int or n_total <= 1 or \
            not 0 < n_outside <= n_total:
        return None
    percent = 100 * n_outside / n_total
    return next((band for upper, band in _BAND_UPPER if percent < upper), ShareBand.OVER_50)


@dataclass(frozen=True)
class Mistake:
    """A known mistake of the suite's catalogue: its name and its message, both the suite's."""

    name: str
    message: str


@dataclass(frozen=True)
class Facts:
    """Everything a graded hidden test's entry is made of (``render``): the grading process's
    own decisions and settings, each from a closed set or the suite's declarations."""

    name: str
    max_score: float
    status: TestStatus
    said: Said | None = None
    kind: FailureKind | None = None  # one of KINDS
    fault: FaultKind | None = None
    share: ShareBand | None = None
    mistake: Mistake | None = None
    # the templates' variables: the suite's, the pack's and the grader's settings
    exc: str = ""
    seconds: float = 0.0
    module: str = ""
    missing: str = ""
    not_run: str = ""
    param: str = ""


def render(facts: Facts) -> TestResult:
    """A graded hidden test's entry, made of ``facts`` alone."""
    passed = facts.status == TestStatus.PASSED
    message = ""
    if facts.said is not None:
        share = f": {facts.share} of the values" if facts.share is not None else ""
        message = SENTENCES[facts.said].format(
            share=share, exc=facts.exc, seconds=facts.seconds, module=facts.module,
            name=facts.missing, disk=_DISK_MIB, not_run=facts.not_run, param=facts.param)
    if facts.mistake is not None:
        message += ". " + facts.mistake.message
    return TestResult(
        name=facts.name, status=facts.status, score=facts.max_score if passed else 0.0,
        max_score=facts.max_score, message=message,
        mistake=facts.mistake.name if facts.mistake else None,
        mistake_message=facts.mistake.message if facts.mistake else "",
        duration_s=None, visibility="hidden", kind=facts.kind,
        kind_hint=hints.graded(facts.kind), fault=facts.fault)


def graded(result: TestResult, exc: BaseException | None, slug: str) -> TestResult:
    """``result`` (a test of exercise ``slug``) as the ``graded`` level shows it: a public
    test as it is, but for its duration; a hidden one rebuilt from its ``Facts``."""
    if result.visibility == "public":
        result.duration_s = None
        return result
    return render(facts(result, exc, slug))


def unconfirmed(result: TestResult, why: Unconfirmed, level: str) -> TestResult:
    """``result``, a passing test, as it reads when its points are not counted (``confirm.py``):
    failed, 0 points; at ``graded``, a hidden one rebuilt from its ``Facts`` alone."""
    if level == "graded" and result.visibility != "public":
        return render(Facts(name=result.name, max_score=result.max_score,
                            status=TestStatus.FAILED, said=Said.UNCONFIRMED,
                            kind=FailureKind.UNCONFIRMED, missing=why.func, param=why.param))
    return dataclasses.replace(
        result, status=TestStatus.FAILED, score=0.0, hint="", mistake=None,
        duration_s=None if level == "graded" else result.duration_s,
        mistake_message="", kind=FailureKind.UNCONFIRMED, kind_hint=hints.unconfirmed(),
        message="P" + SENTENCES[Said.UNCONFIRMED].format(name=why.func, param=why.param)[1:])


def facts(result: TestResult, exc: BaseException | None, slug: str) -> Facts:
    """What the grading process decided about a hidden test of ``slug`` (``result``, from
    ``verdict.decide``, and ``exc``, how it ended), kept to the closed sets of ``Facts``."""
    status = TestStatus(result.status)
    base = Facts(name=result.name, max_score=result.max_score, status=status)
    if status == TestStatus.PASSED:
        return base
    kind = FailureKind.of(result.kind) if result.kind in KINDS else None
    fault = FaultKind(result.fault) if result.fault in tuple(FaultKind) else None
    mistake = None
    if isinstance(exc, GradeFailure) and exc.mistake is not None and \
            result.mistake == exc.mistake.name:
        mistake = Mistake(exc.mistake.name, exc.mistake.message)
    said, extra = _said(result, exc, slug)
    share = None
    if said in (Said.NAN_INF, Said.VALUES, Said.TOLERANCE) and result.diagnostics:
        share = share_band(result.diagnostics.get("n_outside"),
                           result.diagnostics.get("n_total"))
    return Facts(name=result.name, max_score=result.max_score, status=status, said=said,
                 kind=kind, fault=fault, share=share, mistake=mistake, **extra)


_COMPARED: dict[FailureKind, Said] = {
    FailureKind.TYPE: Said.WRONG_TYPE, FailureKind.NONE: Said.WRONG_TYPE,
    FailureKind.DEVICE: Said.DEVICE, FailureKind.SHAPE: Said.SHAPE, FailureKind.DTYPE: Said.DTYPE,
    FailureKind.LAYOUT: Said.LAYOUT, FailureKind.NAN: Said.NAN_INF, FailureKind.INF: Said.NAN_INF,
    FailureKind.VALUES: Said.VALUES, FailureKind.TOLERANCE: Said.TOLERANCE,
    FailureKind.RULE: Said.RULE}


def _said(result: TestResult, exc: BaseException | None,
          module: str) -> tuple[Said, dict[str, object]]:
    """The sentence for how a hidden test ended, and its template's grader-owned values."""
    status = TestStatus(result.status)
    if isinstance(exc, GradeFailure):
        kind = exc.comparison.kind if exc.comparison is not None else exc.kind
        if status != TestStatus.FAILED:
            return Said.GRADER_ERROR, {}
        if kind in (FailureKind.NOT_RAISED, FailureKind.WRONG_EXCEPTION):
            return Said(kind), {"exc": _exception_name(exc.exc_type)}
        if result.kind == FailureKind.TYPE and kind not in (FailureKind.TYPE, FailureKind.NONE):
            return Said.UNINTERPRETABLE, {}  # (verdict.decide could not read the value)
        return _COMPARED.get(kind or "", Said.PROPERTY), {}
    if not isinstance(exc, faults.LearnerFault):
        return Said.GRADER_ERROR, {}
    if status == TestStatus.FAILED and result.kind == FailureKind.TYPE and \
            not isinstance(exc, faults.BadReturn):
        return Said.UNINTERPRETABLE, {}
    if isinstance(exc, faults.NotSubmitted):
        return Said.NOT_SUBMITTED, {"module": module}
    if isinstance(exc, faults.TimedOut) and exc.budget:  # (at an import too: the budget's)
        return Said.BUDGET, {"seconds": exc.seconds}
    if getattr(exc, "at_import", False) or isinstance(exc, faults.ImportFailed):
        return Said.UNLOADABLE, {"module": module}
    if isinstance(exc, faults.MissingName):
        return Said.MISSING_NAME, {"module": module, "missing": exc.name}
    if isinstance(exc, faults.NotRun):
        return Said.NOT_RUN, {"not_run": faults.not_run_message(exc.timeouts, exc.seconds)}
    if isinstance(exc, faults.TimedOut):
        return (Said.BUDGET if exc.budget else Said.TIMEOUT), {"seconds": exc.seconds}
    if isinstance(exc, faults.DiskFull):
        return Said.DISK_FULL, {}
    if isinstance(exc, faults.NotImplementedYet):
        return Said.NOT_IMPLEMENTED, {}
    if isinstance(exc, faults.ArgumentsModified):
        return Said.MODIFIED, {}
    if isinstance(exc, faults.BadReturn):
        return Said.BAD_RETURN, {}
    if isinstance(exc, faults.ObjectLost):
        return Said.OBJECT_LOST, {}
    if isinstance(exc, faults.Crashed):
        observed = {faults.CrashCause.OUT_OF_MEMORY: Said.OUT_OF_MEMORY,
                    faults.CrashCause.PROCESSES: Said.PROCESSES}
        return observed.get(exc.cause, Said.CRASHED), {}
    return Said.RAISED, {}


_DISK_MIB = 256  # (isolation.DISK_BYTES, in MiB: checked by a test)


def _exception_name(name: str | None) -> str:
    """The exception class a suite's contract names (``check.raises``), or a plain word."""
    return name if name and name.isidentifier() else "the contract's exception"


def bits_per_hidden_test(mistakes: int) -> float:
    """An upper bound of what one graded hidden test can tell, in bits, for an exercise with
    ``mistakes`` known mistakes: its sentence or a pass (the status follows from the
    sentence), its kind, its band or none, its mistake or none. (The points follow from the
    status; a sentence's variables are the suite's.)"""
    return math.log2((len(Said) + 1) * len(KINDS) * (len(ShareBand) + 1) * (mistakes + 1))
