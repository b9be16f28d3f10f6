"""What was measured about a wrong result, in sentences of fact (``hints.py`` chooses which to
show): a relation to the expected values that holds for every element, where the wrong (NaN,
inf) values lie, which way they are off, row sums. Each sentence describes the learner's own
output and names no cause; a place is named by index only where the level shows indices
(``named``).
"""

from __future__ import annotations

import numpy as np

from grader.judge.compare import Comparison
from grader.numbers import value as fmt


def rows_all_nan(act: np.ndarray, bad: np.ndarray) -> bool:
    if act.ndim < 2:
        return False
    rows = np.isnan(act).all(axis=-1)
    return bool(rows.any()) and bool((bad <= np.broadcast_to(rows[..., None], act.shape)).all())



def float32_numbers(act: np.ndarray) -> bool:
    """Whether every finite value of ``act`` is a float32 number, some of them not integers
    (an integer is a float32 number whatever computed it)."""
    if act.dtype.kind != "f":
        return False
    fin = act[np.isfinite(act)].astype(np.float64)
    if fin.size == 0 or bool((fin == np.round(fin)).all()):
        return False
    with np.errstate(all="ignore"):
        return bool((fin.astype(np.float32).astype(np.float64) == fin).all())



def relation(cmp: Comparison, act: np.ndarray, exp: np.ndarray) -> str:
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


def observe(bad: np.ndarray, act: np.ndarray, exp: np.ndarray,
             regions: list[tuple[str, str, np.ndarray]]) -> str:
    """Where the wrong values lie and which way they are off, in sentences."""
    n = int(bad.sum())
    at = place(bad) if n > 1 else ""
    found = _regions_holding(bad, regions)
    direction = _direction(bad, act, exp)
    first = ""
    if found:
        where, _, exact = found[0]
        first = (f"The wrong values are exactly those {where}" if exact and n > 1 else
                 f"All {n} wrong values are {where}" if n > 1 else
                 f"The only wrong value is {where}")
        if at:
            first += f" ({at})"
    elif at:
        first = f"All {n} wrong values are {at}"
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


def place(mask: np.ndarray, named: bool = True) -> str:
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
