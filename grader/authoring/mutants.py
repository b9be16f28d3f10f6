"""Generated mutants: does each suite catch every small slip of its reference, and does its
feedback name no cause the slip does not have?

``grade pack check --grade`` derives, from ``solutions/<slug>.py``, every first-order mutant of
the bodies of the exercise's listed functions (every method of a listed class) and grades a
seeded sample of them (``--mutants N`` per exercise, ``--mutants all``) through the real
grader, beside the other generated files (``graded.files_to_grade``):

- ``mutants-killed``: each mutant that is not equivalent to the reference loses at least one
  point, or is listed in ``solutions/<slug>.mutants.toml`` with the reason it may survive;
- ``mutants-no-false-cause``: a mutant's result names no known mistake (``@mistake``) unless
  the mutant gives that mistake's results on the suite's inputs and on random ones too.

The operators are mutmut's (``mutmut.mutation.mutators.mutation_operators``, mutmut >= 3):
a maintained, libcst-based set that rewrites one node at a time and keeps the rest of the file
byte for byte, so each mutant is a readable one-line change of the reference. Cosmic-ray was
the other candidate: its parso operators replace each operator by every other one (many more
mutants, most of them trivially killed, each costing a graded file) and it pulls a database, a
web client and git in. mutmut's set: numbers plus one (``n -> n + 1``), comparisons off by one
(``< -> <=``, ``== -> !=``), arithmetic and boolean operators swapped (``+ -> -``, ``* -> /``,
``and -> or``), ``not``/``~`` removed, ``True``/``False`` swapped, assignments to ``None``,
``+=`` to ``=``, a call's argument dropped or made ``None``, string values changed, string
methods swapped, ternaries forced down one branch. mutmut deletes no statement: the one
operator added here, ``drop_statement``, turns each simple statement of a body (docstrings
aside) into ``pass`` with libcst's own node (``cst.Pass``). As mutmut does, nothing inside an
annotation, a decorator, a default value or a ``len``/``isinstance`` call is mutated.

A mutant's id is ``slug:function:line:operator`` (``:2``, ``:3``... for the second, third
mutant of one operator on one line, in source order): stable while the line does not move.

Equivalence. A mutant is *equivalent* when it gives the reference's results on every call the
suite makes (``calls.record``, on the reference) and on those calls with their float inputs
perturbed: a float array (numpy, torch, or a list of Python floats) becomes seeded random
values of its shape and dtype, drawn within its own range (a positive input stays positive;
rows that summed to 1 are renormalised; NaN and inf kept in place; an array of whole numbers,
labels or one-hot rows, has its rows shuffled); ints, shapes and the rest are kept. Results are
compared with ``compare.compare`` at the exercise's rtol/atol; a call that raises on both sides
counts as equal (whatever it raises). Only the calls of functions that use the mutated one
(through the reference's module-level functions) are replayed. A listed class is replayed test
by test (``record_sessions``: each object built, each trusted recipe applied to it, each
method called, torch and numpy seeded alike on both sides). The comparison runs in a forked
child process with a time limit (``Replayer``): a mutant that runs past it, or ends its
process, differs. Equivalent mutants are set aside and listed by the summary: the suite's
inputs cannot tell them from the reference, which is either true of every valid input or a
test the suite lacks (read them). The mutation score is killed / non-equivalent graded.

The sample walks the mutants in a seeded order (allow-listed ones left out, but with ``all``),
checking each for equivalence, until it holds N non-equivalent ones: only those are graded.

``mutants-no-false-cause`` holds a mutant to the named mistake on the calls of the mistake's
function where both the reference and the mistake give a value (a mistake says nothing of
invalid inputs); a class's mistakes are not checked (they are written on the suite's calls).
"""

from __future__ import annotations

import ast
import copy
import io
import multiprocessing
import os
import random
import sys
import threading
import time
import tokenize
import tomllib
import types
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grader import catalog
from grader.authoring.judged import Graded, no_grader_error
from grader.sandbox.treewatch import cpu_seconds

if TYPE_CHECKING:
    from grader.authoring.calls import Call
    from grader.results import ExerciseResult

DEFAULT_SAMPLE = 4  # mutants per exercise without --mutants (pack.py's help says it too)
SEED = 0
MIN_LIMIT_S = 10.0  # a mutant's replay may take this long, plus 10x the reference's time
PER_CALL_S = 0.05  # and this much a call replayed (copying, comparing)
DROP = "drop_statement"


@dataclass(frozen=True)
class Mutant:
    id: str
    slug: str
    function: str       # the listed function (a class: "Class.method")
    line: int
    operator: str       # mutmut's operator, without its "operator_" prefix, or drop_statement
    description: str    # "line 23: `<` -> `<=`"
    source: str         # the whole mutated reference


