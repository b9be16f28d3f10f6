"""Compare a learner's value with the expected one and say exactly how they differ.

Arrays are checked in this order: type (array-like accepted; a torch tensor is accepted for a
numpy exercise and noted), shape (no broadcasting), dtype class (bool / int / float /
complex), NaN and inf positions, then closeness ``|actual - expected| <= atol + rtol*|expected|``.
A float32 (or float16) result against a float64 expectation is judged with the looser
float32 tolerance, and the comparison says so.

Every failing comparison has two reasons: ``reason`` (for public tests: it may quote expected
values) and ``hidden_reason`` (for hidden tests: the size and place of the error only, never
an expected value). ``kind`` names what went wrong (a ``FailureKind``: ``SHAPE``, ``NAN``,
``TOLERANCE``, ...) for ``hints.py``, and the compared arrays are kept (not serialised) for
``figures.py``.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from grader.failure_kinds import FailureKind
from grader.numbers import json_number
from grader.numbers import value as fmt

FLOAT32_TOLERANCE = (1e-4, 1e-5)  # (rtol, atol) applied when the learner returns float32
_KIND_NAMES = {"b": "bool", "i": "int", "u": "int", "f": "float", "c": "complex"}


class UnsupportedExpected(TypeError):
    """The suite's expected value is of a type ``compare`` cannot compare with (a grader
    error, never the learner's)."""


@dataclass
class Comparison:
    """The outcome of one comparison; ``reason`` is empty when ``ok``."""

    ok: bool
    reason: str = ""
    expected_shape: tuple[int, ...] | None = None
    actual_shape: tuple[int, ...] | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None
    worst_index: tuple[int, ...] | None = None
    expected_at_worst: Any = None
    actual_at_worst: Any = None
    n_outside: int = 0
    n_total: int = 0
    rtol: float | None = None
    atol: float | None = None
    notes: list[str] = field(default_factory=list)
    hidden_reason: str = ""
    kind: FailureKind | None = None  # what went wrong; None when ``ok``
    # The compared values as arrays (float64/complex128 for closeness, the originals for exact
    # comparisons), the out-of-tolerance mask, and the dtype names; dropped once not needed.
    actual_array: np.ndarray | None = field(default=None, repr=False, compare=False)
    expected_array: np.ndarray | None = field(default=None, repr=False, compare=False)
    outside: np.ndarray | None = field(default=None, repr=False, compare=False)
    actual_dtype: str = ""
    expected_dtype: str = ""
    # Set by ``check``: the largest finite |number| among the call's inputs (None: unknown).
    input_max_abs: float | None = None
    # Set by ``check`` on a failure: the exercise's regions of this result, as
    # ``(where, means, mask)`` (``suite.region``), for ``hints.py``'s observations.
    regions: list[tuple[str, str, np.ndarray]] = field(default_factory=list, repr=False,
                                                       compare=False)

    def __post_init__(self) -> None:
        if not self.hidden_reason:
            self.hidden_reason = self.reason

    def release(self) -> None:
        """Drop the kept arrays (a passing comparison needs none of them)."""
        self.actual_array = self.expected_array = self.outside = None
        self.regions = []

    @property
    def tolerance(self) -> str:
        if self.rtol is None:
            return "exact"
        return f"rtol={self.rtol:g}, atol={self.atol:g}"

    def diagnostics(self, hidden: bool = False) -> dict[str, Any]:
        """The numbers a report shows; ``hidden`` leaves out the values at the worst index."""
        d: dict[str, Any] = {"expected_shape": self.expected_shape,
                             "actual_shape": self.actual_shape, "tolerance": self.tolerance}
        if self.max_abs_error is not None:
            d.update(max_abs_error=json_number(self.max_abs_error),
                     max_rel_error=None if self.max_rel_error is None else
                     json_number(self.max_rel_error),
                     worst_index=self.worst_index,
                     expected_at_worst=json_number(self.expected_at_worst),
                     actual_at_worst=json_number(self.actual_at_worst),
                     n_outside=self.n_outside, n_total=self.n_total)
        elif self.worst_index is not None:
            d.update(worst_index=self.worst_index, n_outside=self.n_outside,
                     n_total=self.n_total)
        if hidden:
            d.pop("expected_at_worst", None)
            d.pop("actual_at_worst", None)
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}


