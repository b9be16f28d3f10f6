"""Where a right result is counted: only when the exercise's other inputs confirm it.

A result can be right without the work: a file that returns the public tests' answers for
their exact inputs (they are in the report) and anything elsewhere, or one that ignores a
parameter and is right wherever it takes the value the file assumed. Neither shows in one test.
So a passing test's points count only when, for every call it made of a learner function and
every parameter of that call, the function is also right on some call of a **hidden** test
where that parameter takes another value that changes the reference's answer (a call the
contract refuses, or whose answer is all zeros, ones or NaN, shows no work and confirms
nothing), whenever the exercise's hidden tests make such a call at all. Otherwise the test is
``unconfirmed``: failed, 0 points, and the verdict says which function and which parameter
(the reference's own names: grader-owned words).

What the suite's calls are, and which of them a value changes, is a property of the suite, not
of a run: ``Table``, computed once from the reference (``grader/authoring/calls.py``) and kept
beside it (``solutions/SLUG.confirm.json``, rewritten by ``grade pack check --grade
--update-golden``, checked current by ``confirm-table``). A run only adds which of its calls
the learner got right, by their place in the test (the n-th call of a learner function the
test made). So the decision depends on the suite and on the learner's right and wrong calls,
never on the live hidden values (``tests/test_noninterference.py``); a table that is missing
or older than the suite gates nothing.

An honest file loses nothing to this: a function right on one input is right on others. A
learner whose function is right only where a parameter has one value learns which parameter.
A student release has no hidden tests: nothing there is gated.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from grader import catalog
from grader.judge.arrays import numeric_arrays

FORMAT = 1
MAX_CALLS = 4096  # noted per test


def bound(reference: Any, func: str, args: tuple,
          kwargs: dict) -> inspect.BoundArguments | None:
    """``func(*args, **kwargs)`` bound to the reference's signature, defaults applied (None
    when ``func`` is no plain function of the reference, or the call does not bind): only
    such calls are counted, the same ones here and in ``Table``."""
    target = getattr(reference, func, None)
    signature = _signature(target) if inspect.isfunction(target) else None
    if signature is None:
        return None
    try:
        found = signature.bind(*args, **kwargs)
    except TypeError:
        return None
    found.apply_defaults()
    return found


@functools.lru_cache(maxsize=256)
def _signature(target: Any) -> inspect.Signature | None:
    """``target``'s signature, once per function (``bound`` runs at every learner call); None
    when it takes ``*args`` or ``**kwargs`` (its calls are not counted)."""
    signature = inspect.signature(target)
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in signature.parameters.values()):
        return None
    return signature


@dataclass
class Counted:
    """A test's counted calls in a run: ``calls`` of them (in order), ``right`` the places of
    those compared right with the reference's (``check.call``); every call of a test that
    ``passed`` and ``confirmed`` a value (``check.call``, ``check.equal(..., confirms=)``) is
    right too (a test that only checks properties, two runs agree, confirms no call)."""

    name: str
    public: bool
    passed: bool
    calls: int = 0
    right: set[int] = field(default_factory=set)
    scored: bool = True  # worth points (a test worth none is never gated)
    confirmed: bool = True

    def is_right(self, i: int) -> bool:
        return i < self.calls and ((self.passed and self.confirmed) or i in self.right)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "public": self.public, "passed": self.passed,
                "calls": self.calls, "right": sorted(self.right), "scored": self.scored,
                "confirmed": self.confirmed}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Counted:
        return cls(str(data["name"]), bool(data["public"]), bool(data["passed"]),
                   int(data["calls"]), {int(i) for i in data["right"]},
                   bool(data["scored"]), bool(data["confirmed"]))


@dataclass(frozen=True)
class Unconfirmed:
    """Why a passing test is not counted: ``func`` is right on no hidden call where
    ``param`` takes another value that changes the answer."""

    func: str
    param: str


@dataclass(frozen=True)
class Place:
    """One counted call of the suite: its test, its place there, its function, and for each
    parameter the class of its value (equal values, one class)."""

    test: str
    index: int
    public: bool
    func: str
    classes: tuple[tuple[str, int], ...]


@dataclass
class Table:
    """The suite's counted calls (``places``, in order) and, per ``(func, param, class)``, the
    hidden calls where that class's value changes a valued, non-trivial answer (``changes``,
    by number in ``places``) and those not tried (``untried``: a right one gives the benefit
    of the doubt)."""

    fingerprint: str
    places: list[Place]
    changes: dict[tuple[str, str, int], set[int]] = field(default_factory=dict)
    untried: dict[tuple[str, str, int], set[int]] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps({
            "format": FORMAT, "fingerprint": self.fingerprint,
            "places": [[p.test, p.index, p.public, p.func, [list(c) for c in p.classes]]
                       for p in self.places],
            "changes": [[f, n, c, sorted(v)] for (f, n, c), v in sorted(self.changes.items())],
            "untried": [[f, n, c, sorted(v)] for (f, n, c), v in sorted(self.untried.items())
                        if v]}, indent=None, separators=(",", ":")) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Table:
        data = json.loads(text)
        if data.get("format") != FORMAT:
            raise ValueError("another format")
        places = [Place(str(t), int(i), bool(pub), str(f), tuple((str(n), int(c))
                                                                 for n, c in classes))
                  for t, i, pub, f, classes in data["places"]]
        return cls(str(data["fingerprint"]), places,
                   {(str(f), str(n), int(c)): {int(x) for x in v}
                    for f, n, c, v in data["changes"]},
                   {(str(f), str(n), int(c)): {int(x) for x in v}
                    for f, n, c, v in data["untried"]})


def path_of(slug: str) -> Path:
    """Where exercise ``slug``'s table lies: beside its reference."""
    return catalog.SOLUTIONS_DIR / f"{slug}.confirm.json"


