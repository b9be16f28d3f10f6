"""One paragraph per cause per exercise: what the engine explains of a failure, it says once.

- A test's own hint (``@graded(hint=...)``) is shown at most once per exercise: on the first
  failing test that earns one, in the suite's order (its simplest test first). A global bug
  fails many tests; each hint is about its own test's subject, and several beside one bug read
  as several diagnoses. The others stay unsaid; ``grade hint SLUG`` gives the progressive hints.
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


class Paragraphs:
    """The paragraphs already said in one submission, per exercise."""

    def __init__(self) -> None:
        self._hinted: set[str] = set()
        self._said: dict[tuple[str, str], str] = {}

    def once(self, slug: str, result: TestResult) -> TestResult:
        """``result`` with what its exercise already said taken out (changed in place)."""
        if result.passed or result.fault is not None:
            return result
        if result.hint:
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
