"""The reader of a worker's reply (``reply.from_frame``: a frame's bytes as the grading process
reads them) against generated replies: odd dtypes and shapes, deep and wide nesting, unknown
and malformed tags, lying blob tables and headers, truncated and garbage ``.npy`` files.

Whatever the bytes, the reader returns a reply or raises the learner's "cannot read" error
(``faults.BadReturn``), nothing else; it allocates little more than the bytes it was given
(no shape in a header makes it allocate what the shape says), and a value it returns goes
through ``check.equal`` to a verdict, never to another exception.
"""

from __future__ import annotations

import io
import json
import struct
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from grader.judge.check import Check, GradeFailure
from grader.sandbox import faults, reply
from grader.sandbox.harness import protocol

try:  # at collection: a first torch import inside an example would eat its deadline
    import torch  # noqa: F401
except ImportError:
    torch = None

# Small bounds, so that generated replies also cross them.
BOUNDS = protocol.Limits(header_bytes=1 << 16, values=2000, blobs=16, blob_bytes=1 << 16)
SETTINGS = settings(max_examples=150, deadline=2000, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

DTYPES = ["bool", "int8", "uint16", "int32", "int64", "uint64", "float16", "float32", ">f8",
          "<f8", "complex64", ">c16", "U3", "S2", "V4", "M8[ns]", "m8[s]", "longdouble",
          "O", [("a", "<f4"), ("b", "<i2")], [("x", "<f8", (2,))], "(2,)i4"]
SHAPES = st.lists(st.integers(0, 4), max_size=4).map(tuple)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=True)
    return buf.getvalue()


@st.composite
def npy_blobs(draw: st.DrawFn) -> bytes:
    """An .npy file of any dtype and shape, possibly mangled."""
    dtype = np.dtype(draw(st.sampled_from(DTYPES)))
    array = np.zeros(draw(SHAPES), dtype)
    blob = _npy(array)
    how = draw(st.sampled_from(["as is", "truncated", "extended", "byte", "shape", "descr",
                                "version", "length", "garbage"]))
    if how == "truncated":
        blob = blob[:draw(st.integers(0, len(blob)))]
    elif how == "extended":
        blob += draw(st.binary(min_size=1, max_size=64))
    elif how == "byte":
        at = draw(st.integers(0, len(blob) - 1))
        blob = blob[:at] + bytes([draw(st.integers(0, 255))]) + blob[at + 1:]
    elif how == "shape":  # a shape that says far more than the data holds
        dims = draw(st.lists(st.sampled_from(["0", "1", "99999999999", "2147483647",
                                              "9" * 19, "9" * 40]), min_size=1, max_size=40))
        blob = blob.replace(repr(array.shape).encode(), f"({', '.join(dims)},)".encode(), 1)
    elif how == "descr":
        descr = draw(st.sampled_from(["<f8", "|O", "<U99999999", "V0", "[('a', '<f8')]",
                                      "<f16", "=f8", "f8", "<x1", "'", ""]))
        blob = blob.replace(array.dtype.descr[0][1].encode() if array.dtype.names is None
                            else b"x", descr.encode(), 1)
    elif how == "version":
        blob = blob[:6] + bytes(draw(st.lists(st.integers(0, 4), min_size=2, max_size=2))) + \
            blob[8:]
    elif how == "length":  # the header length field lies
        blob = blob[:8] + struct.pack("<H", draw(st.integers(0, 65535))) + blob[10:]
    elif how == "garbage":
        blob = b"\x93NUMPY" + draw(st.binary(max_size=200))
    return blob


TAGS = ["$f", "$c", "$t", "$d", "$a", "$s", "$T", "$h", "$r", "$m", "$q", "", "$"]
LEAVES = (st.none() | st.booleans() | st.integers(-(2**70), 2**70)
          | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8)
          | st.sampled_from(["nan", "inf", "-inf", "torch.float32", "torch.qint8", "cpu",
                             "cuda:0", "meta"]))


def _tagged(children: st.SearchStrategy) -> st.SearchStrategy:
    body = children | st.integers(-2, 20) | st.lists(children, max_size=4)
    plain = st.dictionaries(st.sampled_from(TAGS), body, min_size=1, max_size=2)
    tensor = st.fixed_dictionaries({"$T": st.integers(-1, 20), "dtype": LEAVES,
                                    "device": LEAVES})
    return plain | tensor | st.dictionaries(st.text(max_size=3), children, max_size=3)


VALUES = st.recursive(LEAVES, lambda children: st.lists(children, max_size=6)
                      | _tagged(children), max_leaves=40)


