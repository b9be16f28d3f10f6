"""What a hidden suite imports: the ``graded`` decorator, ``mistake`` and ``Recipe``.

A hidden suite is ``grader/suites/test_<slug>.py``. Its tests take the fixtures

- ``learner``: a proxy to the learner's module in the worker (``learner.fn(...)``);
- ``reference``: the reference solution module, in the grading process;
- ``check``: the comparison helper (``check.call``, ``check.equal``, ``check.raises``,
  ``check.that``), which raises a ``GradeFailure`` with diagnostics;
- ``device``: ``"cpu"`` or ``"cuda"``, the device the run grades on.

Every test is decorated with ``@graded(points, hint, hint_for=(...))``: the hint is shown only
on a failure of one of the kinds it names (``hints.HINT_KINDS``: ``values``, ``shape``,
``nan``, ``not_raised``, ``timeout``, ...). Known mistakes are functions of the same arguments
as a reference function, decorated with ``@mistake(func, name, message)``, and confirmed on
the suite's ``probes(func, ...)`` before they are named; regions (``@region(func, where,
means=...)``) name parts of a function's result that mean something in the exercise, so that
a failure whose wrong values all lie in one says so.
Source rules (what a solution may not use, read from the learner's file with ``ast``) are
tests worth 0 points, declared with ``@source_rule(hint, statement=..., forbid=...)``. Input
builders that are deterministic and slow (ViT-sized arrays) can be decorated with
``@cached_input``: built once per grading process, each call gets its own copy.

A leaf: it never imports the grading engine (``grader/engine/``, ``grader/judge/``), which
reads what it declares. ``reference`` and ``built`` need nothing of the engine: the engine
uses them too (the plugin's references, ``judge/check.built``), so a reference module or a
built recipe is the same object wherever it is asked for.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from grader import catalog
from grader.failure_kinds import DESCRIPTIONS as FAILURE_KINDS
from grader.failure_kinds import FailureKind
from grader.sandbox.harness import recipes
from grader.sandbox.harness.protocol import ProtocolError, Recipe, encode_message, map_leaves

if TYPE_CHECKING:
    from grader.judge.compare import Comparison

__all__ = ["graded", "mistake", "KnownMistake", "region", "Region", "probes", "Probes",
           "Recipe", "built", "GradeFailure", "source_rule", "cached_input"]

DEFAULT_TIMEOUT_S = 10.0


@functools.cache
def reference(slug: str) -> ModuleType:
    """The reference solution module of ``slug`` (imported once per process), for writing
    known-mistake variants; the grading engine's too. In a student release, which has no
    reference, an empty module (its public tests replay recorded values)."""
    path = catalog.get(slug).solution
    if not path.is_file():
        return ModuleType(f"_no_reference_{slug}")
    spec = importlib.util.spec_from_file_location(f"_reference_{slug}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# a recipe's digest -> the object built from it, for the life of the process (``built``)
_BUILT: dict[str, Any] = {}


def built(recipe: Recipe) -> Any:
    """``recipe`` built in this process, as the worker builds it for the learner; once per
    process and recipe (a recipe whose parameters are not plain data: at each call)."""
    try:
        k: str | None = hashlib.sha256(encode_message({}, recipe)).hexdigest()
    except ProtocolError:
        k = None
    if k is not None and k in _BUILT:
        return _BUILT[k]
    obj = recipes.build(recipe.name, map_leaves(recipe.params, built_leaf))
    if k is not None:
        _BUILT[k] = obj
    return obj


def built_leaf(value: Any) -> Any:
    """``value`` built where it is a ``Recipe`` (``built``), else itself (for ``map_leaves``)."""
    return built(value) if isinstance(value, Recipe) else value


class GradeFailure(AssertionError):
    """The learner's answer is wrong. ``message`` is the one-sentence verdict.

    ``hidden_message`` is the same verdict without expected values or inputs (what a hidden
    test shows; defaults to ``message``). ``kind`` names the failure for ``hints.py``: a
    ``FailureKind`` (or its value; None: a property the test checks), the comparison's by
    default.
    """

    def __init__(self, message: str, comparison: Comparison | None = None,
                 mistake: KnownMistake | None = None, *, hidden_message: str | None = None,
                 kind: FailureKind | str | None = None, exc_type: str | None = None,
                 what: str = "") -> None:
        super().__init__(message)
        self.what = what
        self.message = message
        self.hidden_message = message if hidden_message is None else hidden_message
        self.comparison = comparison
        self.mistake = mistake
        self.kind = kind if kind is not None else (comparison.kind if comparison else None)
        self.exc_type = exc_type
        # (function, the function it calls that fails its own tests): set by the engine
        self.fix_first: tuple[str, str] | None = None
        # the form of the call a known mistake was matched on (``evidence.signature``)
        self.form: tuple[int, ...] = ()
        # on how many of the exercise's compared calls of that form the learner's results
        # equal the mistake's (set by the engine once the exercise's evidence is in)
        self.agreed = 0


@dataclass(frozen=True)
class SourceRule:
    """``name``: the rule's id; ``statement``: what it asks, one sentence (shown when broken);
    ``functions``: the functions it is about (while they are all stubs, the rule is "not
    implemented yet", not passed). ``judge/rules.py`` enforces it."""

    name: str
    statement: str
    forbid: tuple[str, ...] = ()
    allow_imports: tuple[str, ...] | None = None
    forbid_imported: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()


def graded(points: float, hint: str, *, hint_for: tuple[str, ...] | None = None,
           timeout: float = DEFAULT_TIMEOUT_S,
           visibility: str = "hidden") -> Callable[[Callable[..., Any]], Any]:
    """Mark a hidden test: its points, the hint shown when it fails, its per-call time limit.

    ``hint_for``: the failure kinds the hint is about (``hints.HINT_KINDS``); the hint is shown
    only on such a failure, never beside a known mistake (whose message names the cause) or a
    file that did not load. Without it, ``hints.DEFAULT_HINT_FOR`` (a replayed public test of
    a student release); every test of the pack's suites declares it."""
    if visibility not in ("public", "hidden"):
        raise ValueError("visibility must be 'public' or 'hidden'")
    kw: dict[str, Any] = {}
    if hint_for is not None:
        kw["hint_for"] = _hint_kinds(hint_for)
    return pytest.mark.grading(points=float(points), hint=hint, timeout=float(timeout),
                               visibility=visibility, **kw)


def _hint_kinds(hint_for: tuple[str, ...] | list[str] | str) -> tuple[str, ...]:
    kinds = (hint_for,) if isinstance(hint_for, str) else tuple(hint_for)
    unknown = [k for k in kinds if k not in FAILURE_KINDS]
    if unknown or not kinds:
        raise ValueError(f"hint_for must name failure kinds among {sorted(FAILURE_KINDS)}, got "
                         f"{list(kinds)}")
    return kinds


@dataclass(frozen=True)
class KnownMistake:
    func: str
    name: str
    message: str
    fn: Callable[..., Any]
    slip: str | tuple[str, ...] = ""


def mistake(func: str, name: str, message: str, *,
            slip: str | tuple[str, ...] = "") -> Callable[[Callable[..., Any]], Any]:
    """Register a wrong variant of reference function ``func``.

    When a learner's failing output matches the variant's output on the same arguments,
    the verdict names the mistake and shows ``message``. ``slip``: the mistake *is* a generic
    slip of the reference's result, on every input ("negated", "halved", ...: the names of
    ``authoring/separation.SLIP_NAMES``; a tuple of them for a mistake that is several slips at
    once, a swap of two values), so ``grade pack check`` does not ask probes to tell them
    apart.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__known_mistake__ = KnownMistake(  # type: ignore[attr-defined]
            func, name, message, fn, slip)
        return fn

    return deco


@dataclass(frozen=True)
class Region:
    """A part of ``func``'s result that means something in the exercise.

    ``fn`` takes ``func``'s arguments and returns a boolean mask of the result's shape.
    ``where`` completes "All 9 wrong values are ..." ("in the rows and columns of the prefix
    tokens"); ``means`` (optional) says what the exercise knows about values there, shown
    after the observation: the one place where a pattern may lead to a cause.
    """

    func: str
    where: str
    means: str
    fn: Callable[..., Any]


def region(func: str, where: str, means: str = "") -> Callable[[Callable[..., Any]], Any]:
    """Declare a region of ``func``'s result (see ``Region``)."""

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__region__ = Region(func, where, means, fn)  # type: ignore[attr-defined]
        return fn

    return deco


@dataclass(frozen=True)
class Probes:
    """Calls of ``func`` that confirm a known mistake: once a learner's wrong result matches a
    mistake on a test's input, the learner must match it on each of these too (where the
    mistake differs from the reference) before the mistake is named. Two different bugs can
    give the same output on one input (a 3x3 grid cannot tell a window that wraps around
    from one a step too wide); a few small, unlike inputs tell them apart."""

    func: str
    calls: tuple[tuple[Any, ...], ...]
    none: str = ""  # why ``func``'s mistakes have no probes (``grade pack check`` asks)


def probes(func: str, *calls: tuple[Any, ...], none: str = "") -> Probes:
    """Declare the calls (tuples of positional arguments) that confirm ``func``'s mistakes:
    ``GRID_PROBES = probes(F, (4, 5, 1, 2), (5, 3, 2, 0))`` at a suite's top level; or, with
    no calls, ``none="why"``: why they cannot be probed (a model, a long training)."""
    return Probes(func, tuple(tuple(c) for c in calls), none)


class Catalogue(list[KnownMistake]):
    """A suite's known mistakes (a list, in definition order), its ``regions`` and the
    ``probes`` that confirm a mistake, by function (none of either by default)."""

    def __init__(self, mistakes: Iterable[KnownMistake] = (), regions: Iterable[Region] = (),
                 probes: Mapping[str, tuple[tuple[Any, ...], ...]] | None = None) -> None:
        super().__init__(mistakes)
        self.regions: list[Region] = list(regions)
        self.probes: dict[str, tuple[tuple[Any, ...], ...]] = dict(probes or {})


def mistakes_in(namespace: dict[str, Any]) -> Catalogue:
    """The known mistakes defined in a suite module's namespace, in definition order; its
    regions and probes ride along as ``.regions`` and ``.probes``."""
    probes: dict[str, tuple[tuple[Any, ...], ...]] = {}
    for v in namespace.values():
        if isinstance(v, Probes):
            probes[v.func] = probes.get(v.func, ()) + v.calls
    return Catalogue((v.__known_mistake__ for v in namespace.values()
                      if callable(v) and hasattr(v, "__known_mistake__")),
                     (v.__region__ for v in namespace.values()
                      if callable(v) and hasattr(v, "__region__")), probes)


def source_rule(hint: str, *, statement: str, forbid: tuple[str, ...] = (),
                allow_imports: tuple[str, ...] | None = None,
                forbid_imported: tuple[str, ...] = (), functions: tuple[str, ...] = (),
                visibility: str = "public") -> Callable[[Callable[..., Any]], Any]:
    """Declare a source rule as a test worth 0 points; decorate an empty ``test_rule_<name>``
    whose docstring says what the rule checks.

    The test reads the learner's file (the grading process never imports it) and fails with
    ``statement`` and the offending lines when it uses a name matching ``forbid`` (dotted, glob
    patterns; a module covers everything under it), imports a top-level module outside
    ``allow_imports`` (None: any), or imports a name matching ``forbid_imported``. It passes
    only once the file imports in the worker and the rule's ``functions`` are implemented.

    A rule earns no points, ever: a reader of the source can be fooled (``getattr(np, "f" +
    "ft")``), so keeping a rule proves nothing, and points come only from computed results.
    A broken rule is a failed test with its message (the run is not all-passed), a guard
    against accidents, not cheating; say so in the statement. See ``grader/judge/rules.py``.
    """

    def deco(fn: Callable[..., Any]) -> Any:
        rule = SourceRule(name=fn.__name__.removeprefix("test_rule_").removeprefix("test_"),
                          statement=statement, forbid=tuple(forbid),
                          allow_imports=None if allow_imports is None else tuple(allow_imports),
                          forbid_imported=tuple(forbid_imported), functions=tuple(functions))

        # the engine's ``enforce_rule`` loads the file in the worker first: a file that does
        # not import earns no points for a rule, and says why as every other test does
        def test(enforce_rule: Callable[[SourceRule], None]) -> None:
            enforce_rule(rule)

        # not functools.wraps: pytest would read the fixtures off the wrapped signature
        test.__name__, test.__qualname__ = fn.__name__, fn.__qualname__
        test.__doc__, test.__module__ = fn.__doc__, fn.__module__
        test.__source_rule__ = rule  # type: ignore[attr-defined]
        return graded(0, hint, hint_for=("rule",), visibility=visibility)(test)

    return deco


def cached_input(build: Callable[..., Any] | None = None, *,
                 shared: bool = True) -> Callable[..., Any]:
    """A deterministic input builder (same arguments, same value) run once per process per
    arguments. Its arrays are shared by every caller and read-only (a test that changes one
    copies it first; their hashes are then computed once too), the large ones also with the
    workers started afterwards (``grader/sandbox/shared_inputs.py``: no copy through the
    pipe); lists, tuples and dicts are the caller's own. ``@cached_input(shared=False)``:
    its arrays go to workers through the pipe, as any argument (a copy of the worker's own,
    which the learner's code may write to, and a write the test sees as a changed argument)."""

    def wrap(build: Callable[..., Any]) -> Callable[..., Any]:
        memo = functools.lru_cache(maxsize=16)(
            lambda *a, **k: _read_only(build(*a, **k), shared))

        @functools.wraps(build)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return _own_containers(memo(*args, **kwargs))

        return wrapper

    return wrap if build is None else wrap(build)


def _read_only(value: Any, shared: bool) -> Any:
    from grader.sandbox import shared_inputs

    def freeze(leaf: Any) -> Any:
        if isinstance(leaf, np.ndarray):
            leaf.flags.writeable = False
            if shared:
                shared_inputs.share(leaf)  # a large one reaches workers in sealed memory
        return leaf

    return map_leaves(value, freeze)


def _own_containers(value: Any) -> Any:
    return map_leaves(value, lambda v: v if isinstance(v, np.ndarray) else copy.deepcopy(v))


def rules_in(namespace: dict[str, Any]) -> list[SourceRule]:
    """The source rules declared in a suite module's namespace."""
    return [v.__source_rule__ for v in namespace.values()
            if callable(v) and hasattr(v, "__source_rule__")]

