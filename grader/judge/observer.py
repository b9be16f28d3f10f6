"""An observer of a grading session, for tools that grade trusted files to learn about the
suites (``grade release`` records public tests; see ``release/record.py``).

It lives in the grading process and sees what the suite does, never more than the suite
sees: each use of ``check`` (entered and left, nested uses included), each request made to
the learner's worker, and each test's verdict. The engine calls it; it changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

    from grader.judge.check import Check
    from grader.results import TestResult


class Observer:
    """No-op hooks; subclass and override what you need. ``Job.observer`` installs one."""

    def entered(self, check: Check, method: str, args: tuple, kwargs: dict) -> None:
        """A test (or ``check`` itself, nested) called ``check.<method>(*args, **kwargs)``."""

    def left(self, check: Check, method: str) -> None:
        """That call returned or raised."""

    def expected(self, func: str, args: tuple, kwargs: dict, value: Any) -> None:
        """The reference's ``func(*args, **kwargs)`` is ``value`` (computed or cached)."""

    def requested(self, op: str, func: str, args: tuple, kwargs: dict) -> None:
        """A request ``op`` ("load", "call", "new", "apply") goes to the learner's worker."""

    def replied(self, op: str, value: Any) -> None:
        """The worker's reply to that request, checked and decoded (not sent on a fault)."""

    def decided(self, item: pytest.Item, result: TestResult) -> None:
        """The verdict of ``item`` as the test ends (before any feedback level trims it, and
        before the exercise's other tests may refute a known mistake it names: the report's
        final verdict is made once the exercise's last test ran, ``evidence.py``)."""
