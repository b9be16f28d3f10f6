"""Draw the figure payloads of ``grader/judge/figures.py`` as inline SVG (no script, no
network, no external font): heatmaps of expected / yours / |difference|, 1-D comparisons,
and curves.

``render(figure)`` returns markup safe to insert into the report (every text is escaped).

A payload is plain data that may come from outside this process (a ``results.json`` of an
older grader, a Dask worker's reply), so a payload that cannot be drawn never stops a report:
``render`` logs one line (this module's logger: the figure's kind, the exception's type and
where it was raised, never its message, which may carry the payload's values) and returns
``NOT_DRAWN``, a caption in the grader's words, in place of the figure. With
``GRADER_STRICT_FIGURES=1`` in the environment (the project's tests set it) it raises instead,
so that a drawing bug fails a test rather than hiding a figure.
"""

from __future__ import annotations

import logging
import math
import os
import traceback
from collections.abc import Iterable, Sequence
from html import escape
from itertools import count
from typing import Any

from grader.numbers import short

_IDS = count()
_LOG = logging.getLogger(__name__)
STRICT_ENV = "GRADER_STRICT_FIGURES"  # "1": a figure that cannot be drawn raises
NOT_DRAWN = '<p class="fig-not-drawn">This figure could not be drawn.</p>'
KINDS = ("heatmap", "line", "curve")
PALETTE = ["#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2", "#db2777",
           "#4b5563"]
# viridis, 9 stops
_VIRIDIS = ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962",
            "#addc30", "#fde725"]
_DIVERGING = ["#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582",
              "#d6604d", "#b2182b"]
# |difference|: yellow-orange-brown, apart from both value scales
_DIFF = ["#ffffe5", "#fff7bc", "#fee391", "#fec44f", "#fe9929", "#ec7014", "#cc4c02",
         "#993404", "#662506"]
TRUE_COLOUR, FALSE_COLOUR = "#1e3a8a", "#e8edf5"
NONFINITE = "#111111"
WORST_OUTER, WORST_INNER = "#111827", "#ffffff"
LEVELS = 24  # colour levels of a heatmap (cells of one level share one path)


