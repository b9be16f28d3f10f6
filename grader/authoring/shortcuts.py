"""Shortcut families: files that earn points without the work, generated from the reference and
the calls its suite makes (``calls.py``). ``grade pack check --grade`` requires each to score
nothing (rule ``shortcut-scores-nothing``), but on the tests the index lists as ``format_only``.

- ``public answers``: the reference's answer on every public test's exact inputs (they are in
  the report a learner reads), None anywhere else (no work done there: the hidden tests fail,
  and the file must not earn the public tests' points either);
- ``<param> ignored`` (one file per parameter of each function): the reference called with
  that parameter frozen at its first public value (its first value in any test where the
  function has no public test), whatever the caller passes;
- ``form only``: results of the reference's type, shape and dtype, and its invariants (rows
  that sum to 1, symmetry, the sign, booleans), but random values.

A parameter whose first value is not plain data (an object built from a recipe, a tensor) is
not frozen: the file could not hold it. A class of the exercise is left as it is.
"""

from __future__ import annotations

import base64
import inspect
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np

from grader.authoring.calls import Call
from grader.judge import confirm

MAX_FROZEN_VALUES = 100_000  # numbers in a frozen value the generated file holds

# The digest of a call's arguments, as the learner's worker sees them; the same code runs here
# (``digest``) on the arguments as the grader sends them, with their recipes built.
DIGEST_SOURCE = '''

def _shortcut_digest(value, depth=0):
    import hashlib
    import numpy
    h = hashlib.sha256()
    def feed(v, d):
        if d > 12:
            h.update(b"deep")
        elif isinstance(v, numpy.ndarray) and not v.dtype.hasobject:
            h.update(f"a{v.dtype.str}{v.shape}".encode())
            h.update(numpy.ascontiguousarray(v).tobytes())
        elif type(v).__module__.startswith("torch") and hasattr(v, "detach"):
            feed(v.detach().cpu().numpy(), d)
        elif isinstance(v, (list, tuple)):
            h.update(f"s{len(v)}".encode())
            for item in v:
                feed(item, d + 1)
        elif isinstance(v, dict):
            h.update(f"d{len(v)}".encode())
            for k in sorted(v, key=repr):
                feed(k, d + 1)
                feed(v[k], d + 1)
        elif isinstance(v, (bool, numpy.bool_)):
            h.update(f"b{bool(v)}".encode())
        elif isinstance(v, (int, float, numpy.integer, numpy.floating)):
            h.update(f"n{float(v)!r}".encode())
        elif v is None or isinstance(v, str):
            h.update(f"{v!r}".encode())
        else:
            h.update(type(v).__name__.encode())
    feed(value, depth)
    return h.hexdigest()
'''

_NAMESPACE: dict[str, Any] = {}
exec(DIGEST_SOURCE, _NAMESPACE)  # noqa: S102 - the grader's own code, shared with the files


def digest(args: tuple, kwargs: dict) -> str:
    """The digest the generated file computes of the call ``(args, kwargs)`` in the worker."""
    from grader.judge.check import _built_leaf
    from grader.sandbox.harness import protocol

    built = protocol.map_leaves((list(args), dict(kwargs)), _built_leaf)
    return _NAMESPACE["_shortcut_digest"](built)


@dataclass(frozen=True)
class Shortcut:
    """A generated shortcut file: its family, a label for messages and its source."""

    family: str
    label: str
    what: str
    source: str
    tests: frozenset[str] = frozenset()  # the tests judged: those that call its functions


FORM_HELPERS = '''

def _form_only(value, rng):
    """``value`` with random numbers, its type, shape, dtype and invariants kept."""
    import numpy
    if type(value).__module__.startswith("torch") and hasattr(value, "detach"):
        import torch
        return torch.as_tensor(_form_only(value.detach().cpu().numpy(), rng)).to(value.device)
    if isinstance(value, numpy.ndarray):
        if value.dtype.kind == "b":
            return rng.random(value.shape) < 0.5
        if value.dtype.kind in "iu":
            return rng.permutation(value.reshape(-1)).reshape(value.shape).astype(value.dtype)
        if value.dtype.kind != "f" or value.size == 0:
            return value
        finite = numpy.isfinite(value)
        scale = float(numpy.abs(value[finite]).max()) if finite.any() else 1.0
        out = rng.standard_normal(value.shape) * (scale or 1.0)
        if (value[finite] >= 0).all():
            out = numpy.abs(out)
        if value.ndim >= 1 and finite.all() and (value >= 0).all() and numpy.allclose(
                value.sum(axis=-1), 1):
            out = rng.random(value.shape) + 1e-3
            out /= out.sum(axis=-1, keepdims=True)
        if value.ndim >= 2 and value.shape[-1] == value.shape[-2] and numpy.allclose(
                value, numpy.swapaxes(value, -1, -2)):
            out = (out + numpy.swapaxes(out, -1, -2)) / 2
        return out.astype(value.dtype)
    if isinstance(value, bool):
        return bool(rng.random() < 0.5)
    if isinstance(value, int):
        return int(rng.integers(0, 2 * abs(value) + 2)) * (1 if value >= 0 else -1)
    if isinstance(value, float):
        return float(abs(value) * 2 * rng.random()) * (1 if value >= 0 else -1)
    if isinstance(value, (list, tuple)):
        return type(value)(_form_only(v, rng) for v in value)
    if isinstance(value, dict):
        return {k: _form_only(v, rng) for k, v in value.items()}
    return value
'''


