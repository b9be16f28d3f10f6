"""The wire format between grader and worker: plain data round-trips; nothing else passes."""

from __future__ import annotations

import functools
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
    np.array([1 + 2j]), np.zeros(3, np.float16), np.zeros(2, ">c16"), np.zeros(2, np.uint64)])
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


ARRAYS_OF_OTHER_DTYPES = [
    np.array(["ab", "c"]), np.array([b"ab"]), np.zeros(3, dtype=[("a", "<f8"), ("b", "<i4")]),
    np.array([1, 2], dtype="M8[ns]"), np.array([1], dtype="m8[s]"), np.zeros(2, "V8"),
    np.zeros(2, np.longdouble), np.zeros(2, dtype=[("a", "<f8", (2,))])]


@pytest.mark.parametrize("array", [
    np.array(2.5), np.arange(5), np.ones((3, 4), np.float32), np.zeros((2, 0, 3), bool),
    np.arange(6, dtype=">i4").reshape(2, 3), np.zeros(2, np.complex64),
    *ARRAYS_OF_OTHER_DTYPES])
def test_array_blobs_are_the_npy_files_numpy_writes(array):
    """Headers are written and parsed without numpy's literal_eval; the bytes are still
    exactly ``np.save``'s; only the dtypes on the allow-list are read back."""
    import io

    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    blob = b"".join(protocol._parts(protocol._npy(array)))
    assert blob == buf.getvalue()
    if array.dtype not in protocol._ALLOWED:
        with pytest.raises(protocol.ProtocolError, match="not one of the dtypes the grader"):
            protocol._load_npy(bytearray(blob))
        return
    out = protocol._load_npy(bytearray(blob))
    assert out.dtype == array.dtype and out.shape == array.shape
    np.testing.assert_array_equal(out, array)


@pytest.mark.parametrize("array", [*ARRAYS_OF_OTHER_DTYPES, np.bytes_(b"x"),
                                   np.datetime64(1, "s")])
def test_arrays_and_scalars_of_other_dtypes_are_neither_sent_nor_read(array):
    """Structured, string, bytes, void, datetime and long double arrays are not plain data
    for the grader: the encoder refuses them, and so does the decoder (a forged reply)."""
    with pytest.raises(protocol.ProtocolError, match="not one of the dtypes the grader reads"):
        protocol.encode_message({}, array)
    node = {"$a": 0} if isinstance(array, np.ndarray) else {"$s": 0}
    with pytest.raises(protocol.ProtocolError, match="not one of the dtypes the grader reads"):
        protocol.decode_value({"value": node}, [_npy(np.asarray(array))])


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


def _npy(array, **kw) -> bytearray:
    import io

    buf = io.BytesIO()
    np.save(buf, array, **kw)
    return bytearray(buf.getvalue())


F4 = _npy(np.zeros(2, np.float32))
U8 = _npy(np.zeros(2, np.uint8))