def _n(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _val(v: Any) -> float | None:
    """A payload number as float (None for NaN, +-inf kept)."""
    if v is None:
        return None
    if isinstance(v, str):
        return {"inf": math.inf, "-inf": -math.inf}.get(v)
    return float(v)


def fmt(v: Any) -> str:
    return short(_val(v))


def _hex(c: str) -> tuple[int, int, int]:
    return int(c[1:3], 16), int(c[3:5], 16), int(c[5:7], 16)


def _ramp(stops: Sequence[str], t: float) -> str:
    t = min(1.0, max(0.0, t))
    pos = t * (len(stops) - 1)
    i = min(int(pos), len(stops) - 2)
    f = pos - i
    a, b = _hex(stops[i]), _hex(stops[i + 1])
    return "#" + "".join(f"{round(x + (y - x) * f):02x}" for x, y in zip(a, b))


class _Scale:
    """Maps a value to one of ``LEVELS`` colours."""

    def __init__(self, lo: float, hi: float, kind: str) -> None:
        self.kind = kind
        if kind == "diverging":
            m = max(abs(lo), abs(hi)) or 1.0
            lo, hi = -m, m
        if not hi > lo:
            hi = lo + (abs(lo) or 1.0)
        self.lo, self.hi = lo, hi
        self.stops = {"diverging": _DIVERGING, "diff": _DIFF}.get(kind, _VIRIDIS)

    def colour(self, v: float | None) -> str:
        if v is None or not math.isfinite(v):
            return NONFINITE
        t = (v - self.lo) / (self.hi - self.lo)
        level = round(min(1.0, max(0.0, t)) * (LEVELS - 1))
        return _ramp(self.stops, level / (LEVELS - 1))

    def legend(self, x: float, y: float, width: float) -> str:
        n = 12
        w = width / n
        parts = [f'<rect x="{_n(x + i * w)}" y="{_n(y)}" width="{_n(w + 0.3)}" height="7" '
                 f'fill="{_ramp(self.stops, i / (n - 1))}"/>' for i in range(n)]
        parts.append(_text(x, y + 18, fmt(self.lo), "start", 10))
        parts.append(_text(x + width, y + 18, fmt(self.hi), "end", 10))
        return "".join(parts)


def _text(x: float, y: float, s: str, anchor: str = "middle", size: int = 11,
          weight: str = "normal", fill: str = "#374151") -> str:
    return (f'<text x="{_n(x)}" y="{_n(y)}" text-anchor="{anchor}" font-size="{size}" '
            f'font-weight="{weight}" fill="{fill}">{escape(s)}</text>')


def _grid_rows(grid: Any) -> list[list[Any]]:
    if grid and not isinstance(grid[0], list):
        return [list(grid)]
    return [list(r) for r in grid]


def _cells(grid: list[list[Any]], colour: Any, x0: float, y0: float, s: float) -> str:
    """One path per colour; horizontal runs of a colour merged."""
    paths: dict[str, list[str]] = {}
    for r, row in enumerate(grid):
        c = 0
        while c < len(row):
            col = colour(row[c])
            end = c + 1
            while end < len(row) and colour(row[end]) == col:
                end += 1
            paths.setdefault(col, []).append(
                f"M{_n(x0 + c * s)} {_n(y0 + r * s)}h{_n((end - c) * s)}v{_n(s)}"
                f"h{_n(-(end - c) * s)}z")
            c = end
    return "".join(f'<path fill="{col}" d="{"".join(d)}"/>' for col, d in paths.items())


def _labels(grid: list[list[Any]], colour: Any, x0: float, y0: float, s: float) -> str:
    """The values written in the cells (small grids only), dark or light by the cell's
    luminance."""
    out = []
    for r, row in enumerate(grid):
        for c, v in enumerate(row):
            red, green, blue = _hex(colour(v))
            ink = "#111827" if 0.299 * red + 0.587 * green + 0.114 * blue > 140 else "#ffffff"
            text = _short(v)
            size = max(7, min(10, int(s * 1.6 / max(len(text), 3))))
            out.append(_text(x0 + (c + 0.5) * s, y0 + (r + 0.5) * s + size / 3, text,
                             "middle", size, fill=ink))
    return "".join(out)


def _short(v: Any) -> str:
    x = _val(v)
    if x is None or math.isinf(x):
        return fmt(v)
    return f"{x:.2g}".replace("e-0", "e-").replace("e+0", "e") if x != 0 else "0"


def _marks(cells: Iterable[tuple[int, int]], x0: float, y0: float, s: float,
           colour: str) -> str:
    """Outline each listed cell (the cells that differ)."""
    inset = max(0.6, s * 0.12)
    d = "".join(f"M{_n(x0 + c * s + inset)} {_n(y0 + r * s + inset)}h{_n(s - 2 * inset)}"
                f"v{_n(s - 2 * inset)}h{_n(-(s - 2 * inset))}z" for r, c in cells)
    if not d:
        return ""
    return (f'<path d="{d}" fill="none" stroke="{colour}" '
            f'stroke-width="{_n(max(0.8, s * 0.14))}"/>')


def _worst(r: int, c: int, x0: float, y0: float, s: float, tip: str) -> str:
    """A black-and-white double outline: visible on every colour of every scale."""
    pad = max(1.5, s * 0.1)
    w = max(2.2, pad * 1.2)
    box = (f'x="{_n(x0 + c * s - pad)}" y="{_n(y0 + r * s - pad)}" width="{_n(s + 2 * pad)}" '
           f'height="{_n(s + 2 * pad)}" fill="none"')
    return (f'<g class="worst"><title>{escape(tip)}</title>'
            f'<rect {box} stroke="{WORST_OUTER}" stroke-width="{_n(w + 1.6)}"/>'
            f'<rect {box} stroke="{WORST_INNER}" stroke-width="{_n(w * 0.55)}"/></g>')


def _heatmap(fig: dict[str, Any]) -> str:
    diff = _grid_rows(fig["diff"])
    bad = _grid_rows(fig["bad"])
    rows, cols = len(diff), len(diff[0]) if diff else 0
    s = max(3.0, min(44.0, math.floor(220 / max(rows, cols, 1))))
    pw, ph = cols * s, rows * s
    boolean, hidden = fig["boolean"], fig.get("hidden", True)
    labelled = s >= 30
    worst = fig["worst"] if len(fig["worst"]) == 2 else [0, fig["worst"][0]]
    bad_cells = [(r, c) for r in range(rows) for c in range(cols) if bad[r][c]]
    # a mask where most cells differ: outlining them would cover "yours" (the difference
    # panel shows them, and its legend says how many)
    mostly_wrong = 2 * len(bad_cells) > rows * cols
    widx = _tuple(fig["worst_index"])
    panels: list[tuple[str, str, str]] = []  # (title, body, legend)
    top, gap = 28.0, 26.0
    x = 4.0

    def add(title: str, body_fn: Any, legend: str) -> None:
        nonlocal x
        panels.append((title, body_fn(x), legend))
        x += max(pw, 120) + gap

    if not hidden:
        exp, act = _grid_rows(fig["expected"]), _grid_rows(fig["actual"])
        if boolean:
            def colour(v: Any) -> str:
                f = _val(v)
                return NONFINITE if f is None else _ramp([FALSE_COLOUR, TRUE_COLOUR], f)
            legend = "dark = True, light = False"
        else:
            lo, hi = _val(fig["vmin"]) or 0.0, _val(fig["vmax"]) or 0.0
            scale = _Scale(lo, hi, "diverging" if lo < 0 < hi else "viridis")
            colour = scale.colour
            legend = "scale"
        for title, grid in (("expected", exp), ("yours", act)):
            def body(x0: float, grid: list = grid, title: str = title) -> str:
                out = _cells(grid, colour, x0, top, s)
                if not boolean and labelled:
                    out += _labels(grid, colour, x0, top, s)
                if title == "yours" and boolean and not mostly_wrong:
                    out += _marks(bad_cells, x0, top, s, "#dc2626")
                tip = (f"index {widx}: expected {fmt(exp[worst[0]][worst[1]])}, yours "
                       f"{fmt(act[worst[0]][worst[1]])}")
                return out + _worst(worst[0], worst[1], x0, top, s, tip)
            lg = (_text(x, top + ph + 16, legend, "start", 10) if legend != "scale" else
                  scale.legend(x, top + ph + 8, min(max(pw, 120), 160)))
            add(title, body, lg)
    if boolean:
        def dcolour(v: Any) -> str:
            f = _val(v)
            return NONFINITE if f is None else ("#dc2626" if f > 0 else "#f3f4f6")
        dtitle, dlegend_text = "where yours differs", "red = differs"
        if mostly_wrong:
            dlegend_text += f": {len(bad_cells)} of {rows * cols} cells"
        dscale = None
    else:
        dmax = _val(fig.get("dmax")) or 0.0
        dscale = _Scale(0.0, dmax if dmax > 0 else 1.0, "diff")
        dcolour = dscale.colour
        dtitle, dlegend_text = "|difference|", ""

    def dbody(x0: float) -> str:
        out = _cells(diff, dcolour, x0, top, s)
        if not boolean and labelled:
            out += _labels(diff, dcolour, x0, top, s)
        if not boolean and len(bad_cells) < rows * cols:
            # mark the out-of-tolerance cells (all of them marked would say nothing)
            out += _marks(bad_cells, x0, top, s, "#111827")
        tip = f"largest error at index {widx}: {fmt(diff[worst[0]][worst[1]])}" if not \
            boolean else f"first difference at index {widx}"
        return out + _worst(worst[0], worst[1], x0, top, s, tip)

    dlegend = (dscale.legend(x, top + ph + 8, min(max(pw, 120), 160)) if dscale else
               _text(x, top + ph + 16, dlegend_text, "start", 10))
    add(dtitle, dbody, dlegend)
    width = x - gap + 8
    height = top + ph + 30
    parts = [f'<svg class="figure heatmap" '
             f'width="{_n(width)}" height="{_n(height)}" viewBox="0 0 {_n(width)} '
             f'{_n(height)}" role="img" aria-label="{escape(_caption(fig))}">']
    for i, (title, body, legend) in enumerate(panels):
        px = 4.0 + i * (max(pw, 120) + gap)
        parts.append(_text(px, 14, title, "start", 12, "600", "#1f2933"))
        parts.append(f'<rect x="{_n(px - 0.5)}" y="{_n(top - 0.5)}" width="{_n(pw + 1)}" '
                     f'height="{_n(ph + 1)}" fill="none" stroke="#cbd2d9"/>')
        parts.append(body)
        parts.append(legend)
    parts.append("</svg>")
    return "".join(parts)


def _tuple(values: Sequence[Any]) -> str:
    return "(" + ", ".join(str(v) for v in values) + ("," if len(values) == 1 else "") + ")"


def _caption(fig: dict[str, Any]) -> str:
    text = f"{fig['title']}, shape {_tuple(fig['full_shape'])}"
    if fig.get("slice"):
        text += f", slice {fig['slice']} (through the worst element)"
    what = "first difference" if fig["boolean"] or fig.get("first") else "largest error"
    wrong = "differ" if fig["boolean"] or fig.get("first") else "are out of tolerance"
    text += (f": {fig['n_bad']} of {fig['n_total']} values {wrong}; {what} at index "
             f"{_tuple(fig['worst_index'])}, outlined")
    return text


def _line(fig: dict[str, Any]) -> str:
    """A 1-D comparison: expected and yours against the index, |difference| bars below."""
    diff = [_val(v) for v in fig["diff"]]
    bad = fig["bad"]
    n = len(diff)
    width, left, right = 560.0, 46.0, 10.0
    pw = width - left - right
    hidden = fig.get("hidden", True)
    parts: list[str] = []
    y = 6.0

    def xpos(i: float) -> float:
        return left + (i + 0.5) * pw / max(n, 1)

    if not hidden:
        exp = [_val(v) for v in fig["expected"]]
        act = [_val(v) for v in fig["actual"]]
        vals = [v for v in exp + act if v is not None and math.isfinite(v)]
        lo, hi = (min(vals), max(vals)) if vals else (0.0, 1.0)
        if hi <= lo:
            lo, hi = lo - 1.0, hi + 1.0
        h = 130.0

        def ypos(v: float) -> float:
            return y + 8 + (hi - v) / (hi - lo) * (h - 16)

        parts.append(f'<rect x="{_n(left)}" y="{_n(y)}" width="{_n(pw)}" height="{_n(h)}" '
                     f'fill="#fbfcfd" stroke="#e4e7eb"/>')
        parts.append(_text(left - 4, ypos(hi) + 4, fmt(hi), "end", 10))
        parts.append(_text(left - 4, ypos(lo) + 4, fmt(lo), "end", 10))
        for series, colour, dash in ((exp, "#6b7280", ""), (act, "#2563eb", "")):
            parts.append(_polyline([(xpos(i), ypos(v)) for i, v in enumerate(series)
                                    if v is not None and math.isfinite(v)], colour, dash,
                                   1.6))
            if n <= 60:
                parts.append("".join(
                    f'<circle cx="{_n(xpos(i))}" cy="{_n(ypos(v))}" r="2.4" fill="{colour}"/>'
                    for i, v in enumerate(series) if v is not None and math.isfinite(v)))
        parts.append(_legend([("expected", "#6b7280", ""), ("yours", "#2563eb", "")],
                             left + 6, y + 14))
        y += h + 12
    h2 = 70.0
    finite = [d for d in diff if d is not None and math.isfinite(d)]
    dmax = max(finite) if finite else 1.0
    dmax = dmax if dmax > 0 else 1.0
    parts.append(f'<rect x="{_n(left)}" y="{_n(y)}" width="{_n(pw)}" height="{_n(h2)}" '
                 f'fill="#fbfcfd" stroke="#e4e7eb"/>')
    bw = max(1.0, pw / max(n, 1) * 0.8)
    for i, d in enumerate(diff):
        colour = "#dc2626" if bad[i] else "#9ca3af"
        bh = h2 - 4 if d is None or math.isinf(d) else (d / dmax) * (h2 - 4)
        if d is None or math.isinf(d):
            colour = NONFINITE
        parts.append(f'<rect x="{_n(xpos(i) - bw / 2)}" y="{_n(y + h2 - bh)}" '
                     f'width="{_n(bw)}" height="{_n(max(bh, 0.0))}" fill="{colour}"/>')
    w = fig["worst"][-1]
    parts.append(f'<rect class="worst" x="{_n(xpos(w) - bw / 2 - 2)}" y="{_n(y - 2)}" '
                 f'width="{_n(bw + 4)}" height="{_n(h2 + 4)}" fill="none" '
                 f'stroke="{WORST_OUTER}" stroke-width="1.5" stroke-dasharray="3 2">'
                 f'<title>{escape("index " + _tuple(fig["worst_index"]))}</title></rect>')
    parts.append(_text(left - 4, y + 10, fmt(dmax), "end", 10))
    parts.append(_text(left - 4, y + h2, "0", "end", 10))
    parts.append(_text(left + pw / 2, y + h2 + 14,
                       "|difference| by index (red: outside the tolerance)", "middle", 10))
    parts.append(_text(left, y + h2 + 14, "0", "start", 10))
    parts.append(_text(left + pw, y + h2 + 14, str(fig["shape"][-1] - 1), "end", 10))
    height = y + h2 + 22
    return (f'<svg class="figure line-diff" '
            f'width="{_n(width)}" height="{_n(height)}" viewBox="0 0 {_n(width)} '
            f'{_n(height)}" role="img" aria-label="{escape(_caption(fig))}">'
            + "".join(parts) + "</svg>")


def _polyline(points: list[tuple[float, float]], colour: str, dash: str,
              width: float) -> str:
    if len(points) < 2:
        return ""
    pts = " ".join(f"{_n(x)},{_n(y)}" for x, y in points)
    dash_attr = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<polyline points="{pts}" fill="none" stroke="{colour}" '
            f'stroke-width="{_n(width)}"{dash_attr} stroke-linejoin="round"/>')


