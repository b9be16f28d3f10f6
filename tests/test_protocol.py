"""The wire format between grader and worker: plain data round-trips; nothing else passes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from grader.sandbox.harness import protocol


def roundtrip(value, **kw):
    import os

    r, w = os.pipe()
    try:
        protocol.write_frame(w, protocol.encode_message({"ok": True}, value))
        head, blobs = protocol.read_frame(r)
    finally:
        os.close(r)
        os.close(w)
    return protocol.decode_value(head, blobs, **kw)


@pytest.mark.parametrize("value", [
    None, True, 3, -2.5, "text", [1, 2.0, "x"], (1, (2, 3)), {"a": 1, 2: [None]},
    complex(1, -2),
])
def test_plain_values_round_trip(value):
    assert roundtrip(value) == value


def test_non_finite_floats_round_trip():
    out = roundtrip([math.nan, math.inf, -math.inf])
    assert math.isnan(out[0]) and out[1] == math.inf and out[2] == -math.inf


@pytest.mark.parametrize("value", [np.float64(0.25), np.int64(7), np.bool_(True),
                                   np.float32(1.5)])
def test_numpy_scalars_keep_type_and_shape(value):
    out = roundtrip(value)
    assert type(out) is type(value) and out == value


@pytest.mark.parametrize("array", [
    np.arange(6.0).reshape(2, 3), np.array(3.5), np.ones((3, 4), dtype=bool)[:, ::2],
    np.zeros((0, 2)), np.arange(6.0).reshape(2, 3).T, np.arange(4, dtype=">i4"),
    np.array([1 + 2j]), np.zeros(2, dtype=[("a", "<f4"), ("b", "<i2")])])
def test_arrays_keep_shape_dtype_values(array):
    out = roundtrip(array)
    assert out.shape == array.shape and out.dtype == array.dtype
    np.testing.assert_array_equal(out, array)
    out[...] = 0  # the receiver may change what it received, as with any array


def test_an_array_whose_data_does_not_match_its_header_is_refused():
    import io

    buf = io.BytesIO()
    np.save(buf, np.arange(4.0), allow_pickle=False)
    good = buf.getvalue()
    huge = good.replace(b"(4,), }", b"(99999999999999999,), }")
    for blob in (good[:-8], good + b"x", b"\x93NUMPY garbage", huge,
                 good.replace(b"'<f8'", b"'|O8'")):  # objects are never plain data
        with pytest.raises(protocol.ProtocolError, match="malformed array"):
            protocol.decode_value({"value": {"$a": 0}}, [bytearray(blob)])


@pytest.mark.parametrize("array", [
    np.array(2.5), np.arange(5), np.ones((3, 4), np.float32), np.zeros((2, 0, 3), bool),
    np.array(["ab", "c"]), np.arange(6, dtype=">i4").reshape(2, 3), np.zeros(2, np.complex64),
    np.zeros(3, dtype=[("a", "<f8"), ("b", "<i4")]), np.array([1, 2], dtype="M8[ns]")])
def test_array_blobs_are_the_npy_files_numpy_writes(array):
    """Headers are written and (for plain dtypes) parsed without numpy's literal_eval; the
    bytes are still exactly ``np.save``'s."""
    import io

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    blob = b"".join(protocol._parts(protocol._npy(array)))
    assert blob == buf.getvalue()
    out = protocol._load_npy(bytearray(blob))
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


def test_tensors_keep_dtype_and_shape():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    out = roundtrip(t)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32
    assert torch.equal(out, t)
    assert roundtrip(torch.tensor(2.0)).shape == ()


@pytest.mark.parametrize("value", [object(), np.array([object()]), lambda x: x,
                                   np.ma.masked_array([1, 2])])
def test_objects_that_are_not_plain_data_are_refused(value):
    with pytest.raises(protocol.ProtocolError):
        protocol.encode_message({}, value)


def test_recipes_are_decoded_only_when_allowed():
    head = {"value": {"$r": "scale", "p": {"$d": []}}}
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_value(head, [])
    assert protocol.decode_value(head, [], allow_recipes=True) == protocol.Recipe("scale", {})


def test_pickled_arrays_are_never_loaded():
    import io
    import pickle

    buf = io.BytesIO()
    np.save(buf, np.array([{"evil": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(protocol.ProtocolError, match="malformed array"):
        protocol.decode_value({"value": {"$a": 0}}, [buf.getvalue()])
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_value({"value": {"$a": 0}}, [pickle.dumps([1, 2])])


def test_oversized_results_are_refused():
    import os

    r, w = os.pipe()
    try:
        frame = protocol.encode_message({}, np.zeros(1000))
        protocol.write_frame(w, frame)
        with pytest.raises(protocol.ProtocolError, match="over the"):
            protocol.read_frame(r, max_blob_bytes=1000)
    finally:
        os.close(r)
        os.close(w)


def test_a_frame_of_many_buffers_crosses_a_small_non_blocking_pipe_whole():
    """More buffers than one writev takes, and more bytes than the pipe holds: the writer
    resumes mid-buffer; the arrays' memory is never joined into one copy."""
    import os
    import threading
    import time

    arrays = [np.arange(i, i + 700, dtype=np.float64) for i in range(300)]  # 600+ buffers
    r, w = os.pipe()
    os.set_blocking(w, False)
    got: list = []
    reader = threading.Thread(target=lambda: got.append(protocol.read_frame(r, time.monotonic()
                                                                             + 10)))
    reader.start()
    try:
        frame = protocol.encode_frame({"ok": True}, arrays)
        assert len(frame) > 512 and sum(memoryview(p).nbytes for p in frame) > 2**20
        protocol.write_frame(w, frame, time.monotonic() + 10)
        reader.join(10)
    finally:
        os.close(r)
        os.close(w)
    out = protocol.decode_value(*got[0])
    assert len(out) == 300 and all(np.array_equal(a, b) for a, b in zip(out, arrays))
