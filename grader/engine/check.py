"""``check``: the comparison helper of the hidden suites.

Every assertion a suite makes about the learner goes through here, so every failure carries
the same diagnostics (``Comparison``) and the known-mistake match.
"""

from __future__ import annotations

import builtins
import contextlib
import copy
import functools
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from grader import numbers
from grader.sandbox import faults
from grader.sandbox.harness import protocol, recipes
from grader.sandbox.harness.protocol import Recipe
from grader.sandbox.isolation import SandboxError
from grader.suite import GradeFailure

from . import expected as expected_values
from . import figures
from .compare import Comparison, UnsupportedExpected, compare
from .evidence import Ledger, Seen, signature

if TYPE_CHECKING:
    from grader.engine.observer import Observer
    from grader.sandbox.proxy import LearnerProxy
    from grader.suite import KnownMistake


def _short(value: Any) -> str:
    """A short form of an argument for messages: arrays by shape and dtype."""
    shape = getattr(value, "shape", None)
    if shape is not None and getattr(value, "dtype", None) is not None:
        return f"<{type(value).__name__} {tuple(shape)} {value.dtype}>"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


_BUILT: dict[str, Any] = {}


def built(recipe: Recipe) -> Any:
    """``recipe`` built in this process, as the worker builds it for the learner; once per
    process and recipe (a recipe whose parameters are not plain data: at each call)."""
    k = expected_values.key(None, "recipe", (recipe,), {})
    if k is not None and k in _BUILT:
        return _BUILT[k]
    obj = recipes.build(recipe.name, protocol.map_leaves(recipe.params, _built_leaf))
    if k is not None:
        _BUILT[k] = obj
    return obj


def _built_leaf(value: Any) -> Any:
    return built(value) if isinstance(value, Recipe) else value


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


def _walk(value: Any, depth: int = 0) -> list[np.ndarray]:
    """The numeric arrays and numbers inside an argument (lists, tuples, dicts, tensors)."""
    if depth > 4:
        return []
    if isinstance(value, (list, tuple)):
        return [a for v in value for a in _walk(v, depth + 1)]
    if isinstance(value, dict):
        return [a for v in value.values() for a in _walk(v, depth + 1)]
    if hasattr(value, "detach") and hasattr(value, "cpu"):
        try:
            value = value.detach().cpu().float().numpy()
        except Exception:  # noqa: BLE001 - an unusual tensor: not summarised
            return []
    if isinstance(value, (bool, np.bool_)) or isinstance(value, (str, bytes)) or value is None:
        return []
    if isinstance(value, (int, float, np.number, np.ndarray)):
        arr = np.asarray(value)
        return [arr] if arr.dtype.kind in "iuf" else []
    return []


def input_size(args: tuple, kwargs: dict) -> int:
    """Number of values in the inputs' numeric arrays (cheap: no pass over the data)."""
    return sum(int(a.size) for a in _walk(list(args) + list(kwargs.values())))


def input_stats(args: tuple, kwargs: dict) -> tuple[int, float | None]:
    """(number of values in the inputs, largest finite |value| among them or None)."""
    arrays = _walk(list(args) + list(kwargs.values()))
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
    return GradeFailure(message, kind="type", what=what)


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
    """Tell the check's observer (``engine/observer.py``), if any, of each use of ``method``."""
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


