"""How a grading is scored and what its hidden tests tell: plain settings, set by an
assignment (``grader/assignment.py``) or a command's options, carried by each job."""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


@dataclass(frozen=True)
class Policy:
    """``feedback``: ``full`` or ``graded`` (``feedback/levels.py``); ``call_timeout_s``: the
    wall clock of a learner call for tests that set none; ``points``: ``(exercise, total)``
    pairs, each exercise's tests scaled to its total."""

    feedback: str = "full"
    call_timeout_s: float | None = None
    points: tuple[tuple[str, float], ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Policy:
        """The policy of its ``dataclasses.asdict`` form (JSON turns its pairs into lists)."""
        return cls(feedback=str(data.get("feedback", "full")),
                   call_timeout_s=data.get("call_timeout_s"),
                   points=tuple((str(s), float(p)) for s, p in data.get("points", ())))


class Runner(StrEnum):
    """Who runs a grading session's tests (``engine/items.py``): the engine where it can
    (``ENGINE``, the default), or pytest's protocol for every test (``PYTEST``)."""

    ENGINE = "engine"
    PYTEST = "pytest"

    @classmethod
    def from_env(cls) -> Runner:
        """``GRADER_RUNNER`` (``engine`` when unset or empty); ``ValueError`` for another."""
        value = os.environ.get("GRADER_RUNNER") or "engine"
        try:
            return cls(value)
        except ValueError:
            raise ValueError(f"GRADER_RUNNER must be 'engine' or 'pytest', not {value!r}") \
                from None
