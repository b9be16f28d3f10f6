"""Wire format between the grader and a learner worker: plain data only, never pickle.

A frame is an 8-byte big-endian header length, a UTF-8 JSON header, then binary blobs whose
sizes the header lists. Values are encoded as JSON with tagged objects:

- ``{"$f": "nan" | "inf" | "-inf"}`` a non-finite float; ``{"$c": [re, im]}`` a complex;
- ``{"$t": [...]}`` a tuple; ``{"$d": [[key, value], ...]}`` a dict;
- ``{"$a": i}`` a numpy array stored as ``.npy`` bytes in blob ``i`` (its header parsed here,
  never by numpy's ``literal_eval`` nor unpickled); ``{"$s": i}`` a numpy scalar, stored the
  same way;
- ``{"$T": i, "dtype": ..., "device": ...}`` a torch tensor (values as ``.npy``);
- ``{"$r": name, "p": params}`` a trusted recipe the worker builds into a callable;
- ``{"$h": id}`` an object that lives in the worker (a handle);
- ``{"$m": key}`` (the grader's requests only) a large suite input the worker holds in sealed
  shared memory (``grader/sandbox/shared_inputs.py``), mapped afresh for each request.

Decoding trusts nothing: a frame's sizes are checked against its ``Limits`` before anything
is allocated for them (header bytes, an upper bound of the JSON values in the header counted
on the raw bytes, the number and bytes of blobs), every tag must have exactly its keys and
their types, integers fit in 64 bits, a plain float is finite, an array's dtype is one of
``ARRAY_DTYPES`` (bool, integers, floats, complex: never structured, object, void, datetime
or string dtypes) and its data is exactly what its shape says, used in place; a tensor's dtype
is one of ``TENSOR_DTYPES`` and its values travel as that dtype's numpy type; anything else
raises ``ProtocolError`` (never ``KeyError``, ``TypeError``, ``ValueError`` or
``OverflowError``).

This module is part of the public harness copied next to the learner's code: it imports only
the standard library and numpy (torch only when a tensor is actually met).
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import select
import struct
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .sizes import whole_mib

HEADER = struct.Struct(">Q")
MAX_HEADER_BYTES = 16 * 1024 * 1024
MAX_BLOB_BYTES = 512 * 1024 * 1024
MAX_DEPTH = 64
MAX_BLOBS = 1 << 20
MAX_NPY_HEADER = 4096  # bytes of an .npy header (numpy writes ~120 for a plain array)
MAX_NDIM = 32
MAX_DIM = 1 << 31  # every axis of an array is shorter
_INT_MIN, _INT_END = -(1 << 63), 1 << 64  # integers travel as int64 or uint64 at most
# The torch dtypes a tensor may have, and the numpy dtype its values travel as (bfloat16 as
# float32: numpy has none). Every other dtype (float8, quantised, bits, complex32, ...) is
# refused.
TENSOR_DTYPES = {
    "bool": "bool", "uint8": "uint8", "int8": "int8", "int16": "int16", "int32": "int32",
    "int64": "int64", "uint16": "uint16", "uint32": "uint32", "uint64": "uint64",
    "float16": "float16", "bfloat16": "float32", "float32": "float32", "float64": "float64",
    "complex64": "complex64", "complex128": "complex128",
}
# The dtypes an array (or a numpy scalar) may have, in either byte order: what the exercises
# compute with. Structured, object, void, datetime, string and long double dtypes are refused.
ARRAY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64", "complex64", "complex128")
ARRAY_KINDS = "bool, integer, float or complex"
# The ``descr`` of each allowed dtype, as numpy writes it in an .npy header.
_DESCRS: dict[bytes, np.dtype] = {
    d.str.encode(): d for name in ARRAY_DTYPES for d in
    (np.dtype(name).newbyteorder("<"), np.dtype(name).newbyteorder(">"))}
_ALLOWED = frozenset(_DESCRS.values())
_DEVICE = re.compile(r"cpu|cuda(?::\d{1,4})?")
# Each tag and the keys its object has, exactly.
_TAG_KEYS = {"$f": {"$f"}, "$c": {"$c"}, "$t": {"$t"}, "$d": {"$d"}, "$a": {"$a"},
             "$s": {"$s"}, "$T": {"$T", "dtype", "device"}, "$h": {"$h"}, "$r": {"$r", "p"},
             "$m": {"$m"}}
_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class ProtocolError(Exception):
    """A frame or value that cannot be decoded (malformed, too large, or not plain data)."""


@dataclass(frozen=True)
class Limits:
    """What one frame may hold, each checked before anything is allocated for it: the bytes
    of its header, the JSON values in it (``None``: not counted, for a trusted peer), its
    blobs and their bytes in all."""

    header_bytes: int = MAX_HEADER_BYTES
    values: int | None = None
    blobs: int = MAX_BLOBS
    blob_bytes: int = MAX_BLOB_BYTES


class PeerClosed(ProtocolError):
    """The other end closed the channel."""


class ReadTimeout(ProtocolError):
    """No complete frame arrived before the deadline."""


@dataclass(frozen=True)
class Recipe:
    """A callable the worker builds from trusted, public code (see ``recipes.py``)."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Handle:
    """A reference to an object that lives in the worker (e.g. a learner's ``nn.Module``)."""

    id: int


