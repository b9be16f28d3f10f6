"""``check``: the comparison helper of the hidden suites.

Every assertion a suite makes about the learner goes through here, so every failure carries
the same diagnostics (``Comparison``) and the known-mistake match.
"""

from __future__ import annotations

import copy
import hashlib
import time
from typing import TYPE_CHECKING, Any

from grader.sandbox import faults
from grader.sandbox.harness import protocol

from .compare import Comparison, compare

if TYPE_CHECKING:
    from grader.sandbox.proxy import LearnerProxy
    from grader.suite import KnownMistake


_EXPECTED: dict[str, Any] = {}


def _expected_key(reference: Any, func: str, args: tuple, kwargs: dict) -> str | None:
    try:
        frame = protocol.encode_message({"f": func}, [list(args), kwargs])
    except protocol.ProtocolError:
        return None
    return f"{getattr(reference, '__name__', '?')}:{hashlib.sha256(frame).hexdigest()}"


def _short(value: Any) -> str:
    """A short form of an argument for messages: arrays by shape and dtype."""
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "dtype", None) is not None:
        return f"<{type(value).__name__} {tuple(shape)} {value.dtype}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


class GradeFailure(AssertionError):
    """The learner's answer is wrong. ``message`` is the one-sentence verdict."""

    def __init__(self, message: str, comparison: Comparison | None = None,
                 mistake: KnownMistake | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.comparison = comparison
        self.mistake = mistake


class Check:
    def __init__(self, learner: LearnerProxy, reference: Any, mistakes: list[KnownMistake],
                 rtol: float, atol: float) -> None:
        self.learner, self.reference, self.mistakes = learner, reference, mistakes
        self.rtol, self.atol = rtol, atol
        self.comparisons: list[Comparison] = []
        self.notes: list[str] = []

    def expected(self, func: str, *args: Any, _cached: bool = True, **kwargs: Any) -> Any:
        """The reference's result (on copies of the arguments).

        Results are remembered for the life of the process, keyed by the reference, the
        function and the encoded arguments: a batch computes each expected value once.
        """
        key = _expected_key(self.reference, func, args, kwargs) if _cached else None
        if key is not None and key in _EXPECTED:
            return copy.deepcopy(_EXPECTED[key])
        value = getattr(self.reference, func)(*copy.deepcopy(args), **copy.deepcopy(kwargs))
        if key is not None:
            _EXPECTED[key] = copy.deepcopy(value)
        return value

    def call(self, func: str, *args: Any, rtol: float | None = None, atol: float | None = None,
             what: str | None = None, timed: bool = False, **kwargs: Any) -> Any:
        """Call ``func`` in the learner and in the reference; fail unless they agree.

        ``timed=True`` adds the learner/reference runtime ratio as a note (information only,
        never a failure).
        """
        expected = self.expected(func, *args, **kwargs)
        actual = getattr(self.learner, func)(*args, **kwargs)
        if timed:
            self._time_warm(func, args, kwargs)
        self.equal(actual, expected, rtol=rtol, atol=atol, what=what or f"{func}'s result",
                   mistake_call=(func, args, kwargs))
        return actual

    def _time_warm(self, func: str, args: tuple, kwargs: dict) -> None:
        """Best of two runs on each side, so that first-call warm-up is not counted."""
        learner_s = self.learner.last_call_seconds
        ref_s = []
        for _ in range(2):
            started = time.perf_counter()
            self.expected(func, *args, _cached=False, **kwargs)
            ref_s.append(time.perf_counter() - started)
        try:
            getattr(self.learner, func)(*args, **kwargs)
            learner_s = min(learner_s, self.learner.last_call_seconds)
        except faults.LearnerFault:
            pass
        self.note_runtime(func, learner_s, min(ref_s))

    def note_runtime(self, func: str, learner_s: float, reference_s: float) -> None:
        ratio = learner_s / max(reference_s, 1e-6)
        self.notes.append(f"runtime of {func}: yours {learner_s * 1e3:.1f} ms, the reference's "
                          f"{reference_s * 1e3:.1f} ms ({ratio:.1f}x; information, not graded)")

    def equal(self, actual: Any, expected: Any, *, rtol: float | None = None,
              atol: float | None = None, what: str = "the result",
              mistake_call: tuple[str, tuple, dict] | None = None) -> Comparison:
        """Fail unless ``actual`` matches ``expected`` within the tolerance."""
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        cmp = compare(actual, expected, rtol=rtol, atol=atol)
        self.comparisons.append(cmp)
        self.notes.extend(n for n in cmp.notes if n not in self.notes)
        if not cmp.ok:
            found = self._match_mistake(actual, mistake_call, rtol, atol)
            message = f"{what}: {cmp.reason}"
            if found is not None:
                message += f". {found.message}"
            raise GradeFailure(message, cmp, found)
        return cmp

    def _match_mistake(self, actual: Any, call: tuple[str, tuple, dict] | None, rtol: float,
                       atol: float) -> KnownMistake | None:
        if call is None:
            return None
        func, args, kwargs = call
        for m in self.mistakes:
            if m.func != func:
                continue
            try:
                wrong = m.fn(*copy.deepcopy(args), **copy.deepcopy(kwargs))
            except Exception:  # noqa: BLE001 - a variant that cannot run on these inputs
                continue
            if compare(actual, wrong, rtol=rtol, atol=atol).ok:
                return m
        return None

    def raises(self, exc_type: str, func: str, *args: Any, **kwargs: Any) -> None:
        """Fail unless the learner's ``func(*args, **kwargs)`` raises ``exc_type``."""
        shown = ", ".join([_short(a) for a in args] +
                          [f"{k}={_short(v)}" for k, v in kwargs.items()])
        try:
            getattr(self.learner, func)(*args, **kwargs)
        except faults.LearnerRaised as exc:
            if exc.is_a(exc_type):
                return
            raise GradeFailure(f"{func}({shown}) should raise {exc_type}, but it raised "
                               f"{exc.message}") from None
        raise GradeFailure(f"{func}({shown}) should raise {exc_type}, but it returned normally")

    def fail(self, message: str, mistake: Any = None) -> None:
        """Fail with ``message``; ``mistake`` (a ``@mistake`` function) names a known mistake."""
        raise GradeFailure(message, None, getattr(mistake, "__known_mistake__", mistake))

    def that(self, condition: bool, message: str) -> None:
        """Fail with ``message`` unless ``condition`` holds (for property tests)."""
        if not condition:
            raise GradeFailure(message)
