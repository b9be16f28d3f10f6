"""The assignment's late policy (``[late]`` in ``assignment.toml``): a grace period, a penalty
per day or per hour with a floor or a cut-off, per-student extensions.

```toml
due = 2026-12-15T23:59:00Z           # [late] needs it

[late]
grace = "15 minutes"                 # optional: a submission this late is still on time
per_day = "10%"                      # or per_hour: "N%" of the maximum, or a number of points
floor = "50%"                        # optional: the penalty never takes a total below this
cutoff = "7 days"                    # optional: later than this, not accepted (the total is 0)
extensions = "extensions.csv"        # optional: a CSV file, relative to assignment.toml
```

Durations are text: a number and a unit (``d``/``day``/``days``, ``h``/``hour``/``hours``,
``min``/``minute``/``minutes``), several terms allowed (``"1 day 12 hours"``). A penalty or a
floor is a percentage of the submission's maximum (``"10%"``) or a number of points (``1.5``).
At least one of ``per_day``, ``per_hour`` (one of them at most) and ``cutoff`` is required;
``floor`` needs a penalty per day or hour.

Instead of a file, ``[late.extensions]`` may list them: ``"Jones, Bob" = "2 days"`` (more
time) or ``ann = 2026-12-17T23:59:00Z`` (a due date-time of their own; a date alone means
23:59 that day; a time without a zone is this machine's, as for ``due``). The file is a CSV
with a header naming ``student`` and ``due`` and/or ``extra`` (and optionally ``comment``,
which is not read), one of ``due`` or ``extra`` per line; blank lines and lines starting with
``#`` are skipped. A student is named as ``grade bulk --adjust`` names them (a submission id, a
name, an LMS id, ...: ``adjust.student_keys``).

How lateness is counted (``assess``): the time between the student's due date-time (the
assignment's ``due``, or their extension's) and the submission time, exactly, in UTC (no
daylight-saving jump counts). A submission at most ``grace`` late is on time. Past the grace,
the lateness counts from the due date-time itself (the grace is not taken off), in whole days
of 24 hours (``per_day``) or whole hours (``per_hour``), any part of one counting as a whole:
a minute past a 1-hour grace is 1 day late, 24 h 1 min is 2 days. The penalty is that count
times the rate, a percentage being of the submission's maximum; it is taken from the total
the earlier marks left (rubric items, adjustments), but never below ``floor`` (a total
already below it loses nothing). A submission more than ``cutoff`` late (counted the same
way, from the due date-time) is not accepted: its total becomes 0, whatever the floor.

Every malformed value raises ``ValueError`` with one sentence naming the field
(``assignment.py`` makes it an ``AssignmentError``). The extensions file is read only when the
extensions are used (``check_extensions`` before grading, ``apply``), so that a copy of
``assignment.toml`` without it (a release, a Gradescope bundle) still loads: a file that does not
read or fit, or an extension naming several submissions, raises ``ExtensionError`` naming the
file and the line; an extension naming none is a notice.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from grader import numbers
from grader.results import MarkKind, SubmissionResult

KEYS = ("grace", "per_day", "per_hour", "floor", "cutoff", "extensions")
UNITS = {"day": dt.timedelta(days=1), "hour": dt.timedelta(hours=1)}
_DURATION_UNITS = {
    **dict.fromkeys(("d", "day", "days"), dt.timedelta(days=1)),
    **dict.fromkeys(("h", "hour", "hours"), dt.timedelta(hours=1)),
    **dict.fromkeys(("m", "min", "mins", "minute", "minutes"), dt.timedelta(minutes=1)),
}
_TERM = r"(\d+(?:\.\d+)?)\s*([a-z]+)"
_PERCENT = re.compile(r"\s*(\d+(?:\.\d+)?)\s*%\s*")
_CSV_FIELDS = ("student", "due", "extra", "comment")


class ExtensionError(ValueError):
    """The extensions cannot be used (the file does not read or fit, a student names several
    submissions, a submission is named twice): one sentence naming the file and the line."""


@dataclass(frozen=True)
class Amount:
    """A penalty or a floor: ``value`` percent of a submission's maximum, or ``value`` points."""

    value: float
    percent: bool = False

    def points(self, maximum: float) -> float:
        return self.value * maximum / 100 if self.percent else self.value


@dataclass(frozen=True)
class Extension:
    """One student's extension: a due date-time of their own, or ``extra`` time after the
    assignment's; ``where`` names it for the teacher (``extensions.csv line 3``)."""

    student: str
    where: str
    due: dt.datetime | None = None
    extra: dt.timedelta | None = None

    def due_for(self, due: dt.datetime) -> dt.datetime:
        """The student's due date-time, given the assignment's."""
        return self.due if self.due is not None else due + (self.extra or dt.timedelta(0))


