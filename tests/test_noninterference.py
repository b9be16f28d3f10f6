"""Noninterference: at ``graded``, what the grader writes is a function of each hidden test's
status, points and failure kind, and of nothing a hidden input could change.

A spy submission (every exercise of the pack) answers each call in a way that is a function
of that call's inputs (a digest of them, the same in every run for the same inputs, so that
what its public tests show is the same too): it raises exception
classes and messages spelling them, raises ``OSError(28)`` without writing, scales its wrong
values by a power of ten they decide, sleeps for a time they decide, prints them, answers with
a wrong shape whose length they decide, and rewrites its side of the reply protocol so that a
failed call claims a failed import or a missing name in its own words. Its *kind* of answer
depends only on the form of the call (its function, shapes, dtypes, integers: not the float values
the second run perturbs), so its statuses and failure kinds are the same in every run, also
where a fresh worker takes a call over.

The class is graded twice, once with the suites' hidden inputs and once with every hidden
float input perturbed (a conftest in a copy of the project changes what ``check.call`` sends to
both the reference and the learner), through ``grade --submission`` and ``grade bulk``: every
file written, and what ``grade`` prints, must be the same bytes. Run on the code before this
property was built, the reports differ (exception classes, errno text, error magnitudes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_of_this_project
from spy_sources import wrapping

from grader import catalog

SPY = '''

import hashlib as _hashlib
import re as _re
import sys as _sys
import time as _time

import numpy as _np

_protocol = _sys.modules["gradeharness.protocol"]
_real_encode = _protocol.encode_frame


def _feed(h, v):
    if type(v).__name__ in ("Tensor", "Parameter"):
        v = v.detach().cpu().numpy()
    if isinstance(v, _np.ndarray):
        h.update(repr((v.shape, str(v.dtype))).encode())
        h.update(_np.ascontiguousarray(v).tobytes()[:1 << 20])
    elif isinstance(v, (list, tuple)):
        for x in v:
            _feed(h, x)
    elif isinstance(v, dict):
        for k in sorted(v, key=repr):
            _feed(h, k)
            _feed(h, v[k])
    else:  # (an object's address is not an input)
        h.update(_re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v)).encode())


def _form(h, v):
    """The structure of an argument: shapes, dtypes, integers and text, not float values."""
    if type(v).__name__ in ("Tensor", "Parameter"):
        h.update(repr((tuple(v.shape), str(v.dtype))).encode())
    elif isinstance(v, _np.ndarray):
        h.update(repr((v.shape, str(v.dtype))).encode())
    elif isinstance(v, (list, tuple)):
        h.update(b"[%d" % len(v))
        for x in v:
            _form(h, x)
    elif isinstance(v, dict):
        for k in sorted(v, key=repr):
            _form(h, k)
            _form(h, v[k])
    elif isinstance(v, float):
        h.update(b"f")
    else:
        h.update(_re.sub(r" at 0x[0-9a-fA-F]+", "", repr(v)).encode())


def _kind_of(fn, args, kwargs):
    """Which answer a call gets: a function of the call's form alone, so the same in both runs
    (floats perturbed) and in a fresh worker that takes a call over (a fair-timeout retry)."""
    h = _hashlib.sha256(fn.__name__.encode())
    _form(h, args)
    _form(h, kwargs)
    return int(h.hexdigest()[:8], 16)


def _payload(args, kwargs):
    h = _hashlib.sha256()
    _feed(h, args)
    _feed(h, kwargs)
    return int(h.hexdigest()[:12], 16)


def _wrong(value, p):
    """``value`` grossly wrong everywhere, by a factor the inputs decide."""
    if type(value).__name__ in ("Tensor", "Parameter"):
        return (value + 1.0) * 10.0 ** (3 + p % 7) if value.is_floating_point() else value
    if isinstance(value, _np.ndarray) and value.dtype == bool:
        return ~value
    if isinstance(value, _np.ndarray) and value.dtype.kind in "fc":
        return (value + 1.0) * 10.0 ** (3 + p % 7)
    if isinstance(value, float):
        return (value + 1.0) * 10.0 ** (3 + p % 7)
    if isinstance(value, (list, tuple)):
        return type(value)(_wrong(v, p) for v in value)
    return value


class _Forged:
    def __init__(self, p, claim):
        self.p, self.claim = p, claim


def _encode(header, payload):
    if not isinstance(payload, _Forged):
        return _real_encode(header, payload)
    import json as _json
    import struct as _struct
    text = f"ARGS_{payload.p}"
    head = {"ok": False, "output": text, "duration_s": 0.0, "blobs": [],
            "type": "E_" + text, "mro": ["E_" + text, "ValueError", "Exception"],
            "message": text, "traceback": [text],
            **({"kind": "exception", "where": "import"} if payload.claim == 0 else
               {"kind": "missing", "where": "call"})}
    data = _json.dumps(head).encode()
    return [_struct.pack(">Q", len(data)), data]


_protocol.encode_frame = _encode


_INSIDE = [0]


def _spy(fn):
    def wrapped(*args, **kwargs):
        if _INSIDE[0]:  # a call of the spy's own module: not the grader's
            return fn(*args, **kwargs)
        _INSIDE[0] += 1
        try:
            return _answer(fn, args, kwargs)
        finally:
            _INSIDE[0] -= 1
    return wrapped


def _answer(fn, args, kwargs):
    form = _kind_of(fn, args, kwargs)
    p = _payload(args, kwargs)
    print(f"ARGS {p} " + _re.sub(r" at 0x[0-9a-fA-F]+", "", repr(args))[:300])
    kind = form % 7
    if kind == 0:
        raise type(f"E_{p}", (ValueError,), {})(f"inputs {p}")
    if kind == 1:
        raise OSError(28, f"No space left on device: {p}")
    if kind == 6:
        return _Forged(p, (form // 7) % 2)
    value = fn(*args, **kwargs)
    if kind == 2:
        return _wrong(value, p)
    if kind == 3:
        return value
    if kind == 4:
        _time.sleep((p % 4) * 0.05)
        return _wrong(value, p)
    # kind 5: always a wrong shape, of a length the inputs decide
    return _np.zeros((_np.shape(value) or (1,))[0] + 1 + p % 7)

'''

# In the project's copy: run B perturbs every float input of a hidden test's check.call, for
# the reference and the learner alike (the expected values follow), so B's hidden inputs are
# another set than the suites'.
PERTURB = '''
import os

import numpy as np

from grader.judge import check as _check
_HIDDEN = [False]
# hidden tests that compare with a literal of the suite, not with the reference's value: their
# inputs and that literal go together, so they keep their inputs
LITERAL = {"test_match_geometric_midpoint"}


def pytest_runtest_setup(item):
    marker = item.get_closest_marker("grading")
    _HIDDEN[0] = not (marker and marker.kwargs.get("visibility") == "public") and \
        item.name not in LITERAL


def _perturb(value):
    if type(value).__name__ in ("Tensor", "Parameter"):
        if value.is_floating_point():
            return value * (1.0 + 1e-3 * (value.reshape(-1)[:1].abs().sum().item() % 1 + 0.5))
        return value
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return value * (1.0 + 1e-3 * np.cos(np.arange(value.size)).reshape(value.shape))
    if isinstance(value, float):
        return value * (1.0 + 1e-3)
    if isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return type(value)(_perturb(v) for v in value)
    return value


if os.environ.get("NONINTERFERENCE_PERTURB") == "1":
    _call = _check.Check.call

    def call(self, func, *args, **kwargs):
        if _HIDDEN[0]:
            args = tuple(_perturb(a) for a in args)
        return _call(self, func, *args, **kwargs)

    _check.Check.call = call
'''


def _tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` but the grading process's own cache of expected values
    (``.cache``: hidden data by design, never shown to anyone)."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and ".cache" not in p.relative_to(root).parts}


def _differences(a: dict[str, bytes], b: dict[str, bytes]) -> list[str]:
    found = sorted(set(a) ^ set(b))
    for name in sorted(set(a) & set(b)):
        if a[name] != b[name]:
            x, y = a[name].decode(errors="replace"), b[name].decode(errors="replace")
            i = next((i for i, (c, d) in enumerate(zip(x, y)) if c != d), min(len(x), len(y)))
            found.append(f"{name}: ...{x[max(0, i - 80):i + 80]!r} != "
                         f"...{y[max(0, i - 80):i + 80]!r}")
    return found


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """The project's copy with the perturbing conftest, the spy class, and how to run."""
    base = tmp_path_factory.mktemp("noninterference")
    copy = copy_of_this_project(base / "project", fresh=True)
    (copy / "grader" / "suites" / "conftest.py").write_text(PERTURB)
    spy = base / "class" / "spy"
    spy.mkdir(parents=True)
    for slug, ex in catalog.load().items():
        (spy / f"{slug}.py").write_text(ex.solution.read_text() +
                                        SPY + wrapping(ex.functions))
    plain = base / "class" / "plain"
    plain.mkdir()
    shutil.copy(catalog.get("grid_local_mask").solution, plain / "grid_local_mask.py")
    env = {**os.environ, "PYTHONPATH": str(copy), "SOURCE_DATE_EPOCH": "1780000000",
           "NO_COLOR": "1", "HOME": str(base)}
    env.pop("NONINTERFERENCE_PERTURB", None)
    return {"base": base, "copy": copy, "class": base / "class", "spy": spy, "env": env}