def map_leaves(value: Any, leaf: Callable[[Any], Any]) -> Any:
    """``value`` with its lists, tuples and dicts rebuilt and every other value ``leaf(v)``."""
    if type(value) in (list, tuple):
        return type(value)(map_leaves(v, leaf) for v in value)
    if type(value) is dict:
        return {k: map_leaves(v, leaf) for k, v in value.items()}
    return leaf(value)


def any_leaf(value: Any, test: Callable[[Any], bool]) -> bool:
    """Whether ``test`` holds for a leaf of ``value`` (the leaves ``map_leaves`` visits),
    looked for without rebuilding anything and stopping at the first."""
    if type(value) in (list, tuple):
        return any(any_leaf(v, test) for v in value)
    if type(value) is dict:
        return any(any_leaf(v, test) for v in value.values())
    return test(value)


def _is_torch_tensor(value: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(value, torch.Tensor)


_NPY_MAGIC = b"\x93NUMPY\x01\x00"
# The header numpy writes for a plain dtype; the only one read (no ``literal_eval``).
_NPY_HEAD = re.compile(rb"\{'descr': '([<>|=]?[A-Za-z]\d{0,3})', 'fortran_order': (True|False), "
                       rb"'shape': \(((?:\d{1,19}, )*\d{1,19},?|)\), \} *\n")
_DESCR = re.compile(rb"\{'descr': ('[^']{0,40}'|\[)")  # for the message of a refused one


def _npy_header(array: np.ndarray) -> bytes:
    """The ``.npy`` (version 1.0) header of a C-contiguous array, as numpy writes it."""
    dtype = array.dtype
    if dtype.fields is not None or dtype.subdtype is not None:
        head = io.BytesIO()
        np.lib.format.write_array_header_1_0(head, np.lib.format.header_data_from_array_1_0(
            array))
        return head.getvalue()
    text = f"{{'descr': '{dtype.str}', 'fortran_order': False, 'shape': {array.shape!r}, }}"
    pad = -(len(_NPY_MAGIC) + 2 + len(text) + 1) % 64  # data aligned on 64 bytes, as numpy
    text += " " * pad + "\n"
    return _NPY_MAGIC + len(text).to_bytes(2, "little") + text.encode("latin1")


def _npy(array: np.ndarray) -> bytes | tuple[bytes, memoryview]:
    """The ``.npy`` file of a C-contiguous array: its header and a view of its memory (sent
    as they are, instead of ``np.save`` copying it first)."""
    try:
        return _npy_header(array), memoryview(array.reshape(-1)).cast("B")
    except (ValueError, TypeError):
        buf = io.BytesIO()
        np.save(buf, array, allow_pickle=False)
        return buf.getvalue()


def refused_dtype(name: str | None) -> ProtocolError:
    """The error for an array whose dtype (named ``name``; None: a structured one) is not one
    of ``ARRAY_DTYPES``."""
    if name is not None and name.lstrip("<>|=").startswith("O"):
        return ProtocolError("malformed array: an array of Python objects is not plain data")
    what = "a structured dtype" if name is None else f"dtype {name}"
    return ProtocolError(f"an array of {what}, which is not one of the dtypes the grader "
                         f"reads ({ARRAY_KINDS} numbers)")


def _npy_head(blob: bytes | bytearray) -> tuple[tuple[int, ...], bool, np.dtype, int]:
    """(shape, fortran order, dtype, data offset) of an .npy blob (version 1.0 or 2.0) whose
    header is the plain one numpy writes for an allowed dtype; ``ProtocolError`` for any
    other, read from the header's bytes alone (nothing allocated for the data)."""
    magic = bytes(blob[:8])
    if magic[:6] != _NPY_MAGIC[:6] or magic[6:] not in (b"\x01\x00", b"\x02\x00"):
        raise ProtocolError("malformed array: not an .npy file of version 1.0 or 2.0")
    width = 2 if magic[6] == 1 else 4
    start = 8 + width
    end = start + int.from_bytes(blob[8:start], "little")
    if len(blob) < start or end > len(blob) or end - start > MAX_NPY_HEADER:
        raise ProtocolError("malformed array: a truncated or oversized .npy header")
    text = bytes(blob[start:end])
    match = _NPY_HEAD.fullmatch(text)
    if match is None:
        descr = _DESCR.match(text)
        if descr is not None and descr[1].strip(b"'") not in _DESCRS:  # an unusual dtype
            raise refused_dtype(None if descr[1] == b"[" else
                                descr[1].strip(b"'").decode("latin1"))
        raise ProtocolError("malformed array: its header is not the one numpy writes")
    descr, fortran, dims = match.groups()
    dtype = _DESCRS.get(descr)
    if dtype is None:
        raise refused_dtype(descr.decode("latin1"))
    shape = tuple(int(d) for d in dims.split(b",") if d.strip())
    if len(shape) > MAX_NDIM or any(d >= MAX_DIM for d in shape):
        raise ProtocolError(f"malformed array: a shape of {len(shape)} axes up to "
                            f"{max(shape)} long")
    return shape, fortran == b"True", dtype, end


def _parts(blob: bytes | tuple[bytes, memoryview]) -> tuple[bytes | memoryview, ...]:
    return blob if isinstance(blob, tuple) else (blob,)


class _Encoder:
    def __init__(self, max_bytes: int = MAX_BLOB_BYTES,
                 shared: Callable[[np.ndarray], str | None] | None = None) -> None:
        self.blobs: list[bytes | tuple[bytes, memoryview]] = []
        self.max_bytes = max_bytes
        self.total = 0
        self.shared = shared  # the key of an array the peer holds in shared memory, or None

    def _blob(self, array: np.ndarray) -> int:
        if array.dtype.hasobject:
            raise ProtocolError("an array of Python objects is not plain data")
        if array.dtype not in _ALLOWED:
            raise refused_dtype(None if array.dtype.fields is not None else str(array.dtype))
        self.total += array.nbytes
        if self.total > self.max_bytes:
            raise ProtocolError(f"arrays of {self.total / 2**20:.0f} MiB in all, over the "
                                f"{self.max_bytes / 2**20:.0f} MiB limit for a result")
        if not array.flags.c_contiguous:
            array = array.copy(order="C")  # (np.ascontiguousarray would make 0-d arrays 1-d)
        self.blobs.append(_npy(array))
        return len(self.blobs) - 1

    def encode(self, value: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ProtocolError("value is nested too deeply")
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, int) and type(value) in (int, bool):
            return value
        if type(value) is float:
            if math.isfinite(value):
                return value
            return {"$f": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
        if type(value) is complex:
            return {"$c": [self.encode(value.real), self.encode(value.imag)]}
        if type(value) is np.ndarray:
            if self.shared is not None and (key := self.shared(value)) is not None:
                return {"$m": key}
            return {"$a": self._blob(value)}
        if isinstance(value, np.generic) and not isinstance(value, np.object_):
            return {"$s": self._blob(np.asarray(value))}
        if type(value) is list:
            return [self.encode(v, depth + 1) for v in value]
        if type(value) is tuple:
            return {"$t": [self.encode(v, depth + 1) for v in value]}
        if type(value) is dict:
            return {"$d": [[self.encode(k, depth + 1), self.encode(v, depth + 1)]
                           for k, v in value.items()]}
        if isinstance(value, Recipe):
            return {"$r": value.name, "p": self.encode(value.params, depth + 1)}
        if isinstance(value, Handle):
            return {"$h": value.id}
        if _is_torch_tensor(value):
            return self._tensor(value)
        raise ProtocolError(f"an object of type {type(value).__qualname__}, which is not plain "
                            "data (numbers, strings, numpy arrays, tensors, and lists, tuples "
                            "or dicts of these)")

    def _tensor(self, t: Any) -> dict[str, Any]:
        import torch

        if type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter):
            raise ProtocolError(f"a tensor subclass ({type(t).__qualname__}) is not plain data")
        dtype = str(t.dtype)
        data = t.detach()
        if data.dtype == torch.bfloat16:
            data = data.float()
        return {"$T": self._blob(data.cpu().numpy()), "dtype": dtype, "device": str(t.device)}


def _load_npy(blob: bytes | bytearray) -> np.ndarray:
    """The array of a ``.npy`` blob (``_npy_head``), its data used in place, never copied nor
    unpickled: a ``bytearray`` blob gives a writable array."""
    shape, fortran, dtype, offset = _npy_head(blob)
    count = math.prod(shape)
    if len(blob) - offset != count * dtype.itemsize:
        raise ProtocolError("malformed array: the data does not match the header")
    try:
        flat = np.frombuffer(blob, dtype=dtype, count=count, offset=offset)
        return flat.reshape(shape, order="F" if fortran else "C")
    except (ValueError, TypeError) as exc:  # (a backstop: the checks above should hold)
        raise ProtocolError(f"malformed array: {exc}") from None


def array_to_npy(array: np.ndarray) -> bytes:
    """The ``.npy`` bytes of a plain-data array, as a frame's blob holds them."""
    if not array.flags.c_contiguous:
        array = array.copy(order="C")
    return b"".join(_parts(_npy(array)))


def array_from_npy(blob: Any) -> np.ndarray:
    """The array of a ``.npy`` buffer (bytes, bytearray or mmap), used in place."""
    return _load_npy(blob)


def _shown(value: Any) -> str:
    """A short, quoted form of something a peer sent, for an error message."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class _Decoder:
    CLOCK_EVERY = 1024  # lists decoded between two looks at the clock (``deadline``)

    def __init__(self, blobs: list[bytes], *, allow_recipes: bool, tensor_device: str | None,
                 shared: Mapping[str, Callable[[], np.ndarray]] | None = None,
                 deadline: float | None = None):
        self.blobs = blobs
        self.allow_recipes = allow_recipes
        self.tensor_device = tensor_device
        self.shared = shared
        self.deadline = deadline
        self._lists = 0

    def _blob(self, index: Any) -> bytes:
        if type(index) is not int or not 0 <= index < len(self.blobs):
            raise ProtocolError("bad blob reference")
        return self.blobs[index]

    def decode(self, node: Any, depth: int = 0) -> Any:
        if depth > MAX_DEPTH:
            raise ProtocolError("value is nested too deeply")
        kind = type(node)
        if node is None or kind is bool or kind is str:
            return node
        if kind is int:
            if not _INT_MIN <= node < _INT_END:
                raise ProtocolError("an integer outside the 64-bit range")
            return node
        if kind is float:
            if not math.isfinite(node):
                raise ProtocolError("a non-finite number outside its tag")
            return node
        if kind is list:
            self._lists += 1
            if self.deadline is not None and self._lists % self.CLOCK_EVERY == 0 and \
                    time.monotonic() > self.deadline:
                raise ReadTimeout("the deadline passed while the value was decoded")
            return [self.decode(v, depth + 1) for v in node]
        if kind is not dict:
            raise ProtocolError("malformed value")
        tags = [k for k in node if type(k) is str and k.startswith("$")]
        if len(tags) != 1:
            raise ProtocolError("malformed value: an object without exactly one tag")
        tag = tags[0]
        if tag not in _TAG_KEYS or (tag == "$r" and not self.allow_recipes) or \
                (tag == "$m" and self.shared is None):
            raise ProtocolError(f"malformed value: an unknown tag {_shown(tag)}")
        if node.keys() != _TAG_KEYS[tag]:
            raise ProtocolError(f"malformed value: a {tag} object with the keys "
                                f"{_shown(sorted(node))}")
        body = node[tag]
        if tag == "$f":
            if type(body) is not str or body not in _NON_FINITE:
                raise ProtocolError(f"malformed number {_shown(body)}")
            return _NON_FINITE[body]
        if tag in ("$c", "$t", "$d") and type(body) is not list:
            raise ProtocolError(f"malformed value: {tag} holds {type(body).__name__}, not a list")
        if tag == "$c":
            parts = [self.decode(v, depth + 1) for v in body]
            if len(parts) != 2 or not all(type(v) in (int, float) for v in parts):
                raise ProtocolError("malformed complex number")
            return complex(float(parts[0]), float(parts[1]))
        if tag == "$t":
            return tuple(self.decode(v, depth + 1) for v in body)
        if tag == "$d":
            return dict(self._item(item, depth) for item in body)
        if tag == "$a":
            return _load_npy(self._blob(body))
        if tag == "$m":  # (only in the grader's requests: a worker's decoder has ``shared``)
            if type(body) is not str or body not in self.shared:
                raise ProtocolError(f"unknown shared input {_shown(body)}")
            return self.shared[body]()
        if tag == "$s":
            arr = _load_npy(self._blob(body))
            if arr.ndim != 0:
                raise ProtocolError("malformed scalar")
            return arr[()]
        if tag == "$T":
            return self._tensor(node)
        if tag == "$h":
            if type(body) is not int or not 0 <= body < 1 << 63:
                raise ProtocolError(f"malformed handle {_shown(body)}")
            return Handle(body)
        params = self.decode(node["p"], depth + 1)  # "$r", allowed
        if type(body) is not str or type(params) is not dict:
            raise ProtocolError("malformed recipe")
        return Recipe(body, params)

    def _item(self, item: Any, depth: int) -> tuple[Any, Any]:
        if type(item) is not list or len(item) != 2:
            raise ProtocolError("malformed dict item")
        key = self.decode(item[0], depth + 1)
        if not isinstance(key, (str, int, float, bool, tuple)) and key is not None:
            raise ProtocolError("unhashable dict key")
        try:
            hash(key)
        except TypeError:
            raise ProtocolError("unhashable dict key") from None
        return key, self.decode(item[1], depth + 1)

    def _tensor(self, node: dict[str, Any]) -> Any:
        name, device = node["dtype"], node["device"]
        if type(name) is not str or name.removeprefix("torch.") not in TENSOR_DTYPES:
            raise ProtocolError(f"a tensor of dtype {_shown(name)}, which is not one of the "
                                "dtypes the grader reads")
        name = name.removeprefix("torch.")
        if type(device) is not str or not _DEVICE.fullmatch(device):
            raise ProtocolError(f"a tensor on device {_shown(device)}")
        arr = _load_npy(self._blob(node["$T"]))
        if arr.dtype != np.dtype(TENSOR_DTYPES[name]):
            raise ProtocolError(f"a torch.{name} tensor whose values are {arr.dtype}")
        try:
            import torch
        except ImportError:
            raise ProtocolError("a torch tensor, and torch is not installed here") from None
        t = torch.from_numpy(arr.copy()).to(getattr(torch, name))
        device = self.tensor_device or device
        if device.startswith("cuda") and torch.cuda.is_available():
            index = int(device.partition(":")[2] or 0)
            if index >= torch.cuda.device_count():
                raise ProtocolError(f"a tensor on device {_shown(device)}, which is not here")
            t = t.to(device)
        return t


Frame = list[bytes | memoryview]  # a frame as the buffers it is made of, in order


def encode_frame(header: dict[str, Any], payload: Any,
                 shared: Callable[[np.ndarray], str | None] | None = None) -> Frame:
    """Encode ``payload`` into ``header['value']``; the frame's buffers, arrays' memory not
    copied (``write_frame`` sends them with one ``writev``). ``shared``: the key of an array
    the peer holds in shared memory (sent as ``{"$m": key}``), or None."""
    enc = _Encoder(shared=shared)
    head = dict(header)
    head["value"] = enc.encode(payload)
    head["blobs"] = [sum(len(part) for part in _parts(b)) for b in enc.blobs]
    raw = json.dumps(head, allow_nan=False).encode()
    return [HEADER.pack(len(raw)), raw, *(p for b in enc.blobs for p in _parts(b))]


def encode_message(header: dict[str, Any], payload: Any) -> bytes:
    """The whole frame of ``encode_frame`` as one bytes object (to store or hash)."""
    return b"".join(encode_frame(header, payload))


def decode_value(head: dict[str, Any], blobs: list[bytes], *, allow_recipes: bool = False,
                 tensor_device: str | None = None,
                 shared: Mapping[str, Callable[[], np.ndarray]] | None = None,
                 deadline: float | None = None) -> Any:
    """The value of a frame; ``ProtocolError`` for anything that is not well-formed plain
    data (the checks above; the ``except`` is a backstop, not the rule); ``ReadTimeout``
    when decoding it goes on past ``deadline`` (``time.monotonic``)."""
    if deadline is not None and time.monotonic() > deadline:
        raise ReadTimeout("the deadline passed before the value was decoded")
    try:
        return _Decoder(blobs, allow_recipes=allow_recipes, tensor_device=tensor_device,
                        shared=shared, deadline=deadline).decode(head.get("value"))
    except ProtocolError:
        raise
    except (LookupError, TypeError, ValueError, ArithmeticError, RecursionError,
            RuntimeError, MemoryError) as exc:  # a check missed above: still malformed data
        raise ProtocolError(f"malformed value ({type(exc).__name__})") from None


def widen_pipe(fd: int, size: int = 1 << 20) -> None:
    """Ask for a 1 MiB pipe buffer (Linux; 64 KiB by default): a large array then crosses in
    a few system calls instead of hundreds of wake-ups on both sides."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
    except (ImportError, AttributeError, OSError):
        pass


def _wait(fd: int, deadline: float, write: bool = False) -> None:
    """Until ``fd`` is readable (or writable); ``ReadTimeout`` once ``deadline`` passes."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise ReadTimeout("deadline passed")
    readable, writable, _ = select.select([] if write else [fd], [fd] if write else [], [], left)
    if not (writable if write else readable):
        raise ReadTimeout("deadline passed")


def write_frame(fd: int, frame: bytes | Frame, deadline: float | None = None) -> None:
    """Write one frame. With a ``deadline`` (the grader's side, on a non-blocking pipe) a
    peer that stops reading cannot hold the writer: ``ReadTimeout`` is raised instead."""
    views = [memoryview(p).cast("B") for p in ([frame] if isinstance(frame, bytes) else frame)]
    views = [v for v in views if v.nbytes]
    while views:
        if deadline is not None:
            _wait(fd, deadline, write=True)
        try:
            written = os.writev(fd, views[:_IOV_MAX])
        except BlockingIOError:
            continue
        while written:
            if written >= views[0].nbytes:
                written -= views.pop(0).nbytes
            else:
                views[0], written = views[0][written:], 0


_IOV_MAX = 512  # buffers per writev (Linux allows 1024)


def _read_exact(fd: int, n: int, deadline: float | None) -> bytearray:
    buf = bytearray(n)
    view, got = memoryview(buf), 0
    while got < n:
        if deadline is not None:
            _wait(fd, deadline)
        count = os.readv(fd, [view[got:got + (1 << 20)]])
        if not count:
            raise PeerClosed("channel closed")
        got += count
    return buf


def read_frame(fd: int, deadline: float | None = None, max_blob_bytes: int = MAX_BLOB_BYTES,
               *, limits: Limits | None = None) -> tuple[dict[str, Any], list[bytes]]:
    """Read one frame within ``limits`` (default: ``max_blob_bytes`` of blobs, the rest
    ``Limits()``); raise ``ReadTimeout``, ``PeerClosed`` or ``ProtocolError``."""
    return _parse_frame(lambda n: _read_exact(fd, n, deadline),
                        limits or Limits(blob_bytes=max_blob_bytes))


def parse_frame(frame: bytes | bytearray | memoryview,
                limits: Limits | None = None) -> tuple[dict[str, Any], list[bytearray]]:
    """The header and blobs of a whole frame held in memory, read within ``limits``;
    ``ProtocolError`` for a truncated, oversized or malformed one."""
    view = memoryview(frame).cast("B")

    def take(n: int) -> bytearray:
        nonlocal view
        if len(view) < n:
            raise ProtocolError("truncated frame")
        chunk, view = bytearray(view[:n]), view[n:]
        return chunk

    return _parse_frame(take, limits or Limits())


def value_from_bytes(frame: bytes, **kw: Any) -> Any:
    """Decode a whole frame held in memory (e.g. read from a cache file)."""
    return decode_value(*parse_frame(frame), **kw)


def values_bound(raw: bytes | bytearray) -> int:
    """An upper bound of the JSON values (keys included) that ``raw`` decodes to, counted on
    the bytes alone: every value but the outermost opens a container or follows a ``[``,
    ``{``, ``,`` or ``:`` (characters inside strings only raise the bound)."""
    return 1 + sum(raw.count(c) for c in (b"[", b"{", b",", b":"))


def _parse_frame(take: Any, limits: Limits) -> tuple[dict[str, Any], list[bytes]]:
    (size,) = HEADER.unpack(take(HEADER.size))
    if size > limits.header_bytes:
        raise ProtocolError(f"message header of {size} bytes is over the limit "
                            f"({whole_mib(limits.header_bytes)})")
    raw = take(size)
    if limits.values is not None and values_bound(raw) > limits.values:
        raise ProtocolError(f"a message header of more than {limits.values} values, over "
                            "the limit")
    try:
        head = json.loads(raw, parse_constant=_refuse_constant)
    except (ValueError, RecursionError):
        raise ProtocolError("malformed message header") from None
    if not isinstance(head, dict):
        raise ProtocolError("malformed message header")
    sizes = head.get("blobs", [])
    if not isinstance(sizes, list) or not all(type(s) is int and s >= 0 for s in sizes):
        raise ProtocolError("malformed blob table")
    if len(sizes) > min(limits.blobs, MAX_BLOBS):
        raise ProtocolError(f"{len(sizes)} arrays, over the limit of "
                            f"{min(limits.blobs, MAX_BLOBS)}")
    if sum(sizes) > limits.blob_bytes:
        raise ProtocolError(f"the result is {whole_mib(sum(sizes))}, over the "
                            f"{whole_mib(limits.blob_bytes)} limit")
    return head, [take(s) for s in sizes]


def _refuse_constant(name: str) -> Any:
    """JSON's ``NaN`` and ``Infinity`` are not in the format (non-finite floats are tagged)."""
    raise ValueError(f"{name} in a header")
