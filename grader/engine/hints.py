"""Hints that answer the failure: what this kind of failure usually means.

``classify`` looks at how a test failed (the comparison, the learner's exception, the test's
place among the exercise's tests) and returns ``(kind, text)``: the kind of failure and a
hint for it, shown beside the test's own hint. The text never quotes an expected value or an
input (it is shown for hidden tests too); it may describe the learner's own output (where the
NaNs are, which axis differs).

Kinds: ``shape``, ``dtype``, ``type``, ``none``, ``nan``, ``inf``, ``precision``, ``values``,
``large`` (right on the smaller tests of the exercise, wrong, failing or too slow on this
larger one), ``raised``, ``not_raised``, ``wrong_exception``, ``crashed``, ``rule``,
``known_mistake`` (the mistake's own message is the hint). A timeout gets no kind hint of its
own (the test's hint speaks to speed) unless it is a ``large`` one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .compare import Comparison

# The largest x with exp(x) finite: float32, float64.
EXP_OVERFLOW = (88.7, 709.8)

LABELS = {
    "shape": "wrong shape", "dtype": "wrong dtype", "type": "wrong type", "none": "no result",
    "nan": "NaN", "inf": "inf", "precision": "precision",
    "values": "where it is wrong", "large": "large inputs", "raised": "exception",
    "not_raised": "no exception", "wrong_exception": "wrong exception",
    "crashed": "crash", "rule": "source rule", "known_mistake": "known mistake",
}


@dataclass
class SizeContext:
    """The test's size (values in its inputs and expected results) and the smaller tests of
    the same exercise that ran before it."""

    size: int = 0
    smaller_passed: int = 0     # earlier tests at most a quarter of the size, all passed
    smaller_max: int = 0        # the largest of them

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
        return "rule", ("The grader reads your source (without running it) for what this "
                        "exercise rules out: write that step yourself, it is the point of the "
                        "exercise.")
    if kind == "not_raised":
        return kind, (f"Check the arguments at the top of the function and raise "
                      f"{expected_exc or 'the error'} with a clear message; returning a value "
                      f"for an invalid argument hides the caller's bug. The test's description "
                      f"lists which arguments are invalid, in the order they are tried.")
    if kind == "wrong_exception":
        return kind, (f"An exception from deeper down (an IndexError, a numpy error) is not "
                      f"the contract's {expected_exc or 'error'}: test the condition yourself "
                      f"before computing and raise {expected_exc or 'it'} explicitly.")
    if kind in _BY_COMPARISON and (comparison is not None or kind in ("type", "none")):
        found = _BY_COMPARISON[kind](comparison, sizes)
        if found is not None:
            return found
    if status == "error" and exc_type:
        if sizes.large_only:
            return "large", _large_text("raised " + exc_type, sizes)
        return "raised", _raised(exc_type, exc_message)
    if status in ("timeout", "crashed") or (status == "failed" and kind in ("values", None)
                                             and comparison is not None):
        if sizes.large_only:
            what = {"timeout": "timed out", "crashed": "crashed the process"}.get(
                status, "gives wrong values")
            return "large", _large_text(what, sizes)
    if status == "crashed":
        return "crashed", ("The process running your code ended: sys.exit or os._exit, memory "
                           "exhausted by a huge intermediate array, or a crash in native code.")
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
                    return "shape", (f"An extra leading axis of size {act[0]}: a batch or "
                                     f"heads axis kept where the contract reduces it (a mean "
                                     f"over heads?) or takes one element.")
                return "shape", (f"An extra axis {i} of size {act[i]}: an axis the contract "
                                 f"sums or averages over is still there.")
    if len(act) + 1 == len(exp):
        for i in range(len(exp)):
            if exp[:i] + exp[i + 1:] == act:
                if exp[i] == 1:
                    return "shape", (f"Axis {i}, of size 1, is missing: keep it "
                                     f"(keepdims=True or [None]).")
                if i == 0:
                    return "shape", (f"The leading axis of size {exp[0]} is missing: a batch "
                                     f"or heads axis dropped (indexed with [0], or reduced) "
                                     f"where the contract keeps it.")
                return "shape", (f"Axis {i} (of size {exp[i]}) is missing: reduced or "
                                 f"squeezed where the contract keeps it.")
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
                             f"instead of {exp[differ[0]]}): a range or slice bound, or one "
                             f"token (the class token) counted or not.")
        entries = "entry" if abs(gap) == 1 else "entries"
        if gap < 0:
            return "shape", (f"{where.capitalize()} each have {-gap} {entries} too few: tokens "
                             f"missing. Are the prefix tokens (class token, registers) "
                             f"included, or was a range cut short?")
        return "shape", (f"{where.capitalize()} each have {gap} {entries} too many: prefix "
                         f"tokens added twice, or tokens where only the patch grid was "
                         f"expected?")
    return "shape", (f"{where.capitalize()} differ ({act} instead of {exp}): check how each "
                     f"axis's length follows from the arguments.")


def _dtype(cmp: Comparison, sizes: SizeContext) -> tuple[str, str]:
    exp = np.dtype(cmp.expected_dtype).kind if cmp.expected_dtype else ""
    act = np.dtype(cmp.actual_dtype).kind if cmp.actual_dtype else ""
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
        return "nan", ("The contract's value is NaN here (undefined: nothing to interpolate, "
                       "no data): return float('nan') instead of a clamped or extrapolated "
                       "number.")
    if _rows_all_nan(act, new_nan):
        return "nan", ("Whole rows of your result are NaN: that is 0/0, a row whose sum is zero "
                       "divided by its sum (a fully masked or all-zero row before normalising). "
                       "Make sure no row is empty, or guard the division.")
    big = cmp.input_max_abs
    if np.isinf(act).any() or (big is not None and big > EXP_OVERFLOW[0]):
        shown = f" (they reach |x| = {big:.3g})" if big is not None else ""
        return "nan", (f"NaN next to large inputs{shown}: if you exponentiate (a softmax), exp "
                       f"overflows to inf past {EXP_OVERFLOW[1]:.0f} in float64 "
                       f"({EXP_OVERFLOW[0]:.0f} in float32) and inf/inf is NaN. Subtract the "
                       f"row maximum before exp; it does not change a softmax.")
    return "nan", _NAN_GENERIC


_NAN_GENERIC = ("NaN comes from 0/0, inf - inf, 0 * inf, log or sqrt of a negative number, or "
                "the mean of an empty slice. Run your function on a tiny input and find the "
                "first NaN with np.isnan.")


def _inf(cmp: Comparison, sizes: SizeContext) -> tuple[str, str]:
    act, exp = cmp.actual_array, cmp.expected_array
    if act is not None and exp is not None and (np.isinf(exp) & ~np.isinf(act)).any():
        return "inf", ("The contract's value is infinite here (an unbounded quantity, e.g. a "
                       "fit with too few rows): return math.inf rather than a large, negative "
                       "or clipped number.")
    big = cmp.input_max_abs
    if big is not None and big > EXP_OVERFLOW[0]:
        return "inf", (f"inf next to inputs as large as {big:.3g}: an overflow, most often exp "
                       f"of a large number. Subtract the maximum before exponentiating.")
    return "inf", ("inf where the result is finite: a division by zero, or an overflow (exp "
                   "of a large number, or a float16/float32 intermediate).")


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
    close = (rel is not None and rel <= 1e-3) or (ratio is not None and ratio <= 100)
    if not close:
        return _values(cmp, sizes)
    grows = (" The smaller tests pass, so the error grows with the size: a long sum "
             "accumulated in float32 loses digits.") if sizes.large_only else ""
    times = f" (the largest error is {ratio:.3g} times what is allowed)" if ratio else ""
    if cmp.actual_dtype in ("float32", "float16"):
        return "precision", (f"Close, but outside even the float32 tolerance{times}: accumulate "
                             f"in float64 (cast the inputs, or pass dtype=np.float64 to the sum)"
                             f" and convert at the end, if at all." + grows)
    if rel is not None and 1e-9 <= rel <= 1e-4:
        return "precision", (f"Close, but outside the tolerance{times}: a relative error near "
                             f"{rel:.0e} is the size of float32 rounding. Is an intermediate "
                             f"float32 (np.float32 arrays, torch's default dtype, "
                             f"astype(np.float32))? Compute in float64." + grows)
    return "precision", (f"Close, but outside the tolerance{times}: an approximation? A "
                         f"truncated sum or series (add terms until they no longer change the "
                         f"result), an epsilon added to a denominator, or a rounded "
                         f"constant." + grows)


def _values(cmp: Comparison, sizes: SizeContext) -> tuple[str, str] | None:
    """Where a plainly wrong result is wrong: a pattern in the learner's errors."""
    act, exp, bad = cmp.actual_array, cmp.expected_array, cmp.outside
    if act is None or exp is None or bad is None or act.ndim == 0 or not bad.any():
        return None
    if sizes.large_only:
        return None  # classify() gives the "large" hint
    if exp.dtype.kind in "iuf" and act.dtype.kind in "iuf":
        a, e = act.astype(np.float64).ravel(), exp.astype(np.float64).ravel()
        fin = np.isfinite(a) & np.isfinite(e)
        a, e = a[fin], e[fin]
        denom = float(e @ e)
        if denom > 0 and a.size > 1:
            c = float(a @ e) / denom
            resid = np.linalg.norm(a - c * e) / max(np.linalg.norm(a), 1e-300)
            if resid < 1e-6 and abs(c - 1) > 1e-3:
                if abs(c + 1) < 1e-6:
                    return "values", ("Your values are right up to their sign: a subtraction "
                                      "the other way round, or a sign convention.")
                return "values", (f"Your values are the expected ones times {c:.4g} "
                                  f"everywhere: a normalisation is missing or extra (a mean "
                                  f"instead of a sum, a factor 1/n or 2).")
        if act.ndim == 2 and act.shape[0] == act.shape[1] and act.shape[0] > 1:
            same_t = np.allclose(act, exp.T, rtol=cmp.rtol or 0, atol=cmp.atol or 0,
                                 equal_nan=True) if exp.dtype.kind == "f" else \
                bool((act == exp.T).all())
            if same_t:
                return "values", ("Your result is the transpose of the expected one: rows and "
                                  "columns (queries and keys, inputs and outputs) are "
                                  "swapped.")
    elif exp.dtype.kind == "b" and act.ndim == 2 and act.shape[0] == act.shape[1]:
        if bool((act == exp.T).all()):
            return "values", "Your mask is the transpose of the expected one."
        if bool((act == ~exp).all()):
            return "values", ("Every value of your mask is flipped: True and False mean the "
                              "opposite of the contract's convention.")
    if bad.ndim >= 1 and bad.size > 8:
        edge = np.zeros_like(bad)
        for ax in range(bad.ndim):
            if bad.shape[ax] > 2:
                idx = [slice(None)] * bad.ndim
                idx[ax] = 0
                edge[tuple(idx)] = True
                idx[ax] = -1
                edge[tuple(idx)] = True
        if edge.any() and not edge.all() and not (bad & ~edge).any():
            return "values", ("Only values at the edges are wrong: look at how your code treats "
                              "the borders (wrap-around, padding, the first and the last "
                              "index).")
    return None


