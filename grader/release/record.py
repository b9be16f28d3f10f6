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
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from grader import catalog
from grader.engine import check as check_module
from grader.engine import verdict
from grader.engine.runner import grade
from grader.sandbox.proxy import LearnerProxy


@dataclass
class Recorded:
    """The public tests of one exercise that can be replayed, and the names of the rest."""

    tests: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # public, but not replayable
    hidden: int = 0


class _Watch:
    """Spies on ``Check`` and the learner proxy while one submission is graded."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.pure = True
        self.depth = 0  # inside a recorded check.call / check.raises
        self.by_slug: dict[str, Recorded] = {}

    @contextlib.contextmanager
    def installed(self):
        mp = pytest.MonkeyPatch()
        watch, real = self, {name: getattr(check_module.Check, name) for name in (
            "call", "raises", "equal", "that", "expected", "fail", "curve", "optional",
            "array")}
        real_request, real_decide = LearnerProxy._request, verdict.decide

        def call(self, func, *args, rtol=None, atol=None, what=None, timed=False, **kwargs):
            mistakes = []
            for m in self.mistakes:
                if m.func == func:
                    with contextlib.suppress(Exception):  # a variant that cannot run here
                        mistakes.append({"name": m.name, "message": m.message,
                                         "output": check_module._run_here(m.fn, args, kwargs)})
            watch.ops.append({"op": "call", "func": func, "args": list(args), "kwargs": kwargs,
                              "expected": real["expected"](self, func, *args, **kwargs),
                              "rtol": rtol, "atol": atol, "what": what,
                              "mistakes": mistakes})
            watch.depth += 1
            try:
                return real["call"](self, func, *args, rtol=rtol, atol=atol, what=what,
                                    timed=timed, **kwargs)
            finally:
                watch.depth -= 1

        def raises(self, exc_type, func, *args, new=False, **kwargs):
            watch.ops.append({"op": "raises", "exc_type": exc_type, "func": func,
                              "args": list(args), "kwargs": kwargs, "new": new})
            watch.depth += 1
            try:
                return real["raises"](self, exc_type, func, *args, new=new, **kwargs)
            finally:
                watch.depth -= 1

        def impure(name):
            def spy(self, *args, **kwargs):
                if watch.depth == 0:
                    watch.pure = False
                watch.depth += 1
                try:
                    return real[name](self, *args, **kwargs)
                finally:
                    watch.depth -= 1
            return spy

        def request(self, op, *args, **kwargs):
            if watch.depth == 0 and op != "load":  # (the learner fixture imports the module)
                watch.pure = False
            return real_request(self, op, *args, **kwargs)

        def decide(item, excinfo, *args, **kwargs):
            result = real_decide(item, excinfo, *args, **kwargs)
            watch.finish(item, result)
            return result

        mp.setattr(check_module.Check, "call", call)
        mp.setattr(check_module.Check, "raises", raises)
        for name in ("equal", "that", "expected", "fail", "curve", "optional", "array"):
            mp.setattr(check_module.Check, name, impure(name))
        mp.setattr(LearnerProxy, "_request", request)
        mp.setattr(verdict, "decide", decide)
        try:
            yield self
        finally:
            mp.undo()

    def finish(self, item: pytest.Item, result: Any) -> None:
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
    with tempfile.TemporaryDirectory(prefix="grade-release-") as tmp:
        files = {}
        for slug in slugs:
            files[slug] = Path(tmp) / f"{slug}.py"
            files[slug].write_bytes(catalog.get(slug).solution.read_bytes())
        with _Watch().installed() as watch:
            grade(files, submission="reference")
    return {slug: watch.by_slug.get(slug, Recorded()) for slug in slugs}
