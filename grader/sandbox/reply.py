"""A worker's reply, read in the grading process: a raw frame header becomes a typed reply, or
the learner's failed test.

The worker runs the learner's code in the learner's process, so the learner can replace any
part of the harness and send any bytes as its reply. Nothing in a reply is trusted: every field
is checked for its type and range here, every value decoded by ``protocol.decode_value`` (tags,
dtypes, sizes), and anything malformed, unknown or unsupported raises ``faults.BadReturn``
"returned data the grader cannot read: ...", a failed test of the learner, never a grader
error. The grader itself enforces the size of what it keeps (the worker's own caps are the
learner's to lift) and makes every text field inert (``grader.inert``).

Sizes are bounded before anything is decoded (``limits``): a reply's header bytes, the JSON
values in it (counted on the raw bytes), its arrays and their bytes, relative to the size of
the value the test expects where it is known (``check.call``), else fixed ceilings; an array's
``.npy`` header is parsed by ``protocol`` and its dtype must be on ``protocol.ARRAY_DTYPES``.
The bounds keep a forged reply's cost in the grading process to tens of MiB and a fraction
of a second (``tests/test_reply_reader.py``).

Fields of a reply header (what ``harness/worker.py`` sends; unknown fields are ignored):

- ``ok`` (bool, required); ``output`` (str) and ``duration_s`` (a finite number >= 0);
- on success, the value (``value`` and the blobs); a ``new`` request's value is a handle;
  ``modified`` (bool, default false): the call changed its arguments' data (the learner's
  word: it can only cost the learner the test, ``faults.ArgumentsModified``);
- on failure, ``kind`` (``exception``, ``missing`` or ``bad_return``), ``where`` (``call`` or
  ``import``), ``type`` (str), ``mro`` (list of str), ``message`` (str), ``traceback`` (list of
  str) and ``lineno`` (int or null).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

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
# A reply's bounds when the expected value is not known (learner.new, methods of its objects,
# calls a suite makes itself): the references' largest reply holds 8 MiB of arrays, 605 header
# bytes and 52 values. The header's room is for the output (64 KiB characters, up to 12 bytes
# each in JSON; more where the learner lifted the worker's cap: the grader cuts it, and the
# answers still count), the message and the traceback; the values' room is for the commas
# and colons counted inside that text, besides a value given as lists. Decoding the most
# values allowed takes ~0.1 s (~0.7 s at the ceiling of an expected value of 1M elements).
HEADER_BYTES = 8 << 20
VALUES = 1 << 18
BLOBS = 1 << 14           # numpy scalars (one blob each) in a list, say
BLOB_BYTES = 64 << 20     # 8 times the largest result of a reference
LIMITS = protocol.Limits(header_bytes=HEADER_BYTES, values=VALUES, blobs=BLOBS,
                         blob_bytes=BLOB_BYTES)
# Where the expected value is known: room per expected element (a result given as lists of
# numbers, ~20 bytes each in JSON) and per expected byte (a float64 or complex128 result where
# a bool or float32 one is expected, a wrong shape a few times larger), within ceilings.
BYTES_PER_BYTE = 16
MEASURED = 4096  # containers and leaves of an expected value walked to size it, at most


@dataclass
class Reply:
    """A call that returned: its value, what it printed, how long it ran (in the worker)."""

    value: Any
    output: str
    duration_s: float
    modified: bool = False  # the worker saw the call change its arguments' data


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


def limits(expected: Any) -> protocol.Limits:
    """The bounds of a reply whose value should look like ``expected`` (the reference's):
    proportional to its size above the fixed floors, within ceilings; ``LIMITS`` when its
    size cannot be measured cheaply."""
    size = _measure(expected)
    if size is None:
        return LIMITS
    elements, nbytes = size
    return protocol.Limits(
        header_bytes=min(protocol.MAX_HEADER_BYTES, HEADER_BYTES + 32 * elements),
        values=min(VALUES * 8, VALUES + 2 * elements),
        blobs=min(BLOBS * 4, BLOBS + elements),
        blob_bytes=min(BLOB_BYTES // 64 + BYTES_PER_BYTE * nbytes,
                       max(BLOB_BYTES, 4 * nbytes), protocol.MAX_BLOB_BYTES))


def _measure(value: Any) -> tuple[int, int] | None:
    """(elements, bytes) of a value's arrays, tensors and numbers, or None when it holds more
    than ``MEASURED`` containers and leaves (walked in Python: kept short)."""
    stack, elements, nbytes, seen = [value], 0, 0, 0
    while stack:
        seen += 1
        if seen > MEASURED:
            return None
        item = stack.pop()
        if type(item) in (list, tuple):
            stack.extend(item)
        elif type(item) is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, np.ndarray):
            elements, nbytes = elements + item.size, nbytes + item.nbytes
        elif hasattr(item, "element_size") and hasattr(item, "numel"):  # a torch tensor
            elements, nbytes = elements + item.numel(), nbytes + item.numel() * item.element_size()
        else:
            elements, nbytes = elements + 1, nbytes + (len(item) if type(item) is str else 16)
    return elements, nbytes


def unreadable(why: str, output: str = "") -> faults.BadReturn:
    """The learner's failed test for a reply that cannot be read, saying why."""
    return faults.BadReturn(f"{CANNOT_READ}: " + inert(why, newlines=False, cap=MESSAGE_CAP,
                                                         what="message"), output=output)


def from_frame(frame: bytes | bytearray, *, op: str = "call",
               bounds: protocol.Limits = LIMITS) -> Reply | Failure:
    """The reply a whole frame (as read from the worker's pipe) holds, read within ``bounds``;
    raises ``faults.BadReturn`` when it cannot be read, and nothing else."""
    try:
        head, blobs = protocol.parse_frame(frame, bounds)
    except protocol.ProtocolError as exc:
        raise unreadable(str(exc)) from None
    return read(head, blobs, op=op)


def read(head: dict[str, Any], blobs: list[bytes], *, op: str,
         deadline: float | None = None) -> Reply | Failure:
    """The reply to an ``op`` request; raises ``faults.BadReturn`` when it cannot be read, and
    nothing else (an error a check missed is still the learner's unreadable reply), but
    ``protocol.ReadTimeout`` when decoding its value goes on past ``deadline``: the grading
    process's own time on a reply counts against the call's limit."""
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
                value = protocol.decode_value(head, blobs, tensor_device=None,
                                              deadline=deadline)
            except protocol.ReadTimeout:
                raise
            except protocol.ProtocolError as exc:
                raise _Bad(str(exc)) from None
            if op == "new" and type(value) is not protocol.Handle:
                raise _Bad(f"the object built is {_kind(value)}, not a handle")
            modified = head.get("modified", False)
            if type(modified) is not bool:
                raise _Bad(f"'modified' is {_kind(modified)}, not true or false")
            return Reply(value=value, output=output, duration_s=float(duration),
                         modified=modified)
        return _failure(head, output, float(duration))
    except _Bad as exc:
        raise unreadable(str(exc), output) from None
    except protocol.ReadTimeout:
        raise
    except Exception as exc:  # noqa: BLE001 - a check missed: still the learner's reply
        raise unreadable(f"malformed reply ({type(exc).__name__})", output) from None


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
