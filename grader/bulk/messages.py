"""What a grading process is sent and what it answers: one type each, whichever front end
drives it (``serve.py``: the local pool's pipes, or a Dask task through ``serve.main``'s JSON
lines).

- ``Settings``: what every job of a run is graded with (a pool process gets it when forked);
- ``JobMessage``: one round of one submission (``serve.job_of`` makes the engine's ``Job`` of
  it, the one place that does);
- ``Answer``: what that round came to.

Each has the plain forms that cross a process boundary, exactly what crossed before they
were typed: ``to_wire``/``from_wire`` for the pool's pipes (pickled tuples), ``to_json``/
``from_json`` for Dask and ``serve``'s lines (JSON-able dicts; a Dask task carries the
files' bytes, ``task``). A round's ``phase`` is an ``engine.runner.Phase`` value
(``"whole"``, ``"public"``, ``"hidden"``): this module imports no engine, so that a Dask
worker process, which runs no grading, can read its tasks.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from grader.engine.policy import Policy

PUBLIC = "public"  # ``Phase.PUBLIC``: the round whose answer is a handover, not a result


def failure(exc: BaseException) -> str:
    """Why grading failed, as an answer says it: ``Type: message``."""
    return f"{type(exc).__name__}: {exc}"


@dataclass(frozen=True)
class Settings:
    """What every job of a run is graded with: its exercises, device, time budget (seconds
    for all the calls of one submission) and policy."""

    exercises: tuple[str, ...]
    device: str
    budget_s: float
    policy: Policy

    def session(self) -> dict[str, Any]:
        """``serve.main``'s session line: what its one pytest session is started for."""
        return {"exercises": list(self.exercises), "device": self.device}

    def to_json(self) -> dict[str, Any]:
        return {**self.session(), "budget_s": self.budget_s,
                "policy": dataclasses.asdict(self.policy)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Settings:
        """The settings of ``to_json``'s form (a Dask task's; a session line with a request)."""
        return cls(tuple(data["exercises"]), data["device"], float(data["budget_s"]),
                   Policy.from_dict(data["policy"]))


@dataclass(frozen=True)
class JobMessage:
    """One round (``phase``) of one submission, as a grading process is sent it.

    ``files``: slug -> the learner file's path, ``None`` when not submitted; ``handover``: a
    hidden round's public round, as ``Handover.to_dict`` gave it; ``key``: the cache key a pool
    process writes the report folder under (the Dask client writes its answers' itself)."""

    id: str
    files: dict[str, str | None]
    phase: str = "whole"
    handover: dict[str, Any] | None = None
    key: str = ""

    def to_wire(self) -> tuple[str, dict[str, str | None], str, str, dict[str, Any] | None]:
        """The pool's pipe form: ``(id, files, key, phase, handover)``."""
        return self.id, self.files, self.key, str(self.phase), self.handover

    @classmethod
    def from_wire(cls, wire: tuple[Any, ...]) -> JobMessage:
        sub_id, files, key, phase, handover = wire
        return cls(sub_id, files, phase, handover, key)

    def to_json(self, settings: Settings) -> dict[str, Any]:
        """``serve.main``'s request line: the message with the run's budget and policy."""
        return {"id": self.id, "files": self.files, "budget_s": settings.budget_s,
                "policy": dataclasses.asdict(settings.policy), "phase": str(self.phase),
                "handover": self.handover}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> JobMessage:
        """The message of a request line, or of a Dask task (``task``: its ``files`` are
        then the files' bytes)."""
        return cls(data["id"], data["files"], data.get("phase", "whole"), data.get("handover"))

    def task(self, settings: Settings, pack: str, contents: dict[str, bytes | None]
             ) -> dict[str, Any]:
        """A Dask task's argument (plain data, pickled by Dask): the run's settings, the
        client's pack version (a worker of another version refuses the task), this message
        with ``contents``, its files' bytes, for its files."""
        return {**settings.to_json(), "pack": pack, "id": self.id, "phase": str(self.phase),
                "handover": self.handover, "files": contents}


@dataclass(frozen=True)
class Answer:
    """What one round of a submission came to: ``data`` (a result's, or a public round's
    handover), or ``error``, why grading failed; ``ended``: the grading processes it ended
    (the pool counts them; a Dask worker's retries too)."""

    id: str
    data: dict[str, Any] | None = None
    error: str | None = None
    ended: int = 0

    @classmethod
    def of(cls, submission: str, outcome: Any) -> Answer:
        """The answer to a job that came to ``outcome`` (``engine.runner.Deliver``'s: a
        result, a handover, or the exception that made it ungradable)."""
        if isinstance(outcome, Exception):
            return cls(submission, error=failure(outcome))
        return cls(submission, data=outcome.to_dict())

    def to_wire(self) -> tuple[str, dict[str, Any] | None, str | None]:
        """A pool process's pipe form: ``(id, data, error)``."""
        return self.id, self.data, self.error

    @classmethod
    def from_wire(cls, wire: tuple[Any, ...]) -> Answer:
        sub_id, data, error = wire
        return cls(sub_id, data, error)

    def to_json(self, phase: str) -> dict[str, Any]:
        """``serve.main``'s answer line to a round of ``phase``: ``{"id", "error"}``, else
        ``{"id", "handover"}`` (a public round's) or ``{"id", "result"}``."""
        if self.error is not None:
            return {"id": self.id, "error": self.error}
        return {"id": self.id, "handover" if phase == PUBLIC else "result": self.data}

    @classmethod
    def from_json(cls, submission: str, data: dict[str, Any], phase: str) -> Answer:
        """The answer to ``submission``'s round of ``phase`` of a grading process's line (as
        a Dask task returns it; a refusal is the client's to handle before)."""
        if "error" in data:
            return cls(submission, error=str(data["error"]))
        return cls(submission, data=data["handover" if phase == PUBLIC else "result"])
