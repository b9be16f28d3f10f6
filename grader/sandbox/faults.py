"""What can go wrong on the learner's side of a call, as exceptions the grader raises.

Each fault carries the test status it leads to and a one-sentence message for the report.
"""

from __future__ import annotations

import signal
from enum import StrEnum


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
    """The learner's module has no such function or class: ``name`` (the grader's own name
    for it, recorded when the module was loaded)."""

    def __init__(self, message: str, *, name: str = "", **kw):
        super().__init__(message, **kw)
        self.name = name


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
    """The learner's code filled its work folder (a size-limited tmpfs): ``ENOSPC`` raised in
    the worker, and the folder found full by the grading process itself."""

    def __init__(self, exc_type: str, mro: list[str], message: str, limit_bytes: int, **kw):
        super().__init__(exc_type, mro, message, **kw)
        self.message = (f"wrote more than {limit_bytes >> 20} MiB to its work folder "
                        f"({exc_type}: {message})")
        self.args = (self.message,)


NOT_IMPLEMENTED = "not implemented yet (the function raises NotImplementedError)"


class NotImplementedYet(LearnerFault):
    """The function called (or, for a source rule, each function it checks) is still the
    stub: its message is ``NOT_IMPLEMENTED``, or a rule's own that starts "not implemented
    yet: " (``grader/judge/rules.py``)."""

    status = "failed"


class BadReturn(LearnerFault):
    """The result was not plain data, or too large, or malformed."""

    status = "failed"


class ArgumentsModified(LearnerFault):
    """The call changed its arguments in place (the worker compares their data before and
    after the call; an exercise may allow it: ``may_modify`` in the index)."""

    status = "failed"

    def __init__(self, func: str, **kw):
        super().__init__(f"{func} changed its arguments in place: the caller's inputs must be "
                         "left as they were", **kw)
        self.func = func


class TimedOut(LearnerFault):
    """A call ran out of its wall clock (``seconds``), or of the submission's time budget
    (``budget``: ``seconds`` is then the budget)."""

    status = "timeout"

    def __init__(self, seconds: float, message: str = "", *, budget: bool = False, **kw):
        super().__init__(message or f"timed out after {seconds:g} s", **kw)
        self.seconds = seconds
        self.budget = budget


class NotRun(LearnerFault):
    """Not called: enough calls of this exercise had already timed out (``MAX_TIMEOUTS``)."""

    status = "not_run"

    def __init__(self, timeouts: int, seconds: float, **kw):
        super().__init__(not_run_message(timeouts, seconds), **kw)
        self.timeouts, self.seconds = timeouts, seconds


def not_run_message(timeouts: int, seconds: float) -> str:
    return f"not run: {_count(timeouts)} calls already timed out after {seconds:g} s"


def _count(n: int) -> str:
    return {2: "two", 3: "three"}.get(n, str(n))


class CrashCause(StrEnum):
    """Why a worker ended, as the grading process observed it itself (its cgroup or its own
    sampling of the process tree, or the rlimit signal the kernel sends)."""

    OUT_OF_MEMORY = "out_of_memory"
    PROCESSES = "processes"
    CPU_TIME = "cpu_time"
    FILE_SIZE = "file_size"


# the causes the grading process measured itself: a CPU or file-size signal can be sent by
# the learner's own code, so a graded report does not repeat it (``feedback/levels.py``)
OBSERVED_CAUSES = (CrashCause.OUT_OF_MEMORY, CrashCause.PROCESSES)


class Crashed(LearnerFault):
    """The learner's process ended; ``cause``: why, where the grader knows it."""

    status = "crashed"

    def __init__(self, returncode: int | None, why: str = "", *,
                 cause: CrashCause | None = None, **kw):
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
        self.cause = cause


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