def current(slug: str) -> Table | None:
    """Exercise ``slug``'s table, when it is there and made for its suite as it is now."""
    ex = catalog.get(slug)
    return load(path_of(slug), fingerprint(ex.suite, ex.solution, ex.functions))


def fingerprint(suite: Path, reference: Path, functions: Iterable[str]) -> str:
    """What a table depends on: the suite's and the reference's text, the functions, the
    table's format."""
    h = hashlib.sha256(f"{FORMAT}:{','.join(functions)}".encode())
    for path in (suite, reference):
        h.update(path.read_bytes() if path.is_file() else b"-")
    return h.hexdigest()[:32]


def load(path: Path, current: str) -> Table | None:
    """The table at ``path`` when it is there, readable and made for ``current`` (the suite's
    ``fingerprint`` now); else None (nothing is gated)."""
    try:
        table = Table.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return table if table.fingerprint == current else None


def trivial(value: Any, rtol: float = 0.0, atol: float = 0.0) -> bool:
    """Whether ``value`` is an answer a file gives without work: no number, or every number
    0, every number 1 or every number NaN within the tolerance (``[0]``, an all-False mask,
    ``1e-17`` where atol is 1e-9)."""
    from grader.judge.compare import compare

    numbers = [np.asarray(a, dtype=float).ravel() for a in numeric_arrays(value)]
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, np.ndarray)
                                               and value.dtype == bool):
        numbers = [np.asarray(value, dtype=float).ravel()]
    flat = np.concatenate(numbers) if numbers else np.zeros(0)
    if flat.size == 0 or bool(np.isnan(flat).all()):
        return True
    for fill in (0.0, 1.0):
        try:
            if compare(np.full_like(flat, fill), flat, rtol=rtol, atol=atol).ok:
                return True
        except Exception:  # noqa: BLE001 - not comparable: not this trivial answer
            continue
    return False


def unconfirmed(tests: Iterable[Counted], table: Table | None) -> dict[str, Unconfirmed]:
    """The passing tests of one exercise whose points the hidden calls do not confirm (by test
    name; see the module's docstring)."""
    if table is None:
        return {}
    by_name = {t.name: t for t in tests}
    number = {(p.test, p.index): n for n, p in enumerate(table.places)}

    def right(n: int) -> bool:
        place = table.places[n]
        t = by_name.get(place.test)
        return t is not None and t.is_right(place.index)

    found: dict[str, Unconfirmed] = {}
    for t in by_name.values():
        if not (t.passed and t.scored):
            continue
        for i in range(t.calls):
            n = number.get((t.name, i))
            if n is None:
                continue
            place = table.places[n]
            why = next((Unconfirmed(place.func, name) for name, cls in place.classes
                        if _unconfirmed_value(table, (place.func, name, cls), right)), None)
            if why is not None:
                found[t.name] = why
                break
    return found


def _unconfirmed_value(table: Table, k: tuple[str, str, int], right: Any) -> bool:
    changing = table.changes.get(k, set())
    if not changing or any(right(n) for n in changing):
        return False
    return not any(right(n) for n in table.untried.get(k, set()))