def _legend(items: list[tuple[str, str, str]], x: float, y: float) -> str:
    out = []
    for name, colour, style in items:
        if style == "pairs":
            out.append(f'<line x1="{_n(x)}" y1="{_n(y - 4)}" x2="{_n(x + 18)}" y2="{_n(y - 4)}" '
                       f'stroke="{colour}" stroke-width="1.3" stroke-dasharray="3 2"/>')
        elif style == "points":
            out.append(f'<circle cx="{_n(x + 9)}" cy="{_n(y - 4)}" r="3.5" fill="{colour}"/>')
        else:
            dash = ' stroke-dasharray="5 3"' if style == "dashed" else ""
            out.append(f'<line x1="{_n(x)}" y1="{_n(y - 4)}" x2="{_n(x + 18)}" '
                       f'y2="{_n(y - 4)}" stroke="{colour}" stroke-width="2"{dash}/>')
        out.append(_text(x + 24, y, name, "start", 11))
        y += 15
    return "".join(out)


# -- curves ----------------------------------------------------------------------------------

def _nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    span = hi - lo
    if span <= 0:
        return [lo]
    raw = span / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step) * step
    ticks = []
    t = start
    while t <= hi + step * 1e-9:
        ticks.append(round(t, 12))
        t += step
    return ticks