def _functions(reference: ModuleType, functions: tuple[str, ...]) -> list[str]:
    return [f for f in functions if inspect.isfunction(getattr(reference, f, None))]


def public_answers(src: str, reference: ModuleType, functions: tuple[str, ...],
                   calls: list[Call]) -> Shortcut | None:
    names = _functions(reference, functions)
    public: dict[str, set[str]] = {f: set() for f in names}
    for c in calls:
        if c.public and c.func in public:
            public[c.func].add(digest(c.args, c.kwargs))
    if not any(public.values()):
        return None
    out = src + DIGEST_SOURCE + f"\n\n_PUBLIC = {public!r}\n"
    for f in names:
        out += (f"\n\n_shortcut_{f} = {f}\n\n\n"
                f"def {f}(*args, **kwargs):\n"
                f"    if _shortcut_digest((list(args), dict(kwargs))) in _PUBLIC[{f!r}]:\n"
                f"        return _shortcut_{f}(*args, **kwargs)\n"
                f"    return None\n")
    return Shortcut("public_answers", "public answers", "the reference's answer on the public "
                    "tests' exact inputs, None elsewhere (no work done there)", out,
                    _calling(calls, names))


def _plain(value: Any, depth: int = 0) -> int | None:
    """How many numbers ``value`` holds when it is plain data a file can hold, else None."""
    if depth > 6:
        return None
    if isinstance(value, np.ndarray):
        return None if value.dtype.hasobject else int(value.size)
    if value is None or isinstance(value, (bool, int, float, str, np.number)):
        return 1
    if isinstance(value, (list, tuple)):
        sizes = [_plain(v, depth + 1) for v in value]
        return None if any(s is None for s in sizes) else sum(sizes)
    if isinstance(value, dict):
        sizes = [_plain(v, depth + 1) for v in value.values()]
        return None if any(s is None for s in sizes) else sum(sizes)
    return None


def ignored_parameters(src: str, reference: ModuleType, functions: tuple[str, ...],
                       calls: list[Call]) -> Iterator[Shortcut]:
    for f in _functions(reference, functions):
        mine = [c for c in calls if c.func == f]
        first = next((c for c in mine if c.public), mine[0] if mine else None)
        if first is None:
            continue
        bound = confirm.bound(reference, f, first.args, first.kwargs)
        if bound is None:
            continue
        for name, value in bound.arguments.items():
            size = _plain(value)
            if size is None or size > MAX_FROZEN_VALUES:
                continue
            frozen = base64.b64encode(pickle.dumps(value)).decode()
            out = src + (f"\n\nimport base64 as _b64\nimport copy as _copy\n"
                         f"import inspect as _inspect\nimport pickle as _pickle\n\n"
                         f"_shortcut_{f} = {f}\n"
                         f"_frozen = _pickle.loads(_b64.b64decode({frozen!r}))\n\n\n"
                         f"def {f}(*args, **kwargs):\n"
                         f"    bound = _inspect.signature(_shortcut_{f}).bind(*args, **kwargs)\n"
                         f"    bound.apply_defaults()\n"
                         f"    bound.arguments[{name!r}] = _copy.deepcopy(_frozen)\n"
                         f"    return _shortcut_{f}(*bound.args, **bound.kwargs)\n")
            yield Shortcut("ignored", f"{f}'s {name} ignored",
                           f"the reference with {f}'s `{name}` frozen at its first public "
                           "value", out, _calling(calls, [f]))


def _calling(calls: list[Call], functions: list[str]) -> frozenset[str]:
    return frozenset(c.test for c in calls if c.func in functions)


def form_only(src: str, reference: ModuleType, functions: tuple[str, ...],
              calls: list[Call]) -> Shortcut | None:
    names = _functions(reference, functions)
    if not names:
        return None
    out = src + FORM_HELPERS
    for f in names:
        out += (f"\n\n_shortcut_{f} = {f}\n\n\n"
                f"def {f}(*args, **kwargs):\n"
                f"    import numpy\n"
                f"    return _form_only(_shortcut_{f}(*args, **kwargs), "
                f"numpy.random.default_rng(0))\n")
    return Shortcut("form_only", "form only", "results of the reference's type, shape, dtype "
                    "and invariants, with random values", out, _calling(calls, names))


def shortcuts(src: str, reference: ModuleType, functions: tuple[str, ...],
              calls: list[Call]) -> list[Shortcut]:
    """Every shortcut file of an exercise whose reference is ``src`` (loaded: ``reference``)."""
    found = [public_answers(src, reference, functions, calls),
             *ignored_parameters(src, reference, functions, calls),
             form_only(src, reference, functions, calls)]
    return [s for s in found if s is not None]


def sampled(found: list[Shortcut], ignored: int | None, seed: str) -> list[Shortcut]:
    """``found`` with at most ``ignored`` of its "a parameter ignored" files (a sample seeded
    by ``seed``, the same every run; None: all of them)."""
    import random

    frozen = [s for s in found if s.family == "ignored"]
    if ignored is None or len(frozen) <= ignored:
        return found
    kept = random.Random(seed).sample(frozen, ignored)
    return [s for s in found if s.family != "ignored" or s in kept]
