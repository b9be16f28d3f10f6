"""A worker's reply, read in the grading process: a raw frame header becomes a typed reply, or
the learner's failed test.

The worker runs the learner's code in the learner's process, so the learner can replace any
part of the harness and send any bytes as its reply. Nothing in a reply is trusted: every field
is checked for its type and range here, every value decoded by ``protocol.decode_value`` (tags,
dtypes, sizes), and anything malformed, unknown or unsupported raises ``faults.BadReturn``
"returned data the grader cannot read: ...", a failed test of the learner, never a grader
error. The grader itself enforces the size of what it keeps (the worker's own caps are the
learner's to lift) and makes every text field inert (``grader.inert``).

Fields of a reply header (what ``harness/worker.py`` sends; unknown fields are ignored):

- ``ok`` (bool, required); ``output`` (str) and ``duration_s`` (a finite number >= 0);
- on success, the value (``value`` and the blobs); a ``new`` request's value is a handle;
- on failure, ``kind`` (``exception``, ``missing`` or ``bad_return``), ``where`` (``call`` or
  ``import``), ``type`` (str), ``mro`` (list of str), ``message`` (str), ``traceback`` (list of
  str) and ``lineno`` (int or null).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from grader.inert import inert

from . import faults
from .harness import protocol

OUTPUT_CAP = 64 * 1024  # characters of a call's printed output that are kept (as the worker's)
ROOM = 128              # beyond the cap, for the worker's own "[output truncated: ...]" note
MESSAGE_CAP = 4000      # an exception's message (the worker sends 2,000 at most)
NAME_CAP = 200          # an exception's class name, each name of its bases
MRO_NAMES = 64
TRACEBACK_LINES = 40    # the last ones (the worker sends 20 at most)
LINE_CAP = 500          # one traceback line
KINDS = ("exception", "missing", "bad_return")
WHERE = ("call", "import")
CANNOT_READ = "returned data the grader cannot read"


@dataclass
class Reply:
    """A call that returned: its value, what it printed, how long it ran (in the worker)."""

    value: Any
    output: str
    duration_s: float


@dataclass
class Failure:
    """A call that did not return a value: the learner's exception, a missing name, an
    unencodable result."""

    kind: str
    where: str
    exc_type: str
    message: str
    output: str
    duration_s: float
    mro: list[str] = field(default_factory=list)
    traceback: list[str] = field(default_factory=list)
    lineno: int | None = None


def unreadable(why: str, output: str = "") -> faults.BadReturn:
    """The learner's failed test for a reply that cannot be read, saying why."""
    return faults.BadReturn(f"{CANNOT_READ}: " + inert(why, newlines=False, cap=MESSAGE_CAP,
                                                         what="message"), output=output)


def read(head: dict[str, Any], blobs: list[bytes], *, op: str) -> Reply | Failure:
    """The reply to an ``op`` request; raises ``faults.BadReturn`` when it cannot be read."""
    output = ""
    try:
        output = _output(head)
        ok = head.get("ok")
        if type(ok) is not bool:
            raise _Bad(f"'ok' is {_kind(ok)}, not true or false")
        duration = head.get("duration_s", 0.0)
        if type(duration) not in (int, float) or not math.isfinite(duration) or duration < 0:
            raise _Bad(f"'duration_s' is {_kind(duration)}, not a number of seconds")
        if ok:
            try:
                value = protocol.decode_value(head, blobs, tensor_device=None)
            except protocol.ProtocolError as exc:
                raise _Bad(str(exc)) from None
            if op == "new" and type(value) is not protocol.Handle:
                raise _Bad(f"the object built is {_kind(value)}, not a handle")
            return Reply(value=value, output=output, duration_s=float(duration))
        return _failure(head, output, float(duration))
    except _Bad as exc:
        raise unreadable(str(exc), output) from None


class _Bad(Exception):
    pass


def _kind(value: Any) -> str:
    """What a field holds, for the message (never the learner's text itself)."""
    if value is None:
        return "missing"
    return "true or false" if type(value) is bool else f"of type {type(value).__name__}"


def _text(head: dict[str, Any], name: str, default: str = "") -> str:
    value = head.get(name, default)
    if type(value) is not str:
        raise _Bad(f"{name!r} is {_kind(value)}, not text")
    return value


def _texts(head: dict[str, Any], name: str) -> list[str]:
    value = head.get(name, [])
    if type(value) is not list or not all(type(v) is str for v in value):
        raise _Bad(f"{name!r} is {_kind(value)}, not a list of text")
    return value


def _output(head: dict[str, Any]) -> str:
    return inert(_text(head, "output"), cap=OUTPUT_CAP + ROOM, what="output")


def _name(text: str) -> str:
    return inert(text, newlines=False, cap=NAME_CAP, what="name")


def _failure(head: dict[str, Any], output: str, duration: float) -> Failure:
    kind, where = head.get("kind"), head.get("where", "call")
    if kind not in KINDS:  # (compared item by item: a list or a dict is no error)
        raise _Bad(f"'kind' is {_shown(kind)}, not one of {', '.join(KINDS)}")
    if where not in WHERE:
        raise _Bad(f"'where' is {_shown(where)}, not one of {', '.join(WHERE)}")
    lineno = head.get("lineno")
    if lineno is not None and (type(lineno) is not int or not 0 <= lineno < 1 << 31):
        raise _Bad(f"'lineno' is {_kind(lineno)}, not a line number")
    lines = _texts(head, "traceback")
    shown = [inert(line, newlines=False, cap=LINE_CAP, what="line")
             for line in lines[-TRACEBACK_LINES:]]
    if len(lines) > TRACEBACK_LINES:
        shown.insert(0, f"[traceback truncated: {len(lines) - TRACEBACK_LINES} more lines]")
    return Failure(
        kind=kind, where=where, exc_type=_name(_text(head, "type", "Exception")),
        message=inert(_text(head, "message"), cap=MESSAGE_CAP, what="message"),
        output=output, duration_s=duration,
        mro=[_name(n) for n in _texts(head, "mro")[:MRO_NAMES]], traceback=shown, lineno=lineno)


def _shown(value: Any) -> str:
    return repr(value) if type(value) is str and len(value) <= 40 else _kind(value)
