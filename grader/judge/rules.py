"""Source rules: what an exercise's solution may not use, read from the learner's source.

The learner's file is read as text (capped) and parsed with ``ast`` in the grading process;
it is never imported or run here. A rule names dotted-name patterns it forbids
(``numpy.convolve``, ``torch.nn.functional.conv*``, ``numpy.fft`` and everything under it),
optionally the only top-level modules that may be imported, and patterns for imported names
(``*rollout*``). Names are resolved through the file's imports (``import numpy as np`` makes
``np.fft.fft`` read ``numpy.fft.fft``; ``from scipy.signal import convolve2d as c`` makes
``c`` read ``scipy.signal.convolve2d``), ``getattr(x, "name")`` with a constant name counts
as ``x.name``, and code a reader cannot follow (``eval``, ``exec``, an import by a computed
name) breaks every rule.

Suites declare rules with ``grader.suite.source_rule``; a broken rule is a failed test worth 0
points, and a kept one earns nothing either: a reader is easily fooled (``getattr(np, "f" +
"ft")``), so a rule guards against accidents, not cheating.

The source is the learner's, read in the grading process, so reading it is bounded: the tree
is walked iteratively (no recursion per level: 900 chained conditionals are read like one), a
dotted name is matched on its first ``MAX_NAME_PARTS`` parts, and a file Python's parser cannot
hold (nested too deeply) is the rule test's own error, never the grader's.
"""

from __future__ import annotations

import ast
import fnmatch
from dataclasses import dataclass
from pathlib import Path

from grader.sandbox import faults
from grader.sandbox.harness.source_text import NotSourceText, parse, source_text
from grader.suite import GradeFailure
from grader.suite import SourceRule as Rule

MAX_SOURCE_BYTES = 1_000_000
MAX_NAME_PARTS = 64  # parts of a dotted name matched against a rule (``a.b.c``: 3)
_DYNAMIC = {"eval": "eval", "exec": "exec", "compile": "compile", "__import__": "__import__"}


@dataclass(frozen=True)
class Violation:
    line: int
    what: str       # e.g. "uses numpy.convolve"


@dataclass(frozen=True)
class LearnerSource:
    """The learner's file as text (``text`` is None when it could not be read: ``error``)."""

    name: str
    text: str | None
    error: str = ""


def read_source(path: Path) -> LearnerSource:
    """Read the learner's file as text by the worker's rule (``source_text``: UTF-8, a BOM
    dropped), at most ``MAX_SOURCE_BYTES``."""
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_SOURCE_BYTES + 1)
    except OSError as exc:
        return LearnerSource(path.name, None, f"{path.name} could not be read: {exc.strerror}")
    if len(data) > MAX_SOURCE_BYTES:
        return LearnerSource(path.name, None, f"{path.name} is larger than "
                             f"{MAX_SOURCE_BYTES // 1_000_000} MB")
    try:
        return LearnerSource(path.name, source_text(data))
    except NotSourceText as exc:
        return LearnerSource(path.name, None, f"{path.name} {exc}")


def _matches(name: str, patterns: tuple[str, ...]) -> str | None:
    """The pattern that ``name`` or one of its prefixes matches (``a.b`` covers ``a.b.c``);
    only prefixes of at most ``MAX_NAME_PARTS`` parts are tried."""
    parts = name.split(".", MAX_NAME_PARTS)[:MAX_NAME_PARTS]
    for pattern in patterns:
        for i in range(1, len(parts) + 1):
            if fnmatch.fnmatchcase(".".join(parts[:i]), pattern):
                return pattern
    return None


