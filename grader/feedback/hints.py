"""Which hint a learner sees: the one module that decides, from the evidence.

A failed test can show three things beside its message, each chosen here and nowhere else:

- a **kind hint** (``classify``): what the failure's kind usually means, or what was measured
  about the learner's output (``observations.py``: where the wrong values are, a relation that
  holds everywhere). Each piece of advice has a precondition checked from the evidence
  (``_shape``, ``_tolerance``'s ``CLOSE_TIMES``, ``SizeContext.large_only``, the ``[[raised]]``
  table's classes and patterns); where none holds, the hint says what was measured and stops.
  A cause is named only by a known mistake (its message, with ``evidence`` ``agreed``) or by a
  region the exercise declares. At ``graded`` a hidden test's kind hint is the kind's fixed text
  (``graded``), naming nothing measured.
- the **test's own hint** (``@graded(hint=..., hint_for=...)``, ``own``): shown only on a failure
  of a kind it is about (``failure_kinds``), never beside a known mistake or a fault that says
  everything itself, and unasked only where the evidence localises the failure to that test
  (``localised``); else the exercise's first such test points to ``grade hint SLUG``, once.
- a kind hint already said word for word (but for numbers) by an earlier test of the exercise
  becomes a pointer to that test (``Paragraphs.once``).

Every text is data: ``hints.toml`` beside this module (``text``), its tables keyed by the
``FailureKind`` values (``grader/failure_kinds.py``, the one vocabulary of kinds, with their
labels). A text never quotes an expected value or an input; it may describe the learner's own
output.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from grader.failure_kinds import DESCRIPTIONS, FailureKind
from grader.feedback import observations
from grader.judge.compare import Comparison
from grader.results import TestResult

_TABLE: dict[str, Any] = tomllib.loads((Path(__file__).with_name("hints.toml")).read_text())


def text(key: str, **values: Any) -> str:
    """The text ``key`` ("section.name") of ``hints.toml``, its placeholders filled from
    ``values``; a value "@section.name" is that entry's text. An unknown key raises KeyError."""
    section, name = key.split(".", 1)
    found = _TABLE[section][name]
    if found.startswith("@"):
        return text(found[1:], **values)
    return found.format(**values) if values else found


# What each failure kind usually means at ``graded`` (``feedback.render``): fixed texts.
GRADED_KINDS = frozenset(FailureKind(kind) for kind in _TABLE["graded"])


def graded(kind: str | None) -> str:
    """A graded hidden test's kind hint: the kind's fixed text, "" for a kind without one."""
    return text(f"graded.{kind}") if kind in GRADED_KINDS else ""


# The failure kinds a test's own hint can be about (``@graded(hint_for=...)``).
HINT_KINDS = DESCRIPTIONS
# What a hint without ``hint_for`` is about (a replayed public test of a student release).
DEFAULT_HINT_FOR = (FailureKind.VALUES,)


def failure_kinds(base: str | None, classified: str | None, *,
                  large: bool = False) -> frozenset[FailureKind]:
    """The ``HINT_KINDS`` a failure is: ``base`` is what it says about itself (a comparison's
    or a ``GradeFailure``'s kind, ``raised``, ``timeout``, ``crashed``; None: a property the
    test checks, so ``values``), named by a hint as ``FailureKind.hinted`` says;
    ``classified`` what ``classify`` made of it (``precision`` for close values), ``large``
    whether the smaller tests of the exercise passed."""
    if base is None:
        hinted: FailureKind | None = FailureKind.VALUES
    else:
        kind = FailureKind.of(base)
        hinted = kind.hinted if kind is not None else None
    if classified == FailureKind.PRECISION:
        hinted = FailureKind.PRECISION
    kinds = {hinted}
    if large or classified == FailureKind.LARGE:
        kinds.add(FailureKind.LARGE)
    return frozenset(k for k in kinds if k is not None)


@dataclass
class SizeContext:
    """The test's size (values in its inputs and expected results) and the smaller tests of
    the same exercise that ran before it."""

    size: int = 0
    smaller_passed: int = 0     # earlier tests at most a quarter of the size, all passed
    smaller_max: int = 0        # the largest of them
    tokens: bool = True         # the exercise's results count tokens (it takes n_prefix)

    @property
    def large_only(self) -> bool:
        return self.smaller_passed >= 2 and self.size > 0