class Check:
    def __init__(self, learner: LearnerProxy, reference: Any, mistakes: list[KnownMistake],
                 rtol: float, atol: float, observer: Observer | None = None,
                 ledger: Ledger | None = None) -> None:
        """``ledger``: where the learner's compared results of functions with known mistakes
        are kept for the whole exercise (``evidence.py``), or None."""
        self.learner, self.reference, self.mistakes = learner, reference, mistakes
        self.observer = observer
        self.ledger = ledger
        self.rtol, self.atol = rtol, atol
        self.comparisons: list[Comparison] = []
        self.notes: list[str] = []
        self.figures: list[dict[str, Any]] = []
        self._calls: list[tuple[str, tuple, dict]] = []  # the first calls, for ``inputs``
        self.size = 0                    # the most values in one checked call's inputs/result
        self.checks = 0                  # check.call / check.raises made so far
        self.valued = 0                  # check.call / check.equal made so far
        self._confirmed: set[str] = set()  # functions a passing check.call has confirmed
        self._rejected: list[str] = []     # functions check.raises has been used on
        self._probed: dict[tuple[str, str], tuple[bool, Any]] = {}  # the learner's probe calls
        self.functions: set[str] = set()   # the learner's functions this test has checked
        self.right: set[int] = set()  # the places of counted calls compared right
        self.counted: list[str] = []  # the test's counted calls (the engine's, ``confirm.py``)

    def _record_call(self, func: str, args: tuple, kwargs: dict) -> None:
        self.checks += 1
        self.functions.add(func)
        if len(self._calls) <= MAX_INPUTS:
            self._calls.append((func, args, kwargs))
        self.size = max(self.size, input_size(args, kwargs))

    @property
    def inputs(self) -> list[str]:
        """Summaries of the calls made so far (shown for public tests only; made when asked
        for: most tests never show them)."""
        shown = [call_summary(*call) for call in self._calls[:MAX_INPUTS]]
        return shown + (["... (more calls not shown)"] if len(self._calls) > MAX_INPUTS else [])

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
        self.valued += 1
        k = expected_values.key(self.reference, func, args, kwargs)
        expected = self._expected(k, func, args, kwargs)
        self.size = max(self.size, input_size((expected,), {}))
        noted = len(self.counted)
        with _expecting(self.learner, expected):
            try:
                actual = getattr(self.learner, func)(*args, **kwargs)
            except faults.LearnerFault:
                self._witness(func, args, kwargs, None, rtol, atol, raised=True)
                raise
            if timed:
                self._time_warm(func, args, kwargs, k)
        self.equal(actual, expected, rtol=rtol, atol=atol, what=what or f"{func}'s result",
                   mistake_call=(func, args, kwargs), confirms=func)
        self.right.update(range(noted, len(self.counted)))
        return actual

    def _time_warm(self, func: str, args: tuple, kwargs: dict, k: str | None) -> None:
        """Best of two runs of the reference (measured once per process and input), and the
        learner's call; a learner call slower than twice the reference is run once more, so
        that first-call warm-up is not counted against it."""
        def measure() -> float:
            runs = []
            for _ in range(2):
                started = time.perf_counter()
                self._expected(None, func, args, kwargs)
                runs.append(time.perf_counter() - started)
            return min(runs)

        ref_s = expected_values.reference_seconds(k, measure)
        learner_s = self.learner.last_call_seconds
        # the second run is uncounted (``optional``): whether it happens depends on the clock,
        # so it must not change the test's counted calls (``confirm.py``) nor the recordings
        if learner_s > 2 * ref_s and self.optional(func, *args, **kwargs) is not None:
            learner_s = min(learner_s, self.learner.last_call_seconds)
        self.note_runtime(func, learner_s, ref_s)

    def note_runtime(self, func: str, learner_s: float, reference_s: float) -> None:
        ratio = learner_s / max(reference_s, 1e-6)
        self.notes.append(f"runtime of {func}: yours {learner_s * 1e3:.1f} ms, the reference's "
                          f"{reference_s * 1e3:.1f} ms ({ratio:.1f}x; information, not graded)")

    @_observed
    def equal(self, actual: Any, expected: Any, *, rtol: float | None = None,
              atol: float | None = None, what: str = "the result",
              mistake_call: tuple[str, tuple, dict] | None = None,
              confirms: str | None = None,
              mistake_outputs: list[tuple[KnownMistake, Any]] | None = None) -> Comparison:
        """Fail unless ``actual`` matches ``expected`` within the tolerance.

        ``confirms``: the learner's function (or class) this value came from, for a test that
        also uses ``check.raises`` on it without ``check.call`` (see ``raises``).
        ``mistake_outputs``: known mistakes with their outputs already computed (a student
        release replays recorded ones), instead of running the mistakes of ``mistake_call``."""
        rtol = self.rtol if rtol is None else rtol
        atol = self.atol if atol is None else atol
        self.valued += 1
        self.functions.update(f for f in (confirms, mistake_call and mistake_call[0]) if f)
        try:
            cmp = compare(actual, expected, rtol=rtol, atol=atol)
        except UnsupportedExpected:
            raise  # the suite's expected value: a grader error
        except Exception as exc:  # noqa: BLE001 - the learner's value: its failed test
            raise uninterpretable(exc, what) from None
        self.comparisons.append(cmp)
        if mistake_call is not None and mistake_outputs is None:
            self._witness(*mistake_call, actual, rtol, atol, right=cmp.ok)
        self.notes.extend(n for n in cmp.notes if n not in self.notes)
        if cmp.expected_shape is not None:
            self.size = max(self.size, math.prod(cmp.expected_shape))
        if not cmp.ok:
            self._explain(cmp, actual, what, mistake_call, mistake_outputs, rtol, atol)
        cmp.release()
        if confirms is not None:
            self._confirmed.add(confirms)
        return cmp

    def _witness(self, func: str, args: tuple, kwargs: dict, value: Any, rtol: float | None,
                 atol: float | None, *, raised: bool = False, right: bool = False) -> None:
        """Keep a compared call of ``func`` for the exercise's evidence, where ``func`` has
        known mistakes (nothing else needs it)."""
        if self.ledger is not None and any(m.func == func for m in self.mistakes):
            self.ledger.add(Seen(func, args, kwargs, value, raised,
                                 self.rtol if rtol is None else rtol,
                                 self.atol if atol is None else atol, right))

    def _explain(self, cmp: Comparison, actual: Any, what: str,
                 mistake_call: tuple[str, tuple, dict] | None,
                 mistake_outputs: list[tuple[KnownMistake, Any]] | None, rtol: float,
                 atol: float) -> None:
        """Raise the ``GradeFailure`` of a failed comparison, with the known mistake and the
        regions it matches."""
        if mistake_call is not None:  # for the hints about precision
            cmp.input_max_abs = input_stats(mistake_call[1], mistake_call[2])[1]
        found = self._known_mistake(actual, mistake_call, mistake_outputs, rtol, atol)
        if mistake_call is not None:  # (also for a mistake the exercise's evidence refutes)
            cmp.regions = self._regions(mistake_call, cmp)
        message = f"{what}: {cmp.reason}"
        hidden = f"{what}: {cmp.hidden_reason}"
        if found is not None:
            message += f". {found.message}"
            hidden += f". {found.message}"
        failure = GradeFailure(message, cmp, found, hidden_message=hidden, what=what)
        if mistake_call is not None:
            failure.form = signature(mistake_call[1], mistake_call[2])
        raise failure

    def _known_mistake(self, actual: Any, call: tuple[str, tuple, dict] | None,
                       outputs: list[tuple[KnownMistake, Any]] | None, rtol: float,
                       atol: float) -> KnownMistake | None:
        """The known mistake ``actual`` matches (from ``outputs`` when given, else run on
        ``call``'s inputs), or None; None too when comparing with one fails on ``actual``."""
        try:
            if outputs is None:
                return self._match_mistake(actual, call, rtol, atol)
            return next((m for m, wrong in outputs
                         if compare(actual, wrong, rtol=rtol, atol=atol).ok), None)
        except (faults.LearnerFault, SandboxError):
            raise
        except Exception:  # noqa: BLE001 - the learner's value: no known mistake to name
            return None

    def _match_mistake(self, actual: Any, call: tuple[str, tuple, dict] | None, rtol: float,
                       atol: float) -> KnownMistake | None:
        if call is None:
            return None
        func, args, kwargs = call
        for m in self.mistakes:
            if m.func != func:
                continue
            try:  # the same inputs for every learner: each variant's output is kept
                wrong = mistake_output(m, args, kwargs)
            except Exception:  # noqa: BLE001 - a variant that cannot run on these inputs
                continue
            if compare(actual, wrong, rtol=rtol, atol=atol).ok and \
                    self._holds_on_probes(m, signature(args, kwargs), rtol, atol):
                return m
        return None

    def _holds_on_probes(self, m: KnownMistake, form: tuple[int, ...], rtol: float,
                         atol: float) -> bool:
        """Whether the learner also matches mistake ``m`` on the suite's probe calls of its
        function (``suite.probes``) of the failing call's ``form`` (``signature``: a 2-D input
        is not probed with 1-D ones: the code paths may differ), wherever ``m`` differs from
        the reference there."""
        for args in getattr(self.mistakes, "probes", {}).get(m.func, ()):
            if signature(args, {}) != form:
                continue
            try:
                wrong = mistake_output(m, args, {})
                right = self.expected(m.func, *args)
                if compare(wrong, right, rtol=rtol, atol=atol).ok:
                    continue  # the mistake does not show on this call
            except Exception:  # noqa: BLE001 - a variant that cannot run on these inputs
                continue
            key = (m.func, expected_values.key(None, m.func, args, {}) or repr(args))
            if key not in self._probed:
                try:
                    self._probed[key] = (True, getattr(self.learner, m.func)(*args))
                except faults.LearnerFault:
                    self._probed[key] = (False, None)
            ok, actual = self._probed[key]
            if not ok or not compare(actual, wrong, rtol=rtol, atol=atol).ok:
                return False
        return True

    def _regions(self, call: tuple[str, tuple, dict],
                 cmp: Comparison) -> list[tuple[str, str, np.ndarray]]:
        """The suite's regions of ``call``'s result (``suite.region``) that fit its shape."""
        func, args, kwargs = call
        found = []
        for r in getattr(self.mistakes, "regions", ()):
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
        if func not in self._rejected:
            self._rejected.append(func)
        where = f"(check {self.checks} of this test; a hidden test does not show its arguments)"
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
                               f"raised {exc.message}{why} {where}", kind="wrong_exception",
                               exc_type=exc_type) from None
        did = "built an object" if new else "returned normally"
        shown = _shown(args, kwargs)
        raise GradeFailure(f"{func}({shown}) should raise {exc_type}, but it {did}",
                           hidden_message=f"{func}(...) should raise {exc_type}, but it "
                           f"{did} {where}", kind="not_raised", exc_type=exc_type)

    @property
    def confirmed(self) -> frozenset[str]:
        """The functions a right value of this test came from (``check.call``, or
        ``check.equal(..., confirms=)``)."""
        return frozenset(self._confirmed)

    def unconfirmed(self) -> list[str]:
        """The functions this test used ``check.raises`` on but never confirmed with a right
        value (see ``raises``); ``verdict.decide`` turns a passing test with any into a grader
        error."""
        return [f for f in self._rejected if f not in self._confirmed]

    @_observed
    def fail(self, message: str, mistake: Any = None, *, kind: str | None = None) -> None:
        """Fail with ``message``; ``mistake`` (a ``@mistake`` function) names a known mistake;
        ``kind`` the kind of failure when it is not wrong values (``"shape"``, ``"type"``,
        ``"nan"``, ...: what ``hints`` and a test's ``hint_for`` go by)."""
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
                               f"({str(exc).split('. ')[0]})", kind="type") from None

    @_observed
    def that(self, condition: bool, message: str, *, kind: str | None = None) -> None:
        """Fail with ``message`` unless ``condition`` holds (for property tests); ``kind`` as
        for ``fail`` (None: the result's values do not have the property)."""
        if not condition:
            raise GradeFailure(message, kind=kind)

    @_observed
    def curve(self, title: str, series: list[dict[str, Any]], *, x_label: str, y_label: str,
              log_x: bool = False, log_y: bool = False, marks: list[dict[str, Any]] = (),
              note: str = "") -> None:
        """Attach a line chart (drawn in the HTML report, passed or failed); see
        ``figures.curve``. Draw it from the learner's own outputs: for a hidden test it must
        show no expected value."""
        self.figures.append(figures.curve(title, series, x_label=x_label, y_label=y_label,
                                          log_x=log_x, log_y=log_y, marks=marks, note=note))

    @_observed
    def optional(self, func: str, *args: Any, **kwargs: Any) -> Any:
        """The learner's ``func(*args, **kwargs)``, or None when it faults (for figures, or a
        timing's second run: a call that must never change the test's verdict, nor the count
        of its points: ``engine/confirm.py`` does not note it)."""
        with _unnoted(self.learner):
            try:
                return getattr(self.learner, func)(*args, **kwargs)
            except faults.LearnerFault:
                return None