@dataclass(frozen=True)
class LatePolicy:
    """``[late]`` as read: ``per`` the unit of ``rate`` (``"day"``, ``"hour"``, or ``""``:
    no penalty but the cut-off); ``extensions`` those of ``[late.extensions]``;
    ``extensions_file`` the extensions file (resolved; ``extensions_name`` as written), read
    only when extensions are used (``read_extensions``), so that a copy of the assignment
    without it still loads."""

    grace: dt.timedelta = dt.timedelta(0)
    per: str = ""
    rate: Amount | None = None
    floor: Amount | None = None
    cutoff: dt.timedelta | None = None
    extensions: tuple[Extension, ...] = ()
    extensions_file: Path | None = None
    extensions_name: str = ""


@dataclass(frozen=True)
class Penalty:
    """What ``assess`` decided of one late submission: the ``points`` to take (>= 0) and the
    grader's sentence for the mark's label."""

    points: float
    label: str


def parse(data: Any, path: Path | None = None) -> LatePolicy | None:
    """The policy of ``data`` (the TOML value of ``late``; ``None`` when absent; ``path``
    the assignment file, for a relative extensions file); raise ``ValueError`` with one
    sentence naming the field for anything that does not fit."""
    if data is None:
        return None
    unknown = sorted(set(data) - set(KEYS)) if isinstance(data, dict) else None
    if unknown != []:
        what = f"late: unknown field(s) {', '.join(unknown)}" if unknown else \
            "'late' must be a table"
        raise ValueError(f"{what} (fields: {', '.join(KEYS)})")
    rates = [k for k in ("per_day", "per_hour") if k in data]
    if len(rates) > 1:
        raise ValueError("late.per_day and late.per_hour: give one of them, not both")
    if not rates and "cutoff" not in data:
        raise ValueError("late needs a penalty: per_day or per_hour (\"10%\" of the maximum "
                         "or points), or a cutoff")
    if "floor" in data and not rates:
        raise ValueError("late.floor needs a penalty per_day or per_hour to hold back")
    grace = _duration(data["grace"], "late.grace") if "grace" in data else dt.timedelta(0)
    cutoff = _duration(data["cutoff"], "late.cutoff") if "cutoff" in data else None
    rate = _amount(data[rates[0]], f"late.{rates[0]}", zero=False) if rates else None
    floor = _amount(data["floor"], "late.floor", zero=True) if "floor" in data else None
    extensions: tuple[Extension, ...] = ()
    source = None
    given = data.get("extensions")
    if isinstance(given, str) and given.strip():
        source = Path(given.strip())
        if not source.is_absolute() and path is not None:
            source = Path(path).parent / source
    elif isinstance(given, dict):
        extensions = tuple(_inline(student, value) for student, value in given.items())
    elif given is not None:
        raise ValueError("late.extensions must be a CSV file's name or a table of student = "
                         "more time (\"2 days\") or a due date-time")
    _no_twice(extensions)
    return LatePolicy(grace=grace, per=rates[0].removeprefix("per_") if rates else "",
                      rate=rate, floor=floor, cutoff=cutoff, extensions=extensions,
                      extensions_file=source,
                      extensions_name=given.strip() if source is not None else "")


# --- values -----------------------------------------------------------------------------------


def _duration(raw: Any, field: str) -> dt.timedelta:
    """A duration written as text (``"15 minutes"``, ``"1 day 12 hours"``)."""
    text = raw.strip().lower() if isinstance(raw, str) else ""
    terms = re.findall(_TERM, text)
    if not text or not re.fullmatch(rf"(?:\s*{_TERM})+", text) or \
            any(unit not in _DURATION_UNITS for _, unit in terms):
        raise ValueError(f"{field} must be a duration such as \"15 minutes\", \"2 hours\" or "
                         f"\"1 day 12 hours\", not {raw!r}")
    return sum((float(n) * _DURATION_UNITS[unit] for n, unit in terms), dt.timedelta(0))


def _amount(raw: Any, field: str, zero: bool) -> Amount:
    """A percentage of the maximum (``"10%"``) or a number of points, > 0 (>= 0 if ``zero``)."""
    match = _PERCENT.fullmatch(raw) if isinstance(raw, str) else None
    if match is not None:
        value, percent = float(match[1]), True
    elif isinstance(raw, (int, float)) and not isinstance(raw, bool) and math.isfinite(raw):
        value, percent = float(raw), False
    else:
        value, percent = math.nan, False
    if not (value > 0 or (zero and value == 0)) or (percent and value > 100):
        least = ">= 0" if zero else "> 0"
        raise ValueError(f"{field} must be a percentage of the maximum such as \"10%\" or a "
                         f"number of points {least}, not {raw!r}")
    return Amount(value, percent)


