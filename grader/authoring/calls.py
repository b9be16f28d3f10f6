"""The calls an exercise's suite makes to the learner's functions, recorded on the reference.

``grade pack check --grade`` needs them to generate wrong files that know the suite's inputs
(``shortcuts.py``: a file that answers the public tests' exact inputs and nothing else; a
parameter frozen at its first public value) and to compare a mutant with the reference on
inputs like the suite's (``mutants.py``). The reference is graded as a learner's file (in the
sandbox, as ever) while an ``Observer`` notes every request to its worker, test by test.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from grader import catalog
from grader.judge import confirm
from grader.judge.observer import Observer


@dataclass(frozen=True)
class Call:
    """One call of a learner function by a test: the arguments as sent to the worker
    (a ``Recipe`` among them is built there; ``check.built`` builds it here), and what the
    reference answered (``raised``: it raised instead)."""

    test: str
    public: bool
    func: str
    args: tuple
    kwargs: dict = field(default_factory=dict)
    answer: Any = None
    raised: bool = True


class _Watch(Observer):
    def __init__(self) -> None:
        self.pending: list[list[Any]] = []  # [func, args, kwargs, answer, raised]
        self.by_slug: dict[str, list[Call]] = {}
        self.optional = 0  # inside check.optional: a call for a figure, not graded
        self.asked = False  # the last request is a counted call, awaiting its reply

    def entered(self, check: Any, method: str, args: tuple, kwargs: dict) -> None:
        self.optional += method == "optional"

    def left(self, check: Any, method: str) -> None:
        self.optional -= method == "optional"

    def requested(self, op: str, func: str, args: tuple, kwargs: dict) -> None:
        self.asked = op == "call" and not self.optional
        if self.asked:
            self.pending.append([func, tuple(args), dict(kwargs), None, True])

    def replied(self, op: str, value: Any) -> None:
        if self.asked and self.pending:
            self.pending[-1][3:] = [value, False]
        self.asked = False

    def decided(self, item: pytest.Item, result: Any) -> None:
        slug = Path(str(item.path)).stem.removeprefix("test_")
        marker = item.get_closest_marker("grading")
        public = bool(marker and marker.kwargs.get("visibility") == "public")
        self.by_slug.setdefault(slug, []).extend(
            Call(result.name, public, *call) for call in self.pending)
        self.pending = []


def record(slugs: list[str]) -> dict[str, list[Call]]:
    """Grade each exercise's reference, every call of its functions kept in test order."""
    from grader.engine.runner import grade_references

    watch = _Watch()
    grade_references(slugs, watch)
    return {slug: watch.by_slug.get(slug, []) for slug in slugs}


CHANGING = 3  # hidden calls found changed per array value (the rest left untried)


def _places(slug: str, calls: list[Call]
            ) -> tuple[list[confirm.Place], list[dict[str, Any]], list[tuple[bool, Any]]]:
    """Each counted call of ``calls`` as a ``confirm.Place`` (its value classes), with its
    arguments by name and the reference's answer (``raised``, answer): no evaluation."""
    from grader.engine.plugin import load_reference
    from grader.judge import expected as expected_values

    reference = load_reference(slug)
    places: list[confirm.Place] = []
    values: list[dict[str, Any]] = []
    answers: list[tuple[bool, Any]] = []
    classes: dict[tuple[str, str], dict[str, int]] = {}
    seen: dict[str, int] = {}
    for c in calls:
        found = confirm.bound(reference, c.func, c.args, c.kwargs)
        if found is None:
            continue
        mine = []
        for name, value in found.arguments.items():
            digest = expected_values.key(None, "param", (value,), {}) or f"?{len(places)}"
            known = classes.setdefault((c.func, name), {})
            mine.append((name, known.setdefault(digest, len(known))))
        places.append(confirm.Place(c.test, seen.get(c.test, 0), c.public, c.func,
                                    tuple(mine)))
        seen[c.test] = seen.get(c.test, 0) + 1
        values.append(dict(found.arguments))
        answers.append((c.raised, c.answer))
    return places, values, answers


def places_of(slug: str, calls: list[Call]) -> list[confirm.Place]:
    """The counted calls ``calls`` make, as a table's ``places`` (cheap: no evaluation), to
    compare with a stored table's."""
    return _places(slug, calls)[0]


def table(slug: str, calls: list[Call]) -> confirm.Table:
    """The ``confirm.Table`` of ``slug``'s suite, from its recorded ``calls``: each counted
    call's place and value classes, and per value the hidden calls it changes (the reference
    run with that value, up to ``CHANGING`` found; a call the reference refuses, or whose
    answer is trivial, never counts)."""
    from grader.engine.plugin import load_reference
    from grader.judge.check import _run_here
    from grader.judge.compare import compare

    reference, ex = load_reference(slug), catalog.get(slug)
    places, values, answers = _places(slug, calls)
    made = confirm.Table(confirm.fingerprint(ex.suite, ex.solution, ex.functions), places)
    first: dict[tuple[str, str, int], int] = {}
    for n, p in enumerate(places):
        for name, cls in p.classes:
            first.setdefault((p.func, name, cls), n)
    for (func, name, cls), n in first.items():
        value = values[n][name]
        # a number, a flag, a word: every hidden call is tried (a few values, and a value
        # that changes nothing on some inputs, alpha = 40 or 1e4, is what a shortcut uses)
        scalar = value is None or isinstance(value, (bool, int, float, str, np.number))
        changing, untried = set(), set()
        for m, p in enumerate(places):
            if p.public or p.func != func or dict(p.classes)[name] == cls:
                continue
            raised, answer = answers[m]
            if raised or confirm.trivial(answer, ex.rtol, ex.atol):
                continue
            if len(changing) >= CHANGING and not scalar:
                untried.add(m)
                continue
            other = confirm.bound(reference, func, (), values[m])
            if other is None:
                continue
            other.arguments[name] = value
            try:
                now = _run_here(getattr(reference, func), other.args, other.kwargs)
                same = compare(now, answer, rtol=ex.rtol, atol=ex.atol).ok
            except Exception:  # noqa: BLE001 - the reference refuses it: the value changes it
                same = False
            if not same:
                changing.add(m)
        made.changes[(func, name, cls)] = changing
        made.untried[(func, name, cls)] = untried
    return made

