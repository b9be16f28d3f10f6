"""Record an exercise's public tests for a student release, in the teacher's grader.

The reference solution is graded as if it were a learner's file (in the sandbox, as ever)
while the public tests' use of ``check`` is watched: each ``check.call`` is kept with its
arguments, the expected value and every known mistake's output on the same arguments, each
``check.raises`` with its arguments. A public test made only of those can be replayed without
the reference (``replay.py``); any other (a property computed by the suite, a model driven
step by step, a figure) is left out of the release and counted with the hidden tests, which
never leave the teacher. Nothing of a hidden test is recorded.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from grader.engine.runner import grade_references
from grader.judge import check as check_module
from grader.judge.check import Check
from grader.judge.observer import Observer


@dataclass
class Recorded:
    """The public tests of one exercise that can be replayed, and the names of the rest."""

    tests: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # public, but not replayable
    hidden: int = 0


class _Watch(Observer):
    """Watches ``check`` and the learner's requests while one submission is graded: a public
    test is replayable when it only made ``check.call`` and ``check.raises`` uses."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.pure = True
        self.depth = 0  # inside a check method (its nested uses are its own business)
        self.by_slug: dict[str, Recorded] = {}

    def entered(self, check: Check, method: str, args: tuple, kwargs: dict) -> None:
        if self.depth == 0:
            if method == "call":
                self.ops.append(self._call(check, *args, **kwargs))
            elif method == "raises":
                exc_type, func, *rest = args
                kw = dict(kwargs)
                new = kw.pop("new", False)
                self.ops.append({"op": "raises", "exc_type": exc_type, "func": func,
                                 "args": rest, "kwargs": kw, "new": new})
            else:
                self.pure = False
        self.depth += 1

    def left(self, check: Check, method: str) -> None:
        self.depth -= 1

    def _call(self, check: Check, func: str, *args: Any, rtol: float | None = None,
              atol: float | None = None, what: str | None = None, timed: bool = False,
              **kwargs: Any) -> dict[str, Any]:
        mistakes = []
        self.depth += 1  # the expected value and the mistakes' outputs are computed here
        try:
            for m in check.mistakes:
                if m.func == func:
                    with contextlib.suppress(Exception):  # a variant that cannot run here
                        mistakes.append({"name": m.name, "message": m.message,
                                         "output": check_module._run_here(m.fn, args, kwargs)})
            expected = check.expected(func, *args, **kwargs)
        finally:
            self.depth -= 1
        return {"op": "call", "func": func, "args": list(args), "kwargs": kwargs,
                "expected": expected, "rtol": rtol, "atol": atol, "what": what,
                "mistakes": mistakes}

    def requested(self, op: str, func: str, args: tuple, kwargs: dict) -> None:
        if self.depth == 0 and op != "load":  # (the learner fixture imports the module)
            self.pure = False

    def decided(self, item: pytest.Item, result: Any) -> None:
        slug = Path(str(item.path)).stem.removeprefix("test_")
        rec = self.by_slug.setdefault(slug, Recorded())
        marker = item.get_closest_marker("grading")
        kw = marker.kwargs if marker else {}
        if kw.get("visibility") != "public":
            rec.hidden += 1
        elif self.pure and self.ops and result.passed:
            rec.tests.append({"name": result.name, "points": float(kw.get("points", 0)),
                              "hint": kw.get("hint", ""), "timeout": kw.get("timeout"),
                              "hint_for": list(kw.get("hint_for", ())) or None,
                              "description": result.description, "ops": self.ops})
        else:
            rec.left_out.append(result.name)
        self.ops, self.pure, self.depth = [], True, 0


def record(slugs: list[str]) -> dict[str, Recorded]:
    """Grade each exercise's reference with its public tests watched."""
    watch = _Watch()
    grade_references(slugs, watch)
    return {slug: watch.by_slug.get(slug, Recorded()) for slug in slugs}
