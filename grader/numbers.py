"""Every way the grader writes a number, in one place.

- ``points``: a score as a person reads it (reports, the terminal, ``grades.csv``, feedback
  text): at most two decimals, ``9``, ``7.5``, ``0.33``.
- ``exact``: a score as an LMS or a program reads it (``canvas.csv``, ``moodle.csv``, the Moodle
  worksheet's ``Grade``, JUnit properties): at most six decimals, ``0.333333``.
- ``value``: a value in a verdict, six significant digits (``0.650233``), bools and ints as
  they are.
- ``short``: a value on a figure's axis or cell, four significant digits.
- ``json_number``: a number JSON can hold (non-finite ones as strings), optionally rounded.
- ``apportion``: parts of a total rounded so that, as written, they add up to it exactly.
- ``generated``: when a report is written (``SOURCE_DATE_EPOCH`` fixes it).
- ``seconds``: a duration (``None``, not reported, as nothing).
- ``percent`` and ``level``: a score's share of its maximum, and the colour band of a bar.
- ``span``: a length of time in days, hours and minutes (how late a submission is).
- ``size`` and ``whole_mib``: a number of bytes (``1.5 MiB``; ``64 MiB``), defined in
  ``grader/sandbox/harness/sizes.py`` because the worker, which cannot import this package,
  writes sizes too.
"""

from __future__ import annotations

import datetime as dt
import math
import os
from typing import Any

import numpy as np

# sizes: written by the worker too (the wire protocol's limits), so defined in the harness
from grader.sandbox.harness.sizes import size as size
from grader.sandbox.harness.sizes import whole_mib as whole_mib


def points(x: float | int | None) -> str:
    """A score for a person: at most two decimals, no trailing zeros; ``None`` -> ``""``."""
    return exact(x, 2)


def signed_points(x: float) -> str:
    """A change of score for a person: ``+1``, ``-0.5``, ``0`` (``points`` with its sign)."""
    text = points(x)
    return text if text.startswith("-") or text == "0" else "+" + text


def exact(x: float | int | None, decimals: int = 6) -> str:
    """A score for a machine: at most ``decimals`` decimals, no trailing zeros, ``.`` as the
    decimal point; ``None`` -> ``""``."""
    if x is None:
        return ""
    text = f"{round(float(x), decimals):.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def seconds(x: float | None, decimals: int = 2) -> str:
    """A duration for a person, ``"1.25 s"``; ``None`` (not reported: the graded level) ->
    ``""``."""
    return "" if x is None else f"{x:.{decimals}f} s"


def generated() -> str:
    """When a report is written, to the minute, as reports print it. ``SOURCE_DATE_EPOCH``
    (the reproducible-builds convention: seconds since 1970, UTC) fixes it, so that a class
    graded twice can be compared byte for byte."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "")
    if epoch.isdigit():
        return dt.datetime.fromtimestamp(int(epoch), dt.UTC).strftime("%Y-%m-%d %H:%M")
    return dt.datetime.now().strftime("%Y-%m-%d %H:%M")


def value(x: Any) -> str:
    """Short human form of a value in a verdict."""
    if isinstance(x, (bool, np.bool_)):
        return str(bool(x))
    if isinstance(x, (int, np.integer)):
        return str(int(x))
    if isinstance(x, (float, np.floating)):
        return f"{float(x):.6g}"
    return str(x)


def short(x: float | None) -> str:
    """Four significant digits (``None`` is NaN)."""
    if x is None or math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"


def json_number(x: Any, digits: int | None = None) -> Any:
    """A JSON-safe number: bools, ints and complexes kept (complex as text), a float that is
    not finite as ``"nan"``/``"inf"``/``"-inf"``, others rounded to ``digits`` significant
    digits when given."""
    if x is None:
        return None
    if isinstance(x, (bool, np.bool_)):
        return bool(x)
    if isinstance(x, (int, np.integer)):
        return int(x)
    if isinstance(x, (complex, np.complexfloating)):
        return str(complex(x))
    x = float(x)
    if not math.isfinite(x):
        return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return float(f"{x:.{digits}g}") if digits else x


def apportion(parts: list[float], total: float, decimals: int = 6) -> list[float]:
    """``parts`` rounded to ``decimals`` decimals, the rounding's remainder added to the first
    largest, so that, as decimal numbers (what JSON writes), they add up exactly to ``total``
    rounded alike: nine parts of ``10 / 9`` are one ``1.111112`` and eight ``1.111111``."""
    unit = 10 ** decimals
    units = [round(p * unit) for p in parts]
    if units:
        units[units.index(max(units))] += round(total * unit) - sum(units)
    return [u / unit for u in units]


def percent(score: float, max_score: float, digits: int = 1) -> float:
    return round(100 * score / max_score, digits) if max_score else 0.0


def share(value: float, digits: int = 0) -> float:
    """``100 * value`` (a share in [0, 1]) rounded to ``digits``, but never up to 100 when
    ``value`` is below 1: 100% means all of it."""
    shown = round(100 * value, digits)
    return 100 - 10 ** -digits if value < 1 and shown >= 100 else shown


def level(score: float, max_score: float) -> str:
    """The colour band of a score's bar: ``""`` (>= 80%), ``"mid"`` (>= 40%), ``"low"``."""
    p = percent(score, max_score)
    return "" if p >= 80 else ("mid" if p >= 40 else "low")


def span(seconds: float) -> str:
    """A length of time for a person, rounded up (a part of a minute counts, as a part of a
    day does for a late penalty): ``1 d 2 h 5 min``, ``7 d``, ``45 min``; under a minute in
    whole seconds (``1 s``: never ``0 s`` for a positive time)."""
    if seconds < 60:
        whole = max(math.ceil(seconds), 0)
        return "1 min" if whole == 60 else f"{whole} s"
    minutes = math.ceil(seconds / 60)
    days, rest = divmod(minutes, 24 * 60)
    hours, minutes = divmod(rest, 60)
    parts = [f"{n} {unit}" for n, unit in ((days, "d"), (hours, "h"), (minutes, "min")) if n]
    return " ".join(parts)
