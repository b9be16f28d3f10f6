"""The result data objects of a grading run and their JSON form (``results.json``).

``SubmissionResult`` -> ``ExerciseResult`` -> ``TestResult``. These are the only objects
reports are rendered from; ``to_dict`` writes ``results.json`` (with ``SCHEMA_VERSION``) and
``from_dict`` reads it back into the same objects. Statuses are ``StrEnum`` members (equal to
their strings, so ``t.status == "passed"`` holds and JSON holds the plain string).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Literal, TypedDict

SCHEMA_VERSION = 2  # 2: schema_version, feedback; statuses as below


class TestStatus(StrEnum):
    __test__ = False  # not a pytest test class

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    NOT_RUN = "not_run"  # not called: earlier calls of the exercise had already timed out


class ExerciseStatus(StrEnum):
    PASSED = "passed"
    FAILED = "failed"
    NOT_SUBMITTED = "not_submitted"
    ERROR = "error"


TEST_STATUSES = tuple(TestStatus)
EXERCISE_STATUSES = tuple(ExerciseStatus)
# a test whose learner code did not give an answer at all (not a wrong one)
ERROR_STATUSES = (TestStatus.ERROR, TestStatus.TIMEOUT, TestStatus.CRASHED, TestStatus.NOT_RUN)


class FaultKind(StrEnum):
    """A failure that is not about its test but about the exercise's file or its run, and so
    the same for every test it stops (reports say it once; a test's hint never fits it)."""

    NOT_SUBMITTED = "not_submitted"  # no file for the exercise
    UNLOADABLE = "unloadable"        # the file could not be loaded, or its import timed out
    MISSING_NAME = "missing_name"    # the file does not define the function
    NOT_RUN = "not_run"              # not called: earlier calls had timed out


class ComparisonFigure(TypedDict, total=False):
    """A failing array comparison (``judge/figures.from_comparison``): a heatmap or a line.
    ``diff``, ``bad`` always; ``expected``, ``actual``, ``vmin``, ``vmax`` for public tests."""

    type: Literal["heatmap", "line"]
    title: str
    boolean: bool
    hidden: bool
    first: bool
    full_shape: list[int]
    slice: str
    shape: list[int]
    block: list[int]
    worst: list[int]
    worst_index: list[int]
    n_bad: int
    n_total: int
    note: str
    diff: list[Any]
    dmax: float | str
    bad: list[Any]
    expected: list[Any]
    actual: list[Any]
    vmin: float | str
    vmax: float | str


class CurveSeries(TypedDict, total=False):
    name: str
    x: list[Any]
    y: list[Any]
    style: Literal["line", "dashed", "points", "pairs"]
    colour: int
    err: list[Any]


class CurveFigure(TypedDict):
    """A line chart a suite drew from the learner's own outputs (``figures.curve``)."""

    type: Literal["curve"]
    title: str
    x_label: str
    y_label: str
    log_x: bool
    log_y: bool
    series: list[CurveSeries]
    marks: list[dict[str, Any]]
    note: str


Figure = ComparisonFigure | CurveFigure  # a figure payload, plain JSON data


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class

    name: str
    status: str
    score: float
    max_score: float
    message: str = ""
    hint: str = ""
    mistake: str | None = None
    mistake_message: str = ""
    duration_s: float | None = 0.0  # None: not reported (the graded level writes no clock)
    visibility: str = "hidden"
    description: str = ""
    diagnostics: dict[str, Any] | None = None
    output: str = ""
    traceback: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    # What the failure looks like ("shape", "nan", "precision", ...; see feedback/hints.py) and
    # the hint for that kind, beside the test's own ``hint``.
    kind: str | None = None
    kind_hint: str = ""
    # FaultKind when the failure is the exercise's file or run, not this test (None else)
    fault: str | None = None
    # Public tests only: short summaries of the calls' inputs, and the expected and actual
    # values as text (capped). Hidden tests never carry either.
    inputs: list[str] = field(default_factory=list)
    values: dict[str, str] | None = None
    # Small drawing payloads for the HTML report (judge/figures.py): the failing comparison
    # (heatmaps, line plots) and curves a suite attached from the learner's outputs.
    figures: list[Figure] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    @property
    def reason(self) -> str:
        """The message without the known-mistake sentence (shown apart in reports)."""
        if self.mistake_message and self.message.endswith(". " + self.mistake_message):
            return self.message[: -len(self.mistake_message) - 2]
        return self.message


@dataclass
class ExerciseResult:
    exercise: str
    title: str
    status: str
    tests: list[TestResult] = field(default_factory=list)
    message: str = ""

    @property
    def score(self) -> float:
        return round(sum(t.score for t in self.tests), 6)

    @property
    def max_score(self) -> float:
        return round(sum(t.max_score for t in self.tests), 6)


class MarkKind(StrEnum):
    """Where a change to a graded total comes from. Applied after grading, in this order,
    each to the total the one before left (``bulk/exports.py``)."""

    RUBRIC = "rubric"  # an item of the assignment's rubric, applied in `grade review`
    ADJUST = "adjust"  # a line of `grade bulk --adjust`
    LATE = "late"  # the assignment's late policy ([late] in assignment.toml)


@dataclass(frozen=True)
class Mark:
    """One change to a submission's total after grading, never cached (``to_dict`` leaves
    it out). ``asked``: the points it asked for; ``points``: what it changed the running
    total by, kept within 0 and the maximum (``SubmissionResult.add_mark``); ``label``: the
    teacher's words (a rubric item, an adjustment's comment) or the grader's sentence for the
    late rule applied; ``exercise``: a rubric item's exercise, '' for the whole submission."""

    kind: MarkKind
    asked: float
    points: float
    label: str = ""
    exercise: str = ""

    @property
    def kept(self) -> bool:
        """Whether keeping the total within 0 and the maximum changed what was asked."""
        return round(self.asked - self.points, 6) != 0


@dataclass
class Review:
    """What a teacher wrote of a submission in ``grade review`` beside its rubric items: a
    free ``comment``; ``stale`` when the review was made against an earlier result of the
    submission (it was regraded since)."""

    comment: str = ""
    stale: bool = False


@dataclass
class SubmissionResult:
    submission: str
    device: str
    exercises: list[ExerciseResult] = field(default_factory=list)
    duration_s: float | None = 0.0  # None: not reported (the graded level)
    isolation: dict[str, Any] = field(default_factory=dict)
    feedback: str = "full"  # what its hidden tests tell (feedback/levels.py)
    # set after grading (bulk/exports.py), never cached: rubric items, adjustments, late
    marks: list[Mark] = field(default_factory=list)
    review: Review | None = None  # a teacher's comment from `grade review`

    @property
    def score(self) -> float:
        """The total the tests gave (the computed score)."""
        return round(sum(e.score for e in self.exercises), 6)

    @property
    def final_score(self) -> float:
        """The total every gradebook exports: the computed score changed by every mark."""
        return round(self.score + sum(m.points for m in self.marks), 6)

    def add_mark(self, kind: MarkKind, points: float, label: str = "",
                 exercise: str = "") -> Mark:
        """Record a change of ``points`` to the running total (``final_score``), kept within 0
        and the maximum; return the mark (``kept`` says whether that changed it)."""
        before = self.final_score
        after = min(max(before + points, 0.0), self.max_score)
        mark = Mark(kind=kind, asked=round(points, 6), points=round(after - before, 6),
                    label=label, exercise=exercise)
        self.marks.append(mark)
        return mark

    def marks_of(self, kind: MarkKind) -> list[Mark]:
        """The marks of one kind, in the order they were applied."""
        return [m for m in self.marks if m.kind is kind]

    @property
    def max_score(self) -> float:
        return round(sum(e.max_score for e in self.exercises), 6)

    @property
    def all_passed(self) -> bool:
        return all(t.passed for e in self.exercises for t in e.tests)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema_version": SCHEMA_VERSION,
            "submission": self.submission, "score": self.score, "max_score": self.max_score,
            "device": self.device,
            "duration_s": None if self.duration_s is None else round(self.duration_s, 3),
            "isolation": self.isolation, "feedback": self.feedback,
            "exercises": [{
                "exercise": e.exercise, "title": e.title, "score": e.score,
                "max_score": e.max_score, "status": e.status, "message": e.message,
                "tests": [_test_dict(t) for t in e.tests],
            } for e in self.exercises],
        }