# -- generation ---------------------------------------------------------------------------------

def _operators() -> list[tuple[type, Callable[[Any], Any], str]]:
    from mutmut.mutation.mutators import mutation_operators

    return [(t, op, op.__name__.removeprefix("operator_")) for t, op in mutation_operators]


def _never_mutated_calls() -> set[str]:
    try:
        from mutmut.mutation.file_mutation import NEVER_MUTATE_FUNCTION_CALLS
        return set(NEVER_MUTATE_FUNCTION_CALLS)
    except ImportError:  # pragma: no cover - mutmut moved it
        return {"len", "isinstance"}


def _targets(module: Any, functions: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
    """``(name, FunctionDef)`` for each listed function and each method of a listed class."""
    import libcst as cst

    for node in module.body:
        if isinstance(node, cst.FunctionDef) and node.name.value in functions:
            yield node.name.value, node
        elif isinstance(node, cst.ClassDef) and node.name.value in functions:
            for item in node.body.body:
                if isinstance(item, cst.FunctionDef):
                    yield f"{node.name.value}.{item.name.value}", item


def _is_docstring(node: Any) -> bool:
    import libcst as cst

    return (isinstance(node, cst.SimpleStatementLine) and len(node.body) == 1
            and isinstance(node.body[0], cst.Expr)
            and isinstance(node.body[0].value, (cst.SimpleString, cst.ConcatenatedString)))


def _nodes(node: Any, never_calls: set[str]) -> Iterator[Any]:
    """``node`` and every node below it that mutmut would mutate (its own skips)."""
    import libcst as cst

    if isinstance(node, (cst.Annotation, cst.Decorator)) or _is_docstring(node):
        return
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and \
            node.func.value in never_calls:
        return
    if isinstance(node, cst.Param) and node.default is not None:
        return  # evaluated when the function is defined
    yield node
    for child in node.children:
        yield from _nodes(child, never_calls)


def _code(node: Any) -> str:
    import libcst as cst

    return cst.Module(body=[]).code_for_node(node)


def _token_spans(code: str) -> list[tuple[str, int, int]] | None:
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    skip = {tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
            tokenize.ENDMARKER}
    try:
        return [(t.string, starts[t.start[0] - 1] + t.start[1], starts[t.end[0] - 1] + t.end[1])
                for t in tokenize.generate_tokens(io.StringIO(code).readline)
                if t.type not in skip]
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return None


def _short(text: str, width: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 1] + "…"


def describe_change(before: str, after: str) -> str:
    """The tokens that differ between two versions of a node: "`<` -> `<=`"."""
    before, after = before.strip(), after.strip()
    a, b = _token_spans(before), _token_spans(after)
    if a is not None and b is not None:
        i = 0
        while i < min(len(a), len(b)) and a[i][0] == b[i][0]:
            i += 1
        j = 0
        while j < min(len(a), len(b)) - i and a[-1 - j][0] == b[-1 - j][0]:
            j += 1
        if j and not any(t[0][:1].isalnum() for t in (*a[i:len(a) - j], *b[i:len(b) - j])):
            j -= 1  # an operator alone: show the operand after it too (`-1` -> `+1`)
        before = before[a[i][1]:a[len(a) - j - 1][2]] if i < len(a) - j else ""
        after = after[b[i][1]:b[len(b) - j - 1][2]] if i < len(b) - j else ""
    if not after:
        return f"`{_short(before)}` removed"
    return f"`{_short(before)}` -> `{_short(after)}`"


def _splice(source: str, starts: list[int], where: Any, node: Any, mutated: Any) -> str | None:
    """``source`` with ``node`` replaced by ``mutated``, as text (rendering the whole tree
    again costs 10 ms a mutant); None where the node's code is not its slice of ``source``."""
    import libcst as cst

    def offset(position: Any) -> int:
        return starts[position.line - 1] + position.column

    if isinstance(node, cst.SimpleStatementLine):  # dropped: its statements, not its comment
        a, b = offset(where[node.body[0]].start), offset(where[node.body[-1]].end)
        dropped = len(mutated.body) == 1 and isinstance(mutated.body[0], cst.Pass)
        return source[:a] + "pass" + source[b:] if dropped else None
    a, b = offset(where[node].start), offset(where[node].end)
    if source[a:b] != _code(node):
        return None
    return source[:a] + _code(mutated) + source[b:]


def mutants_of(source: str, functions: tuple[str, ...], slug: str) -> list[Mutant]:
    """Every first-order mutant of the bodies of ``functions`` (and of a listed class's
    methods) in ``source``, in source order; none equal to ``source`` or to an earlier one."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    wrapper = MetadataWrapper(cst.parse_module(source))
    module = wrapper.module
    where = wrapper.resolve(PositionProvider)
    operators, never_calls = _operators(), _never_mutated_calls()
    found: list[Mutant] = []
    seen = {source}
    per_place: dict[tuple[str, int, str], int] = {}
    starts = [0]
    for line in source.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))
    for name, func in _targets(module, functions):
        for node in _nodes(func.body, never_calls):
            changes: list[tuple[str, Any]] = []
            for kind, op, op_name in operators:
                if isinstance(node, kind):
                    changes += [(op_name, m) for m in op(node)]
            if isinstance(node, cst.SimpleStatementLine) and not (
                    len(node.body) == 1 and isinstance(node.body[0], cst.Pass)):
                changes.append((DROP, node.with_changes(body=[cst.Pass()])))
            for op_name, mutated in changes:
                text = (_splice(source, starts, where, node, mutated)
                        or module.deep_replace(node, mutated).code)
                if text in seen:
                    continue
                seen.add(text)
                line = where[node].start.line
                key = (name, line, op_name)
                per_place[key] = per_place.get(key, 0) + 1
                ident = f"{slug}:{name}:{line}:{op_name}"
                if per_place[key] > 1:
                    ident += f":{per_place[key]}"
                what = (f"dropped `{_short('; '.join(_code(s) for s in node.body))}`"
                        if op_name == DROP
                        else describe_change(_code(node), _code(mutated)))
                found.append(Mutant(ident, slug, name, line, op_name, f"line {line}: {what}",
                                    text))
    return found


def generate(slug: str) -> list[Mutant]:
    """Every mutant of ``slug``'s reference (its listed functions' bodies)."""
    ex = catalog.get(slug)
    return mutants_of(ex.solution.read_text(), tuple(ex.functions), slug)


# -- the allow-list -----------------------------------------------------------------------------

def allow_path(slug: str) -> Path:
    return catalog.SOLUTIONS_DIR / f"{slug}.mutants.toml"


def allowed(slug: str) -> dict[str, str]:
    """``solutions/<slug>.mutants.toml``: each surviving mutant allowed, with its reason::

        [[survivor]]
        id = "grid_local_mask:grid_local_mask:23:number"
        reason = "equivalent on every valid input: ..."   # or "TODO suite: ..."

    Raises ``ValueError`` on a file that does not parse or an entry without both keys."""
    path = allow_path(slug)
    if not path.is_file():
        return {}
    try:
        data = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path.name} does not parse: {e}") from None
    out: dict[str, str] = {}
    for entry in data.get("survivor", []):
        if not (isinstance(entry.get("id"), str) and str(entry.get("reason", "")).strip()):
            raise ValueError(f"{path.name}: each [[survivor]] needs an id and a reason, got "
                             f"{entry!r}")
        out[entry["id"]] = entry["reason"]
    return out


# -- the inputs: recorded and perturbed ---------------------------------------------------------

def _float_list(value: Any) -> bool:
    return (type(value) in (list, tuple) and len(value) > 0
            and all(type(v) is float for v in value))


def _random_like(a: Any, rng: Any) -> Any:
    """Seeded values of ``a``'s shape and dtype: a float array of whole numbers (labels,
    one-hot rows, 0/1 masks) has each row's values shuffled (its last axis); any other is
    drawn uniformly within its finite range, rows that summed to 1 renormalised, NaN and inf
    kept in place."""
    import numpy as np

    finite = np.isfinite(a)
    if a.ndim == 0 or a.size == 0 or not finite.any():
        return a.copy()
    values = a[finite]
    if np.all(values == np.round(values)):
        return rng.permuted(a, axis=-1)
    lo, hi = float(values.min()), float(values.max())
    out = rng.uniform(lo, hi, a.shape)
    if lo >= 0 and finite.all() and np.allclose(a.sum(axis=-1), 1.0):
        out /= out.sum(axis=-1, keepdims=True)
    return np.where(finite, out, a).astype(a.dtype)


def perturbed(value: Any, rng: Any) -> Any:
    """``value`` with every float array (numpy, torch, a list of Python floats) replaced by
    random values like it (``_random_like``); ints, shapes and the rest kept."""
    import numpy as np

    if _float_list(value):
        return type(value)(float(v) for v in _random_like(np.array(value), rng))
    if type(value) in (list, tuple):
        return type(value)(perturbed(v, rng) for v in value)
    if type(value) is dict:
        return {k: perturbed(v, rng) for k, v in value.items()}
    if isinstance(value, np.ndarray) and value.dtype.kind == "f":
        return _random_like(value, rng)
    if type(value).__module__.startswith("torch"):
        import torch

        if isinstance(value, torch.Tensor) and value.is_floating_point():
            new = _random_like(value.detach().cpu().numpy(), rng)
            return torch.as_tensor(new, dtype=value.dtype, device=value.device)
    return value


def reaches(source: str) -> dict[str, set[str]]:
    """For each module-level function (or class) of ``source``: itself and every one it
    uses, directly or not."""
    tree = ast.parse(source)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    direct = {name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in defs}
              for name, node in defs.items()}
    out: dict[str, set[str]] = {}
    for name in defs:
        seen, todo = {name}, [name]
        while todo:
            for callee in direct[todo.pop()] - seen:
                seen.add(callee)
                todo.append(callee)
        out[name] = seen
    return out


@dataclass(frozen=True)
class Session:
    """Every request one test of a class's exercise sent to the worker, in order: ``(op,
    name, args, kwargs, reply)``, op "new" (its reply, the object's handle), "apply" (a
    trusted recipe on objects) or "call" (a method, of the object last built or handed to a
    recipe: the request does not say which)."""

    test: str
    ops: tuple[tuple[str, str, tuple, dict, Any], ...]


def record_sessions(slugs: list[str]) -> dict[str, list[Session]]:
    """Grade each exercise's reference, keeping every request of each test (for a class:
    ``calls.record`` keeps its method calls but not the objects they are made on)."""
    from grader.engine.runner import grade_references
    from grader.judge.observer import Observer

    class Watch(Observer):
        def __init__(self) -> None:
            self.ops: list[list[Any]] = []
            self.found: dict[str, list[Session]] = {}

        def requested(self, op: str, func: str, args: tuple, kwargs: dict) -> None:
            if op in ("new", "apply", "call"):
                self.ops.append([op, func, tuple(args), dict(kwargs), None])

        def replied(self, op: str, value: Any) -> None:
            if self.ops and op == self.ops[-1][0] == "new":
                self.ops[-1][4] = value

        def decided(self, item: Any, result: Any) -> None:
            slug = Path(str(item.path)).stem.removeprefix("test_")
            self.found.setdefault(slug, []).append(
                Session(result.name, tuple(tuple(op) for op in self.ops)))
            self.ops = []

    watch = Watch()
    grade_references(slugs, watch)
    return {slug: watch.found.get(slug, []) for slug in slugs}


@dataclass
class Inputs:
    """The calls one exercise's suite makes (``calls.record``), replayed as recorded and
    perturbed, and what a mutant is compared with: the reference, at rtol/atol."""

    slug: str
    calls: list[Call]
    reference: str                       # its source
    rtol: float
    atol: float
    reaches: dict[str, set[str]] = field(default_factory=dict)
    sessions: list[Session] = field(default_factory=list)   # a class's (record_sessions)

    def __post_init__(self) -> None:
        self.reaches = self.reaches or reaches(self.reference)

    @classmethod
    def of(cls, slug: str, calls: list[Call], sessions: list[Session] | None = None,
           ) -> Inputs:
        ex = catalog.get(slug)
        return cls(slug, calls, ex.solution.read_text(), ex.rtol, ex.atol,
                   sessions=sessions or [])

    def relevant(self, function: str) -> list[int]:
        """The calls whose function uses ``function`` (a class: "Class.method" too)."""
        name = function.split(".")[0]
        return [i for i, c in enumerate(self.calls) if name in self.reaches.get(c.func, ())]

    def args(self, i: int, random_: bool) -> tuple[tuple, dict]:
        """Call ``i``'s arguments, recorded or perturbed (seed ``(SEED, i)``), recipes built,
        a fresh copy each time."""
        import numpy as np

        from grader.judge import check
        from grader.sandbox.harness import protocol

        c = self.calls[i]
        args, kwargs = copy.deepcopy((c.args, c.kwargs))
        if random_:
            rng = np.random.default_rng([SEED, i])
            args, kwargs = perturbed(args, rng), perturbed(kwargs, rng)
        return (protocol.map_leaves(args, check._built_leaf),
                protocol.map_leaves(kwargs, check._built_leaf))


# -- replaying them, in a child process ---------------------------------------------------------

class _Raised:
    def __init__(self, exc: BaseException) -> None:
        self.text = f"raises {type(exc).__name__}: {_short(str(exc), 80)}"


def _load(source: str, name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    module.__file__ = f"<{name}>"
    exec(compile(source, f"<{name}>", "exec"), module.__dict__)  # trusted-derived source
    return module


def _run(fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
    import numpy as np

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            return fn(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - a raise is a result like any other
        return _Raised(exc)


def _difference(actual: Any, expected: Any, rtol: float, atol: float) -> str:
    """How ``actual`` differs from ``expected`` ("" when it does not): ``compare`` at the
    exercise's tolerances; raising on both sides is equal."""
    from grader.judge.compare import compare

    if isinstance(actual, _Raised) or isinstance(expected, _Raised):
        if isinstance(actual, _Raised) and isinstance(expected, _Raised):
            return ""
        return actual.text if isinstance(actual, _Raised) else "returns a value"
    if type(expected) is dict:
        if type(actual) is not dict or actual.keys() != expected.keys():
            return f"returns {_short(repr(actual), 60)}"
        return next((f"[{k!r}]: {d}" for k in expected
                     if (d := _difference(actual[k], expected[k], rtol, atol))), "")
    try:
        c = compare(actual, expected, rtol=rtol, atol=atol)
        return "" if c.ok else _short(c.reason, 160)
    except Exception:  # noqa: BLE001 - a value compare cannot read: plain equality
        try:
            return "" if bool(actual == expected) else f"returns {_short(repr(actual), 60)}"
        except Exception:  # noqa: BLE001
            return f"returns {_short(repr(actual), 60)}"


