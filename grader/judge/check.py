"""``check``: the comparison helper of the hidden suites.

Every assertion a suite makes about the learner goes through here, so every failure carries
the same diagnostics (``Comparison``) and the known-mistake match. ``Check`` is what a test is
given; it composes one small object per job, each with its own state:

- ``Tally``: what the test checked (its calls, their sizes, the functions a right value
  confirmed or ``check.raises`` tried, the counted calls compared right), as ``verdict.py``
  and ``confirm.py`` read it;
- ``Comparisons``: each comparison with its diagnostics, and the failure a wrong one makes;
- ``KnownMistakes``: the known mistake of the suite's ``Catalogue`` a wrong result matches
  (confirmed on its probes), the regions its wrong values lie in, the evidence kept for the
  exercise;
- ``Figures``: the charts a suite draws;
- ``CallInputs``: the calls' inputs, summarised for a public test's report;

and the timing of a call (``warm_seconds``, ``runtime_note``: information, never graded).
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import functools
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from grader import numbers
from grader.failure_kinds import FailureKind
from grader.judge import expected as expected_values
from grader.judge import figures
from grader.judge.arrays import numeric_arrays
from grader.judge.compare import Comparison, UnsupportedExpected, compare
from grader.judge.evidence import Ledger, Seen, signature
from grader.results import CurveFigure
from grader.sandbox import faults
from grader.sandbox.harness import protocol
from grader.sandbox.isolation import SandboxError
from grader.suite import Catalogue, GradeFailure, KnownMistake
from grader.suite import built as built  # (re-exported: the grading process's recipes)
from grader.suite import built_leaf as _built_leaf

if TYPE_CHECKING:
    from grader.judge.observer import Observer
    from grader.sandbox.proxy import LearnerProxy


def _short(value: Any) -> str:
    """A short form of an argument for messages: arrays by shape and dtype."""
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "dtype", None) is not None:
        return f"<{type(value).__name__} {tuple(shape)} {value.dtype}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _run_here(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    """``fn`` (the reference or a known mistake) on copies of ``args``, each ``Recipe`` among
    them ``built`` here."""
    return fn(*protocol.map_leaves(copy.deepcopy(args), _built_leaf),
              **protocol.map_leaves(copy.deepcopy(kwargs), _built_leaf))


def mistake_output(m: KnownMistake, args: tuple, kwargs: dict) -> Any:
    """Known mistake ``m``'s result on ``args`` (computed once per process and input; raises
    when it cannot run on them)."""
    return expected_values.get_or_compute(
        expected_values.key(m.fn, f"mistake:{m.func}:{m.name}", args, kwargs),
        lambda: _run_here(m.fn, args, kwargs))




def _shown(args: tuple, kwargs: dict) -> str:
    return ", ".join([_short(a) for a in args] + [f"{k}={_short(v)}" for k, v in kwargs.items()])


MAX_INPUTS = 12  # call summaries kept per public test
Call = tuple[str, tuple, dict]  # a call of a learner function: (function, args, kwargs)


def input_size(args: tuple, kwargs: dict) -> int:
    """Number of values in the inputs' numeric arrays (cheap: no pass over the data)."""
    return sum(int(a.size) for a in numeric_arrays(list(args) + list(kwargs.values())))


def input_stats(args: tuple, kwargs: dict) -> tuple[int, float | None]:
    """(number of values in the inputs, largest finite |value| among them or None)."""
    arrays = numeric_arrays(list(args) + list(kwargs.values()))
    size = sum(int(a.size) for a in arrays)
    finite = [float(np.max(np.abs(a[np.isfinite(a)]))) for a in arrays
              if a.size and np.isfinite(a).any()]
    return size, (max(finite) if finite else None)