# (what, the value node, its blobs): each is refused with ProtocolError, and nothing else.
MALFORMED = [
    ("f unknown word", {"$f": "zzz"}, []),
    ("f holds a list", {"$f": [1]}, []),
    ("f holds a dict", {"$f": {"a": 1}}, []),
    ("unknown tag", {"$q": 1}, []),
    ("two tags", {"$a": 0, "$s": 0}, [F4]),
    ("tag with an extra key", {"$f": "nan", "x": 1}, []),
    ("empty object", {}, []),
    ("untagged object", {"x": 1}, []),
    ("non-string key", {1: 2}, []),
    ("c holds a number", {"$c": 5}, []),
    ("c one part", {"$c": [1.0]}, []),
    ("c three parts", {"$c": [1.0, 2.0, 3.0]}, []),
    ("c of text", {"$c": ["a", "b"]}, []),
    ("c of true", {"$c": [True, False]}, []),
    ("t holds a number", {"$t": 5}, []),
    ("t holds text", {"$t": "ab"}, []),
    ("d holds a number", {"$d": 3}, []),
    ("d item not a pair", {"$d": [[1]]}, []),
    ("d item a number", {"$d": [1]}, []),
    ("d list key", {"$d": [[[1], 2]]}, []),
    ("d tuple key holding a list", {"$d": [[{"$t": [[1]]}, 2]]}, []),
    ("d array key", {"$d": [[{"$a": 0}, 2]]}, [F4]),
    ("h holds text", {"$h": "x"}, []),
    ("h holds a float", {"$h": 1.5}, []),
    ("h holds true", {"$h": True}, []),
    ("h negative", {"$h": -1}, []),
    ("a missing blob", {"$a": 3}, []),
    ("a holds true", {"$a": True}, [F4]),
    ("a holds text", {"$a": "0"}, [F4]),
    ("s not 0-d", {"$s": 0}, [F4]),
    ("recipe not allowed", {"$r": "scale", "p": {"$d": []}}, []),
    ("integer over 64 bits", 2 ** 70, []),
    ("integer under 64 bits", -(2 ** 63) - 1, []),
    ("non-finite plain float", math.inf, []),
    ("nan plain float", math.nan, []),
    ("set", {1, 2}, []),
    ("too deep", functools.reduce(lambda v, _: [v], range(100), []), []),
    ("npy garbage", {"$a": 0}, [bytearray(b"\x93NUMPY garbage")]),
    ("npy of pickled objects", {"$a": 0}, [_npy(np.array([{"a": 1}]), allow_pickle=True)]),
    ("tensor float8", {"$T": 0, "dtype": "torch.float8_e4m3fn", "device": "cpu"}, [U8]),
    ("tensor qint8", {"$T": 0, "dtype": "torch.qint8", "device": "cpu"}, [U8]),
    ("tensor bits8", {"$T": 0, "dtype": "torch.bits8", "device": "cpu"}, [U8]),
    ("tensor uint1", {"$T": 0, "dtype": "torch.uint1", "device": "cpu"}, [U8]),
    ("tensor complex32", {"$T": 0, "dtype": "torch.complex32", "device": "cpu"}, [U8]),
    ("tensor dtype not a dtype", {"$T": 0, "dtype": "torch.__class__", "device": "cpu"}, [U8]),
    ("tensor dtype a number", {"$T": 0, "dtype": 5, "device": "cpu"}, [U8]),
    ("tensor values not its dtype", {"$T": 0, "dtype": "torch.float64", "device": "cpu"}, [F4]),
    ("tensor big-endian values", {"$T": 0, "dtype": "torch.float32", "device": "cpu"},
     [_npy(np.zeros(2, ">f4"))]),
    ("tensor device meta", {"$T": 0, "dtype": "torch.uint8", "device": "meta"}, [U8]),
    ("tensor device a number", {"$T": 0, "dtype": "torch.uint8", "device": 7}, [U8]),
    ("tensor device cuda garbage", {"$T": 0, "dtype": "torch.uint8", "device": "cuda:x"}, [U8]),
    ("tensor without device", {"$T": 0, "dtype": "torch.uint8"}, [U8]),
    ("tensor missing blob", {"$T": 5, "dtype": "torch.uint8", "device": "cpu"}, []),
]


@pytest.mark.parametrize(("node", "blobs"), [(n, b) for _, n, b in MALFORMED],
                         ids=[what for what, _, _ in MALFORMED])
def test_the_decoder_refuses_malformed_values_with_protocol_error(node, blobs):
    with pytest.raises(protocol.ProtocolError):
        protocol.decode_value({"value": node}, blobs)


def test_the_decoder_reads_recipes_only_well_formed():
    for node in ({"$r": 5, "p": {"$d": []}}, {"$r": "scale", "p": 5},
                 {"$r": "scale"}, {"$r": "scale", "p": {"$d": []}, "x": 1}):
        with pytest.raises(protocol.ProtocolError):
            protocol.decode_value({"value": node}, [], allow_recipes=True)