@dataclass(frozen=True)
class _Task:
    """One replay: a mutant against the reference, or (``mistake``) against that mistake."""

    mutant: Mutant
    mistake: str = ""


class _Child:
    """The child's side: the results of the reference (or of a mistake) on the inputs, kept,
    and where a mutant first differs from them."""

    def __init__(self, conn: Any, inputs: Inputs) -> None:
        self.conn, self.inputs, self.rtol, self.atol = conn, inputs, inputs.rtol, inputs.atol
        self.reference = _load(inputs.reference, f"_mutants_reference_{inputs.slug}")
        self.mistakes: dict[str, Any] | None = None
        self.known: dict[tuple[str, int, bool], tuple[Any, float]] = {}

    def _mistake(self, name: str) -> Any:
        if self.mistakes is None:
            import importlib

            from grader.suite import mistakes_in

            suite = importlib.import_module(f"grader.suites.test_{self.inputs.slug}")
            self.mistakes = {m.name: m for m in mistakes_in(vars(suite))}
        return self.mistakes[name]

    def _expected(self, key: str, fn: Callable[..., Any], i: int, random_: bool) -> Any:
        """``fn``'s result on call ``i``, kept; the parent is told how long it took (and
        whether it just did), to give the mutant ten times as long on that call."""
        fresh = (key, i, random_) not in self.known
        if fresh:
            started = time.perf_counter()
            value = _run(fn, *self.inputs.args(i, random_))
            self.known[key, i, random_] = value, time.perf_counter() - started
        value, took = self.known[key, i, random_]
        self.conn.send(("expected", PER_CALL_S + took * (11 if fresh else 10)))
        return value

    def _session(self, module: types.ModuleType, session: Session, random_: bool,
                 ) -> list[Any]:
        """What each request of ``session`` gives on ``module``'s class (an object stands
        for itself: only whether it was built counts), torch and numpy seeded first."""
        import numpy as np

        from grader.judge import check
        from grader.sandbox.harness import protocol

        objects: dict[int, Any] = {}
        last: Any = None
        rng = np.random.default_rng([SEED, len(session.ops)])
        np.random.seed(SEED)
        if "torch" in sys.modules:
            sys.modules["torch"].manual_seed(SEED)

        def live(leaf: Any) -> Any:
            if isinstance(leaf, protocol.Handle):
                return objects.get(leaf.id)
            return check._built_leaf(leaf)

        out: list[Any] = []
        for op, name, args, kwargs, reply in session.ops:
            handed = [objects.get(a.id) for a in args if isinstance(a, protocol.Handle)]
            args, kwargs = copy.deepcopy((args, kwargs))
            if random_:
                args, kwargs = perturbed(args, rng), perturbed(kwargs, rng)
            args, kwargs = protocol.map_leaves(args, live), protocol.map_leaves(kwargs, live)
            if op == "new":
                fn = getattr(module, name, None)
            elif op == "apply":
                fn, args = args[0], args[1:]
                last = handed[0] if handed and handed[0] is not None else last
            else:
                fn = getattr(last if hasattr(last, name) else module, name, None)
            value = _run(fn, args, kwargs) if callable(fn) else _Raised(
                AttributeError(f"no {name}"))
            if op == "new" and not isinstance(value, _Raised):
                last = value
                if isinstance(reply, protocol.Handle):
                    objects[reply.id] = value
            data = isinstance(value, (_Raised, type(None), bool, int, float, str, list,
                                      tuple, dict, np.ndarray, np.generic)) or \
                type(value).__name__ == "Tensor"
            out.append(value if data else None)
        return out

    def _class_where(self, module: types.ModuleType, task: _Task) -> str:
        """Where a class's mutant first differs: each test's requests replayed on it and on
        the reference (recorded, then with random inputs like them)."""
        if task.mistake:
            return ""  # a class's mistakes are written on the suite's own calls: not checked
        for random_ in (False, True):
            for session in self.inputs.sessions:
                key = ("the reference", id(session), random_)
                fresh = key not in self.known
                if fresh:
                    started = time.perf_counter()
                    value = self._session(self.reference, session, random_)
                    self.known[key] = value, time.perf_counter() - started
                want, took = self.known[key]
                self.conn.send(("expected", PER_CALL_S + took * (11 if fresh else 10)))
                got = self._session(module, session, random_)
                for k, (a, b) in enumerate(zip(got, want)):
                    how = _difference(a, b, self.rtol, self.atol)
                    if how:
                        op, name = session.ops[k][:2]
                        on = "random inputs shaped like those of" if random_ else \
                            "the inputs of"
                        what = "building it" if op == "new" else \
                            f"the recipe {getattr(session.ops[k][2][0], 'name', '?')}" \
                            if op == "apply" else name
                        return (f"on {on} test {session.test}, {what} differs from the "
                                f"reference: {how}")
        return ""

    def where(self, task: _Task) -> str:
        """Where ``task``'s mutant first differs from the reference on the calls that use its
        function (or from ``task.mistake`` on that mistake's function's calls, where both
        the reference and the mistake give a value), recorded then perturbed; "" nowhere."""
        if "." in task.mutant.function:  # a method of a class
            try:
                module = _load(task.mutant.source, f"_mutant_{self.inputs.slug}")
            except Exception as exc:  # noqa: BLE001 - a mutant that does not even load
                return f"it does not load: {type(exc).__name__}: {_short(str(exc), 80)}"
            return self._class_where(module, task)
        if task.mistake:
            try:
                m = self._mistake(task.mistake)
            except KeyError:
                return f"the suite has no mistake {task.mistake}"
            name, indices = f"the mistake {m.name}", [
                i for i, c in enumerate(self.inputs.calls) if c.func == m.func]
        else:
            name, indices = "the reference", self.inputs.relevant(task.mutant.function)
        try:
            module = _load(task.mutant.source, f"_mutant_{self.inputs.slug}")
        except Exception as exc:  # noqa: BLE001 - a mutant that does not even load
            return f"it does not load: {type(exc).__name__}: {_short(str(exc), 80)}"
        for random_ in (False, True):
            for i in indices:
                c = self.inputs.calls[i]
                fn = m.fn if task.mistake else getattr(self.reference, c.func)
                want = self._expected(name, fn, i, random_)
                if task.mistake and (isinstance(want, _Raised) or isinstance(self._expected(
                        "the reference", getattr(self.reference, c.func), i, random_),
                        _Raised)):
                    continue  # a mistake is held to valid inputs only
                got = _run(getattr(module, c.func), *self.inputs.args(i, random_))
                how = _difference(got, want, self.rtol, self.atol)
                if how:
                    on = "random inputs shaped like those of" if random_ else "the inputs of"
                    return f"on {on} test {c.test}, {c.func} differs from {name}: {how}"
        return ""

    def serve(self) -> None:
        while True:
            try:
                task = self.conn.recv()
            except EOFError:
                return
            if task is None:  # the parent is done
                return
            self.conn.send(("done", self.where(task)))