def _when(raw: Any) -> dt.datetime | None:
    """A due date-time: a TOML date-time or date, or ISO 8601 text (a date alone: 23:59 that
    day; no zone: this machine's); ``None`` for anything else."""
    if isinstance(raw, str):
        text = raw.strip()
        try:
            raw = dt.date.fromisoformat(text)
        except ValueError:
            try:
                raw = dt.datetime.fromisoformat(text)
            except ValueError:
                return None
    if isinstance(raw, dt.date) and not isinstance(raw, dt.datetime):
        raw = dt.datetime.combine(raw, dt.time(23, 59))
    if not isinstance(raw, dt.datetime):
        return None
    return raw if raw.tzinfo is not None else raw.astimezone()


# --- extensions -------------------------------------------------------------------------------


def _inline(student: str, value: Any) -> Extension:
    where = "[late.extensions]"
    if not student.strip():
        raise ValueError("late.extensions: a student's name is empty")
    if isinstance(value, str):
        return Extension(student.strip(), where,
                         extra=_duration(value, f"late.extensions: {student!r}"))
    due = _when(value)
    if due is None:
        raise ValueError(f"late.extensions: {student!r} must be more time (\"2 days\") or a "
                         f"due date-time (2026-12-17T23:59:00Z), not {value!r}")
    return Extension(student.strip(), where, due=due)


def read_extensions(policy: LatePolicy) -> tuple[Extension, ...]:
    """Every extension of ``policy``: its file's and its table's; ``ExtensionError`` (one
    sentence naming the file and the line) for a file that cannot be read or does not fit."""
    try:
        read = () if policy.extensions_file is None else \
            _read_extensions(policy.extensions_file, policy.extensions_name)
        _no_twice(read + policy.extensions)
    except ExtensionError:
        raise
    except ValueError as exc:
        raise ExtensionError(str(exc)) from None
    return read + policy.extensions


