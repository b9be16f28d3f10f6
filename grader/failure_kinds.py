"""The kinds of failure: one vocabulary, read by the suites' declarations (``@graded(hint_for=...)``
in ``grader/suite.py``), the engine's hints and verdicts (``feedback/hints.py``, whose
``hints.toml`` tables are keyed by the kinds' values) and the reports (``LABELS``).

A leaf: it imports nothing of the grader, so a suite may import it."""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
    """What a failure looks like. The first kinds are those a test's own hint can be about
    (``DESCRIPTIONS``); the last ones a failure is classified as, never named by ``hint_for``
    (``hinted`` says which kind a hint names for them)."""

    VALUES = "values"
    PRECISION = "precision"
    SHAPE = "shape"
    DTYPE = "dtype"
    TYPE = "type"
    NAN = "nan"
    INF = "inf"
    DEVICE = "device"
    RAISED = "raised"
    NOT_RAISED = "not_raised"
    WRONG_EXCEPTION = "wrong_exception"
    TIMEOUT = "timeout"
    CRASHED = "crashed"
    LARGE = "large"
    RULE = "rule"
    LAYOUT = "layout"
    UNCONFIRMED = "unconfirmed"
    MODIFIED = "modified"
    # a comparison's kinds that a hint names by a broader one
    TOLERANCE = "tolerance"          # values outside the tolerance: a hint about VALUES
    NONE = "none"                    # None where a value is expected: a hint about TYPE
    # what a failure is classified as, beyond any hint's kinds
    KNOWN_MISTAKE = "known_mistake"  # a known mistake of the suite explains it
    NOT_RUN = "not_run"              # not called: the exercise's calls hang

    @classmethod
    def of(cls, name: object) -> FailureKind | None:
        """The kind called ``name``; None for None or a name outside the vocabulary (a
        suite's ``check.fail(kind=...)`` may name any)."""
        try:
            return cls(name)
        except ValueError:
            return None

    @property
    def hinted(self) -> FailureKind | None:
        """The kind a test's own hint (``hint_for``) names for a failure of this kind: itself,
        a broader one (``TOLERANCE``: values, ``NONE``: type), or None where no test's hint
        can be about it."""
        return _HINTED_AS.get(self, self if self in DESCRIPTIONS else None)

    @property
    def label(self) -> str | None:
        """What a report prints before this kind's hint ("wrong shape: ..."; ``LABELS``), None
        for a kind without one."""
        return LABELS.get(self)


# The kinds a test's own hint can be about (``@graded(hint_for=...)``), each with what it means.
DESCRIPTIONS: dict[FailureKind, str] = {
    FailureKind.VALUES: "wrong values: far from the expected ones, or a property the test "
                        "checks fails",
    FailureKind.PRECISION: "values close to the expected ones but outside the tolerance",
    FailureKind.SHAPE: "a wrong shape (or number of items)",
    FailureKind.DTYPE: "a wrong dtype class (bool, int, float)",
    FailureKind.TYPE: "not a number or an array: None, a string, an object",
    FailureKind.NAN: "NaN where a number is expected, or a number where NaN is",
    FailureKind.INF: "inf in the wrong places",
    FailureKind.DEVICE: "a tensor on another device than its input",
    FailureKind.RAISED: "the learner's code raised an exception",
    FailureKind.NOT_RAISED: "no exception where the contract asks for one",
    FailureKind.WRONG_EXCEPTION: "another exception than the contract's",
    FailureKind.TIMEOUT: "a call that did not return in time",
    FailureKind.CRASHED: "the learner's process ended",
    FailureKind.LARGE: "right on the smaller tests, wrong, failing or too slow on this larger "
                       "one",
    FailureKind.RULE: "a source rule broken",
    FailureKind.LAYOUT: "a model whose layers are not the documented ones (its weights do not "
                        "load)",
    FailureKind.UNCONFIRMED: "right on this test's inputs, but not on the hidden inputs where "
                             "a parameter takes other values (judge/confirm.py)",
    FailureKind.MODIFIED: "the call changed its arguments in place",
}

_HINTED_AS: dict[FailureKind, FailureKind] = {FailureKind.TOLERANCE: FailureKind.VALUES,
                                              FailureKind.NONE: FailureKind.TYPE}

# The label a report prints before a kind hint ("wrong shape: ..."); a kind without one is
# printed with the report's own word.
LABELS: dict[FailureKind, str] = {
    FailureKind.SHAPE: "wrong shape",
    FailureKind.DTYPE: "wrong dtype",
    FailureKind.TYPE: "wrong type",
    FailureKind.NONE: "no result",
    FailureKind.NAN: "NaN",
    FailureKind.INF: "inf",
    FailureKind.PRECISION: "precision",
    FailureKind.VALUES: "where it is wrong",
    FailureKind.LARGE: "large inputs",
    FailureKind.RAISED: "exception",
    FailureKind.NOT_RAISED: "no exception",
    FailureKind.WRONG_EXCEPTION: "wrong exception",
    FailureKind.CRASHED: "crash",
    FailureKind.RULE: "source rule",
    FailureKind.KNOWN_MISTAKE: "known mistake",
    FailureKind.NOT_RUN: "finding the loop",
    FailureKind.UNCONFIRMED: "not counted",
    FailureKind.MODIFIED: "arguments changed",
}