def _child_main(conn: Any, theirs: Any, inputs: Inputs) -> None:
    import resource

    theirs.close()  # the parent's end, inherited
    # a mutant that asks for more memory than this raises (and so differs) instead of
    # taking the machine's
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    soft = MEMORY_LIMIT if hard == resource.RLIM_INFINITY else min(MEMORY_LIMIT, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))
    _Child(conn, inputs).serve()


MEMORY_LIMIT = 16 << 30
_FORKING = threading.Lock()
TIMED_OUT = "it runs past its time limit on the suite's inputs (or ends its process)"


class Replayer:
    """The parent's side: one forked child per exercise replays the mutants, task by task.
    A task may take ``MIN_LIMIT_S`` plus ten times what the reference's (or mistake's) own
    results took on the calls it replays (computed as needed, and kept), of the child's CPU
    time (a child starved by other load waits for it, up to ``STARVED_WALL`` times that, wall
    clock): past that, or if the child dies, it differs (``TIMED_OUT``) and the next task gets
    a new child."""

    def __init__(self, inputs: Inputs) -> None:
        self.inputs = inputs
        self._child: Any = None
        self._conn: Any = None

    def _start(self) -> None:
        ctx = multiprocessing.get_context("fork")
        with _FORKING:  # one fork at a time
            self._conn, theirs = ctx.Pipe()
            self._child = ctx.Process(target=_child_main, daemon=True,
                                      args=(theirs, self._conn, self.inputs))
            self._child.start()
            theirs.close()

    def close(self) -> None:
        if self._child is not None:
            try:  # said, not left to the pipe's end: another child may hold a copy of it
                self._conn.send(None)
            except OSError:
                pass
            self._conn.close()
            self._child.join(5)
            if self._child.is_alive():
                self._child.terminate()
                self._child.join()
            self._child = self._conn = None

    def where(self, task: _Task) -> str:
        """Where ``task``'s mutant differs from what it is compared with ("" nowhere)."""
        if self._child is None:
            self._start()
        started = time.monotonic()
        deadline, allowed = started + MIN_LIMIT_S, MIN_LIMIT_S
        cpu_before = cpu_seconds(self._child.pid)
        try:
            self._conn.send(task)
            while True:
                while self._conn.poll(max(0.0, deadline - time.monotonic())):
                    kind, value = self._conn.recv()
                    if kind == "done":
                        return value
                    deadline += value
                    allowed += value
                # past the limit: a child that used its time runs too long; one that waited
                # for a CPU others took (a loaded machine) gets the rest, up to STARVED_WALL
                # times the limit in all, so that load never makes an equivalent mutant differ
                used = cpu_seconds(self._child.pid) - cpu_before
                if used >= 0.9 * allowed or \
                        time.monotonic() - started >= STARVED_WALL * allowed:
                    break
                deadline = time.monotonic() + allowed - used
        except (EOFError, OSError):
            pass
        self._child.terminate()
        self.close()
        return TIMED_OUT


