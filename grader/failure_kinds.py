"""The kinds of failure a test's own hint can be about (``@graded(hint_for=...)``): one enum,
read by the suites' declarations (``grader/suite.py``) and the engine's hints alike."""

from __future__ import annotations

from enum import StrEnum


class FailureKind(StrEnum):
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


DESCRIPTIONS: dict[str, str] = {
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
                             "a parameter takes other values (engine/confirm.py)",
    FailureKind.MODIFIED: "the call changed its arguments in place",
}