def _read_extensions(path: Path, name: str) -> tuple[Extension, ...]:
    """The extensions of a CSV file (``name`` as the assignment wrote it)."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ValueError(f"late.extensions: {name} cannot be read ({why})") from None
    rows = []
    reader = csv.reader(io.StringIO(text))
    for row in reader:
        if any(c.strip() for c in row) and not row[0].lstrip().startswith("#"):
            rows.append((reader.line_num, row))
    if not rows:
        return ()
    n, header = rows[0]
    names = [h.strip().lower() for h in header]
    if set(names) - set(_CSV_FIELDS) or "student" not in names or \
            not {"due", "extra"} & set(names):
        raise ValueError(f"late.extensions: {name} line {n}: the header must name student and "
                         f"due or extra (and may name comment), not {', '.join(header)}")
    return tuple(_row(name, n, names, row) for n, row in rows[1:])


def _row(name: str, n: int, names: list[str], row: list[str]) -> Extension:
    where = f"{name} line {n}"
    if len(row) > len(names):
        raise ValueError(f"late.extensions: {where}: {len(row)} cells for {len(names)} "
                         "columns (quote a cell that holds a comma)")
    cells = {k: v.strip() for k, v in zip(names, row) if v.strip()}
    student = cells.get("student", "")
    given = [k for k in ("due", "extra") if k in cells]
    if not student:
        raise ValueError(f"late.extensions: {where}: no student")
    if len(given) != 1:
        raise ValueError(f"late.extensions: {where}: give either due or extra for {student!r}, "
                         f"not {'both' if given else 'neither'}")
    if given[0] == "extra":
        return Extension(student, where,
                         extra=_duration(cells["extra"], f"late.extensions: {where}: extra"))
    due = _when(cells["due"])
    if due is None:
        raise ValueError(f"late.extensions: {where}: due must be a date-time such as "
                         f"2026-12-17T23:59:00Z, not {cells['due']!r}")
    return Extension(student, where, due=due)


def _no_twice(extensions: tuple[Extension, ...]) -> None:
    seen: dict[str, Extension] = {}
    for e in extensions:
        first = seen.setdefault(e.student.casefold(), e)
        if first is not e:
            raise ValueError(f"late.extensions: {e.where}: {e.student!r} has an extension "
                             f"already ({first.where})")


def _resolve(policy: LatePolicy,
             keys: dict[str, set[str]]) -> tuple[dict[str, Extension], list[str]]:
    """Submission id -> its extension, and a notice for each extension naming no
    submission; ``ExtensionError`` for one naming several, or a submission named twice."""
    named = [(e, sorted(keys.get(e.student.strip().casefold(), ())))
             for e in read_extensions(policy)]
    several = next(((e, subs) for e, subs in named if len(subs) > 1), None)
    if several is not None:
        e, subs = several
        raise ExtensionError(f"late.extensions: {e.where}: {e.student!r} names {len(subs)} "
                             f"submissions ({', '.join(subs)}): use one of their ids")
    out: dict[str, Extension] = {}
    for e, subs in named:
        for sid in subs:  # one at most
            if out.setdefault(sid, e) is not e:
                raise ExtensionError(f"late.extensions: {e.where}: {e.student!r} is {sid}, "
                                     f"given an extension already ({out[sid].where})")
    return out, [f"The extension of {e.student!r} ({e.where}) names no submission of this "
                 "class: it is not used." for e, subs in named if not subs]


def check_extensions(policy: LatePolicy, keys: dict[str, set[str]]) -> None:
    """Raise ``ExtensionError`` (one sentence naming the file and line) for an extensions
    file that cannot be read or does not fit, or an extension that names several submissions
    of the class or one already named; call it before grading (``keys`` as for ``apply``).
    An extension naming no submission is only a notice of ``apply`` (its student may not have
    handed anything in yet)."""
    _resolve(policy, keys)


# --- penalties --------------------------------------------------------------------------------


def assess(policy: LatePolicy, due: dt.datetime, submitted: dt.datetime, maximum: float,
           before: float, extended: bool = False) -> Penalty | None:
    """The penalty of a submission made at ``submitted`` against the student's own ``due``
    (``extended``: it is an extension's), of ``maximum`` points with ``before`` points left by
    the earlier marks; ``None`` when it is on time (at most ``policy.grace`` late)."""
    late = _utc(submitted) - _utc(due)
    if late <= policy.grace:
        return None
    detail = f"{numbers.span(late.total_seconds())} after the " \
             f"{'extended ' if extended else ''}due date"
    if policy.grace:
        detail += f", past a {numbers.span(policy.grace.total_seconds())} grace"
    cut = numbers.span(policy.cutoff.total_seconds()) if policy.cutoff is not None else ""
    if policy.cutoff is not None and late > policy.cutoff:
        beyond = f", more than {cut} late" if policy.cutoff else ""
        return Penalty(round(max(float(before), 0.0), 6), f"not accepted{beyond} ({detail})")
    if policy.rate is None:
        return Penalty(0.0, f"{detail}, within the {cut} cut-off: no penalty")
    count = -(-late // UNITS[policy.per])  # any part of a day (an hour) counts as a whole one
    asked = count * policy.rate.points(maximum)
    floor = policy.floor.points(maximum) if policy.floor is not None else 0.0
    taken = min(asked, max(before - floor, 0.0))
    label = f"{count} {policy.per}{'s' if count != 1 else ''} late ({detail}): " \
            f"{_rule(policy, maximum)}"
    if policy.floor is not None and taken < asked:
        shown = f" ({numbers.points(policy.floor.value)}%)" if policy.floor.percent else ""
        label += f", kept at the floor of {_points(floor)}{shown}"
    return Penalty(round(taken, 6), label)


def apply(results: list[SubmissionResult], policy: LatePolicy, due: dt.datetime,
          times: dict[str, dt.datetime], flagged: set[str],
          keys: dict[str, set[str]]) -> list[str]:
    """Add one ``MarkKind.LATE`` mark to each late result (``assess``: the penalty is taken
    from the total the earlier marks left, ``final_score`` now; a percentage is of the
    maximum) and return the sentences for the teacher: an extension naming no submission, a
    submission ``flagged`` late by its LMS whose time is unknown (no penalty then).

    ``times``: submission id -> when it was submitted (aware; a naive time is this machine's);
    ``keys``: each way a student may be named (casefolded) -> submission ids
    (``adjust.student_keys``), for the extensions. Raises ``ExtensionError`` as
    ``check_extensions`` does."""
    extensions, notices = _resolve(policy, keys)
    for r in results:
        sid = r.submission
        submitted = times.get(sid)
        if submitted is None:
            if sid in flagged:
                notices.append(f"{sid} is marked late by its LMS, but when it was submitted "
                               "is unknown: no late penalty computed.")
            continue
        ext = extensions.get(sid)
        penalty = assess(policy, ext.due_for(due) if ext else due, submitted, r.max_score,
                         r.final_score, extended=ext is not None)
        if penalty is not None:
            r.add_mark(MarkKind.LATE, -penalty.points, penalty.label)
    return notices


def _rule(policy: LatePolicy, maximum: float) -> str:
    assert policy.rate is not None
    a = "an" if policy.per == "hour" else "a"
    if policy.rate.percent:
        return f"{numbers.points(policy.rate.value)}% of {_points(maximum)} {a} {policy.per}"
    return f"{_points(policy.rate.value)} {a} {policy.per}"


def _points(x: float) -> str:
    text = numbers.points(x)
    return f"{text} point{'' if text == '1' else 's'}"


def _utc(when: dt.datetime) -> dt.datetime:
    """``when`` in UTC (a naive time is this machine's): differences of these are exact."""
    return when.astimezone(dt.UTC)
