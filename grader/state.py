"""The learner's state file: hints seen, last scores and progress, per exercise.

Kept in ``.grade/state.json`` of the learner's project (``project_dir``: found from any
folder inside it, as git finds its repository). A missing or corrupt file is an empty state,
and a corrupt entry is dropped on its own: the file is a convenience, never needed to grade.
Writes are atomic (a temporary file renamed over the old one); two commands saving at the
same moment may lose one update, never corrupt the file.

Definitions (shown by ``grade progress``):

- an **attempt** is a grading of a version of the learner's own file not graded before
  (grading the same content again, or the untouched stub, is not an attempt);
- **time spent** is active time: the gaps between consecutive events on the exercise (an
  attempt, ``grade show``, ``grade hint``, a hint in watch mode), a gap longer than
  ``IDLE_GAP_S`` counted as a break and adding nothing; an interview adds its own clock;
- an exercise is **mastered** from the first grading of the learner's own file with full marks.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from grader.files import atomic_write_text

STATE_PATH = Path(".grade") / "state.json"  # inside the project (``state_path``)
IDLE_GAP_S = 15 * 60.0


def project_dir() -> Path:
    """The learner's project: the nearest folder, from the current one up, whose
    ``exercises/`` holds a learner file of the pack (``SLUG.py`` or ``SLUG.ipynb``); the
    current folder when none does. Relative to the current folder (``.``, ``..``, ...), so
    that paths made from it read as the learner would type them.

    The marker is ``exercises/`` with an exercise in it, not ``.grade/``: a notebook once run
    in a subfolder left a ``.grade/`` of its own there, which must not hide the project's."""
    from grader import catalog

    names = [f"{slug}{suffix}" for slug in catalog.load() for suffix in (".py", ".ipynb")]
    here = Path.cwd()
    for folder in (here, *here.parents):
        exercises = folder / "exercises"
        if exercises.is_dir() and any((exercises / name).is_file() for name in names):
            return Path(os.path.relpath(folder, here))
    return Path(".")


def state_path() -> Path:
    """``.grade/state.json`` of the project the current folder is in (``project_dir``)."""
    return project_dir() / STATE_PATH


@dataclass
class Progress:
    """One exercise's history. Times are POSIX timestamps (seconds)."""

    attempts: int = 0
    best: list[float] | None = None  # [score, max_score] of the best grading
    time_s: float = 0.0
    first_attempt: float | None = None
    mastered_at: float | None = None
    solution_seen_at: float | None = None
    last_active: float | None = None
    last_version: str | None = None  # sha256 of the content last counted as an attempt
    last_tests: dict[str, str] = field(default_factory=dict)  # test name -> status

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Progress:
        def opt(key: str) -> float | None:
            return None if data.get(key) is None else float(data[key])

        best = data.get("best")
        return cls(attempts=int(data.get("attempts", 0)),
                   best=[float(best[0]), float(best[1])] if best is not None else None,
                   time_s=float(data.get("time_s", 0.0)), first_attempt=opt("first_attempt"),
                   mastered_at=opt("mastered_at"), solution_seen_at=opt("solution_seen_at"),
                   last_active=opt("last_active"),
                   last_version=(str(data["last_version"]) if data.get("last_version")
                                 else None),
                   last_tests={str(k): str(v)
                               for k, v in dict(data.get("last_tests", {})).items()})

    @property
    def mastered(self) -> bool:
        return self.mastered_at is not None

    def touch(self, now: float) -> None:
        """Count the time since the last event on this exercise, unless it was a break."""
        if self.last_active is not None and 0 < now - self.last_active <= IDLE_GAP_S:
            self.time_s += now - self.last_active
        self.last_active = now


@dataclass
class State:
    hints_seen: dict[str, int] = field(default_factory=dict)
    last_score: dict[str, list[float]] = field(default_factory=dict)
    progress: dict[str, Progress] = field(default_factory=dict)
    path: Path = field(default_factory=state_path)

    @classmethod
    def load(cls, path: Path | None = None) -> State:
        """The state in ``path`` (the project's, ``state_path``, by default); whatever cannot
        be read is left out."""
        path = state_path() if path is None else path
        state = cls(path=path)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return state
        if not isinstance(data, dict):
            return state
        for name, convert, target in (
                ("hints_seen", lambda v: int(v), state.hints_seen),
                ("last_score", lambda v: [float(v[0]), float(v[1])], state.last_score),
                ("progress", lambda v: Progress.from_dict(v), state.progress)):
            entries = data.get(name)
            if not isinstance(entries, dict):
                continue
            for slug, value in entries.items():
                try:
                    target[str(slug)] = convert(value)
                except (TypeError, ValueError, KeyError, IndexError, AttributeError):
                    pass  # one bad entry does not cost the others
        return state

    def save(self) -> None:
        """Write atomically (a temporary file renamed over the old one)."""
        data = {"version": 1, "hints_seen": self.hints_seen, "last_score": self.last_score,
                "progress": {s: asdict(p) for s, p in self.progress.items()}}
        atomic_write_text(self.path, json.dumps(data, indent=2) + "\n")

    def of(self, slug: str) -> Progress:
        """The progress of ``slug`` (a new, empty one the first time)."""
        return self.progress.setdefault(slug, Progress())

    def record_grading(self, slug: str, *, score: float, max_score: float, passed: bool,
                       tests: dict[str, str], version: str | None, now: float,
                       spent_s: float | None = None) -> None:
        """Record a grading of the learner's own file.

        ``version`` is the file content's hash, ``None`` for the untouched stub (never an
        attempt). ``spent_s``, when given (an interview's clock), is added as time spent
        instead of the gap since the last event.
        """
        p = self.of(slug)
        self.last_score[slug] = [score, max_score]
        if p.best is None or _ratio(score, max_score) > _ratio(*p.best):
            p.best = [score, max_score]
        p.last_tests = dict(tests)
        if passed and max_score > 0 and p.mastered_at is None:
            p.mastered_at = now
        if spent_s is not None:
            p.time_s += max(0.0, spent_s)
            p.last_active = now
        if version is not None and version != p.last_version:
            p.attempts += 1
            p.last_version = version
            if p.first_attempt is None:
                p.first_attempt = now
            if spent_s is None:
                p.touch(now)


def _ratio(score: float, max_score: float) -> float:
    return score / max_score if max_score > 0 else 0.0