def _torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


def _kind(arr: np.ndarray) -> str:
    return _KIND_NAMES.get(arr.dtype.kind, arr.dtype.name)


def _as_array(value: Any, notes: list[str], expect_tensor: bool) -> np.ndarray | None:
    if _torch_tensor(value):
        if not expect_tensor:
            notes.append("a torch tensor was accepted where a numpy array was expected")
        import torch

        t = value.detach()
        if t.dtype == torch.bfloat16:
            t = t.float()
        return t.cpu().numpy()
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (str, bytes, dict)) or value is None:
        return None
    try:
        arr = np.asarray(value)
    except (ValueError, TypeError):
        return None
    if arr.dtype.hasobject or arr.dtype.kind not in "biufc":
        return None
    return arr


def _describe(value: Any) -> str:
    if _torch_tensor(value):
        return f"a torch tensor of shape {tuple(value.shape)}"
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and dtype {value.dtype}"
    text = repr(value)
    return f"{type(value).__name__} {text[:80]}{'...' if len(text) > 80 else ''}"


def _structured(value: Any) -> bool:
    """A tuple or list holding arrays or containers (compared item by item, not as one array)."""
    return isinstance(value, (tuple, list)) and any(
        isinstance(v, (np.ndarray, tuple, list, dict)) or _torch_tensor(v) for v in value)


def _compare_items(actual: Any, expected: tuple | list, rtol: float,
                   atol: float) -> Comparison:
    kind = type(expected).__name__
    if not isinstance(actual, (tuple, list)) or len(actual) != len(expected):
        return Comparison(False, f"expected a {kind} of {len(expected)} items, got "
                          f"{_describe(actual)}", kind=FailureKind.TYPE)
    for i, (a, e) in enumerate(zip(actual, expected)):
        cmp = compare(a, e, rtol=rtol, atol=atol)
        if not cmp.ok:
            cmp.reason = f"item {i} of the {kind}: {cmp.reason}"
            cmp.hidden_reason = f"item {i} of the {kind}: {cmp.hidden_reason}"
            return cmp
    return Comparison(True, rtol=rtol, atol=atol)


def compare(actual: Any, expected: Any, *, rtol: float, atol: float) -> Comparison:
    """Compare ``actual`` (from the learner) with ``expected`` (from the reference).

    A tuple or list of arrays (e.g. ``(Q, v)``) is compared item by item. Where the expected
    value is a ``list``, the learner's must be one (not an array or a tuple: the contract's
    type is part of the answer).
    """
    if type(expected) is list and not isinstance(actual, list):  # the contract's type
        return Comparison(False, f"expected a list, got {_describe(actual)}",
                          hidden_reason="the result is not a list, as the contract asks",
                          kind=FailureKind.TYPE)
    if _structured(expected):
        return _compare_items(actual, expected, rtol, atol)
    scalar = isinstance(expected, (int, float, np.number, bool, np.bool_)) and \
        not isinstance(expected, np.ndarray)
    if isinstance(expected, (str, type(None))):
        ok = actual == expected if isinstance(actual, (str, type(None))) else False
        return Comparison(ok, "" if ok else f"expected {expected!r}, got {_describe(actual)}",
                          hidden_reason="" if ok else f"got {_describe(actual)}, which is not "
                          f"the expected value", kind=None if ok else FailureKind.VALUES)
    expect_tensor = _torch_tensor(expected)
    notes: list[str] = []
    exp = _as_array(expected, [], True)
    if exp is None:
        raise UnsupportedExpected(f"cannot compare against expected value of type "
                                  f"{type(expected)}")
    act = _as_array(actual, notes, expect_tensor)
    if act is None:
        what = "a number" if scalar else "an array"
        return Comparison(False, f"expected {what}, got {_describe(actual)}",
                          expected_shape=exp.shape,
                          kind=FailureKind.NONE if actual is None else FailureKind.TYPE)
    if expect_tensor and _torch_tensor(actual) and actual.device != expected.device:
        return Comparison(False, f"the result is on {actual.device}, expected on "
                          f"{expected.device} (the input's device)", expected_shape=exp.shape,
                          actual_shape=act.shape, notes=notes, kind=FailureKind.DEVICE)
    if scalar and act.ndim != 0:
        return Comparison(False, f"expected a single number, got {_describe(actual)}",
                          expected_shape=(), actual_shape=act.shape, notes=notes,
                          kind=FailureKind.SHAPE)
    base = dict(expected_shape=tuple(exp.shape), actual_shape=tuple(act.shape), notes=notes,
                actual_dtype=str(act.dtype), expected_dtype=str(exp.dtype))
    if act.shape != exp.shape:
        # a list of the wrong length: both kept, for a public test to show them side by side
        lists = dict(actual_array=act, expected_array=exp) if act.ndim == exp.ndim == 1 else {}
        return Comparison(False, f"wrong shape: expected {tuple(exp.shape)}, got "
                          f"{tuple(act.shape)}", kind=FailureKind.SHAPE, **lists, **base)
    if _kind(act) != _kind(exp) and not (scalar and {_kind(act), _kind(exp)} <= {"int", "float"}):
        return Comparison(False, f"wrong dtype: expected {_kind(exp)} values ({exp.dtype}), got "
                          f"{_kind(act)} ({act.dtype})", kind=FailureKind.DTYPE, **base)
    if exp.dtype.kind in "biu" and act.dtype.kind in "biu":
        return _exact(act, exp, base)
    if exp.dtype == np.float64 and act.dtype in (np.float32, np.float16):
        rtol, atol = max(rtol, FLOAT32_TOLERANCE[0]), max(atol, FLOAT32_TOLERANCE[1])
        notes.append(f"the result is {act.dtype}: judged with the float32 tolerance "
                     f"(rtol={rtol:g}, atol={atol:g})")
    return _close(act.astype(np.complex128 if _kind(exp) == "complex" else np.float64),
                  exp.astype(np.complex128 if _kind(exp) == "complex" else np.float64),
                  rtol, atol, base)


