"""Small drawing payloads for the HTML report, built in the grading process.

A payload is plain JSON data (it goes into ``results.json``), capped in size, that
``grader/report/svg.py`` draws as inline SVG:

- ``from_comparison``: a failing array comparison. 2-D results become heatmaps (expected,
  actual, |difference|; boolean results: the cells that differ), 1-D results a line plot,
  3-D and larger the 2-D slice through the worst element along the two longest axes. Arrays
  larger than ``MAX_CELLS`` per axis are shown in blocks (block means; the |difference| and
  the out-of-tolerance mark are block maxima, so an error is never averaged away), and the
  payload says so. For a hidden test the expected and actual values are left out: only the
  |difference| and the out-of-tolerance map remain.
- ``curve``: a line chart a suite draws from the learner's own outputs (``check.curve``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from grader.numbers import json_number
from grader.results import ComparisonFigure, CurveFigure

MAX_CELLS = 48          # per axis of a heatmap
MAX_LINE_POINTS = 120   # of a 1-D comparison
MAX_CURVE_POINTS = 400  # per series of a curve
MAX_SERIES = 8


def _grid(a: np.ndarray) -> list:
    def cell(v: Any) -> Any:
        return int(v) if a.dtype.kind in "biu" else json_number(v, 4)

    return [[cell(v) for v in row] for row in a] if a.ndim == 2 else [cell(v) for v in a]


def _blocks(a: np.ndarray, size: tuple[int, ...], reduce: str) -> np.ndarray:
    """Reduce ``a`` (1-D or 2-D) over blocks of ``size`` (``"mean"`` or ``"max"``).

    A block holding a NaN is NaN (a NaN is never averaged away); padding is ignored.
    """
    if all(s == 1 for s in size):
        return a.astype(np.float64)
    pads = [(0, (-n) % s) for n, s in zip(a.shape, size)]
    p = np.pad(a.astype(np.float64), pads)
    valid = np.pad(np.ones(a.shape, bool), pads)
    if a.ndim == 1:
        p, valid = p.reshape(-1, size[0]), valid.reshape(-1, size[0])
        axes: tuple[int, ...] = (1,)
    else:
        shape = (p.shape[0] // size[0], size[0], p.shape[1] // size[1], size[1])
        p, valid = p.reshape(shape), valid.reshape(shape)
        axes = (1, 3)
    has_nan = np.isnan(p).any(axis=axes)
    with np.errstate(all="ignore"):
        if reduce == "max":
            out = np.where(valid, p, -np.inf).max(axis=axes)
        else:
            out = np.where(valid, p, 0.0).sum(axis=axes) / valid.sum(axis=axes)
    return np.where(has_nan, np.nan, out)


def _real(a: np.ndarray) -> np.ndarray:
    return np.abs(a) if np.iscomplexobj(a) else a


def _difference(act: np.ndarray, exp: np.ndarray) -> np.ndarray:
    """|actual - expected|, with NaN where either side is not finite and they disagree."""
    with np.errstate(all="ignore"):
        d = np.abs(act.astype(np.float64) - exp.astype(np.float64)) if act.dtype.kind != "c" \
            else np.abs(act - exp)
    same = (act == exp) | (np.isnan(act) & np.isnan(exp)) if act.dtype.kind in "fc" else \
        (act == exp)
    d = np.where(same, 0.0, d)
    return np.where(np.isfinite(d) | same, d, np.nan)


def from_comparison(cmp: Any, *, hidden: bool, title: str) -> ComparisonFigure | None:
    """The payload of a failing comparison whose arrays were kept (None: nothing to draw)."""
    act, exp = cmp.actual_array, cmp.expected_array
    if act is None or exp is None or act.shape != exp.shape or act.ndim == 0 or act.size == 0:
        return None
    boolean = exp.dtype.kind == "b"
    bad = cmp.outside if cmp.outside is not None else (act != exp)
    worst = tuple(cmp.worst_index) if cmp.worst_index is not None else \
        tuple(int(i) for i in np.unravel_index(int(np.argmax(bad)), bad.shape))
    where = ""
    if act.ndim > 2:
        # show the two longest axes (the later one on a tie: (h, T, T) shows T x T, (H, W, C)
        # shows H x W) at the worst element's index on the others
        keep = sorted(sorted(range(act.ndim), key=lambda a: (act.shape[a], a))[-2:])
        index = tuple(slice(None) if a in keep else worst[a] for a in range(act.ndim))
        where = "[" + ", ".join(":" if a in keep else str(worst[a])
                                for a in range(act.ndim)) + "]"
        act, exp, bad = act[index], exp[index], bad[index]
        worst = tuple(worst[a] for a in keep)
    act, exp = _real(act), _real(exp)
    diff = (act != exp).astype(np.float64) if boolean else _difference(act, exp)
    cap = MAX_CELLS if act.ndim == 2 else MAX_LINE_POINTS
    block = tuple(max(1, math.ceil(n / cap)) for n in act.shape)
    shown = tuple(math.ceil(n / b) for n, b in zip(act.shape, block))
    payload: ComparisonFigure = {
        "type": "heatmap" if act.ndim == 2 else "line", "title": title,
        "boolean": boolean, "hidden": hidden,
        # exact comparisons (and NaN/inf placement) mark the first difference, not the largest
        "first": cmp.kind in ("values", "nan", "inf"),
        "full_shape": list(cmp.actual_array.shape), "slice": where,
        "shape": list(act.shape), "block": list(block),
        "worst": [w // b for w, b in zip(worst, block)], "worst_index": list(cmp.worst_index
                                                                            or worst),
        "n_bad": int(np.count_nonzero(bad)), "n_total": int(bad.size),
        "note": "",
    }
    if any(b > 1 for b in block):
        size = "x".join(str(b) for b in block)
        payload["note"] = (f"{'x'.join(map(str, act.shape))} values shown as "
                           f"{'x'.join(map(str, shown))} blocks of {size}: "
                           + ("values are block means, " if not hidden else "")
                           + "|difference| and the out-of-tolerance mark are block maxima")
    d = _blocks(diff, block, "max")
    finite_d = d[np.isfinite(d)]
    payload["diff"] = _grid(d) if not boolean else _grid((d > 0).astype(int))
    payload["dmax"] = json_number(finite_d.max(), 4) if finite_d.size else 0.0
    payload["bad"] = _grid((_blocks(bad.astype(np.float64), block, "max") > 0).astype(int))
    if not hidden:
        e = _blocks(exp.astype(np.float64), block, "mean")
        a = _blocks(act.astype(np.float64), block, "mean")
        both = np.concatenate([e[np.isfinite(e)], a[np.isfinite(a)]])
        if boolean and all(b == 1 for b in block):
            e, a = e.astype(int), a.astype(int)
        payload.update(expected=_grid(e), actual=_grid(a),
                       vmin=json_number(both.min(), 4) if both.size else 0.0,
                       vmax=json_number(both.max(), 4) if both.size else 1.0)
        if boolean:
            payload.update(vmin=0.0, vmax=1.0)
    return payload


def _floats(values: Sequence[Any], what: str) -> list[Any]:
    out = [json_number(v, 4) for v in np.asarray(values, dtype=np.float64).reshape(-1)]
    if len(out) > MAX_CURVE_POINTS:
        raise ValueError(f"{what}: at most {MAX_CURVE_POINTS} points, got {len(out)}")
    return out


def curve(title: str, series: Sequence[dict[str, Any]], *, x_label: str, y_label: str,
          log_x: bool = False, log_y: bool = False, marks: Sequence[dict[str, Any]] = (),
          note: str = "") -> CurveFigure:
    """A line chart payload.

    ``series``: dicts with ``name``, ``x``, ``y``, optional ``style`` (``"line"``,
    ``"dashed"``, ``"points"``, ``"pairs"``: a segment from each even point to the next) and
    ``err`` (error bars, same length as ``y``) and ``colour`` (a palette index, to give
    related series one colour).
    ``marks``: vertical lines ``{"x", "label"}`` or labelled points ``{"x", "y", "label"}``.
    """
    if not 1 <= len(series) <= MAX_SERIES:
        raise ValueError(f"a curve has 1 to {MAX_SERIES} series, got {len(series)}")
    out = []
    for s in series:
        x, y = _floats(s["x"], s["name"]), _floats(s["y"], s["name"])
        if len(x) != len(y):
            raise ValueError(f"series {s['name']!r}: {len(x)} x values and {len(y)} y values")
        item = {"name": str(s["name"])[:80], "x": x, "y": y,
                "style": s.get("style", "line")}
        if item["style"] not in ("line", "dashed", "points", "pairs"):
            raise ValueError(f"unknown style {item['style']!r}")
        if s.get("colour") is not None:
            item["colour"] = int(s["colour"])
        if s.get("err") is not None:
            item["err"] = _floats(s["err"], s["name"])
        out.append(item)
    kept_marks = []
    for m in list(marks)[:12]:
        mark = {"x": json_number(m["x"], 4), "label": str(m.get("label", ""))[:80]}
        if m.get("y") is not None:
            mark["y"] = json_number(m["y"], 4)
        kept_marks.append(mark)
    return {"type": "curve", "title": str(title)[:120], "x_label": str(x_label)[:80],
            "y_label": str(y_label)[:80], "log_x": bool(log_x), "log_y": bool(log_y),
            "series": out, "marks": kept_marks, "note": str(note)[:300]}
