"""Where a known mistake is decided: named only where every piece of evidence agrees.

A test that fails matches a known mistake (``suite.mistake``) on its own inputs and the suite's
probes (``Check``). That is not enough: the same learner function was called by the other tests
of the exercise too, some of which it may have passed. ``Ledger`` keeps every result of the
learner's functions an exercise's tests compared (and every call of them that raised), until the
exercise's last test; ``refuted`` then replays each mistake a test matched on all of them. The
mistake is named only when the learner's result equals the mistake's on every input, within that
comparison's tolerance, and when no function of the exercise it calls (in the learner's file,
read, never run) failed its own tests: then the cause may lie there ("fix ``g`` first").
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from grader.judge.compare import compare
from grader.judge.confirm import Counted
from grader.judge.rules import read_source
from grader.sandbox.harness.source_text import NotSourceText, parse

if TYPE_CHECKING:
    from grader.suite import KnownMistake

MAX_BYTES = 256 << 20  # learner results kept per exercise; beyond, no mistake is named


@dataclass
class Seen:
    """One call of a learner function that a test compared: its inputs, and the learner's
    result (``raised``: it raised instead), with that comparison's tolerance."""

    func: str
    args: tuple
    kwargs: dict
    value: Any
    raised: bool
    rtol: float
    atol: float
    right: bool = False  # the learner's result was the reference's

    @property
    def signature(self) -> tuple[int, ...]:
        return signature(self.args, self.kwargs)


def signature(args: tuple, kwargs: dict) -> tuple[int, ...]:
    """The form of a call's arguments: the number of axes of each array among them. Calls of
    another form may take another code path (a 1-D and a 2-D branch): evidence for a mistake
    is drawn from calls of the form it was matched on."""
    return tuple(v.ndim for v in (*args, *kwargs.values()) if isinstance(v, np.ndarray))


@dataclass
class Ledger:
    """The ``Seen`` calls of one exercise so far; ``complete`` false once more than
    ``MAX_BYTES`` of results were offered (the evidence is then not all there)."""

    seen: list[Seen] = field(default_factory=list)
    nbytes: int = 0
    complete: bool = True

    def add(self, seen: Seen) -> None:
        size = _nbytes(seen.value) + _nbytes(seen.args) + _nbytes(seen.kwargs)
        if self.nbytes + size > MAX_BYTES:
            self.complete = False
            return
        self.nbytes += size
        self.seen.append(seen)


def _nbytes(value: Any, depth: int = 0) -> int:
    if depth > 6:
        return 0
    if isinstance(value, np.ndarray):
        return int(value.nbytes)
    if hasattr(value, "element_size") and hasattr(value, "numel"):
        return int(value.numel() * value.element_size())
    if isinstance(value, (list, tuple)):
        return sum(_nbytes(v, depth + 1) for v in value) + 8 * len(value)
    if isinstance(value, dict):
        return sum(_nbytes(v, depth + 1) for v in value.values()) + 16 * len(value)
    return 16


@dataclass
class Carried:
    """What the evidence of an exercise's public tests leaves its hidden tests, when a class
    is graded in rounds (a public round, then a hidden one in a fresh worker): the mistakes it
    refutes, and the public tests that named each mistake it left standing (``key``: the
    hidden round's evidence may still refute it; their results then read as unnamed)."""

    refuted: set[str] = field(default_factory=set)
    named: dict[str, list[str]] = field(default_factory=dict)
    # the public tests' calls, for the hidden round's count of them (``confirm.py``)
    counted: list[Counted] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"refuted": sorted(self.refuted), "named": self.named,
                "counted": [c.to_dict() for c in self.counted]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Carried:
        return cls(refuted={str(k) for k in data["refuted"]},
                   named={str(k): [str(t) for t in v] for k, v in data["named"].items()},
                   counted=[Counted.from_dict(c) for c in data.get("counted", [])])


def key(m: KnownMistake, form: tuple[int, ...]) -> str:
    """The key of mistake ``m`` matched on calls of ``form`` (``signature``)."""
    return f"{m.func}:{m.name}:{','.join(map(str, form))}"


@dataclass(frozen=True)
class Refutation:
    """Why a mistake a test matched is not named: ``disagrees`` the learner's result differs
    from the mistake's on that many of the exercise's inputs (or the evidence is incomplete:
    -1); ``fix_first`` a function the mistaken one calls whose own tests failed."""

    disagrees: int = 0
    fix_first: str | None = None


def refuted(named: Iterable[tuple[KnownMistake, tuple[int, ...]]], ledger: Ledger,
            failed_alone: set[str], depends: dict[str, frozenset[str]],
            output: Callable[[KnownMistake, tuple, dict], Any]) -> dict[str, Refutation]:
    """The mistakes of ``named`` (each with the form of call it was matched on; by ``key``)
    that the evidence refutes, and why.

    ``failed_alone``: the exercise's functions that a test failed on alone; ``depends``: the
    functions each learner function calls (``depends_on``); ``output(m, args, kwargs)`` the
    mistake's result (raises when it cannot run on them)."""
    found: dict[str, Refutation] = {}
    for (m, form) in {key(m, form): (m, form) for m, form in named}.values():
        first = sorted(depends.get(m.func, frozenset()) & failed_alone)
        if first:
            found[key(m, form)] = Refutation(fix_first=first[0])
            continue
        if not ledger.complete:
            found[key(m, form)] = Refutation(disagrees=-1)
            continue
        disagrees = sum(not _agrees(m, s, output) for s in ledger.seen
                        if s.func == m.func and s.signature == form)
        if disagrees:
            found[key(m, form)] = Refutation(disagrees=disagrees)
    return found


def agreeing(m: KnownMistake, form: tuple[int, ...], ledger: Ledger) -> int:
    """How many compared calls of ``m``'s function, of ``form``, the exercise kept (a named
    mistake agrees with all of them: ``refuted``)."""
    return sum(s.func == m.func and s.signature == form for s in ledger.seen)


def _agrees(m: KnownMistake, seen: Seen, output: Callable[..., Any]) -> bool:
    """Whether the learner did what mistake ``m`` does on ``seen``'s inputs: the same result
    within the tolerance; where ``m`` raises (it does not apply there, "not this mistake", or
    it fails as the learner's file may), the learner raised too or was right."""
    try:
        wrong = output(m, seen.args, seen.kwargs)
    except Exception:  # noqa: BLE001 - the mistake raises (or cannot run) on these inputs
        return seen.raised or seen.right
    if seen.raised:
        return False
    try:
        return bool(compare(seen.value, wrong, rtol=seen.rtol, atol=seen.atol).ok)
    except Exception:  # noqa: BLE001 - values that cannot be compared: no agreement
        return False


def depends_on(source: Path | None, functions: Iterable[str]) -> dict[str, frozenset[str]]:
    """For each of ``functions`` defined in the learner's file ``source``, the others of them
    its body uses by name (read from the source, never run); nothing for a file that cannot
    be read or parsed."""
    names = set(functions)
    text = read_source(source).text if source is not None else None  # (bounded in size)
    try:  # ``parse``: bounded where Python's parser is not (source_text.py)
        tree = parse(text) if text is not None else None
    except (SyntaxError, NotSourceText):
        return {}
    found: dict[str, frozenset[str]] = {}
    for node in tree.body if tree is not None else ():
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and \
                node.name in names:
            used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            found[node.name] = frozenset((used & names) - {node.name})
    return found
