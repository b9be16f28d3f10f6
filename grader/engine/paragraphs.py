"""One paragraph per cause per exercise: what the engine explains of a failure, it says once.

- A test's own hint (``@graded(hint=...)``) is about what that test isolates; it is shown
  unasked only where the evidence localises the failure there: no other test of the same
  learner functions failed (``localised``). A bug that fails several tests of a function is
  not localised by any one of them, and their hints, each about its own test's subject, would
  read as several diagnoses: the first such test says instead, in one line, that
  ``grade hint SLUG`` gives the exercise's progressive hints (``POINTER``); the others say
  nothing.
- A kind hint (what a failure of that kind usually means, or where the wrong values are) that
  an earlier test of the exercise already printed, word for word or but for its numbers, is
  replaced by a pointer to that test. Faults shared by the tests they stop are grouped by the
  writers (``report/summary.shared_causes``) and left alone here.
"""

from __future__ import annotations

import re

from .results import TestResult

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _gist(text: str) -> str:
    return _NUMBER.sub("#", text)


POINTER = ("Several tests of {funcs} fail, so no single test's hint is shown: `grade hint "
           "{slug}` gives this exercise's hints, from the idea to the last step.")


def localised(tests: list[tuple[str, bool, frozenset[str]]]) -> set[str]:
    """Of ``tests`` (name, failed, the learner functions it checked), the failed ones that no
    other failed test shares a function with (a test that checked none is not localised)."""
    failed = [(name, funcs) for name, bad, funcs in tests if bad]
    return {name for name, funcs in failed if funcs and not any(
        other != name and funcs & theirs for other, theirs in failed)}


class Paragraphs:
    """The paragraphs already said in one submission, per exercise."""

    def __init__(self) -> None:
        self._hinted: set[str] = set()
        self._said: dict[tuple[str, str], str] = {}

    def once(self, slug: str, result: TestResult, *, localised: bool = True,
             functions: frozenset[str] = frozenset()) -> TestResult:
        """``result`` with what its exercise already said taken out (changed in place);
        ``localised``: whether the evidence localises its failure to this test (``localised``),
        else its hint gives way to the pointer, once per exercise; ``functions``: the learner
        functions it checked (named in the pointer)."""
        if result.passed or result.fault is not None:
            return result
        if result.hint and not localised:
            result.hint = "" if slug in self._hinted else POINTER.format(
                funcs=" and ".join(f"`{f}`" for f in sorted(functions)) or "this exercise",
                slug=slug)
            self._hinted.add(slug)
        elif result.hint:
            if slug in self._hinted:
                result.hint = ""
            else:
                self._hinted.add(slug)
        if result.kind_hint:
            key = (slug, _gist(result.kind_hint))
            first = self._said.setdefault(key, result.name)
            if first != result.name:
                result.kind_hint = f"as for {first}, above."
        return result
