"""Hints that answer the failure: what the grader measured about it.

``classify`` looks at how a test failed (the comparison, the learner's exception, the test's
place among the exercise's tests) and returns ``(kind, text)``: the kind of failure and a
hint for it, shown beside the test's own hint. The text never quotes an expected value or an
input (it is shown for hidden tests too); it may describe the learner's own output (where the
NaNs are, which axis differs).

Observations before guesses: where and how a result is wrong is stated as a fact measured on
the learner's output ("all 9 wrong values are in column 0", "every row of yours sums to
0.5"), never as a cause guessed from a pattern. A cause is named only by a known mistake
(``suite.mistake``, whose message is then the hint) or by a region the exercise declares
(``suite.region``: "in the rows and columns of the prefix tokens", with what the exercise
knows about values there).

Kinds: ``shape``, ``dtype``, ``type``, ``none``, ``nan``, ``inf``, ``precision``, ``values``,
``large`` (right on the smaller tests of the exercise, wrong, failing or too slow on this
larger one), ``raised``, ``not_raised``, ``wrong_exception``, ``crashed``, ``rule``,
``known_mistake`` (the mistake's own message is the hint). A timeout gets no kind hint of its
own (the test's hint speaks to speed) unless it is a ``large`` one.

A test's own hint declares the failure kinds it is about (``HINT_KINDS``,
``@graded(hint_for=...)``); ``failure_kinds`` says which kinds a failure is, and the verdict
shows the hint only where they meet.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from grader.failure_kinds import DESCRIPTIONS
from grader.numbers import value as fmt

from .compare import Comparison

LABELS = {
    "shape": "wrong shape", "dtype": "wrong dtype", "type": "wrong type", "none": "no result",
    "nan": "NaN", "inf": "inf", "precision": "precision",
    "values": "where it is wrong", "large": "large inputs", "raised": "exception",
    "not_raised": "no exception", "wrong_exception": "wrong exception",
    "crashed": "crash", "rule": "source rule", "known_mistake": "known mistake",
    "not_run": "finding the loop", "unconfirmed": "not counted",
    "modified": "arguments changed",
}
# The kind hint of a test not run because the exercise's calls hang (a loop that never ends).
NOT_RUN = ("Call your function yourself on a small input and press Ctrl-C while it hangs: "
           "the traceback shows the line it was running. Check each while loop's condition, "
           "and that every step moves towards it.")

RULE = ("The grader reads your source (without running it) for what this exercise rules out: "
        "write that step yourself, it is the point of the exercise.")
UNCONFIRMED = ("A result counts only when the same function is also right where each of its "
               "parameters takes other values: a right answer on these inputs alone may come "
               "from the examples rather than from the parameters. Check that every parameter "
               "is used, and for every value the contract allows.")
MODIFIED = ("Your function changed an array or list it was given (an in-place operation: "
            "x /= ..., x[...] = ..., list.sort(), np.copyto, out=...). The caller still needs "
            "its inputs: work on a copy (x = x.copy(), sorted(values)) before changing one.")
CRASHED = ("The process running your code ended: sys.exit or os._exit, memory exhausted by a "
           "huge intermediate array, or a crash in native code.")

# What a named known mistake rests on (engine/evidence.py), after the suite's message.
AGREED = ("(Your results equal this mistake's on all {n} inputs of {func} that this exercise "
          "compared.)")

# A function whose reference calls another of the exercise, which failed its own tests: no
# cause of its own is named (``evidence.py``).
FIX_FIRST = ("{func} calls your {first}, which fails its own tests: fix {first} first, then "
             "see whether this test still fails.")

# The failure kinds a test's own hint can be about (``@graded(hint_for=...)``).
HINT_KINDS = DESCRIPTIONS
# What a hint without ``hint_for`` is about (a replayed public test of a student release).
DEFAULT_HINT_FOR = ("values",)
_BASE_KINDS = {"tolerance": "values", "none": "type", None: "values"}


def failure_kinds(base: str | None, classified: str | None, *,
                  large: bool = False) -> frozenset[str]:
    """The ``HINT_KINDS`` a failure is: ``base`` is what it says about itself (a comparison's
    or a ``GradeFailure``'s kind, ``raised``, ``timeout``, ``crashed``; None: a property the
    test checks), ``classified`` what ``classify`` made of it (``precision`` for close values),
    ``large`` whether the smaller tests of the exercise passed."""
    kind = _BASE_KINDS.get(base, base)
    if classified == "precision":
        kind = "precision"
    kinds = {kind}
    if large or classified == "large":
        kinds.add("large")
    return frozenset(kinds & set(HINT_KINDS))


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
             sizes: SizeContext | None = None) -> tuple[str | None, str]:
    """``(kind, hint)`` for a test that did not pass; ``(None, "")`` when nothing applies.

    ``kind`` is what the failure already says about itself (``GradeFailure.kind`` or the
    comparison's), ``exc_type`` the learner's exception type for an ``error``.
    """
    sizes = sizes or SizeContext()
    if mistake:
        return "known_mistake", ""
    if kind == "rule":
        return "rule", RULE
    if kind == "not_raised":
        return kind, (f"Check the arguments at the top of the function and raise "
                      f"{expected_exc or 'the error'} with a clear message; returning a value "
                      f"for an invalid argument hides the caller's bug. The test's description "
                      f"lists which arguments are invalid, in the order they are tried.")
    if kind == "wrong_exception":
        return kind, (f"An exception from deeper down (an IndexError, a numpy error) is not "
                      f"the contract's {expected_exc or 'error'}: test the condition yourself "
                      f"before computing and raise {expected_exc or 'it'} explicitly.")
    if kind == "nan" and comparison is None:
        return "nan", _NAN_GENERIC
    if kind in _BY_COMPARISON and (comparison is not None or kind in ("type", "none")):
        found = _BY_COMPARISON[kind](comparison, sizes)
        if found is not None:
            return found
    if status == "error" and exc_type:
        if sizes.large_only:
            return "large", _large_text("raised " + exc_type, sizes)
        return "raised", _raised(exc_type, exc_message)
    if status in ("timeout", "crashed") or (status == "failed" and comparison is not None
                                             and kind in ("values", "tolerance", None)):
        if sizes.large_only:
            what = {"timeout": "timed out", "crashed": "crashed the process"}.get(
                status, "gives wrong values")
            return "large", _large_text(what, sizes)
    if status == "crashed":
        return "crashed", CRASHED
    return None, ""


# -- comparisons ---------------------------------------------------------------------------------

def _axes(indices: list[int]) -> str:
    return ("axis " if len(indices) == 1 else "axes ") + \
        ", ".join(str(i) for i in indices[:-1]) + \
        (" and " if len(indices) > 1 else "") + str(indices[-1])


def _shape(cmp: Comparison, sizes: SizeContext) -> tuple[str, str]:
    exp, act = tuple(cmp.expected_shape or ()), tuple(cmp.actual_shape or ())
    if exp == ():
        return "shape", (f"Your result has shape {act} where a single number is expected: "
                         f"reduce it (a sum, a mean, .item()) or drop the leftover axis.")
    if len(act) == len(exp) >= 2 and act == exp[::-1]:
        return "shape", ("Your shape is the expected one reversed: a transpose (.T) or two "
                         "axes swapped. Check which axis is which in the contract (rows or "
                         "columns, queries or keys, inputs or outputs).")
    if len(act) == len(exp) and sorted(act) == sorted(exp):
        return "shape", ("The right axes in a different order: a transpose, permute or "
                         "moveaxis. Compare the order of your axes with the contract's.")
    if len(act) != len(exp) and int(np.prod(act)) == int(np.prod(exp)) and \
            1 not in act + exp:
        return "shape", ("The right number of values arranged differently: check the reshape "
                         "(row-major order, (H, W) or (W, H), a flattened grid).")
    if len(act) == len(exp) + 1:
        for i in range(len(act)):
            if act[:i] + act[i + 1:] == exp:
                if act[i] == 1:
                    return "shape", (f"An extra axis of size 1 at position {i}: keepdims=True, "
                                     f"or a [None] / unsqueeze left in. Squeeze it.")
                if i == 0:
                    return "shape", (f"Your result has an extra leading axis, of size "
                                     f"{act[0]}, before the contract's axes: which axis of "
                                     f"that size does the contract reduce (a mean, a sum) or "
                                     f"index away?")
                return "shape", (f"Your result has an extra axis {i}, of size {act[i]}: which "
                                 f"axis of that size does the contract sum, average or index "
                                 f"away?")
    if len(act) + 1 == len(exp):
        for i in range(len(exp)):
            if exp[:i] + exp[i + 1:] == act:
                if exp[i] == 1:
                    return "shape", (f"Axis {i}, of size 1, is missing: keep it "
                                     f"(keepdims=True or [None]).")
                if i == 0:
                    return "shape", (f"Your result lacks the contract's leading axis (of size "
                                     f"{exp[0]}): the contract keeps it. Find the step that "
                                     f"reduces it or indexes it away.")
                return "shape", (f"Your result lacks the contract's axis {i} (of size "
                                 f"{exp[i]}): the contract keeps it. Find the step that "
                                 f"reduces or squeezes it.")
    if len(act) != len(exp):
        return "shape", (f"Your result has {len(act)} axes, the contract's has {len(exp)}: "
                         f"reread the contract's shape line for the order and meaning of "
                         f"the axes.")
    if int(np.prod(act)) == int(np.prod(exp)):
        return "shape", ("The right number of values arranged differently: check the reshape "
                         "(row-major order, (H, W) or (W, H)).")
    differ = [i for i in range(len(exp)) if act[i] != exp[i]]
    gaps = {act[i] - exp[i] for i in differ}
    where = _axes(differ)
    if len(gaps) == 1:
        gap = gaps.pop()
        if abs(gap) == 1 and len(differ) == 1:
            return "shape", (f"{where.capitalize()} is off by one ({act[differ[0]]} entries "
                             f"instead of {exp[differ[0]]}): check the range or slice bound "
                             f"that sets its length, and what it counts" + (
                                 " (if tokens: the prefix tokens too)." if
                                 _may_count_tokens(exp, differ, 1, sizes) else "."))
        entries = "entry" if abs(gap) == 1 else "entries"
        each = "each have" if len(differ) > 1 else "has"
        if not _may_count_tokens(exp, differ, gap, sizes):
            return "shape", (f"{where.capitalize()} {each} {abs(gap)} {entries} too "
                             f"{'few' if gap < 0 else 'many'}: check the ranges, slices or "
                             f"conditions that set their lengths.")
        if gap < 0:
            return "shape", (f"{where.capitalize()} {each} {-gap} {entries} too few: check the "
                             f"ranges or slices that set their lengths and, if they count "
                             f"tokens, whether the prefix tokens (class token, registers) are "
                             f"included.")
        return "shape", (f"{where.capitalize()} {each} {gap} {entries} too many: check the "
                         f"ranges or slices that set their lengths and, if they count tokens, "
                         f"whether the prefix tokens are counted twice, or added where only "
                         f"the patch grid belongs.")
    return "shape", (f"{where.capitalize()} differ ({act} instead of {exp}): check how each "
                     f"axis's length follows from the arguments.")


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


def _dtype(cmp: Comparison, sizes: SizeContext) -> tuple[str, str]:
    exp, act = _dtype_kind(cmp.expected_dtype), _dtype_kind(cmp.actual_dtype)
    if exp == "b":
        text = ("The contract asks for a boolean array (dtype bool): build it from comparisons "
                "(a <= b, np.abs(d) <= r) or with astype(bool). A 0/1 array of numbers is not "
                "a mask: indexing with it picks elements 0 and 1.")
    elif exp == "f" and act in "iu":
        text = ("The contract returns floats; yours are integers. That happens when the output "
                "starts as np.zeros_like of an integer array, or with integer division (//): "
                "create the output as float.")
    elif exp == "f" and act == "b":
        text = ("You return booleans where numbers are expected: return the values, or "
                "convert with astype(float).")
    elif exp in "iu" and act == "f":
        text = ("The contract returns integers (counts or indices); yours are floats (a mean, "
                "a division, np.floor). Use integer arithmetic or astype(int).")
    elif exp in "iu" and act == "b":
        text = "The contract counts; you return booleans: sum the mask (mask.sum())."
    elif act == "c":
        text = ("Complex values come from np.fft or the square root of a negative number: the "
                "contract's values are real.")
    else:
        text = "Convert your result to the contract's dtype class (bool, int or float)."
    return "dtype", text


def _rows_all_nan(act: np.ndarray, bad: np.ndarray) -> bool:
    if act.ndim < 2:
        return False
    rows = np.isnan(act).all(axis=-1)
    return bool(rows.any()) and bool((bad <= np.broadcast_to(rows[..., None], act.shape)).all())


def _nan(cmp: Comparison, sizes: SizeContext) -> tuple[str, str]:
    act, exp = cmp.actual_array, cmp.expected_array
    if act is None or exp is None:
        return "nan", _NAN_GENERIC
    new_nan = np.isnan(act) & ~np.isnan(exp)
    if not new_nan.any():
        return "nan", ("Where yours is a number the contract's value is NaN (undefined: "
                       "nothing to interpolate, no data): return float('nan') there.")
    # (a NaN or inf hint is shown at every feedback level: it names no index)
    n = int(new_nan.sum())
    if _rows_all_nan(act, new_nan):
        seen = "Whole rows of your result are NaN, and no other value is."
    elif n == act.size and n > 1:
        seen = f"Every value of your result is NaN ({n} values)."
    else:
        place = _place(new_nan, named=False) if n > 1 else ""
        seen = f"All {n} NaN values of yours are {place}." if place else ""
    also = " Your result also holds inf, and inf - inf, inf / inf and 0 * inf are NaN." \
        if np.isinf(act).any() else ""
    return "nan", (seen + also + " " + _NAN_GENERIC).strip()


NAN_SOURCES = ("NaN comes from 0/0, inf - inf, inf / inf, 0 * inf, log or sqrt of a negative "
               "number, or the mean of an empty slice (and inf from a division by 0 or exp of "
               "a large number).")
_NAN_GENERIC = NAN_SOURCES + " Run your function on a tiny input and find the first NaN with " \
    "np.isnan."


def _inf(cmp: Comparison, sizes: SizeContext) -> tuple[str, str]:
    act, exp = cmp.actual_array, cmp.expected_array
    if act is not None and exp is not None and (np.isinf(exp) & ~np.isinf(act)).any():
        return "inf", ("Where the contract's value is infinite (an unbounded quantity, e.g. a "
                       "fit with too few rows), yours is a finite number: return math.inf "
                       "there.")
    seen = ""
    if act is not None and exp is not None:
        wrong = np.isinf(act) & ~np.isinf(exp)
        n = int(wrong.sum())
        place = _place(wrong, named=False) if n > 1 else ""
        seen = f"All {n} inf values of yours are {place}. " if place else ""
    return "inf", (seen + "inf where the result is finite comes from a division by zero or an "
                   "overflow (exp of a large number, a product of large numbers, a float16 or "
                   "float32 intermediate).")


def _tolerance(cmp: Comparison, sizes: SizeContext) -> tuple[str, str] | None:
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
    grows = (" The smaller tests pass, so the error grows with the size: a long sum "
             "accumulated in float32 loses digits.") if sizes.large_only else ""
    times = f" (the largest error is {ratio:.3g} times what is allowed)" if ratio else ""
    if cmp.actual_dtype in ("float32", "float16"):
        return "precision", (f"Close, but outside even the float32 tolerance{times}: accumulate "
                             f"in float64 (cast the inputs, or pass dtype=np.float64 to the sum)"
                             f" and convert at the end, if at all." + grows)
    if act is not None and _float32_numbers(act):
        return "precision", (f"Close, but outside the tolerance{times}: every value of yours "
                             f"is a float32 number stored as float64, so an intermediate was "
                             f"float32 (np.float32 arrays, torch's default dtype, "
                             f"astype(np.float32)). Compute in float64." + grows)
    return "precision", (f"Close, but outside the tolerance{times}: an approximation? A "
                         f"truncated sum or series (add terms until they no longer change the "
                         f"result), an epsilon added to a denominator, a rounded constant, or "
                         f"a float32 intermediate." + grows)


# "close" (the precision hint) is within this many times what the tolerance allows
CLOSE_TIMES = 100


def _float32_numbers(act: np.ndarray) -> bool:
    """Whether every finite value of ``act`` is a float32 number, some of them not integers
    (an integer is a float32 number whatever computed it)."""
    if act.dtype.kind != "f":
        return False
    fin = act[np.isfinite(act)].astype(np.float64)
    if fin.size == 0 or bool((fin == np.round(fin)).all()):
        return False
    with np.errstate(all="ignore"):
        return bool((fin.astype(np.float32).astype(np.float64) == fin).all())


def _values(cmp: Comparison, sizes: SizeContext) -> tuple[str, str] | None:
    """How and where a plainly wrong result is wrong, as measured on the learner's output:
    a relation to the expected values that holds everywhere, or where the wrong values lie
    (an exercise's region, a few rows or columns), which way they are off, and row sums."""
    act, exp, bad = cmp.actual_array, cmp.expected_array, cmp.outside
    if act is None or exp is None or bad is None or act.ndim == 0 or not bad.any():
        return None
    if sizes.large_only:
        return None  # classify() gives the "large" hint
    text = _relation(cmp, act, exp) or _observe(bad, act, exp, cmp.regions)
    return ("values", text) if text else None


def _relation(cmp: Comparison, act: np.ndarray, exp: np.ndarray) -> str:
    """A relation between the learner's values and the expected ones that holds for every
    element (a factor, an offset, a transpose, a reordering); "" when none does."""
    square = act.ndim == 2 and act.shape[0] == act.shape[1] and act.shape[0] > 1
    if exp.dtype.kind == "b":
        if square and bool((act == exp.T).all()):
            return "Your mask is the transpose of the expected one."
        if bool((act == ~exp).all()):
            return "Every value of your mask is the opposite of the expected one."
        return ""
    if exp.dtype.kind not in "iuf" or act.dtype.kind not in "iuf":
        return ""
    a, e = act.astype(np.float64).ravel(), exp.astype(np.float64).ravel()
    fin = np.isfinite(a) & np.isfinite(e)
    a, e = a[fin], e[fin]
    if a.size < 2:
        return ""
    scale = max(float(np.abs(e).max()), float(np.abs(a).max()), 1e-300)
    denom = float(e @ e)
    if denom > 0:
        c = float(a @ e) / denom
        resid = np.linalg.norm(a - c * e) / max(np.linalg.norm(a), 1e-300)
        if resid < 1e-6 and abs(c - 1) > 1e-3:
            if abs(c + 1) < 1e-6:
                return "Every value of yours is the expected one with the opposite sign."
            if abs(c) < 1e-12:
                return ""
            return f"Every value of yours is {c:.4g} times the expected one."
    d = a - e
    if float(np.ptp(d)) <= 1e-9 * scale and abs(float(d.mean())) > 1e-9 * scale:
        off = float(d.mean())
        return (f"Every value of yours is the expected one {'plus' if off > 0 else 'minus'} "
                f"{fmt(abs(off))}.")
    if square:
        tol = dict(rtol=cmp.rtol or 0, atol=cmp.atol or 0)
        same_t = np.allclose(act, exp.T, equal_nan=True, **tol) if exp.dtype.kind == "f" \
            else bool((act == exp.T).all())
        if same_t:
            return "Your result is the transpose of the expected one."
    # a permutation only where the values tell one: with few distinct values (a 0/1 matrix)
    # equal sorted lists say no more than equal counts
    distinct = np.unique(e).size
    if fin.all() and distinct >= 3 and 2 * distinct >= e.size and \
            np.allclose(np.sort(a), np.sort(e), rtol=cmp.rtol or 0, atol=cmp.atol or 0):
        return "Your result holds the expected values, in another order."
    return ""


def _observe(bad: np.ndarray, act: np.ndarray, exp: np.ndarray,
             regions: list[tuple[str, str, np.ndarray]]) -> str:
    """Where the wrong values lie and which way they are off, in sentences."""
    n = int(bad.sum())
    place = _place(bad) if n > 1 else ""
    found = _regions_holding(bad, regions)
    direction = _direction(bad, act, exp)
    first = ""
    if found:
        where, _, exact = found[0]
        first = (f"The wrong values are exactly those {where}" if exact and n > 1 else
                 f"All {n} wrong values are {where}" if n > 1 else
                 f"The only wrong value is {where}")
        if place:
            first += f" ({place})"
    elif place:
        first = f"All {n} wrong values are {place}"
    if direction:
        first = (f"{first}, and yours is {direction} at each of them" if first and n > 1 else
                 f"{first}, and yours is {direction} there" if first else
                 f"Yours is {direction} at every one of the {n} wrong values" if n > 1 else "")
    sentences = [first + "."] if first else []
    if len(found) > 1:
        sentences.append(f"{'They are' if n > 1 else 'It is'} also {found[1][0]}.")
    sentences += [means for _, means, _ in found[:2] if means]
    sums = _row_sums(act, exp)
    if sums:
        sentences.append(sums)
    return " ".join(sentences)


def _regions_holding(bad: np.ndarray, regions: list[tuple[str, str, np.ndarray]]
                     ) -> list[tuple[str, str, bool]]:
    """The exercise's regions that hold every wrong value, smallest first, leaving out one
    that covers the whole result (it says nothing) or holds a smaller region of the list
    (the smaller says more): ``(where, means, exactly those values)``."""
    holding = sorted((r for r in regions if r[2].shape == bad.shape and r[2].any()
                      and not r[2].all() and not (bad & ~r[2]).any()),
                     key=lambda r: int(r[2].sum()))
    kept: list[tuple[str, str, np.ndarray]] = []
    for r in holding:
        if not any(not (k[2] & ~r[2]).any() and (r[2] & ~k[2]).any() for k in kept):
            kept.append(r)
    return [(where, means, bool((bad == mask).all())) for where, means, mask in kept]


def _direction(bad: np.ndarray, act: np.ndarray, exp: np.ndarray) -> str:
    """Which way every wrong value is off, when they all are off the same way."""
    a, e = act[bad], exp[bad]
    if exp.dtype.kind == "b" and act.dtype.kind == "b":
        return "False" if not a.any() else "True" if a.all() else ""
    if exp.dtype.kind in "iuf" and act.dtype.kind in "iuf":
        with np.errstate(invalid="ignore"):
            if bool((a > e).all()):
                return "larger than the expected value"
            if bool((a < e).all()):
                return "smaller than the expected value"
    return ""


def _row_sums(act: np.ndarray, exp: np.ndarray) -> str:
    """Every row of the learner's 2-D result having one sum (not the expected rows' common
    sum), or different sums where the expected rows share one."""
    if act.ndim != 2 or min(act.shape) < 2 or exp.dtype.kind not in "iuf" or \
            act.dtype.kind not in "iuf":
        return ""
    sa, se = act.astype(np.float64).sum(axis=1), exp.astype(np.float64).sum(axis=1)
    if not (np.isfinite(sa).all() and np.isfinite(se).all()):
        return ""
    tol_a = 1e-9 * max(1.0, float(np.abs(sa).max()))
    tol_e = 1e-9 * max(1.0, float(np.abs(se).max()))
    a_one, e_one = float(np.ptp(sa)) <= tol_a, float(np.ptp(se)) <= tol_e
    if a_one and not (e_one and abs(float(sa[0] - se[0])) <= max(tol_a, tol_e)):
        return f"Every row of yours sums to {fmt(float(sa.mean()))}."
    if e_one and not a_one:
        return (f"Your rows have different sums (from {fmt(float(sa.min()))} to "
                f"{fmt(float(sa.max()))}), where the expected rows all have the same sum.")
    return ""


MAX_LINES = 3  # a place is named by at most this many rows, columns or indices (or a range)


def _listed(idx: np.ndarray) -> str:
    idx = [int(i) for i in idx]
    if len(idx) >= 3 and idx == list(range(idx[0], idx[-1] + 1)):
        return f"{idx[0]} to {idx[-1]}"
    if len(idx) <= 1:
        return "".join(map(str, idx))
    return ", ".join(map(str, idx[:-1])) + f" and {idx[-1]}"


def _lines(name: str, idx: np.ndarray, named: bool = True) -> str:
    """"rows 0 and 8"; unnamed (no index: a kind hint shown at every feedback level),
    "2 rows"."""
    plural = {"row": "rows", "column": "columns", "index": "indices"}[name]
    if not named:
        return f"one {name}" if len(idx) == 1 else f"{len(idx)} {plural}"
    return f"{name if len(idx) == 1 else plural} {_listed(idx)}"


def _few(idx: np.ndarray, length: int) -> bool:
    """Whether ``idx`` (sorted, some of ``range(length)``) names a place: a few indices, or
    one run of at most half the axis."""
    if not 0 < len(idx) < length:
        return False
    run = len(idx) >= 3 and int(idx[-1] - idx[0]) == len(idx) - 1
    return len(idx) <= MAX_LINES or (run and 2 * len(idx) <= length)


def _place(mask: np.ndarray, named: bool = True) -> str:
    """Where the True values of ``mask`` lie when a few lines of the array hold them all
    ("in column 0", "in rows 0 and 8", "in row 0 and column 0", "at indices 2 to 4", "on the
    border of the array"); "" when they do not. ``named=False`` names no index ("in one
    column", "in 2 rows")."""
    if mask.ndim == 0 or mask.size <= 4 or mask.all() or not mask.any():
        return ""
    if mask.ndim == 1:
        idx = np.flatnonzero(mask)
        return "at " + _lines("index", idx, named) if _few(idx, mask.size) else ""
    if mask.ndim == 2:
        rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
        found = [(len(idx), f"in {_lines(name, idx, named)}") for name, idx, n in
                 (("row", rows, mask.shape[0]), ("column", cols, mask.shape[1]))
                 if _few(idx, n)]
        if found:
            return min(found)[1]
        R, C = np.flatnonzero(mask.sum(axis=1) >= 2), np.flatnonzero(mask.sum(axis=0) >= 2)
        if 0 < len(R) <= 2 and 0 < len(C) <= 2:
            cover = np.zeros_like(mask)
            cover[R, :] = True
            cover[:, C] = True
            if not (mask & ~cover).any() and not cover.all():
                return f"in {_lines('row', R, named)} and {_lines('column', C, named)}"
    else:
        found = []
        for ax in range(mask.ndim):
            others = tuple(a for a in range(mask.ndim) if a != ax)
            idx = np.flatnonzero(mask.any(axis=others))
            if 0 < len(idx) < mask.shape[ax] and len(idx) <= 2:
                found.append((len(idx), f"at {_lines('index', idx, named)} of axis {ax}"))
        if found:
            return min(found)[1]
    edge = np.zeros_like(mask)
    for ax in range(mask.ndim):
        if mask.shape[ax] > 2:
            idx = [slice(None)] * mask.ndim
            idx[ax] = 0
            edge[tuple(idx)] = True
            idx[ax] = -1
            edge[tuple(idx)] = True
    if edge.any() and not edge.all() and not (mask & ~edge).any():
        return "on the border of the array (the first or the last index of an axis)"
    return ""


_BY_COMPARISON: dict[str, Any] = {
    "shape": _shape, "dtype": _dtype, "nan": _nan, "inf": _inf, "tolerance": _tolerance,
    "values": _values,
    "type": lambda cmp, s: ("type", "Return a number or a numpy array (a list of numbers also "
                                    "works); other objects cannot be compared."),
    "none": lambda cmp, s: ("none", "Your function returned None: is a return statement "
                                    "missing, or does a branch end without one?"),
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


_SHAPES = ("Two shapes do not fit together inside your function (the message shows them): "
           "print the shapes of that line's operands on a small input.")
_MEMORY = ("An intermediate array too large for memory: avoid building all pairs or a dense "
           "(n, n, n) array when a matrix product does the same.")
RAISED: tuple[ExceptionAdvice, ...] = (
    ExceptionAdvice(("ValueError",), r"truth value of an array",
                    "`and`, `or`, `not` or `if` met an array of several values: combine masks "
                    "with &, | and ~ (in parentheses), and test them with .any() or .all()."),
    ExceptionAdvice(("ValueError", "RuntimeError"),
                    r"could not be broadcast|cannot reshape|not aligned|shape mismatch|"
                    r"size of tensor|must match the size|mat1 and mat2 shapes|shapes? .* "
                    r"(do not|don't|cannot) |incompatible (shape|dimension)", _SHAPES),
    ExceptionAdvice(("IndexError",), r"out of (bounds|range)",
                    "An index ran past the end of an axis (the message says which index and "
                    "axis): check the loop bounds, slices and computed indices that reach it."),
    ExceptionAdvice(("ZeroDivisionError",), None,
                    "A division by zero: which denominator can be zero for these inputs?"),
    ExceptionAdvice(("FloatingPointError",), r"divide",
                    "A division by zero: which denominator can be zero for these inputs?"),
    ExceptionAdvice(("TypeError", "AttributeError"), r"'list' object|type\(s\).*'list'",
                    "A list arrived where your code expects an array: convert the inputs with "
                    "np.asarray first."),
    ExceptionAdvice(("TypeError",), r"unexpected keyword argument|required positional "
                    r"argument|positional arguments? but",
                    "The function was called as the contract's signature says, and yours takes "
                    "other arguments: compare your def line with the contract's."),
    ExceptionAdvice(("AttributeError",), r"'numpy\.ndarray' object has no attribute",
                    "A numpy array has no such attribute: a torch method (.size(), .dim(), "
                    ".view()) on a numpy array? numpy has .shape, .ndim and reshape."),
    ExceptionAdvice(("NameError", "UnboundLocalError"), None,
                    "A name your code uses has no value there: a typo, a variable used before "
                    "it is assigned, or an import left out."),
    ExceptionAdvice(("MemoryError",), None, _MEMORY),
    ExceptionAdvice(("RuntimeError", "OutOfMemoryError"), r"out of memory", _MEMORY),
    ExceptionAdvice(("LinAlgError",), r"singular",
                    "A singular matrix: solve least squares with np.linalg.lstsq (or the "
                    "pseudo-inverse) instead of inverting X^T X."),
    ExceptionAdvice(("RecursionError",), None,
                    "Your recursion never reaches its base case: prefer a loop or a vector "
                    "formula."),
    ExceptionAdvice(("RuntimeError",), r"expected all tensors to be on the same device|"
                    r"on (a )?different device|device mismatch",
                    "Tensors on different devices: create new tensors on the input's device "
                    "(device=x.device)."),
)


def _raised(exc_type: str, message: str) -> str:
    """The advice of the first ``RAISED`` rule whose precondition holds, else what happened."""
    base = exc_type.rsplit(".", 1)[-1]
    for advice in RAISED:
        if advice.holds(base, message):
            return advice.text
    return (f"Your function raised {base} where it should return a result: the traceback "
            f"points at the line.")


def _large_text(what: str, sizes: SizeContext) -> str:
    return (f"Right on the {sizes.smaller_passed} smaller tests (up to {sizes.smaller_max:,} "
            f"values), but this one ({sizes.size:,} values) {what}. Look for what changes with "
            f"size: a Python loop that grows faster than the input, float32 sums over many "
            f"terms, integer overflow, a size hard-coded from the examples, or a slice that "
            f"stops early.")