_TEST_FIELDS = [f.name for f in fields(TestResult)]


def test_from_dict(t: dict[str, Any]) -> TestResult:
    """The ``TestResult`` of its ``test_dict`` form (fields it does not know are ignored)."""
    known = {k: t[k] for k in _TEST_FIELDS if k in t}
    known["status"] = TestStatus(known["status"])
    if "figures" in known:  # a drawing payload is a table; anything else is dropped
        figures = known["figures"]
        known["figures"] = [f for f in figures if isinstance(f, dict)] \
            if isinstance(figures, list) else []
    if "duration_s" in known:
        known["duration_s"] = _seconds(known["duration_s"])
    return TestResult(**known)


def test_dict(t: TestResult) -> dict[str, Any]:
    """``t`` as plain data (``test_from_dict`` reads it back)."""
    return _test_dict(t)


def _test_dict(t: TestResult) -> dict[str, Any]:
    # every field is plain data already: no need for asdict's deep copy of the figures
    d = {name: getattr(t, name) for name in _TEST_FIELDS}
    d["duration_s"] = None if t.duration_s is None else round(t.duration_s, 4)
    return d


def from_dict(data: dict[str, Any]) -> SubmissionResult:
    """The ``SubmissionResult`` a ``results.json`` (``to_dict``) holds; raises ``ValueError``
    for a file of another schema or with an unknown status. Fields it does not know (the
    bulk runner's cache key) are ignored."""
    version = data.get("schema_version", 1)
    if version > SCHEMA_VERSION:
        raise ValueError(f"results of schema {version}, newer than this grader's "
                         f"{SCHEMA_VERSION}")
    result = SubmissionResult(submission=str(data["submission"]), device=str(data["device"]),
                              duration_s=_seconds(data.get("duration_s", 0.0)),
                              isolation=dict(data.get("isolation") or {}),
                              feedback=str(data.get("feedback", "full")))
    for e in data.get("exercises", []):
        tests = [test_from_dict(t) for t in e.get("tests", [])]
        result.exercises.append(ExerciseResult(
            exercise=e["exercise"], title=e.get("title", ""),
            status=ExerciseStatus(e["status"]), tests=tests, message=e.get("message", "")))
    return result


def _seconds(value: Any) -> float | None:
    return None if value is None else float(value)