STARVED_WALL = 6  # a replay starved of CPU may take this many times its limit, wall clock



# -- the sample, its graded files and their judges ----------------------------------------------

@dataclass
class Outcome:
    """What became of one exercise's mutants in this run (its summary line)."""

    slug: str
    size: int | None = None                               # the sample's (None: all)
    total: int = 0                                        # every mutant generated
    equivalent: list[Mutant] = field(default_factory=list)   # met and set aside
    killed: list[Mutant] = field(default_factory=list)
    survived: list[Mutant] = field(default_factory=list)     # allowed ones included
    allowed: list[Mutant] = field(default_factory=list)
    sampled: int = 0                                      # graded
    judged: int = 0
    note: str = ""                                        # why none was graded

    @property
    def score(self) -> str:
        n = len(self.killed) + len(self.survived)
        return f"{len(self.killed)}/{n}" if n else "-"


OUTCOMES: dict[str, Outcome] = {}  # the last run in this process, by exercise


def sample(mutants: list[Mutant], size: int | None, allow: dict[str, str], replay: Replayer,
           outcome: Outcome) -> list[tuple[Mutant, str]]:
    """``size`` non-equivalent mutants (None: all), in a seeded order, allow-listed ones left
    out (but for all), each with where it differs from the reference; the equivalent ones met
    go to ``outcome.equivalent``. A class's mutants are not compared (see above)."""
    order = sorted(mutants, key=lambda m: m.id)
    random.Random(f"{SEED}:{outcome.slug}").shuffle(order)
    chosen: list[tuple[Mutant, str]] = []
    for m in order:
        if size is not None and (len(chosen) >= size or m.id in allow):
            continue
        where = replay.where(_Task(m))
        if where:
            chosen.append((m, where))
        else:
            outcome.equivalent.append(m)
    return chosen