def _log_ticks(lo: float, hi: float) -> list[float]:
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    ticks = [10.0 ** k for k in range(a, b + 1)]
    if b - a <= 2:
        ticks = sorted(t * m for t in ticks for m in (1, 2, 5))
    if b - a > 8:
        step = math.ceil((b - a) / 8)
        ticks = [10.0 ** k for k in range(a, b + 1, step)]
    return [t for t in ticks if lo / 1.0001 <= t <= hi * 1.0001]


def _tick_label(t: float, log: bool) -> str:
    if log and t > 0:
        k = math.log10(t)
        if abs(k - round(k)) < 1e-9 and (k < -2 or k > 4):
            return f"1e{int(round(k))}"
    return f"{t:g}"


def _curve(fig: dict[str, Any]) -> str:
    n_legend = len(fig["series"])
    legend_rows = (n_legend + 1) // 2
    width, height = 620.0, 296.0 + 16.0 * legend_rows
    left, right, top, bottom = 62.0, 16.0, 14.0, 42.0 + 16.0 * legend_rows
    pw, ph = width - left - right, height - top - bottom
    log_x, log_y = fig["log_x"], fig["log_y"]

    def usable(v: float | None, log: bool) -> bool:
        return v is not None and math.isfinite(v) and (v > 0 or not log)

    xs, ys = [], []
    for s in fig["series"]:
        for xv, yv, ev in zip(s["x"], s["y"], s.get("err") or [None] * len(s["y"])):
            xv, yv = _val(xv), _val(yv)
            if usable(xv, log_x) and usable(yv, log_y):
                xs.append(xv)
                ys.append(yv)
                e = _val(ev)
                if e is not None and math.isfinite(e):
                    ys.extend(v for v in (yv - e, yv + e) if usable(v, log_y))
    for m in fig["marks"]:
        xv = _val(m["x"])
        if usable(xv, log_x):
            xs.append(xv)
    if not xs:
        return ""
    tx = (math.log10 if log_x else float)
    ty = (math.log10 if log_y else float)
    x_lo, x_hi = min(map(tx, xs)), max(map(tx, xs))
    y_lo, y_hi = min(map(ty, ys)), max(map(ty, ys))
    if x_hi <= x_lo:
        x_lo, x_hi = x_lo - 1, x_hi + 1
    if y_hi <= y_lo:
        y_lo, y_hi = y_lo - 1, y_hi + 1
    pad_y = (y_hi - y_lo) * 0.06
    pad_x = (x_hi - x_lo) * 0.03
    x_lo, x_hi, y_lo, y_hi = x_lo - pad_x, x_hi + pad_x, y_lo - pad_y, y_hi + pad_y

    def X(v: float) -> float:
        return left + (tx(v) - x_lo) / (x_hi - x_lo) * pw

    def Y(v: float) -> float:
        return top + (y_hi - ty(v)) / (y_hi - y_lo) * ph

    cid = f"clip{next(_IDS)}"
    parts = [f'<defs><clipPath id="{cid}"><rect x="{_n(left)}" y="{_n(top)}" '
             f'width="{_n(pw)}" height="{_n(ph)}"/></clipPath></defs>',
             f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(pw)}" height="{_n(ph)}" '
             f'fill="#fbfcfd" stroke="#d2d6dc"/>']
    bounds = [(10 ** x_lo, 10 ** x_hi) if log_x else (x_lo, x_hi),
              (10 ** y_lo, 10 ** y_hi) if log_y else (y_lo, y_hi)]
    for t in (_log_ticks(*bounds[0]) if log_x else _nice_ticks(*bounds[0])):
        parts.append(f'<line x1="{_n(X(t))}" y1="{_n(top)}" x2="{_n(X(t))}" '
                     f'y2="{_n(top + ph)}" stroke="#eef0f3"/>')
        parts.append(_text(X(t), top + ph + 14, _tick_label(t, log_x), "middle", 10))
    for t in (_log_ticks(*bounds[1]) if log_y else _nice_ticks(*bounds[1])):
        parts.append(f'<line x1="{_n(left)}" y1="{_n(Y(t))}" x2="{_n(left + pw)}" '
                     f'y2="{_n(Y(t))}" stroke="#eef0f3"/>')
        parts.append(_text(left - 5, Y(t) + 3.5, _tick_label(t, log_y), "end", 10))
    parts.append(_text(left + pw / 2, top + ph + 30, fig["x_label"], "middle", 11))
    parts.append(f'<text x="14" y="{_n(top + ph / 2)}" text-anchor="middle" font-size="11" '
                 f'fill="#374151" transform="rotate(-90 14 {_n(top + ph / 2)})">'
                 f'{escape(fig["y_label"])}</text>')
    body = []
    for m in fig["marks"]:
        xv = _val(m["x"])
        if not usable(xv, log_x):
            continue
        yv = _val(m.get("y"))
        if usable(yv, log_y):
            body.append(f'<circle cx="{_n(X(xv))}" cy="{_n(Y(yv))}" r="4" fill="none" '
                        f'stroke="#111827" stroke-width="1.5"/>')
            body.append(_text(X(xv) + 6, Y(yv) - 6, m["label"], "start", 10, fill="#111827"))
        else:
            body.append(f'<line x1="{_n(X(xv))}" y1="{_n(top)}" x2="{_n(X(xv))}" '
                        f'y2="{_n(top + ph)}" stroke="#111827" stroke-dasharray="3 3"/>')
            anchor = "start" if X(xv) < left + pw * 0.7 else "end"
            body.append(_text(X(xv) + (5 if anchor == "start" else -5), top + 12, m["label"],
                              anchor, 10, fill="#111827"))
    legend = []
    for i, s in enumerate(fig["series"]):
        colour = PALETTE[int(s.get("colour", i)) % len(PALETTE)]
        pts, segments = [], []
        errs = s.get("err") or [None] * len(s["y"])
        for xv, yv, ev in zip(s["x"], s["y"], errs):
            xv, yv = _val(xv), _val(yv)
            if usable(xv, log_x) and usable(yv, log_y):
                pts.append((X(xv), Y(yv)))
                e = _val(ev)
                if e is not None and math.isfinite(e) and e > 0:
                    lo = yv - e if usable(yv - e, log_y) else yv
                    body.append(f'<line x1="{_n(X(xv))}" y1="{_n(Y(lo))}" x2="{_n(X(xv))}" '
                                f'y2="{_n(Y(yv + e))}" stroke="{colour}" stroke-width="1.4"/>')
            elif pts:
                segments.append(pts)
                pts = []
        segments.append(pts)
        if s["style"] == "pairs":
            flat = [p for seg in segments for p in seg]
            body.append("".join(
                f'<line x1="{_n(a[0])}" y1="{_n(a[1])}" x2="{_n(b[0])}" y2="{_n(b[1])}" '
                f'stroke="{colour}" stroke-width="1.3" stroke-dasharray="3 2"/>'
                f'<circle cx="{_n(b[0])}" cy="{_n(b[1])}" r="2" fill="{colour}"/>'
                for a, b in zip(flat[::2], flat[1::2])))
        elif s["style"] == "points":
            body.append("".join(f'<circle cx="{_n(x)}" cy="{_n(y)}" r="3.6" fill="{colour}" '
                                f'fill-opacity="0.9"/>' for seg in segments for x, y in seg))
        else:
            dash = "6 4" if s["style"] == "dashed" else ""
            body.extend(_polyline(seg, colour, dash, 2.0) for seg in segments)
        legend.append((s["name"], colour, s["style"]))
    parts.append(f'<g clip-path="url(#{cid})">' + "".join(body) + "</g>")
    for i, item in enumerate(legend):
        parts.append(_legend([item], left + (i % 2) * pw / 2, top + ph + 52 + 16 * (i // 2)))
    return (f'<svg class="figure curve" width="{_n(width)}" '
            f'height="{_n(height)}" viewBox="0 0 {_n(width)} {_n(height)}" role="img" '
            f'aria-label="{escape(fig["title"])}">' + "".join(parts) + "</svg>")


_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _decoded(value: Any) -> Any:
    """A payload with its non-finite numbers as floats again: ``figures.py`` writes them as
    ``"nan"``/``"inf"``/``"-inf"`` (``numbers.json_number``: JSON has none)."""
    if isinstance(value, str):
        return _NONFINITE.get(value, value)
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    return value


def render(fig: dict[str, Any]) -> str:
    """The figure's SVG markup ('' for an unknown kind or a curve with nothing to draw;
    ``NOT_DRAWN`` for a payload that cannot be drawn, see the module docstring)."""
    try:
        fig = _decoded(fig)
        kind = fig.get("type")
        if kind == "heatmap":
            return _heatmap(fig)
        if kind == "line":
            if fig.get("boolean"):
                return _heatmap({**fig, "worst": [0, fig["worst"][-1]]})
            return _line(fig)
        if kind == "curve":
            return _curve(fig)
    except Exception as exc:  # noqa: BLE001 - any payload, any error: logged, or raised in tests
        if _strict():
            raise
        _LOG.warning("a figure (%s) could not be drawn: %s", _kind(fig), _where(exc))
        return NOT_DRAWN
    return ""


def caption(fig: dict[str, Any]) -> str:
    """One line under the figure: what it shows, where the worst element is, downsampling
    ('' when the payload cannot say: ``render`` has logged it, or raises in strict mode)."""
    try:
        if fig.get("type") == "curve":
            return fig.get("note", "")
        text = _caption(fig)
        if fig.get("note"):
            text += f". {fig['note']}"
        return text
    except Exception:  # noqa: BLE001 - as in render
        if _strict():
            raise
        return ""


def _strict() -> bool:
    """Whether a figure that cannot be drawn raises (``GRADER_STRICT_FIGURES=1``)."""
    return os.environ.get(STRICT_ENV) == "1"


def _kind(fig: Any) -> str:
    """The payload's kind, named only when it is one this module draws."""
    kind = fig.get("type") if isinstance(fig, dict) else None
    return kind if kind in KINDS else "unknown kind"


def _where(exc: Exception) -> str:
    """The exception's type and the line of this grader's code it was raised at (no
    message)."""
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return type(exc).__name__
    last = frames[-1]
    return f"{type(exc).__name__} at {os.path.basename(last.filename)}:{last.lineno} in {last.name}"