def classify(*, status: str, kind: str | None, comparison: Comparison | None = None,
             exc_type: str | None = None, exc_message: str = "",
             expected_exc: str | None = None, mistake: bool = False,
             sizes: SizeContext | None = None) -> tuple[FailureKind | None, str]:
    """``(kind, hint)`` for a test that did not pass; ``(None, "")`` when nothing applies.

    ``kind`` is what the failure already says about itself (``GradeFailure.kind`` or the
    comparison's: a ``FailureKind`` or its value, or a suite's own word), ``exc_type`` the
    learner's exception type for an ``error``.
    """
    sizes = sizes or SizeContext()
    if mistake:
        return FailureKind.KNOWN_MISTAKE, ""
    if kind == FailureKind.RULE:
        return FailureKind.RULE, text("kind.rule")
    if kind == FailureKind.NOT_RAISED:
        return FailureKind.NOT_RAISED, text("kind.not_raised", exc=expected_exc or "the error")
    if kind == FailureKind.WRONG_EXCEPTION:
        return FailureKind.WRONG_EXCEPTION, text(
            "kind.wrong_exception", exc=expected_exc or "error", it=expected_exc or "it")
    if kind == FailureKind.NAN and comparison is None:
        return FailureKind.NAN, _nan_generic()
    if kind in _BY_COMPARISON and (comparison is not None
                                   or kind in (FailureKind.TYPE, FailureKind.NONE)):
        found = _BY_COMPARISON[kind](comparison, sizes)
        if found is not None:
            return found
    if status == "error" and exc_type:
        if sizes.large_only:
            return FailureKind.LARGE, _large_text("raised " + exc_type, sizes)
        return FailureKind.RAISED, _raised(exc_type, exc_message)
    if status in ("timeout", "crashed") or (
            status == "failed" and comparison is not None
            and kind in (FailureKind.VALUES, FailureKind.TOLERANCE, None)):
        if sizes.large_only:
            what = {"timeout": "timed out", "crashed": "crashed the process"}.get(
                status, "gives wrong values")
            return FailureKind.LARGE, _large_text(what, sizes)
    if status == "crashed":
        return FailureKind.CRASHED, text("kind.crashed")
    return None, ""

def own(hint: str, hint_for: frozenset[str], kinds: frozenset[FailureKind]) -> str:
    """A test's own hint (the suite's), shown where the failure is of a kind it is about."""
    return hint if hint_for & kinds else ""


def agreed(n: int, func: str) -> str:
    """What a named mistake rests on: the learner's results equal it on ``n`` inputs."""
    return text("evidence.agreed", n=n, func=func)


def fix_first(func: str, first: str) -> str:
    """The kind hint of a failure of ``func`` that calls ``first``, which fails its own tests:
    no cause of ``func``'s own is named (``evidence.py``)."""
    return text("evidence.fix_first", func=func, first=first)


def of_fault(fault: FailureKind) -> tuple[FailureKind, str]:
    """``(kind, hint)`` of a fault whose message says what happened: ``NOT_RUN`` (the
    exercise's calls hang), ``MODIFIED`` (arguments changed in place)."""
    return fault, text(f"kind.{fault}")


def unconfirmed() -> str:
    """The kind hint of a passing test whose points are not counted (``confirm.py``)."""
    return text("kind.unconfirmed")

# -- comparisons ---------------------------------------------------------------------------------

def _axes(indices: list[int]) -> str:
    return ("axis " if len(indices) == 1 else "axes ") + \
        ", ".join(str(i) for i in indices[:-1]) + \
        (" and " if len(indices) > 1 else "") + str(indices[-1])


