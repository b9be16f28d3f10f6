"""An assignment: what a teacher hands out and grades, read from ``assignment.toml``.

```toml
title = "Week 3: locality and attention"
exercises = ["grid_local_mask", "attention_rollout"]   # a subset of the pack, in this order
due = 2026-12-15T23:59:00Z     # optional; Gradescope shows hidden tests after it
feedback = "graded"            # hidden tests: "graded" (the default) or "full"

[limits]                       # optional
call_seconds = 10              # wall clock of one learner call (tests that set their own keep it)
submission_seconds = 900       # all the calls of one submission together

[points]                       # optional: an exercise's total, its tests scaled to it
grid_local_mask = 10
```

Every teacher-facing command reads it the same way (``load``); a file that does not fit raises
``AssignmentError`` with one sentence that names the file and the field.
"""

from __future__ import annotations

import datetime as dt
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import catalog, late, rubric
from grader.engine.policy import Policy
from grader.feedback.levels import LEVELS

KEYS = {"title", "exercises", "due", "feedback", "limits", "points", "rubric", "late"}
LIMIT_KEYS = {"call_seconds", "submission_seconds"}


class AssignmentError(ValueError):
    """The assignment file cannot be used: the message says which field and why."""


@dataclass(frozen=True)
class Assignment:
    title: str
    exercises: tuple[str, ...]
    feedback: str = "graded"
    due: dt.datetime | None = None
    call_seconds: float | None = None
    submission_seconds: float | None = None
    points: dict[str, float] = field(default_factory=dict)
    path: Path | None = None
    rubric: rubric.Rubric | None = None  # items a teacher applies in `grade review`
    late: late.LatePolicy | None = None  # penalties for a submission after `due`

    def policy(self, feedback: str | None = None) -> Policy:
        """The grading settings of this assignment (``feedback`` overrides its level)."""
        return Policy(feedback=feedback or self.feedback, call_timeout_s=self.call_seconds,
                      points=tuple(self.points.items()))

    def to_dict(self) -> dict[str, Any]:
        """The assignment as plain data (for a release's copy and for cache keys)."""
        return {"title": self.title, "exercises": list(self.exercises),
                "feedback": self.feedback,
                "due": self.due.isoformat() if self.due else None,
                "call_seconds": self.call_seconds,
                "submission_seconds": self.submission_seconds, "points": dict(self.points)}


# what only the teacher reads: the rubric (their marking guide), the late policy (its
# extensions name students); a release's copy of the assignment leaves them out
TEACHER_ONLY = ("rubric", "late")


def released_text(task: Assignment) -> str:
    """The text of ``task``'s file as a release ships it: ``TEACHER_ONLY`` fields left out
    (the file as written when it has none, comments kept)."""
    import tomli_w

    assert task.path is not None
    text = Path(task.path).read_text(encoding="utf-8")
    data = tomllib.loads(text)
    if not set(TEACHER_ONLY) & set(data):
        return text
    kept = {k: v for k, v in data.items() if k not in TEACHER_ONLY}
    return ("# the assignment as released (the teacher's rubric and late policy left out)\n"
            + tomli_w.dumps(kept))


def load(path: Path) -> Assignment:
    """Read and check ``path``; raise ``AssignmentError`` saying what is wrong."""
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise AssignmentError(f"{path}: cannot be read ({exc.strerror})") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise AssignmentError(f"{path}: not valid TOML ({exc})") from None
    return parse(data, Path(path))


def parse(data: dict[str, Any], path: Path | None = None) -> Assignment:
    where = f"{path}: " if path else ""

    def bad(message: str) -> AssignmentError:
        return AssignmentError(where + message)

    unknown = sorted(set(data) - KEYS)
    if unknown:
        raise bad(f"unknown field(s) {', '.join(unknown)} (fields: {', '.join(sorted(KEYS))})")
    title = data.get("title")
    if not isinstance(title, str) or not title.strip():
        raise bad("'title' must be a non-empty string")
    pack = catalog.load()
    exercises = data.get("exercises")
    if not isinstance(exercises, list) or not exercises or \
            not all(isinstance(s, str) for s in exercises):
        raise bad(f"'exercises' must be a non-empty list of exercise names ({', '.join(pack)})")
    missing = [s for s in exercises if s not in pack]
    if missing:
        guesses = [f"{m} (did you mean {g}?)" if (g := catalog.closest(m)) else m
                   for m in missing]
        raise bad(f"unknown exercise(s) {', '.join(guesses)} (the pack has {', '.join(pack)})")
    if len(set(exercises)) != len(exercises):
        raise bad("'exercises' names an exercise twice")
    feedback = data.get("feedback", "graded")
    if feedback not in LEVELS:
        raise bad(f"'feedback' must be one of {', '.join(LEVELS)}, not {feedback!r}")
    due = data.get("due")
    if isinstance(due, dt.date) and not isinstance(due, dt.datetime):
        due = dt.datetime.combine(due, dt.time(23, 59))
    if due is not None and not isinstance(due, dt.datetime):
        raise bad("'due' must be a TOML date or date-time, e.g. 2026-12-15T23:59:00Z")
    if due is not None and due.tzinfo is None:
        due = due.astimezone()  # a local time: this machine's zone
    limits = data.get("limits", {})
    if not isinstance(limits, dict) or set(limits) - LIMIT_KEYS:
        raise bad(f"[limits] takes {', '.join(sorted(LIMIT_KEYS))}")
    for key, value in limits.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise bad(f"limits.{key} must be a positive number of seconds")
    points = data.get("points", {})
    if not isinstance(points, dict):
        raise bad("[points] maps exercise names to their total points")
    for slug, value in points.items():
        if slug not in exercises:
            raise bad(f"points.{slug}: not one of the assignment's exercises")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise bad(f"points.{slug} must be a number >= 0")
    try:
        items = rubric.parse(data.get("rubric"), exercises)
        policy = late.parse(data.get("late"), path)
    except ValueError as exc:
        raise bad(str(exc)) from None
    if policy is not None and due is None:
        raise bad("[late] needs a 'due' date to count lateness from")
    return Assignment(title=title.strip(), exercises=tuple(exercises), feedback=feedback,
                      due=due, call_seconds=limits.get("call_seconds"),
                      submission_seconds=limits.get("submission_seconds"),
                      points={k: float(v) for k, v in points.items()}, path=path,
                      rubric=items, late=policy)