class _Reader:
    """Reads a tree for one rule: ``read`` walks it iteratively, in the order of a recursive
    ``ast.NodeVisitor`` (each node, then its children in field order)."""

    def __init__(self, rule: Rule) -> None:
        self.rule = rule
        self.aliases: dict[str, str] = {}
        self.found: dict[Violation, None] = {}  # in the order found, without repeats
        self._unresolved: set[int] = set()  # ids of nodes whose dotted name is None

    def read(self, tree: ast.AST) -> None:
        stack = [tree]
        while stack:
            node = stack.pop()
            if self._visit(node):
                stack.extend(reversed(list(ast.iter_child_nodes(node))))

    def _visit(self, node: ast.AST) -> bool:
        """Read one node; whether its children are read too."""
        if isinstance(node, ast.Import):
            self._import(node)
            return False
        if isinstance(node, ast.ImportFrom):
            self._import_from(node)
            return False
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load) and node.id in self.aliases:
                self._check_name(node, self.aliases[node.id])
            return False
        if isinstance(node, ast.Call):
            self._call(node)
        return True

    def _add(self, node: ast.AST, what: str) -> None:
        self.found.setdefault(Violation(getattr(node, "lineno", 0), what))

    def _check_name(self, node: ast.AST, dotted: str) -> None:
        if _matches(dotted, self.rule.forbid):
            self._add(node, f"uses {_shown(dotted)}")

    def _imported(self, node: ast.AST, module: str, names: list[str]) -> None:
        top = module.split(".", 1)[0]
        allowed = self.rule.allow_imports
        if allowed is not None and top not in allowed:
            self._add(node, f"imports {_shown(module)}")
        for n in names:
            if _matches(n, self.rule.forbid_imported):
                self._add(node, f"imports {_shown(n)} from {_shown(module)}")

    # -- imports ------------------------------------------------------------------------------
    def _import(self, node: ast.Import) -> None:
        for a in node.names:
            top = a.name.split(".", 1)[0]
            self.aliases[a.asname or top] = a.name if a.asname else top
            self._imported(node, a.name, [a.asname] if a.asname else [])
            self._check_name(node, a.name)

    def _import_from(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        self._imported(node, module, [n for a in node.names for n in (a.name, a.asname) if n])
        for a in node.names:
            if a.name == "*":
                self._check_name(node, module)
                continue
            full = f"{module}.{a.name}"
            self.aliases[a.asname or a.name] = full
            self._check_name(node, full)

    # -- references ---------------------------------------------------------------------------
    def _dotted(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` reads (``np.fft.fft``: ``numpy.fft.fft``), or None; a loop
        down the chain of attributes and constant ``getattr`` calls, never a recursion. When
        it is None, so is every link of the chain below ``node`` (remembered: a long chain is
        followed once, not once per link)."""
        parts: list[str] = []
        chain: list[int] = []
        while True:
            if id(node) in self._unresolved:
                base = None
                break
            if isinstance(node, ast.Name):
                base = self.aliases.get(node.id, node.id)
                break
            if isinstance(node, ast.Attribute):
                parts.append(node.attr)
                chain.append(id(node))
                node = node.value
                continue
            if (read := _constant_getattr(node)) is not None:
                parts.append(read[1])
                chain.append(id(node))
                node = read[0]
                continue
            base = None
            break
        if base is None:
            self._unresolved.update(chain)
            return None
        return ".".join([base, *reversed(parts)])

    def _attribute(self, node: ast.Attribute) -> bool:
        dotted = self._dotted(node)
        if dotted is not None:
            self._check_name(node, dotted)
            return False
        return True

    def _call(self, node: ast.Call) -> None:
        func = node.func
        name = self._dotted(func) if isinstance(func, (ast.Name, ast.Attribute)) else None
        first = node.args[0] if node.args else None
        constant = first.value if isinstance(first, ast.Constant) and \
            isinstance(first.value, str) else None
        if isinstance(func, ast.Name) and func.id in _DYNAMIC and func.id not in self.aliases:
            if func.id == "__import__" and constant is not None:
                self._imported(node, constant, [])
                self._check_name(node, constant)
            else:
                self._add(node, f"calls {func.id}, which hides what the code uses")
        elif name == "importlib.import_module":
            if constant is not None:
                self._imported(node, constant, [])
                self._check_name(node, constant)
            else:
                self._add(node, "imports a module by a computed name")
        elif isinstance(func, ast.Name) and func.id == "getattr" and len(node.args) >= 2:
            dotted = self._dotted(node)
            if dotted is not None:
                self._check_name(node, dotted)


def _shown(dotted: str, width: int = 120) -> str:
    """A dotted name as a message shows it: at most ``width`` characters."""
    return dotted if len(dotted) <= width else dotted[:width - 3] + "..."


def _constant_getattr(node: ast.AST) -> tuple[ast.expr, str] | None:
    """``(x, "name")`` for ``getattr(x, "name")``, which reads as ``x.name``; else None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id == "getattr" and len(node.args) >= 2 and \
            isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return node.args[0], node.args[1].value
    return None


def violations(text: str, rule: Rule) -> list[Violation]:
    """What ``text`` (a Python source) does that ``rule`` forbids, in source order.

    Raises ``SyntaxError`` when the source does not parse, ``NotSourceText`` when Python's
    parser cannot hold it (nested too deeply).
    """
    tree = parse(text)
    reader = _Reader(rule)
    # imports anywhere (also inside functions) define names before they are used
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            reader.read(node)
    reader.found.clear()
    reader.read(tree)
    return sorted(reader.found, key=lambda v: v.line)


def unimplemented(text: str, functions: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(functions still a stub: a body that only raises NotImplementedError, functions not
    defined at the top level). Raises as ``violations`` does."""
    tree = parse(text)
    defs = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef,
                                                          ast.AsyncFunctionDef))}
    stubs, missing = [], []
    for name in functions:
        node = defs.get(name)
        if node is None:
            missing.append(name)
            continue
        body = [s for s in node.body if not (isinstance(s, ast.Expr) and
                                             isinstance(s.value, ast.Constant))]
        if len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None:
            exc = body[0].exc.func if isinstance(body[0].exc, ast.Call) else body[0].exc
            if isinstance(exc, ast.Name) and exc.id == "NotImplementedError":
                stubs.append(name)
    return stubs, missing


def enforce(source: LearnerSource, rule: Rule) -> None:
    """Raise unless the learner's source keeps ``rule``.

    A stub (every function of the rule still raises NotImplementedError) is "not implemented
    yet"; an unreadable or unparsable file (one nested too deeply for Python's parser too) is
    an error; a broken rule is a ``GradeFailure`` of kind ``"rule"`` whose message names each
    offending line. Whatever the file holds, the reading itself raises nothing else.
    """
    if source.text is None:
        raise faults.ImportFailed(f"the source rule could not be checked: {source.error}")
    try:
        stubs, missing = unimplemented(source.text, rule.functions)
        found = violations(source.text, rule)
    except SyntaxError as exc:
        raise faults.ImportFailed(f"the source rule could not be checked: {source.name} does "
                                  f"not parse (SyntaxError at line {exc.lineno}: "
                                  f"{exc.msg})") from None
    except NotSourceText as exc:
        raise faults.ImportFailed(f"the source rule could not be checked: {source.name} "
                                  f"{exc}") from None
    except (RecursionError, MemoryError) as exc:  # not expected of an iterative walk
        raise faults.ImportFailed(f"the source rule could not be checked: {source.name} is "
                                  f"too large to read ({type(exc).__name__})") from None
    if missing:
        raise faults.MissingName(f"{source.name} does not define '{missing[0]}'")
    if stubs and len(stubs) == len(rule.functions):
        raise faults.NotImplementedYet(f"not implemented yet: {', '.join(stubs)} still "
                                       f"raises NotImplementedError (the rule is checked once "
                                       f"it is written)")
    if found:
        from grader.notebook.lines import where  # a notebook's line: "cell 4, line 7"

        shown = "; ".join(f"{where(source.text, v.line)} {v.what}" for v in found[:5])
        more = f" (and {len(found) - 5} more)" if len(found) > 5 else ""
        raise GradeFailure(f"{rule.statement} Your file breaks the rule: {shown}{more}.",
                           kind="rule")
