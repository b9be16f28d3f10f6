"""Advice only under its stated conditions, checked mechanically on a graded result.

Every piece of advice the engine gives has a precondition it is meant to have checked from
the evidence (``feedback/hints.py``, ``judge/confirm.py``). This
module reads a graded exercise's results and says, for each piece of advice shown, whether
its precondition holds there, from what the result itself records (its message, kind,
diagnostics and the other tests' statuses). ``grade pack check --grade`` runs it on every file
it grades (declared variants, generated mutants and shortcuts: rule ``advice-preconditions``),
and the project's tests on their corpora.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from grader.feedback.hints import CLOSE_TIMES
from grader.results import ExerciseResult, TestResult

RULE = "advice-preconditions"

# What kind hints said before they were observations: causes guessed from a pattern.
GUESSES = ("look at how your code treats", "probably", "you likely", "you forgot")


def broken(result: ExerciseResult) -> Iterator[tuple[str, str]]:
    """Each piece of advice in ``result`` whose precondition the result does not meet:
    (the test, what is wrong)."""
    tests = result.tests
    for t in tests:
        for what in _advice(t, tests):
            yield t.name, what


def _advice(t: TestResult, tests: list[TestResult]) -> Iterator[str]:
    if t.passed:
        if t.hint or t.kind_hint or t.mistake:
            yield "a passing test shows advice"
        return
    hint, message = t.kind_hint, t.message
    if any(g in hint for g in GUESSES):
        yield f"the kind hint guesses a cause: {hint[:80]!r}"
    if t.mistake and (t.hint or (hint and not hint.startswith("as for "))):
        yield "a named known mistake has a hint beside it"
    if hint.startswith("as for "):
        return
    kind = t.kind
    if kind == "precision":
        times = re.search(r"the largest error is ([0-9.e+-]+) times what is allowed", hint)
        if "tolerance" not in message:  # (a number's message: "...; tolerance rtol=...")
            yield "precision advice on a failure that is not a tolerance miss"
        elif times and float(times.group(1)) > CLOSE_TIMES:
            yield (f"precision advice ('close') with an error {times.group(1)} times what is "
                   f"allowed, over {CLOSE_TIMES}")
    elif kind == "large":
        m = re.search(r"Right on the (\d+) smaller tests", hint)
        if m and sum(x.passed for x in tests) < int(m.group(1)):
            yield "large-inputs advice, but fewer smaller tests pass than it says"
    elif kind == "nan" and "NaN" not in message:
        yield "NaN advice on a failure without NaN"
    elif kind == "shape" and "shape" not in message.lower():
        yield "shape advice on a failure that is not a shape"
    elif kind == "dtype" and "dtype" not in message:
        yield "dtype advice on a failure that is not a dtype"
    elif kind == "raised" and t.status != "error":
        yield "exception advice on a test that did not raise"
    elif kind == "unconfirmed" and t.score != 0:
        yield "a test not counted still scores"
