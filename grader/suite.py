"""What a hidden suite imports: the ``graded`` decorator, ``mistake`` and ``Recipe``.

A hidden suite is ``grader/suites/test_<slug>.py``. Its tests take the fixtures

- ``learner``: a proxy to the learner's module in the worker (``learner.fn(...)``);
- ``reference``: the reference solution module, in the grading process;
- ``check``: the comparison helper (``check.call``, ``check.equal``, ``check.raises``,
  ``check.that``), which raises a ``GradeFailure`` with diagnostics;
- ``device``: ``"cpu"`` or ``"cuda"``, the device the run grades on.

Every test is decorated with ``@graded(points, hint)``. Known mistakes are functions of the
same arguments as a reference function, decorated with ``@mistake(func, name, message)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from grader.engine.check import GradeFailure
from grader.sandbox.harness.protocol import Recipe

__all__ = ["graded", "mistake", "KnownMistake", "Recipe", "GradeFailure"]

DEFAULT_TIMEOUT_S = 10.0


def graded(points: float, hint: str, *, timeout: float = DEFAULT_TIMEOUT_S,
           visibility: str = "hidden") -> Callable[[Callable[..., Any]], Any]:
    """Mark a hidden test: its points, the hint shown when it fails, its per-call time limit."""
    if visibility not in ("public", "hidden"):
        raise ValueError("visibility must be 'public' or 'hidden'")
    return pytest.mark.grading(points=float(points), hint=hint, timeout=float(timeout),
                               visibility=visibility)


@dataclass(frozen=True)
class KnownMistake:
    func: str
    name: str
    message: str
    fn: Callable[..., Any]


def mistake(func: str, name: str, message: str) -> Callable[[Callable[..., Any]], Any]:
    """Register a wrong variant of reference function ``func``.

    When a learner's failing output matches the variant's output on the same arguments,
    the verdict names the mistake and shows ``message``.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__known_mistake__ = KnownMistake(func, name, message, fn)  # type: ignore[attr-defined]
        return fn

    return deco


def mistakes_in(namespace: dict[str, Any]) -> list[KnownMistake]:
    """The known mistakes defined in a suite module's namespace, in definition order."""
    return [v.__known_mistake__ for v in namespace.values()
            if callable(v) and hasattr(v, "__known_mistake__")]


def reference(slug: str) -> Any:
    """The reference module of ``slug``, for writing known-mistake variants."""
    from grader.engine.plugin import load_reference

    return load_reference(slug)
