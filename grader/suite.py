"""What a hidden suite imports: the ``graded`` decorator, ``mistake`` and ``Recipe``.

A hidden suite is ``grader/suites/test_<slug>.py``. Its tests take the fixtures

- ``learner``: a proxy to the learner's module in the worker (``learner.fn(...)``);
- ``reference``: the reference solution module, in the grading process;
- ``check``: the comparison helper (``check.call``, ``check.equal``, ``check.raises``,
  ``check.that``), which raises a ``GradeFailure`` with diagnostics;
- ``device``: ``"cpu"`` or ``"cuda"``, the device the run grades on.

Every test is decorated with ``@graded(points, hint)``. Known mistakes are functions of the
same arguments as a reference function, decorated with ``@mistake(func, name, message)``.
Source rules (what a solution may not use, read from the learner's file with ``ast``) are
tests worth 0 points, declared with ``@source_rule(hint, statement=..., forbid=...)``. Input
builders that are deterministic and slow (ViT-sized arrays) can be decorated with
``@cached_input``: built once per grading process, each call gets its own copy.
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from grader.engine import rules
from grader.engine.check import GradeFailure, built
from grader.sandbox.harness.protocol import Recipe, map_leaves

__all__ = ["graded", "mistake", "KnownMistake", "Recipe", "built", "GradeFailure", "source_rule",
           "cached_input"]

DEFAULT_TIMEOUT_S = 10.0


def graded(points: float, hint: str, *, timeout: float = DEFAULT_TIMEOUT_S,
           visibility: str = "hidden") -> Callable[[Callable[..., Any]], Any]:
    """Mark a hidden test: its points, the hint shown when it fails, its per-call time limit."""
    if visibility not in ("public", "hidden"):
        raise ValueError("visibility must be 'public' or 'hidden'")
    return pytest.mark.grading(points=float(points), hint=hint, timeout=float(timeout),
                               visibility=visibility)


@dataclass(frozen=True)
class KnownMistake:
    func: str
    name: str
    message: str
    fn: Callable[..., Any]


def mistake(func: str, name: str, message: str) -> Callable[[Callable[..., Any]], Any]:
    """Register a wrong variant of reference function ``func``.

    When a learner's failing output matches the variant's output on the same arguments,
    the verdict names the mistake and shows ``message``.
    """

    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        fn.__known_mistake__ = KnownMistake(func, name, message, fn)  # type: ignore[attr-defined]
        return fn

    return deco


def mistakes_in(namespace: dict[str, Any]) -> list[KnownMistake]:
    """The known mistakes defined in a suite module's namespace, in definition order."""
    return [v.__known_mistake__ for v in namespace.values()
            if callable(v) and hasattr(v, "__known_mistake__")]


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
    against accidents, not cheating; say so in the statement. See ``grader/engine/rules.py``.
    """

    def deco(fn: Callable[..., Any]) -> Any:
        rule = rules.Rule(name=fn.__name__.removeprefix("test_rule_").removeprefix("test_"),
                          statement=statement, forbid=tuple(forbid),
                          allow_imports=None if allow_imports is None else tuple(allow_imports),
                          forbid_imported=tuple(forbid_imported), functions=tuple(functions))

        # ``learner`` loads the file in the worker first: a file that does not import earns
        # no points for a rule, and says why as every other test does
        def test(learner_source: rules.LearnerSource, learner: Any) -> None:
            rules.enforce(learner_source, rule)

        # not functools.wraps: pytest would read the fixtures off the wrapped signature
        test.__name__, test.__qualname__ = fn.__name__, fn.__qualname__
        test.__doc__, test.__module__ = fn.__doc__, fn.__module__
        test.__source_rule__ = rule  # type: ignore[attr-defined]
        return graded(0, hint, visibility=visibility)(test)

    return deco


def cached_input(build: Callable[..., Any]) -> Callable[..., Any]:
    """A deterministic input builder (same arguments, same value) run once per process per
    arguments. Its arrays are shared by every caller and read-only (a test that changes one
    copies it first; their hashes are then computed once too); lists, tuples and dicts are
    the caller's own."""
    memo = functools.lru_cache(maxsize=16)(lambda *a, **k: _read_only(build(*a, **k)))

    @functools.wraps(build)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return _own_containers(memo(*args, **kwargs))

    return wrapper


def _read_only(value: Any) -> Any:
    def freeze(leaf: Any) -> Any:
        if isinstance(leaf, np.ndarray):
            leaf.flags.writeable = False
        return leaf

    return map_leaves(value, freeze)


def _own_containers(value: Any) -> Any:
    return map_leaves(value, lambda v: v if isinstance(v, np.ndarray) else copy.deepcopy(v))


def rules_in(namespace: dict[str, Any]) -> list[rules.Rule]:
    """The source rules declared in a suite module's namespace."""
    return [v.__source_rule__ for v in namespace.values()
            if callable(v) and hasattr(v, "__source_rule__")]


def reference(slug: str) -> Any:
    """The reference module of ``slug``, for writing known-mistake variants."""
    from grader.engine.plugin import load_reference

    return load_reference(slug)
