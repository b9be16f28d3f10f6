"""What can go wrong on the learner's side of a call, as exceptions the grader raises.

Each fault carries the test status it leads to and a one-sentence message for the report.
"""

from __future__ import annotations

import signal


class LearnerFault(Exception):
    """Base class: the learner's code (or its process) did not give a usable answer."""

    status = "error"

    def __init__(self, message: str, *, output: str = "", traceback: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.output = output
        self.traceback = traceback or []


class NotSubmitted(LearnerFault):
    status = "failed"


class ImportFailed(LearnerFault):
    """The learner's file could not be imported (syntax error, exception at import, ...)."""


class MissingName(LearnerFault):
    """The learner's module has no such function or class."""


class LearnerRaised(LearnerFault):
    """The learner's code raised an exception during a call."""

    def __init__(self, exc_type: str, mro: list[str], message: str, **kw):
        super().__init__(f"{exc_type}: {message}" if message else exc_type, **kw)
        self.exc_type = exc_type
        self.mro = mro
        self.raw_message = message

    def is_a(self, name: str) -> bool:
        return name in self.mro or name == self.exc_type


class DiskFull(LearnerRaised):
    """The learner's code filled its work folder (a size-limited tmpfs): ``ENOSPC``."""

    def __init__(self, exc_type: str, mro: list[str], message: str, limit_bytes: int, **kw):
        super().__init__(exc_type, mro, message, **kw)
        self.message = (f"wrote more than {limit_bytes >> 20} MiB to its work folder "
                        f"({exc_type}: {message})")
        self.args = (self.message,)


class NotImplementedYet(LearnerFault):
    status = "failed"


class BadReturn(LearnerFault):
    """The result was not plain data, or too large, or malformed."""

    status = "failed"


class TimedOut(LearnerFault):
    status = "timeout"

    def __init__(self, seconds: float, message: str = "", **kw):
        super().__init__(message or f"timed out after {seconds:g} s", **kw)
        self.seconds = seconds


class NotRun(LearnerFault):
    """Not called: enough calls of this exercise had already timed out (``MAX_TIMEOUTS``)."""

    status = "not_run"

    def __init__(self, timeouts: int, seconds: float, **kw):
        super().__init__(f"not run: {_count(timeouts)} calls already timed out after "
                         f"{seconds:g} s", **kw)


def _count(n: int) -> str:
    return {2: "two", 3: "three"}.get(n, str(n))


class Crashed(LearnerFault):
    status = "crashed"

    def __init__(self, returncode: int | None, why: str = "", **kw):
        if returncode is None:
            how = "with no exit status"
        elif returncode < 0:
            try:
                how = f"signal {signal.Signals(-returncode).name}"
            except ValueError:
                how = f"signal {-returncode}"
        else:
            how = f"exit code {returncode}"
        super().__init__(f"the learner's process ended: {how}" + (f" ({why})" if why else ""),
                         **kw)
        self.returncode = returncode


class ObjectLost(LearnerFault):
    """A learner object (``learner.new``) lived in a worker that has since been replaced."""

    status = "crashed"


def shared_kind(exc: BaseException | None) -> str | None:
    """The ``FaultKind`` value of a failure that stops every test of the exercise alike (the
    file not submitted, not loadable, lacking the function, or not run after timeouts); None
    for a failure of one test."""
    if isinstance(exc, NotSubmitted):
        return "not_submitted"
    if isinstance(exc, NotRun):
        return "not_run"
    if isinstance(exc, ImportFailed) or getattr(exc, "at_import", False):
        return "unloadable"
    if isinstance(exc, MissingName):
        return "missing_name"
    return None