def _shape(cmp: Comparison, sizes: SizeContext) -> str:
    """The advice whose precondition the two shapes meet (the ``[shape]`` texts), in order."""
    exp, act = tuple(cmp.expected_shape or ()), tuple(cmp.actual_shape or ())
    if exp == ():
        return text("shape.scalar_expected", actual=act)
    if len(act) == len(exp) >= 2 and act == exp[::-1]:
        return text("shape.reversed")
    if len(act) == len(exp) and sorted(act) == sorted(exp):
        return text("shape.permuted")
    if len(act) != len(exp) and int(np.prod(act)) == int(np.prod(exp)) and \
            1 not in act + exp:
        return text("shape.rearranged_axes")
    if len(act) == len(exp) + 1:
        for i in range(len(act)):
            if act[:i] + act[i + 1:] == exp:
                if act[i] == 1:
                    return text("shape.extra_unit_axis", i=i)
                if i == 0:
                    return text("shape.extra_leading_axis", size=act[0])
                return text("shape.extra_axis", i=i, size=act[i])
    if len(act) + 1 == len(exp):
        for i in range(len(exp)):
            if exp[:i] + exp[i + 1:] == act:
                if exp[i] == 1:
                    return text("shape.missing_unit_axis", i=i)
                if i == 0:
                    return text("shape.missing_leading_axis", size=exp[0])
                return text("shape.missing_axis", i=i, size=exp[i])
    if len(act) != len(exp):
        return text("shape.axes_count", actual=len(act), expected=len(exp))
    if int(np.prod(act)) == int(np.prod(exp)):
        return text("shape.rearranged")
    differ = [i for i in range(len(exp)) if act[i] != exp[i]]
    gaps = {act[i] - exp[i] for i in differ}
    where = _axes(differ).capitalize()
    if len(gaps) == 1:
        gap = gaps.pop()
        if abs(gap) == 1 and len(differ) == 1:
            key = "off_by_one_tokens" if _may_count_tokens(exp, differ, 1, sizes) else \
                "off_by_one"
            return text(f"shape.{key}", Where=where, actual=act[differ[0]],
                        expected=exp[differ[0]])
        said = dict(Where=where, each="each have" if len(differ) > 1 else "has", n=abs(gap),
                    entries="entry" if abs(gap) == 1 else "entries")
        if not _may_count_tokens(exp, differ, gap, sizes):
            return text("shape.lengths", few_or_many="few" if gap < 0 else "many", **said)
        return text("shape.too_few_tokens" if gap < 0 else "shape.too_many_tokens", **said)
    return text("shape.differ", Where=where, actual=act, expected=exp)


def _may_count_tokens(exp: tuple[int, ...], differ: list[int], gap: int,
                      sizes: SizeContext) -> bool:
    """The precondition of advice about prefix tokens on a wrong shape: the exercise counts
    tokens, and each axis that differs could count them: one entry off (a class token), or a
    gap of a few prefix tokens (at most 4, under half the axis) on an axis that holds a prefix
    and a grid of at least 2 x 2 patches (5 or more entries)."""
    return sizes.tokens and all(abs(gap) == 1 or (exp[i] >= 5 and abs(gap) <= 4
                                                  and 2 * abs(gap) < exp[i]) for i in differ)


def _dtype_kind(name: str) -> str:
    """The kind letter of a dtype by name (``"f"`` for ``"float32"``); ``""`` for none or one
    numpy does not know by that name."""
    try:
        return np.dtype(name).kind if name else ""
    except (TypeError, ValueError, SyntaxError):
        return ""


def _dtype(cmp: Comparison, sizes: SizeContext) -> str:
    """The ``[dtype]`` advice for the two dtypes' kind letters."""
    exp, act = _dtype_kind(cmp.expected_dtype), _dtype_kind(cmp.actual_dtype)
    if exp == "b":
        key = "bool_expected"
    elif exp == "f" and act in "iu":
        key = "float_not_int"
    elif exp == "f" and act == "b":
        key = "float_not_bool"
    elif exp in "iu" and act == "f":
        key = "int_not_float"
    elif exp in "iu" and act == "b":
        key = "int_not_bool"
    elif act == "c":
        key = "complex"
    else:
        key = "other"
    return text(f"dtype.{key}")


def _nan_generic() -> str:
    return text("nan.sources") + " " + text("nan.find")