def summarize(value: Any, depth: int = 0) -> str:
    """A short human summary of an argument: small arrays in full, larger ones by shape,
    dtype and range; lists of same-shaped arrays counted."""
    if hasattr(value, "detach") and hasattr(value, "shape") and hasattr(value, "device"):
        return (f"tensor {tuple(value.shape)} {str(value.dtype).removeprefix('torch.')}"
                f" on {value.device}")
    if isinstance(value, np.ndarray):
        if value.size <= 12 and value.ndim <= 2:
            return np.array2string(value, precision=3, separator=", ",
                                   suppress_small=True).replace("\n", "")
        text = f"{value.dtype} array {value.shape}"
        if value.dtype.kind in "iuf" and value.size and np.isfinite(value).any():
            fin = value[np.isfinite(value)]
            text += f", values in [{numbers.value(fin.min())}, {numbers.value(fin.max())}]"
        return text
    if isinstance(value, (list, tuple)) and depth < 3:
        open_, close = ("[", "]") if isinstance(value, list) else ("(", ")")
        if value and all(isinstance(v, np.ndarray) for v in value) and \
                len({(v.shape, v.dtype) for v in value}) == 1 and len(value) > 2:
            return f"{open_}{len(value)} x {summarize(value[0], depth + 1)}{close}"
        parts = [summarize(v, depth + 1) for v in value[:8]]
        more = f", ... ({len(value)} items)" if len(value) > 8 else ""
        return open_ + ", ".join(parts) + more + close
    if isinstance(value, dict) and depth < 3:
        items = list(value.items())[:6]
        return "{" + ", ".join(f"{k!r}: {summarize(v, depth + 1)}" for k, v in items) + "}"
    if isinstance(value, (float, np.floating)):
        return numbers.value(value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def call_summary(func: str, args: tuple, kwargs: dict) -> str:
    text = f"{func}(" + ", ".join([summarize(a) for a in args] +
                                   [f"{k}={summarize(v)}" for k, v in kwargs.items()]) + ")"
    return text if len(text) <= 300 else text[:297] + "..."


@dataclass
class CallInputs:
    """The first calls a test made (``MAX_INPUTS`` of them, and whether there were more),
    summarised only when asked for (``summaries``: a public test's report; most tests never
    show them)."""

    calls: list[Call] = field(default_factory=list)

    def add(self, func: str, args: tuple, kwargs: dict) -> None:
        if len(self.calls) <= MAX_INPUTS:
            self.calls.append((func, args, kwargs))

    def summaries(self) -> list[str]:
        shown = [call_summary(*call) for call in self.calls[:MAX_INPUTS]]
        return shown + (["... (more calls not shown)"] if len(self.calls) > MAX_INPUTS else [])


def _builtin_exception(name: str) -> type[BaseException] | None:
    cls = getattr(builtins, name, None)
    return cls if isinstance(cls, type) and issubclass(cls, BaseException) else None


def unrelated_exceptions(exc: faults.LearnerRaised, name: str) -> list[str]:
    """The built-in exception classes the learner's exception also derives from that are
    neither ``name``'s bases nor its subclasses (the most derived of them, in MRO order).

    ``class E(ValueError, TypeError, KeyError)`` raised where ``ValueError`` is named gives
    ``["TypeError", "KeyError"]``: an exception that would satisfy every ``except`` is not the
    one the statement names. ``class MyErr(ValueError)`` or ``UnicodeError`` give ``[]``. The
    only place that decides what "raises ``name``" accepts (``Check.raises``).
    """
    wanted = _builtin_exception(name)
    if wanted is None:
        return []
    found = [c for c in map(_builtin_exception, exc.mro) if c is not None
             and not (issubclass(c, wanted) or issubclass(wanted, c))]
    return [c.__name__ for c in found if not any(o is not c and issubclass(o, c) for o in found)]


def _names(items: list[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


class SuiteError(Exception):
    """The suite broke one of ``check``'s own rules (a grader error, never the learner's)."""


UNINTERPRETABLE = "the grader could not interpret the returned value"


def uninterpretable(exc: BaseException, what: str = "") -> GradeFailure:
    """The learner's failed test for a value the grading process failed on (comparing it,
    its diagnostics, hints or figures): one sentence naming the error, never a grader error."""
    text = " ".join(str(exc).split())
    text = text if len(text) <= 200 else text[:197] + "..."
    message = f"{what + ': ' if what else ''}{UNINTERPRETABLE}: {type(exc).__name__}" + (
        f": {text}" if text else "")
    return GradeFailure(message, kind=FailureKind.TYPE, what=what)


def _expecting(learner: Any, expected: Any) -> contextlib.AbstractContextManager[None]:
    """The learner's replies bounded by the size of ``expected`` (``LearnerProxy``); nothing
    for a stand-in learner without the method."""
    expecting = getattr(type(learner), "_expecting", None)
    return expecting(learner, expected) if expecting is not None else contextlib.nullcontext()


def _unnoted(learner: Any) -> contextlib.AbstractContextManager[None]:
    """The learner's calls not counted (``LearnerProxy``); nothing for a stand-in learner
    without the method."""
    unnoted = getattr(type(learner), "_unnoted", None)
    return unnoted(learner) if unnoted is not None else contextlib.nullcontext()


def _observed(method: Callable[..., Any]) -> Callable[..., Any]:
    """Tell the check's observer (``judge/observer.py``), if any, of each use of ``method``."""
    name = method.__name__

    @functools.wraps(method)
    def use(self: Check, *args: Any, **kwargs: Any) -> Any:
        observer = self.observer
        if observer is None:
            return method(self, *args, **kwargs)
        observer.entered(self, name, args, kwargs)
        try:
            return method(self, *args, **kwargs)
        finally:
            observer.left(self, name)
    return use



# -- the jobs -----------------------------------------------------------------------------------

@dataclass
class Tally:
    """What one test has checked so far: read by ``verdict.py`` (``size``, ``functions``,
    ``unconfirmed``, whether it checked anything) and ``confirm.py`` (``right``,
    ``confirmed``)."""

    counted: list[str] = field(default_factory=list)  # its counted calls (the engine's: confirm.py)
    checks: int = 0             # check.call / check.raises made so far
    valued: int = 0             # check.call / check.equal made so far
    size: int = 0               # the most values in one checked call's inputs or result
    functions: set[str] = field(default_factory=set)  # the learner's functions it checked
    # the functions a right value came from (``check.call``, ``check.equal(confirms=)``)
    confirmed: set[str] = field(default_factory=set)
    rejected: list[str] = field(default_factory=list)  # functions check.raises was used on
    right: set[int] = field(default_factory=set)  # the places in ``counted`` compared right

    def called(self, func: str, args: tuple, kwargs: dict) -> None:
        """A ``check.call`` or ``check.raises`` of learner function ``func``."""
        self.checks += 1
        self.functions.add(func)
        self.grew(input_size(args, kwargs))

    def grew(self, size: int) -> None:
        self.size = max(self.size, size)

    def unconfirmed(self) -> list[str]:
        """The functions ``check.raises`` was used on but no right value confirmed."""
        return [f for f in self.rejected if f not in self.confirmed]


class Comparisons:
    """A test's comparisons at its exercise's tolerance (``rtol``, ``atol``, unless a check
    says otherwise), each with its diagnostics (``made``: the last one's are the test's)."""

    def __init__(self, rtol: float, atol: float) -> None:
        self.rtol, self.atol = rtol, atol
        self.made: list[Comparison] = []

    def tolerance(self, rtol: float | None, atol: float | None) -> tuple[float, float]:
        """``(rtol, atol)``: those given, the exercise's where None."""
        return (self.rtol if rtol is None else rtol), (self.atol if atol is None else atol)

    def compare(self, actual: Any, expected: Any, rtol: float, atol: float,
                what: str) -> Comparison:
        """``actual`` against ``expected``, kept; an ``actual`` it fails on is the learner's
        failed test (``uninterpretable``), an ``expected`` it cannot compare a grader error."""
        try:
            cmp = compare(actual, expected, rtol=rtol, atol=atol)
        except UnsupportedExpected:
            raise  # the suite's expected value: a grader error
        except Exception as exc:  # noqa: BLE001 - the learner's value: its failed test
            raise uninterpretable(exc, what) from None
        self.made.append(cmp)
        return cmp

    @staticmethod
    def failure(cmp: Comparison, what: str, found: KnownMistake | None) -> GradeFailure:
        """The ``GradeFailure`` of failed comparison ``cmp`` of ``what``, naming known mistake
        ``found`` if any."""
        message = f"{what}: {cmp.reason}"
        hidden = f"{what}: {cmp.hidden_reason}"
        if found is not None:
            message += f". {found.message}"
            hidden += f". {found.message}"
        return GradeFailure(message, cmp, found, hidden_message=hidden, what=what)


class KnownMistakes:
    """The suite's known mistakes and regions (its ``Catalogue``), as a test's wrong results
    are read with them: the mistake a result matches, confirmed on the suite's probes
    (``match``), the regions of the result (``regions``), and every compared call of a
    function with known mistakes kept for the exercise's evidence (``witness``, into
    ``ledger``: ``evidence.py``)."""

    def __init__(self, catalogue: Catalogue, ledger: Ledger | None) -> None:
        self.catalogue, self.ledger = catalogue, ledger
        # the learner's probe calls (function, input) -> (returned, result)
        self._probed: dict[tuple[str, str], tuple[bool, Any]] = {}

    def witness(self, func: str, args: tuple, kwargs: dict, value: Any, rtol: float,
                atol: float, *, raised: bool = False, right: bool = False) -> None:
        """Keep a compared call of ``func`` for the exercise's evidence, where ``func`` has
        known mistakes (nothing else needs it)."""
        if self.ledger is not None and any(m.func == func for m in self.catalogue):
            self.ledger.add(Seen(func, args, kwargs, value, raised, rtol, atol, right))

    def match(self, actual: Any, call: Call | None,
              outputs: Sequence[tuple[KnownMistake, Any]] | None, rtol: float, atol: float,
              *, learner: Any, expected: Callable[..., Any]) -> KnownMistake | None:
        """The known mistake ``actual`` matches (from ``outputs`` when given, else run on
        ``call``'s inputs and confirmed on the probes: ``learner`` called, the reference's
        values from ``expected``), or None; None too when comparing with one fails on
        ``actual``."""
        try:
            if outputs is None:
                return self._run(actual, call, rtol, atol, learner, expected)
            return next((m for m, wrong in outputs
                         if compare(actual, wrong, rtol=rtol, atol=atol).ok), None)
        except (faults.LearnerFault, SandboxError):
            raise
        except Exception:  # noqa: BLE001 - the learner's value: no known mistake to name
            return None

    def _run(self, actual: Any, call: Call | None, rtol: float, atol: float, learner: Any,
             expected: Callable[..., Any]) -> KnownMistake | None:
        if call is None:
            return None
        func, args, kwargs = call
        for m in self.catalogue:
            if m.func != func:
                continue
            try:  # the same inputs for every learner: each variant's output is kept
                wrong = mistake_output(m, args, kwargs)
            except Exception:  # noqa: BLE001 - a variant that cannot run on these inputs
                continue
            if compare(actual, wrong, rtol=rtol, atol=atol).ok and self._holds_on_probes(
                    m, signature(args, kwargs), rtol, atol, learner, expected):
                return m
        return None

    def _holds_on_probes(self, m: KnownMistake, form: tuple[int, ...], rtol: float,
                         atol: float, learner: Any, expected: Callable[..., Any]) -> bool:
        """Whether the learner also matches mistake ``m`` on the suite's probe calls of its
        function (``suite.probes``) of the failing call's ``form`` (``signature``: a 2-D input
        is not probed with 1-D ones: the code paths may differ), wherever ``m`` differs from
        the reference there."""
        for args in self.catalogue.probes.get(m.func, ()):
            if signature(args, {}) != form:
                continue
            try:
                wrong = mistake_output(m, args, {})
                right = expected(m.func, *args)
                if compare(wrong, right, rtol=rtol, atol=atol).ok:
                    continue  # the mistake does not show on this call
            except Exception:  # noqa: BLE001 - a variant that cannot run on these inputs
                continue
            key = (m.func, expected_values.key(None, m.func, args, {}) or repr(args))
            if key not in self._probed:
                try:
                    self._probed[key] = (True, getattr(learner, m.func)(*args))
                except faults.LearnerFault:
                    self._probed[key] = (False, None)
            ok, actual = self._probed[key]
            if not ok or not compare(actual, wrong, rtol=rtol, atol=atol).ok:
                return False
        return True

    def regions(self, call: Call, cmp: Comparison) -> list[tuple[str, str, np.ndarray]]:
        """The suite's regions of ``call``'s result (``suite.region``) that fit its shape."""
        func, args, kwargs = call
        found = []
        for r in self.catalogue.regions:
            if r.func != func or cmp.outside is None:
                continue
            try:  # cheap (index arithmetic): computed where needed, never stored
                mask = _run_here(r.fn, args, kwargs)
            except Exception:  # noqa: BLE001 - a region that does not apply to these inputs
                continue
            mask = np.asarray(mask)
            if mask.dtype == bool and mask.shape == cmp.outside.shape:
                found.append((r.where, r.means, mask))
        return found


class Figures(list[CurveFigure]):
    """The charts a suite drew for one test (``curve``), shown passed or failed."""

    def curve(self, title: str, series: list[dict[str, Any]], *, x_label: str, y_label: str,
              log_x: bool = False, log_y: bool = False, marks: Sequence[dict[str, Any]] = (),
              note: str = "") -> None:
        """Add a line chart (``figures.curve``)."""
        self.append(figures.curve(title, series, x_label=x_label, y_label=y_label,
                                  log_x=log_x, log_y=log_y, marks=marks, note=note))


def warm_seconds(learner: Any, reference: Callable[[str, tuple, dict], Any],
                 again: Callable[..., Any], func: str, args: tuple, kwargs: dict,
                 k: str | None) -> tuple[float, float]:
    """``(learner's, reference's)`` seconds for the call of ``func`` the learner just made:
    the reference's (``reference``, computed anew) the best of two runs, measured once per
    process and input ``k``; a learner call slower than twice that is made once more
    (``again``, uncounted), so that first-call warm-up is not counted against it."""
    def measure() -> float:
        runs = []
        for _ in range(2):
            started = time.perf_counter()
            reference(func, args, kwargs)
            runs.append(time.perf_counter() - started)
        return min(runs)

    ref_s = expected_values.reference_seconds(k, measure)
    learner_s = learner.last_call_seconds
    # the second run is uncounted (``optional``): whether it happens depends on the clock,
    # so it must not change the test's counted calls (``confirm.py``) nor the recordings
    if learner_s > 2 * ref_s and again(func, *args, **kwargs) is not None:
        learner_s = min(learner_s, learner.last_call_seconds)
    return learner_s, ref_s


def runtime_note(func: str, learner_s: float, reference_s: float) -> str:
    """The note of a timed call (information, not graded)."""
    ratio = learner_s / max(reference_s, 1e-6)
    return (f"runtime of {func}: yours {learner_s * 1e3:.1f} ms, the reference's "
            f"{reference_s * 1e3:.1f} ms ({ratio:.1f}x; information, not graded)")


# -- what a test is given -----------------------------------------------------------------------

class Check:
    """The ``check`` fixture: every assertion a test makes about the learner (``call``,
    ``equal``, ``raises``, ``that``, ``fail``, ...), each job done by the object it composes
    (see the module's docstring)."""

    def __init__(self, learner: LearnerProxy, reference: Any,
                 mistakes: Catalogue | Iterable[KnownMistake], rtol: float, atol: float,
                 observer: Observer | None = None, ledger: Ledger | None = None,
                 counted: list[str] | None = None) -> None:
        """``mistakes``: the suite's ``Catalogue`` (a plain list: mistakes without regions
        or probes); ``ledger``: where the learner's compared results of functions with known
        mistakes are kept for the whole exercise (``evidence.py``), or None; ``counted``:
        where the engine notes the test's counted calls (``confirm.py``)."""
        self.learner, self.reference, self.observer = learner, reference, observer
        catalogue = mistakes if isinstance(mistakes, Catalogue) else Catalogue(mistakes)
        self.notes: list[str] = []  # the comparisons', the runtimes' and the suite's own
        self.tally = Tally(counted=[] if counted is None else counted)
        self.comparer = Comparisons(rtol, atol)
        self.known = KnownMistakes(catalogue, ledger)
        self.figures = Figures()
        self._inputs = CallInputs()

    @property
    def mistakes(self) -> Catalogue:
        """The suite's known mistakes, regions and probes."""
        return self.known.catalogue

    @property
    def comparisons(self) -> list[Comparison]:
        """The test's comparisons so far (the last one's diagnostics are the test's)."""
        return self.comparer.made

    @property
    def inputs(self) -> list[str]:
        """Summaries of the calls made so far (shown for public tests only; made when asked
        for: most tests never show them)."""
        return self._inputs.summaries()

    @property
    def valued(self) -> int:
        """``check.call`` and ``check.equal`` made so far (``release/replay.py`` adds its
        recorded calls)."""
        return self.tally.valued

    @valued.setter
    def valued(self, n: int) -> None:
        self.tally.valued = n

    def _record_call(self, func: str, args: tuple, kwargs: dict) -> None:
        self.tally.called(func, args, kwargs)
        self._inputs.add(func, args, kwargs)

    @_observed
    def expected(self, func: str, *args: Any, **kwargs: Any) -> Any:
        """The reference's result (on copies of the arguments).

        Results are remembered (``expected.py``: in memory, and on disk when the run sets a
        folder), keyed by the reference, the function and the encoded arguments: a batch
        computes each expected value once.
        """
        k = expected_values.key(self.reference, func, args, kwargs)
        return self._expected(k, func, args, kwargs)

    def _expected(self, k: str | None, func: str, args: tuple, kwargs: dict) -> Any:
        value = expected_values.get_or_compute(k, lambda: _run_here(
            getattr(self.reference, func), args, kwargs))
        if self.observer is not None:
            self.observer.expected(func, args, kwargs, value)
        return value

    @_observed
    def call(self, func: str, *args: Any, rtol: float | None = None, atol: float | None = None,
             what: str | None = None, timed: bool = False, **kwargs: Any) -> Any:
        """Call ``func`` in the learner and in the reference; fail unless they agree.

        ``timed=True`` adds the learner/reference runtime ratio as a note (information only,
        never a failure).
        """
        self._record_call(func, args, kwargs)
        self.tally.valued += 1
        k = expected_values.key(self.reference, func, args, kwargs)
        expected = self._expected(k, func, args, kwargs)
        self.tally.grew(input_size((expected,), {}))
        noted = len(self.tally.counted)
        with _expecting(self.learner, expected):
            try:
                actual = getattr(self.learner, func)(*args, **kwargs)
            except faults.LearnerFault:
                self.known.witness(func, args, kwargs, None, *self.comparer.tolerance(rtol, atol),
                                   raised=True)
                raise
            if timed:
                self.note_runtime(func, *warm_seconds(
                    self.learner, functools.partial(self._expected, None), self.optional,
                    func, args, kwargs, k))
        self.equal(actual, expected, rtol=rtol, atol=atol, what=what or f"{func}'s result",
                   mistake_call=(func, args, kwargs), confirms=func)
        self.tally.right.update(range(noted, len(self.tally.counted)))
        return actual

    def note_runtime(self, func: str, learner_s: float, reference_s: float) -> None:
        self.notes.append(runtime_note(func, learner_s, reference_s))

    @_observed
    def equal(self, actual: Any, expected: Any, *, rtol: float | None = None,
              atol: float | None = None, what: str = "the result",
              mistake_call: Call | None = None, confirms: str | None = None,
              mistake_outputs: list[tuple[KnownMistake, Any]] | None = None) -> Comparison:
        """Fail unless ``actual`` matches ``expected`` within the tolerance.

        ``confirms``: the learner's function (or class) this value came from, for a test that
        also uses ``check.raises`` on it without ``check.call`` (see ``raises``).
        ``mistake_outputs``: known mistakes with their outputs already computed (a student
        release replays recorded ones), instead of running the mistakes of ``mistake_call``."""
        rtol, atol = self.comparer.tolerance(rtol, atol)
        self.tally.valued += 1
        self.tally.functions.update(f for f in (confirms, mistake_call and mistake_call[0]) if f)
        cmp = self.comparer.compare(actual, expected, rtol, atol, what)
        if mistake_call is not None and mistake_outputs is None:
            self.known.witness(*mistake_call, actual, rtol, atol, right=cmp.ok)
        self.notes.extend(n for n in cmp.notes if n not in self.notes)
        if cmp.expected_shape is not None:
            self.tally.grew(math.prod(cmp.expected_shape))
        if not cmp.ok:
            raise self._failure(cmp, actual, what, mistake_call, mistake_outputs, rtol, atol)
        cmp.release()
        if confirms is not None:
            self.tally.confirmed.add(confirms)
        return cmp

    def _failure(self, cmp: Comparison, actual: Any, what: str, mistake_call: Call | None,
                 mistake_outputs: list[tuple[KnownMistake, Any]] | None, rtol: float,
                 atol: float) -> GradeFailure:
        """The ``GradeFailure`` of a failed comparison, with the known mistake and the regions
        it matches."""
        if mistake_call is not None:  # for the hints about precision
            cmp.input_max_abs = input_stats(mistake_call[1], mistake_call[2])[1]
        found = self.known.match(actual, mistake_call, mistake_outputs, rtol, atol,
                                 learner=self.learner, expected=self.expected)
        if mistake_call is not None:  # (also for a mistake the exercise's evidence refutes)
            cmp.regions = self.known.regions(mistake_call, cmp)
        failure = Comparisons.failure(cmp, what, found)
        if mistake_call is not None:
            failure.form = signature(mistake_call[1], mistake_call[2])
        return failure

    @_observed
    def raises(self, exc_type: str, func: str, *args: Any, new: bool = False,
               **kwargs: Any) -> None:
        """Fail unless the learner's ``func(*args, **kwargs)`` raises ``exc_type``.

        ``new=True``: ``func`` is a class, built with ``learner.new``. The exception must be
        ``exc_type`` or a subclass of it that derives from no unrelated built-in exception
        (``unrelated_exceptions``). The same test must also confirm that ``func`` computes a
        right value on valid arguments (a passing ``check.call(func, ...)``, or
        ``check.equal(..., confirms=func)``), before or after: a test that only tries invalid
        arguments is a grader error (``unconfirmed``), since raising for everything would
        pass it.
        """
        self._record_call(func, args, kwargs)
        if func not in self.tally.rejected:
            self.tally.rejected.append(func)
        where = (f"(check {self.tally.checks} of this test; a hidden test does not show its "
                 "arguments)")
        try:
            if new:
                self.learner.new(func, *args, **kwargs)
            else:
                getattr(self.learner, func)(*args, **kwargs)
        except faults.LearnerRaised as exc:
            extra = unrelated_exceptions(exc, exc_type)
            if exc.is_a(exc_type) and not extra:
                return
            why = (f" ({exc.exc_type} also derives from {_names(extra)}: raise {exc_type} "
                   f"itself, or a subclass of {exc_type} alone)") if exc.is_a(exc_type) else ""
            shown = _shown(args, kwargs)
            raise GradeFailure(f"{func}({shown}) should raise {exc_type}, but it raised "
                               f"{exc.message}{why}",
                               hidden_message=f"{func}(...) should raise {exc_type}, but it "
                               f"raised {exc.message}{why} {where}",
                               kind=FailureKind.WRONG_EXCEPTION, exc_type=exc_type) from None
        did = "built an object" if new else "returned normally"
        shown = _shown(args, kwargs)
        raise GradeFailure(f"{func}({shown}) should raise {exc_type}, but it {did}",
                           hidden_message=f"{func}(...) should raise {exc_type}, but it "
                           f"{did} {where}", kind=FailureKind.NOT_RAISED, exc_type=exc_type)

    def unconfirmed(self) -> list[str]:
        """The functions this test used ``check.raises`` on but never confirmed with a right
        value (see ``raises``); ``verdict.decide`` turns a passing test with any into a grader
        error."""
        return self.tally.unconfirmed()

    @_observed
    def fail(self, message: str, mistake: Any = None, *,
             kind: FailureKind | str | None = None) -> None:
        """Fail with ``message``; ``mistake`` (a ``@mistake`` function) names a known mistake;
        ``kind`` the kind of failure when it is not wrong values (``"shape"``, ``"type"``,
        ``"nan"``, ...: a ``FailureKind``, what ``hints`` and a test's ``hint_for`` go by)."""
        raise GradeFailure(message, None, getattr(mistake, "__known_mistake__", mistake),
                           kind=kind)

    @_observed
    def array(self, value: Any, what: str, dtype: Any = np.float64) -> np.ndarray:
        """``value`` (a result of the learner's) as a numpy array of ``dtype``, for a suite
        that computes with it; a failed test saying what it is when it cannot be read as one
        (a string, ragged lists, ...), never a grader error."""
        try:
            return np.asarray(value, dtype=dtype)
        except (TypeError, ValueError, OverflowError) as exc:
            raise GradeFailure(f"{what} should be an array of numbers, but it is a "
                               f"{type(value).__name__} that numpy cannot read as one "
                               f"({str(exc).split('. ')[0]})", kind=FailureKind.TYPE) from None

    @_observed
    def that(self, condition: bool, message: str, *,
             kind: FailureKind | str | None = None) -> None:
        """Fail with ``message`` unless ``condition`` holds (for property tests); ``kind`` as
        for ``fail`` (None: the result's values do not have the property)."""
        if not condition:
            raise GradeFailure(message, kind=kind)

    @_observed
    def curve(self, title: str, series: list[dict[str, Any]], *, x_label: str, y_label: str,
              log_x: bool = False, log_y: bool = False, marks: Sequence[dict[str, Any]] = (),
              note: str = "") -> None:
        """Attach a line chart (drawn in the HTML report, passed or failed); see
        ``figures.curve``. Draw it from the learner's own outputs: for a hidden test it must
        show no expected value."""
        self.figures.curve(title, series, x_label=x_label, y_label=y_label, log_x=log_x,
                           log_y=log_y, marks=marks, note=note)

    @_observed
    def optional(self, func: str, *args: Any, **kwargs: Any) -> Any:
        """The learner's ``func(*args, **kwargs)``, or None when it faults (for figures, or a
        timing's second run: a call that must never change the test's verdict, nor the count
        of its points: ``judge/confirm.py`` does not note it)."""
        with _unnoted(self.learner):
            try:
                return getattr(self.learner, func)(*args, **kwargs)
            except faults.LearnerFault:
                return None