@st.composite
def frames(draw: st.DrawFn) -> bytes:
    """A reply frame: any header fields, any value, blobs with a true or lying table, wide
    or deep nesting, the whole possibly truncated."""
    blobs = draw(st.lists(npy_blobs(), max_size=4))
    value = draw(VALUES)
    if blobs and draw(st.booleans()):  # the blobs referred to, as arrays or scalars
        value = [value, *({draw(st.sampled_from(["$a", "$s"])): i} for i in range(len(blobs)))]
    head: dict = {"ok": draw(st.sampled_from([True, True, True, False, "yes", None])),
                  "value": value}
    for name, values in (("output", st.text(max_size=20) | st.integers()),
                         ("duration_s", st.floats() | st.text(max_size=3)),
                         ("kind", st.sampled_from(["exception", "missing", "bad_return", 3])),
                         ("traceback", st.lists(st.text(max_size=5), max_size=3) | LEAVES),
                         ("mro", st.lists(st.text(max_size=5), max_size=3) | LEAVES),
                         ("lineno", st.integers(-5, 2**40) | LEAVES)):
        if draw(st.booleans()):
            head[name] = draw(values)
    sizes = [len(b) for b in blobs]
    head["blobs"] = draw(st.sampled_from([sizes] * 6 + [sizes[:-1], [*sizes, 7], [2**40], "x",
                                                      [-1], [0] * 40]))
    shape = draw(st.sampled_from(["plain", "wide", "deep", "tagged deep"]))
    raw = json.dumps(head, allow_nan=True).encode()
    if shape == "wide":  # more values than the bounds allow, in few bytes
        raw = raw.replace(b'"value": ', b'"value": [' + b"[]," * draw(st.integers(0, 3000))
                          + b"0], \"was\": ", 1)
    elif shape == "deep":
        depth = draw(st.sampled_from([10, 63, 64, 65, 200, 5000]))
        raw = raw.replace(b'"value": ', b'"value": ' + b"[" * depth + b"0" + b"]" * depth
                          + b', "was": ', 1)
    elif shape == "tagged deep":
        depth = draw(st.sampled_from([30, 70]))
        raw = raw.replace(b'"value": ', b'"value": ' + b'{"$t": [' * depth + b"0"
                          + b"]}" * depth + b', "was": ', 1)
    frame = struct.pack(">Q", len(raw)) + raw + b"".join(blobs)
    cut = draw(st.sampled_from([None] * 8 + [0, 4, 8, len(frame) - 1]))
    return frame if cut is None else frame[:max(cut, 0)]


def _read(frame: bytes) -> reply.Reply | reply.Failure | None:
    """The reply, or None for the reader's own "cannot read" error (and only that one)."""
    try:
        return reply.from_frame(frame, bounds=BOUNDS)
    except faults.BadReturn as exc:
        assert exc.message.startswith(reply.CANNOT_READ + ": ")
        assert "\n" not in exc.message
        return None


def _read_bounded(frame: bytes):
    """``_read(frame)``, asserting that reading it traced at most 8 times its bytes + 1 MiB."""
    tracemalloc.start()
    try:
        got = _read(frame)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= 8 * len(frame) + (1 << 20), (peak, len(frame))
    return got


@SETTINGS
@given(frames())
def test_the_reader_returns_a_reply_or_its_own_error_within_bounded_memory(frame):
    got = _read_bounded(frame)
    assert got is None or isinstance(got, (reply.Reply, reply.Failure))


@SETTINGS
@given(st.lists(npy_blobs(), min_size=1, max_size=3), st.sampled_from(["$a", "$s", "$T"]))
def test_arrays_are_read_only_with_an_allowed_dtype_and_the_data_their_header_says(blobs, tag):
    if tag == "$T":
        if torch is None:
            pytest.skip("torch is not installed")
    nodes = [{"$T": i, "dtype": "torch.float32", "device": "cpu"} if tag == "$T" else {tag: i}
             for i in range(len(blobs))]
    head = json.dumps({"ok": True, "value": nodes, "blobs": [len(b) for b in blobs]}).encode()
    frame = struct.pack(">Q", len(head)) + head + b"".join(blobs)
    got = _read_bounded(frame)
    if got is not None and tag == "$a":
        for arr in got.value:
            assert arr.dtype in protocol._ALLOWED and arr.nbytes <= len(frame)


EXPECTED = [np.ones((2, 3), bool), np.linspace(0, 1, 6).reshape(2, 3), 0.5, 3, "text", None,
            (np.ones(2), 1.0), [np.zeros(2), np.ones((1, 1))]]