def _nan(cmp: Comparison, sizes: SizeContext) -> tuple[FailureKind, str]:
    act, exp = cmp.actual_array, cmp.expected_array
    if act is None or exp is None:
        return FailureKind.NAN, _nan_generic()
    new_nan = np.isnan(act) & ~np.isnan(exp)
    if not new_nan.any():
        return FailureKind.NAN, text("nan.expected_nan")
    # (a NaN or inf hint is shown at every feedback level: it names no index)
    n = int(new_nan.sum())
    if observations.rows_all_nan(act, new_nan):
        seen = "Whole rows of your result are NaN, and no other value is."
    elif n == act.size and n > 1:
        seen = f"Every value of your result is NaN ({n} values)."
    else:
        place = observations.place(new_nan, named=False) if n > 1 else ""
        seen = f"All {n} NaN values of yours are {place}." if place else ""
    also = " " + text("nan.with_inf") if np.isinf(act).any() else ""
    return FailureKind.NAN, (seen + also + " " + _nan_generic()).strip()


def _inf(cmp: Comparison, sizes: SizeContext) -> tuple[FailureKind, str]:
    act, exp = cmp.actual_array, cmp.expected_array
    if act is not None and exp is not None and (np.isinf(exp) & ~np.isinf(act)).any():
        return FailureKind.INF, text("inf.expected_inf")
    seen = ""
    if act is not None and exp is not None:
        wrong = np.isinf(act) & ~np.isinf(exp)
        n = int(wrong.sum())
        place = observations.place(wrong, named=False) if n > 1 else ""
        seen = f"All {n} inf values of yours are {place}. " if place else ""
    return FailureKind.INF, seen + text("inf.sources")


def _tolerance(cmp: Comparison, sizes: SizeContext) -> tuple[FailureKind, str] | None:
    rel = cmp.max_rel_error
    act, exp = cmp.actual_array, cmp.expected_array
    ratio = None
    if act is not None and exp is not None and cmp.rtol is not None:
        fin = np.isfinite(exp) & np.isfinite(act)
        allowed = cmp.atol + cmp.rtol * np.abs(exp[fin])
        with np.errstate(all="ignore"):
            r = np.abs(act[fin] - exp[fin]) / np.where(allowed > 0, allowed, np.inf)
        ratio = float(r.max()) if r.size else None
    # close: within CLOSE_TIMES of what is allowed, and small next to the values themselves
    # (a rounding or a truncated series, not a wrong formula)
    scale = float(np.abs(exp[np.isfinite(exp)]).max()) if exp is not None and \
        np.isfinite(exp).any() else 0.0
    share = cmp.max_abs_error / scale if scale > 0 and cmp.max_abs_error is not None else rel
    close = share is not None and share <= 1e-3 and (
        ratio <= CLOSE_TIMES if ratio is not None else rel is not None and rel <= 1e-3)
    if not close:
        return _values(cmp, sizes)
    grows = text("precision.grows") if sizes.large_only else ""
    times = text("precision.times", ratio=f"{ratio:.3g}") if ratio else ""
    if cmp.actual_dtype in ("float32", "float16"):
        key = "float32_result"
    elif act is not None and observations.float32_numbers(act):
        key = "float32_numbers"
    else:
        key = "other"
    return FailureKind.PRECISION, text(f"precision.{key}", times=times) + grows


# "close" (the precision hint) is within this many times what the tolerance allows
CLOSE_TIMES = 100


def _values(cmp: Comparison, sizes: SizeContext) -> tuple[FailureKind, str] | None:
    """How and where a plainly wrong result is wrong, as measured on the learner's output
    (``observations``): a relation to the expected values that holds everywhere, or where the
    wrong values lie (an exercise's region, a few rows or columns), which way they are off,
    and row sums."""
    act, exp, bad = cmp.actual_array, cmp.expected_array, cmp.outside
    if act is None or exp is None or bad is None or act.ndim == 0 or not bad.any():
        return None
    if sizes.large_only:
        return None  # classify() gives the "large" hint
    seen = observations.relation(cmp, act, exp) or \
        observations.observe(bad, act, exp, cmp.regions)
    return (FailureKind.VALUES, seen) if seen else None