_BY_COMPARISON: dict[str, Any] = {
    "shape": _shape, "dtype": _dtype, "nan": _nan, "inf": _inf, "tolerance": _tolerance,
    "values": _values,
    "type": lambda cmp, s: ("type", "Return a number or a numpy array (a list of numbers also "
                                    "works); other objects cannot be compared."),
    "none": lambda cmp, s: ("none", "Your function returned None: is a return statement "
                                    "missing, or does a branch end without one?"),
}


# -- exceptions and sizes ------------------------------------------------------------------------

def _raised(exc_type: str, message: str) -> str:
    low = message.lower()
    base = exc_type.rsplit(".", 1)[-1]
    if base == "ValueError":
        return ("Your function raised ValueError on arguments that are valid here: compare "
                "your checks with the contract (the smallest sizes and the edge cases it "
                "allows), or look for a shape mismatch inside a numpy call.")
    if base == "IndexError":
        return ("An index ran past the end of an axis: check loop bounds and slices on the "
                "smallest and the non-square inputs.")
    if base in ("ZeroDivisionError", "FloatingPointError"):
        return "A division by zero: which denominator can be zero for these inputs?"
    if base == "TypeError":
        return ("An argument arrived in another form than you assumed (a list instead of an "
                "array, an int instead of a float, a keyword argument): convert inputs with "
                "np.asarray and check the signature.")
    if base == "AttributeError":
        return ("An attribute your code uses does not exist on this input: a list has no "
                ".shape (use np.asarray first), a numpy array has no .size() call.")
    if base == "KeyError":
        return "A dictionary lookup failed: which key can be missing for these inputs?"
    if base == "MemoryError" or "out of memory" in low:
        return ("An intermediate array too large for memory: avoid building all pairs or a "
                "dense (n, n, n) array when a matrix product does the same.")
    if base == "LinAlgError":
        return ("A singular matrix: solve least squares with np.linalg.lstsq (or the "
                "pseudo-inverse) instead of inverting X^T X.")
    if base == "RecursionError":
        return "Your recursion never reaches its base case: prefer a loop or a vector formula."
    if "device" in low:
        return "Tensors on different devices: create new tensors on the input's device."
    if "shape" in low or "size" in low or "dimension" in low:
        return ("Two shapes do not fit together inside your function: print the shapes of "
                "the operands of that line on a small input.")
    return (f"Your function raised {base} where it should return a result: the traceback "
            f"points at the line.")


def _large_text(what: str, sizes: SizeContext) -> str:
    return (f"Right on the {sizes.smaller_passed} smaller tests (up to {sizes.smaller_max:,} "
            f"values), but this one ({sizes.size:,} values) {what}. Look for what changes with "
            f"size: a Python loop that grows faster than the input, float32 sums over many "
            f"terms, integer overflow, a size hard-coded from the examples, or a slice that "
            f"stops early.")