@SETTINGS
@given(frames(), st.sampled_from(EXPECTED))
def test_a_value_read_is_judged_by_check_never_an_error_of_the_grader(frame, expected):
    """What the reader returns, compared with an expected value, passes or is the learner's
    failed test (``GradeFailure``)."""
    got = _read(frame)
    if not isinstance(got, reply.Reply):
        return
    check = Check(None, None, [], 1e-6, 1e-9)  # type: ignore[arg-type]
    try:
        check.equal(got.value, expected)
    except GradeFailure:
        pass


def test_a_huge_shape_in_a_small_blob_is_refused_before_anything_is_allocated():
    blob = _npy(np.zeros(4)).replace(b"(4,), }" + b" " * 9, b"(1000000000,), }")  # same size
    head = json.dumps({"ok": True, "value": {"$a": 0}, "blobs": [len(blob)]}).encode()
    tracemalloc.start()
    try:
        with pytest.raises(faults.BadReturn, match="does not match the header"):
            reply.from_frame(struct.pack(">Q", len(head)) + head + blob)
        assert tracemalloc.get_traced_memory()[1] < 1 << 20
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize(("value", "blobs", "why"), [
    (b"[" + b"[]," * 200_000 + b"[]]", "[]", "values, over the limit"),
    (b'"' + b"x" * (9 << 20) + b'"', "[]", "is over the limit"),
    (b"0", f"[{1 << 30}]", "over the 64 MiB limit"),
    (b"0", "[" + "0," * reply.BLOBS + "0]", "arrays, over the limit"),
])
def test_oversized_replies_are_refused_before_they_are_decoded(value, blobs, why):
    """The header's bytes and values and the blobs' count and bytes are checked first (the
    blobs a table lists are never even read)."""
    head = b'{"ok": true, "value": ' + value + b', "blobs": ' + blobs.encode() + b"}"
    with pytest.raises(faults.BadReturn, match=why):
        reply.from_frame(struct.pack(">Q", len(head)) + head)


def test_the_bounds_follow_the_expected_value_within_ceilings():
    small, large = reply.limits(np.zeros(4, bool)), reply.limits(np.zeros(1 << 20))
    assert small.blob_bytes < 2 << 20 and small.header_bytes < reply.HEADER_BYTES + 1024
    assert large.blob_bytes == reply.BLOB_BYTES and large.values == 8 * reply.VALUES
    assert large.header_bytes == protocol.MAX_HEADER_BYTES
    assert reply.limits(list(range(10_000))) == reply.LIMITS  # too long to measure: fixed


class _Clock:
    """A fake ``time`` for the protocol module: ``monotonic`` moves ``step`` seconds at every
    look, so a deadline passes after a known number of looks, whatever the machine's load."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def monotonic(self) -> float:
        self.now += self.step
        return self.now


def test_the_grading_process_time_on_a_reply_counts_against_the_calls_limit(monkeypatch):
    """Decoding a reply is bounded by the call's deadline: a value of many lists whose
    decoding outlasts what is left of the limit ends as a timed-out call (``ReadTimeout``,
    which ``WorkerProcess.request`` turns into the learner's ``TimedOut``), never as a
    call that took the grader twice its limit; the same value decodes within a deadline that
    leaves room for it."""
    head = {"ok": True, "value": [[] for _ in range(20_000)], "blobs": []}
    clock = _Clock(step=1.0)
    monkeypatch.setattr(protocol, "time", clock)
    with pytest.raises(protocol.ReadTimeout):  # passed before the value was looked at
        reply.read(head, [], op="call", deadline=0.5)
    clock.now = 0.0
    with pytest.raises(protocol.ReadTimeout):  # passes midway: ~20 looks at the clock
        reply.read(head, [], op="call", deadline=10.0)
    clock.now = 0.0
    assert len(reply.read(head, [], op="call", deadline=100.0).value) == 20_000


def test_a_reply_decoded_past_its_deadline_is_the_learners_timed_out_call(tmp_path,
                                                                          monkeypatch):
    from grader.sandbox.process import WorkerProcess

    (tmp_path / "m.py").write_text("def f():\n    return [[] for _ in range(50_000)]\n")
    real = reply.read
    monkeypatch.setattr(reply, "read", lambda head, blobs, *, op, deadline=None:
                        real(head, blobs, op=op, deadline=-1.0 if op == "call" else deadline))
    with WorkerProcess({"m": tmp_path / "m.py"}) as worker:
        with pytest.raises(faults.TimedOut):
            worker.request("call", module="m", func="f", timeout=5.0)