def _judge(m: Mutant, differs: str, allow: dict[str, str], replay: Replayer,
           outcome: Outcome, notes: list[str]):

    listed = allow_path(m.slug).name

    def judge(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
        yield from _judged(result)
        outcome.judged += 1
        if outcome.judged == outcome.sampled:
            replay.close()  # the exercise's last mutant: its child is done

    def _judged(result: ExerciseResult) -> Iterator[tuple[str, str, str]]:
        yield from no_grader_error(result)
        while notes:  # the allow-list's own problems, said once (with the first mutant)
            yield notes.pop(0), f"fix {listed}", "mutants-killed"
        if any(t.score < t.max_score for t in result.tests):
            outcome.killed.append(m)
            if m.id in allow:
                yield (f"{m.description}: mutant {m.id} is killed now, yet {listed} lets it "
                       "survive", f"remove its entry from {listed}", "mutants-killed")
        else:
            outcome.survived.append(m)
            if m.id in allow:
                outcome.allowed.append(m)
            else:
                yield (f"{m.description}: mutant {m.id} survives (every test passes); {differs}",
                       "add a test on inputs that tell it from the reference, or list it in "
                       f"{listed} with why it may survive", "mutants-killed")
        named: dict[str, list[str]] = {}
        for t in result.tests:
            if t.mistake:
                named.setdefault(t.mistake, []).append(t.name)
        for mistake, tests in named.items():
            where = replay.where(_Task(m, mistake))
            if where:
                yield (f"{m.description}: mutant {m.id} is named {mistake} on "
                       f"{', '.join(tests)}, but it is not that mistake: {where}",
                       "make the mistake's signature stricter, or add a probe that tells it "
                       "apart", "mutants-no-false-cause")
    return judge


def as_graded(m: Mutant, where: str, replay: Replayer, outcome: Outcome,
              allow: dict[str, str] | None = None, notes: list[str] | None = None) -> Graded:
    """Mutant ``m`` as a file to grade, judged by both rules (``where``: how it differs from
    the reference, for a survivor's problem; ``notes``: the allow-list's own problems, said
    by the first of the exercise's mutants judged)."""

    return Graded(m.slug, f"mutant {m.id}", m.source, catalog.get(m.slug).solution,
                  _judge(m, where, allow or {}, replay, outcome, [] if notes is None else notes))


def graded_files(slugs: list[str], size: int | None = DEFAULT_SAMPLE,
                 recorded: dict[str, list[Call]] | None = None) -> dict[str, list[Graded]]:
    """Per exercise, its sampled mutants as ``Graded`` files with their judges: ``size``
    per exercise (None: every one), compared with the reference on the
    ``recorded`` calls (default: ``calls.record``). ``OUTCOMES`` fills in as they are
    judged. The exercises are sampled side by side (a thread each, up to 4: the work is in
    their children)."""
    from concurrent.futures import ThreadPoolExecutor

    from grader.authoring import calls

    n = size
    OUTCOMES.clear()
    if n == 0 or not slugs:
        return {}
    assert n is None or isinstance(n, int)
    try:
        import mutmut.mutation.mutators  # noqa: F401 - the operators
    except ImportError as e:
        OUTCOMES[""] = Outcome("", note=f"Mutants not graded: {e} (pip install -e '.[dev]')")
        return {}
    if recorded is None or not set(slugs) <= set(recorded):
        recorded = calls.record(slugs)
    with_class = [s for s in slugs if any(f[:1].isupper() for f in catalog.get(s).functions)]
    sessions = record_sessions(with_class) if with_class else {}
    jobs: list[tuple[list[Mutant], dict[str, str], list[str], Replayer, Outcome]] = []
    for slug in slugs:
        OUTCOMES[slug] = outcome = Outcome(slug, size=n)
        mutants = generate(slug)
        outcome.total = len(mutants)
        notes: list[str] = []
        try:
            allow = allowed(slug)
        except ValueError as e:
            allow, notes = {}, [str(e)]
        ids = {m.id for m in mutants}
        notes += [f"{allow_path(slug).name} lets {i} survive, but the reference has no such "
                  "mutant (did its line move?)" for i in allow if i not in ids]
        replay = Replayer(Inputs.of(slug, recorded.get(slug, []), sessions.get(slug)))
        jobs.append((mutants, allow, notes, replay, outcome))

    def sampled(job: tuple) -> list[tuple[Mutant, str]]:
        mutants, allow, _, replay, outcome = job
        try:
            return sample(mutants, n, allow, replay, outcome)
        finally:
            replay.close()

    with ThreadPoolExecutor(max(1, min(4, os.cpu_count() or 1))) as pool:
        chosen = list(pool.map(sampled, jobs))
    out: dict[str, list[Graded]] = {}
    for (_, allow, notes, replay, outcome), picked in zip(jobs, chosen):
        slug = outcome.slug
        outcome.sampled = len(picked)
        notes += [f"{m.description}: mutant {m.id} is equivalent (set aside without an "
                  f"entry), yet {allow_path(slug).name} lists it" for m in outcome.equivalent
                  if m.id in allow]
        out[slug] = [as_graded(m, where, replay, outcome, allow, notes) for m, where in picked]
    return out


def add_to(files: dict[str, list[Graded]], recorded: dict[str, list[Call]] | None = None,
           size: int | None = DEFAULT_SAMPLE) -> None:
    """Add each exercise's sampled mutants (``size`` of them; None: all) to ``files``
    (``files_to_grade``), given the calls its suite makes if they are ``recorded`` already."""
    for slug, found in graded_files(list(files), size, recorded).items():
        files[slug] = [*files[slug], *found]


def summary() -> list[str]:
    """The last run's mutation score of each exercise (killed / non-equivalent graded), on
    one line, then each equivalent mutant set aside (the suite's inputs and random ones like
    them do not tell it from the reference: read them, some are inputs a suite lacks)."""
    done = [o for o in OUTCOMES.values() if o.total]
    notes = [o.note for o in OUTCOMES.values() if o.note]
    if not done:
        return notes
    sizes = {o.size for o in done}
    what = "every mutant" if sizes == {None} else \
        f"a seeded sample of {max(s or 0 for s in sizes)} per exercise"
    scores = ", ".join(f"{o.slug} {o.score}" + (f" ({len(o.allowed)} allowed)" if o.allowed
                                                else "") for o in done)
    equivalent = [m for o in done for m in o.equivalent]
    lines = [f"Mutants killed ({what}; {len(equivalent)} equivalent set aside): {scores}."]
    lines += [f"  equivalent: {m.id} ({m.description})" for m in equivalent]
    return lines