# The advice for a comparison's kind: ``(kind, hint)``, or None where nothing was measured.
_BY_COMPARISON: dict[FailureKind, Callable[[Any, SizeContext],
                                            tuple[FailureKind, str] | None]] = {
    FailureKind.SHAPE: lambda cmp, s: (FailureKind.SHAPE, _shape(cmp, s)),
    FailureKind.DTYPE: lambda cmp, s: (FailureKind.DTYPE, _dtype(cmp, s)),
    FailureKind.NAN: _nan,
    FailureKind.INF: _inf,
    FailureKind.TOLERANCE: _tolerance,
    FailureKind.VALUES: _values,
    FailureKind.TYPE: lambda cmp, s: (FailureKind.TYPE, text("kind.type")),
    FailureKind.NONE: lambda cmp, s: (FailureKind.NONE, text("kind.none")),
}


# -- exceptions and sizes ------------------------------------------------------------------------

@dataclass(frozen=True)
class ExceptionAdvice:
    """Advice for an exception, given only under its precondition: the exception's class is
    one of ``classes`` (by name, a module prefix dropped) and, when ``says`` is set, its
    message matches that pattern (case-insensitive). The first rule of ``RAISED`` that holds
    gives the text; where none holds, the hint says what happened and nothing more."""

    classes: tuple[str, ...]
    says: str | None
    text: str

    def holds(self, base: str, message: str) -> bool:
        return base in self.classes and (
            self.says is None or re.search(self.says, message, re.IGNORECASE) is not None)


RAISED: tuple[ExceptionAdvice, ...] = tuple(
    ExceptionAdvice(tuple(r["classes"]), r.get("says"), r["text"]) for r in _TABLE["raised"])


def _raised(exc_type: str, message: str) -> str:
    """The advice of the first ``RAISED`` rule whose precondition holds, else what happened."""
    base = exc_type.rsplit(".", 1)[-1]
    for advice in RAISED:
        if advice.holds(base, message):
            return advice.text
    return text("kind.raised", exc=base)


def _large_text(what: str, sizes: SizeContext) -> str:
    return text("kind.large", passed=sizes.smaller_passed, smaller_max=f"{sizes.smaller_max:,}",
                size=f"{sizes.size:,}", what=what)


# -- what one submission already said --------------------------------------------------------------

_NUMBER = re.compile(r"\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _gist(said: str) -> str:
    return _NUMBER.sub("#", said)


def localised(tests: list[tuple[str, bool, frozenset[str]]]) -> set[str]:
    """Of ``tests`` (name, failed, the learner functions it checked), the failed ones that no
    other failed test shares a function with; a test that checked none (a source rule) is
    localised only where it is the one failed test."""
    failed = [(name, funcs) for name, bad, funcs in tests if bad]
    return {name for name, funcs in failed if not any(
        other != name and (funcs & theirs or not funcs) for other, theirs in failed)}


class Paragraphs:
    """The paragraphs already said in one submission, per exercise: a test's own hint is
    shown once per exercise, and only where its failure is ``localised`` (else the first such
    test points to ``grade hint SLUG`` instead); a kind hint said before becomes a pointer to
    the test that said it. Faults shared by the tests they stop are grouped by the writers
    (``report/summary.shared_causes``) and left alone here."""

    def __init__(self) -> None:
        self._hinted: set[str] = set()
        self._said: dict[tuple[str, str], str] = {}

    def once(self, slug: str, result: TestResult, *, localised: bool = True,
             functions: frozenset[str] = frozenset()) -> TestResult:
        """``result`` with what its exercise already said taken out (changed in place);
        ``localised``: whether the evidence localises its failure to this test (``localised``),
        else its hint gives way to the pointer, once per exercise; ``functions``: the learner
        functions it checked (named in the pointer)."""
        if result.passed or result.fault is not None:
            return result
        if result.hint and not localised:
            result.hint = "" if slug in self._hinted else text(
                "evidence.pointer",
                funcs=" and ".join(f"`{f}`" for f in sorted(functions)) or "this exercise",
                slug=slug)
            self._hinted.add(slug)
        elif result.hint:
            if slug in self._hinted:
                result.hint = ""
            else:
                self._hinted.add(slug)
        if result.kind_hint:
            key = (slug, _gist(result.kind_hint))
            first = self._said.setdefault(key, result.name)
            if first != result.name:
                result.kind_hint = text("evidence.repeated", first=first)
        return result
