"""``learner``: the hidden suites' handle on the learner's module, living in the worker.

``learner.grid_local_mask(2, 3, 1)`` sends the call to the worker and returns the decoded
result, or raises a ``faults.LearnerFault``. ``learner.new("PatchViT", dim=32)`` builds an
object in the worker and returns a ``RemoteObject`` whose methods are called the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import faults
from .harness.protocol import Handle, Recipe
from .harness.worker import CappedWriter
from .process import WorkerProcess
from .reply import OUTPUT_CAP, ROOM, limits

if TYPE_CHECKING:
    from grader.judge.observer import Observer


@dataclass
class CallLog:
    """What the learner's calls of one test printed (at most as much as one call's output
    in all), and how long they ran."""

    out: CappedWriter = field(default_factory=lambda: CappedWriter(OUTPUT_CAP + ROOM,
                                                                    " in this test"))
    learner_time_s: float = 0.0
    last_duration_s: float = 0.0
    calls: int = 0

    def add(self, text: str) -> None:
        self.out.write(text)

    def text(self) -> str:
        return self.out.text()


class LearnerProxy:
    def __init__(self, worker: WorkerProcess, slug: str, *, timeout: float,
                 log: CallLog, observer: Observer | None = None,
                 missing: frozenset[str] = frozenset(),
                 noted: Callable[[str, tuple, dict], None] | None = None,
                 may_modify: frozenset[str] = frozenset()) -> None:
        self._worker, self._slug, self._timeout, self._log = worker, slug, timeout, log
        self._observer = observer  # told of each request and reply (judge/observer.py)
        self._noted = noted  # told of each call of a module function (judge/confirm.py)
        self._may_modify = may_modify  # functions allowed to change their arguments
        self._bounds = None  # the reply's bounds (``_expecting``), None: the fixed ones
        # the names the module lacked when it was loaded (``load``): calling one is the
        # file's fault, said in the grader's words without asking the worker again
        self._missing = missing

    @contextmanager
    def _expecting(self, expected: Any) -> Iterator[None]:
        """The calls made inside read their replies within the bounds of one that looks like
        ``expected`` (``reply.limits``): a result far larger is refused unread."""
        self._bounds = limits(expected)
        try:
            yield
        finally:
            self._bounds = None

    @contextmanager
    def _unnoted(self) -> Iterator[None]:
        """The calls made inside are not told to ``noted`` (a figure's: not counted)."""
        noted, self._noted = self._noted, None
        try:
            yield
        finally:
            self._noted = noted

    def _request(self, op: str, func: str, args: tuple, kwargs: dict,
                 handle: Handle | None = None, names: tuple[str, ...] = ()) -> Any:
        if handle is None and func in self._missing and op in ("call", "new"):
            raise faults.MissingName(f"{self._slug}.py does not define {func!r}", name=func)
        self._log.calls += 1
        if self._noted is not None and op == "call" and handle is None:
            self._noted(func, args, kwargs)
        if self._observer is not None:
            self._observer.requested(op, func, args, kwargs)
        try:
            reply = self._worker.request(op, module=self._slug, func=func, args=args,
                                         kwargs=kwargs, timeout=self._timeout,
                                         handle=None if handle is None else handle.id,
                                         bounds=self._bounds, names=names)
        except Exception as exc:
            self._log.add(getattr(exc, "output", "") + self._worker.take_output())
            raise
        self._log.add(reply.output + self._worker.take_output())
        self._log.learner_time_s += reply.duration_s
        self._log.last_duration_s = reply.duration_s
        if reply.modified and op == "call" and handle is None and func not in self._may_modify:
            raise faults.ArgumentsModified(func)
        if self._observer is not None:
            self._observer.replied(op, reply.value)
        return reply.value

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: self._request("call", name, args, kwargs)

    def load(self, names: tuple[str, ...] = ()) -> frozenset[str]:
        """Import the learner's module now (import errors surface here); the names of
        ``names`` it does not define. The worker's answer is kept to ``names``: a reply that
        is not a list of them is one that cannot be read.

        A module that defines none of ``names`` (an empty file, another exercise's) is not
        the exercise's: ``faults.ImportFailed``, said once for the exercise as a file that
        does not compile is, not "does not define" on every test."""
        lacking = self._request("load", "", (), {}, names=names)
        if lacking is None and not names:
            return frozenset()
        if type(lacking) is not list or not all(type(n) is str and n in names
                                                for n in lacking):
            raise faults.BadReturn("importing the module returned data the grader cannot "
                                   "read: not a list of the names asked for")
        if names and set(lacking) == set(names):
            raise faults.ImportFailed(self._defines_none(names))
        return frozenset(lacking)

    def _defines_none(self, names: tuple[str, ...]) -> str:
        """Why a module that defines none of ``names`` cannot be graded, in one sentence."""
        try:
            empty = not Path(self._worker.files[self._slug]).read_bytes().strip()
        except (OSError, KeyError, TypeError):
            empty = False
        what = f"function {names[0]}" if len(names) == 1 else \
            f"functions ({', '.join(names[:-1])} and {names[-1]})"
        if empty:
            return f"{self._slug}.py is empty: it should define the exercise's {what}"
        return f"{self._slug}.py does not define {'any of ' if len(names) > 1 else ''}the " \
               f"exercise's {what}"

    @property
    def last_call_seconds(self) -> float:
        """How long the learner's code ran in the last call (measured in the worker)."""
        return self._log.last_duration_s

    def apply(self, recipe: Recipe, *args: Any, **kwargs: Any) -> Any:
        """Build ``recipe`` in the worker and call it with ``args`` (handles allowed)."""
        return self._request("apply", "", (recipe, *args), kwargs)

    def new(self, name: str, *args: Any, **kwargs: Any) -> RemoteObject:
        """Construct ``name(*args, **kwargs)`` in the worker; return a handle to it."""
        handle = self._request("new", name, args, kwargs)
        return RemoteObject(self, handle, self._worker.generation)


class RemoteObject:
    """An object in the worker; attribute access yields callables for its methods."""

    def __init__(self, proxy: LearnerProxy, handle: Handle, generation: int) -> None:
        self._proxy, self._handle, self._generation = proxy, handle, generation

    @property
    def handle(self) -> Handle:
        """Pass this as an argument to hand the object itself to another learner call."""
        return self._handle

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._generation != self._proxy._worker.generation:
            raise faults.ObjectLost("the learner's object was lost: its process was restarted "
                                    "after an earlier failure")
        return lambda *args, **kwargs: self._proxy._request("call", name, args, kwargs,
                                                            handle=self._handle)