def _grade(world: dict, args: list[str], perturb: bool, out: Path) -> tuple[int, bytes]:
    env = dict(world["env"])
    if perturb:
        env["NONINTERFERENCE_PERTURB"] = "1"
    if out.exists():
        shutil.rmtree(out)
    done = subprocess.run([sys.executable, "-m", "grader", *args], cwd=world["base"], env=env,
                          capture_output=True, timeout=900)
    return done.returncode, done.stdout


def test_grade_submission_writes_the_same_bytes_whatever_the_hidden_inputs(world):
    out = world["base"] / "report"
    runs = []
    for perturb in (False, True):
        code, stdout = _grade(world, ["run", "--submission", str(world["spy"]),
                                      "--feedback", "graded", "--report-dir", str(out),
                                      "--isolation", "strict"], perturb, out)
        assert code == 1, stdout.decode()[-3000:]
        runs.append({**_tree(out), "<stdout>": stdout})
    # the spy was graded: public tests show what it printed, and its forged replies were read
    assert any(b"ARGS" in data for name, data in runs[0].items() if name != "<stdout>")
    assert not _differences(*runs), "\n".join(_differences(*runs)[:10])


def test_grade_bulk_writes_the_same_bytes_whatever_the_hidden_inputs(world):
    out = world["base"] / "bulk"
    runs = []
    for perturb in (False, True):
        code, stdout = _grade(world, ["bulk", str(world["class"]), "--out", str(out),
                                      "--feedback", "graded", "--workers", "1", "--quiet",
                                      "--isolation", "strict"], perturb, out)
        assert code == 0, stdout.decode()[-3000:]
        runs.append({**_tree(out), "<stdout>": stdout})
    assert b"ARGS" in runs[0]["spy/results.json"]
    assert not _differences(*runs), "\n".join(_differences(*runs)[:10])