def _pair(e: Any, a: Any) -> tuple[str, str]:
    """Expected and actual as text, with enough digits to tell them apart."""
    fe, fa = fmt(e), fmt(a)
    if fe == fa and isinstance(e, (float, np.floating)) and e != a:
        fe, fa = f"{float(e):.15g}", f"{float(a):.15g}"
    return fe, fa


def _first_index(mask: np.ndarray) -> tuple[int, ...]:
    return tuple(int(i) for i in np.unravel_index(int(np.argmax(mask)), mask.shape))


def _exact(act: np.ndarray, exp: np.ndarray, base: dict[str, Any]) -> Comparison:
    bad = act != exp
    n_bad = int(bad.sum())
    if n_bad == 0:
        return Comparison(True, rtol=None, atol=None, **base)
    idx = _first_index(bad)
    diff = np.abs(act.astype(np.float64) - exp)
    if act.ndim:
        reason = (f"{n_bad} of {exp.size} values differ; first at index {idx}: expected "
                  f"{fmt(exp[idx])}, got {fmt(act[idx])}")
        hidden = f"{n_bad} of {exp.size} values differ; first at index {idx}"
        if exp.dtype.kind != "b":
            hidden += f"; largest difference {fmt(diff.max())}"
    else:
        reason = f"expected {fmt(exp[idx])}, got {fmt(act[idx])}"
        hidden = ("the value is not the expected one" if exp.dtype.kind == "b" else
                  f"the value is off by {fmt(diff.max())}")
    return Comparison(
        False, reason, hidden_reason=hidden, kind=FailureKind.VALUES,
        max_abs_error=float(diff.max()),
        worst_index=idx, expected_at_worst=exp[idx].item(),
        actual_at_worst=act[idx].item(), n_outside=n_bad, n_total=int(exp.size),
        actual_array=act, expected_array=exp, outside=bad, **base)