@pytest.mark.parametrize("header", [
    b"[1, 2]", b'{"ok": tru', b'"text"', b'{"value": NaN}', b'{"value": Infinity}',
    b'{"blobs": "x"}', b'{"blobs": [-1]}', b'{"blobs": [true]}', b'{"blobs": [1.5]}',
    b"\xff\xfe", b"[" * 100_000, b'{"blobs": [5]}',  # a blob the frame does not hold
])
def test_frames_with_a_malformed_header_are_refused(header):
    frame = protocol.HEADER.pack(len(header)) + header
    with pytest.raises(protocol.ProtocolError):
        protocol.value_from_bytes(frame)


def test_frames_with_too_many_blobs_are_refused():
    header = b'{"blobs": [' + b"0," * protocol.MAX_BLOBS + b"0]}"
    with pytest.raises(protocol.ProtocolError, match="over the limit"):
        protocol.value_from_bytes(protocol.HEADER.pack(len(header)) + header)


def test_tensor_dtypes_come_from_an_allow_list():
    """Every dtype on the list round-trips; every other torch dtype is refused."""
    torch = pytest.importorskip("torch")
    for name in protocol.TENSOR_DTYPES:
        t = torch.zeros(3, dtype=getattr(torch, name))
        out = roundtrip(t)
        assert out.dtype == t.dtype and out.shape == t.shape
    others = {str(v).removeprefix("torch.") for v in vars(torch).values()
              if isinstance(v, torch.dtype)} - set(protocol.TENSOR_DTYPES)
    assert {"float8_e4m3fn", "qint8", "bits8", "uint1", "complex32"} <= others
    for name in sorted(others):
        node = {"$T": 0, "dtype": f"torch.{name}", "device": "cpu"}
        with pytest.raises(protocol.ProtocolError, match="not one of the dtypes"):
            protocol.decode_value({"value": node}, [U8])


@pytest.mark.parametrize("value, found", [
    (1, False), ([1, (2, {"k": protocol.Handle(3)})], True), ({"a": [1, 2]}, False),
    ((), False), ([protocol.Recipe("x")], False)])
def test_any_leaf_finds_a_leaf_where_map_leaves_would_visit_it(value, found):
    assert protocol.any_leaf(value, lambda leaf: isinstance(leaf, protocol.Handle)) is found


def test_the_limits_a_frame_breaks_are_said_in_whole_mib_or_bytes():
    """The messages of an oversized frame, byte for byte (``sizes.whole_mib``)."""
    small, large = (protocol.encode_message({}, np.zeros(n)) for n in (1000, 3 << 17))
    said = []
    for frame, limits in ((small, protocol.Limits(blob_bytes=1000)),
                          (large, protocol.Limits(blob_bytes=(1 << 20) + 5)),
                          (small, protocol.Limits(header_bytes=10))):
        with pytest.raises(protocol.ProtocolError) as refused:
            protocol.parse_frame(frame, limits)
        said.append(str(refused.value))
    header = protocol.HEADER.unpack(small[:protocol.HEADER.size])[0]
    assert said == ["the result is 8128 bytes, over the 1000 bytes limit",
                    "the result is 3 MiB, over the 1 MiB limit",
                    f"message header of {header} bytes is over the limit (10 bytes)"]


@pytest.mark.parametrize(("n_bytes", "size", "whole_mib"), [
    (12, "12 bytes", "12 bytes"), (512 << 10, "512 KiB", "524288 bytes"),
    (3 << 19, "1.5 MiB", "2 MiB"), (64 << 20, "64 MiB", "64 MiB"),
    (3 << 30, "3 GiB", "3072 MiB"),
    (1000 << 10, "1000 KiB", "1024000 bytes"),  # never "1e+03 KiB"
    ((1 << 20) - 1, "1024 KiB", "1048575 bytes"),
])
def test_sizes_are_written_one_way_on_either_side_of_the_pipe(n_bytes, size, whole_mib):
    from grader import numbers

    assert numbers.size(n_bytes) == size
    assert numbers.whole_mib(n_bytes) == whole_mib