def _close(act: np.ndarray, exp: np.ndarray, rtol: float, atol: float,
           base: dict[str, Any]) -> Comparison:
    tol = dict(rtol=rtol, atol=atol)
    arrays = dict(actual_array=act, expected_array=exp)
    nan_a, nan_e = np.isnan(act), np.isnan(exp)
    if (nan_a != nan_e).any():
        bad = nan_a != nan_e
        idx = _first_index(bad)
        where = f" at index {idx}" if act.ndim else ""
        n = int((nan_a & ~nan_e).sum())
        if n:
            reason = (f"NaN where a number was expected ({n} of {exp.size} values); "
                      f"first{where}: expected {fmt(exp[idx])}, got {fmt(act[idx])}")
            hidden = f"NaN where a number was expected ({n} of {exp.size} values)" + (
                f"; first{where}" if where else "")
        else:
            reason = f"a number where NaN was expected{where}: got {fmt(act[idx])}"
            hidden = f"a number where NaN was expected{where}"
        return Comparison(False, reason, hidden_reason=hidden, kind=FailureKind.NAN,
                          worst_index=idx, n_outside=int(bad.sum()), n_total=int(exp.size),
                          outside=bad,
                          **arrays, **tol, **base)
    inf_a, inf_e = np.isinf(act), np.isinf(exp)
    if (inf_a != inf_e).any() or (act[inf_e] != exp[inf_e]).any():
        bad = (inf_a != inf_e) | (inf_e & (act != exp))
        idx = _first_index(bad)
        where = f" at index {idx}" if act.ndim else ""
        n_bad = int(bad.sum())
        return Comparison(False, f"infinite values in the wrong places{where}: expected "
                          f"{fmt(exp[idx])}, got {fmt(act[idx])}",
                          hidden_reason=f"infinite values in the wrong places ({n_bad} of "
                          f"{exp.size} values)" + (f"; first{where}" if where else ""),
                          kind=FailureKind.INF, worst_index=idx, n_outside=n_bad,
                          n_total=int(exp.size), outside=bad, **arrays, **tol, **base)
    finite = ~(nan_e | inf_e)
    a, e = np.where(finite, act, 0), np.where(finite, exp, 0)
    abs_err = np.abs(a - e)
    # the relative error is defined where the expected value is away from 0: above the
    # tolerance's absolute part and above rounding noise of the array's scale (a relative
    # error of 1e15 against an expected 1e-17 says nothing)
    scale = float(np.abs(e).max()) if e.size else 0.0
    nonzero = np.abs(e) > max(atol, 1e-9 * scale)
    rel_err = np.where(nonzero, abs_err / np.where(nonzero, np.abs(e), 1.0), 0.0)
    outside = abs_err > atol + rtol * np.abs(e)
    n_out = int(outside.sum())
    if exp.size == 0:
        return Comparison(True, **tol, **base)
    idx = _first_index(abs_err == abs_err.max())
    relative = nonzero & outside if n_out else nonzero  # of the wrong values, where defined
    stats = dict(max_abs_error=float(abs_err.max()),
                 max_rel_error=float(rel_err[relative].max()) if relative.any() else None,
                 worst_index=idx, expected_at_worst=exp[idx].item(),
                 actual_at_worst=act[idx].item(), n_outside=n_out, n_total=int(exp.size))
    if n_out == 0:
        return Comparison(True, **stats, **tol, **base)
    rel = "" if stats["max_rel_error"] is None else \
        f", relative error {fmt(stats['max_rel_error'])}"
    if act.ndim == 0:
        fe, fa = _pair(exp[()], act[()])
        reason = (f"expected {fe}, got {fa} (absolute error "
                  f"{fmt(stats['max_abs_error'])}{rel}; tolerance rtol={rtol:g}, atol={atol:g})")
        hidden = (f"outside the tolerance (rtol={rtol:g}, atol={atol:g}): absolute error "
                  f"{fmt(stats['max_abs_error'])}{rel}")
    else:
        head = (f"{n_out} of {exp.size} values are outside the tolerance (rtol={rtol:g}, "
                f"atol={atol:g}); largest absolute error {fmt(stats['max_abs_error'])} at index "
                f"{idx}")
        fe, fa = _pair(exp[idx], act[idx])
        reason = head + f": expected {fe}, got {fa}"
        hidden = head
        if stats["max_rel_error"] is not None:
            reason += f"; largest relative error {fmt(stats['max_rel_error'])}"
            hidden += f"; largest relative error {fmt(stats['max_rel_error'])}"
    return Comparison(False, reason, hidden_reason=hidden, kind=FailureKind.TOLERANCE,
                      outside=outside, **arrays, **stats, **tol, **base)
