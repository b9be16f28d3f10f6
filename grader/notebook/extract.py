"""A notebook's definitions as the text of a learner file, with a line map back to its cells.

The rule (what is graded): the code cells in notebook order; in each, the top-level
statements that define something, each kept whole with its decorators:

- ``import`` and ``from ... import``;
- ``def``, ``async def`` and ``class``;
- an assignment (``=`` or annotated) of a constant to plain names: the value is built only
  from literals, names, attribute reads (``np.float32``), containers, unary and binary
  operators (``EPS = 1e-6``, ``SIZES = (8, 16)``, ``SCALE = 1 / 64``): no call, subscript,
  comprehension or lambda;
- a ``try`` whose every statement is one of these (``try: import torch except ImportError:``).

``from __future__`` imports are moved to the top of the generated file (Python wants them
first); everything else keeps the cells' order.

A string on its own (a docstring) is dropped silently. Everything else at top level is an
experiment (a training loop, a plot, a print, a call, an
assignment of a computed value) and is left out, as are IPython magics and shell lines
(``%...``, ``!...``, ``x = !ls``) and cells under a cell magic other than ``%%grade``; the
``%%grade SLUG`` line itself is dropped and the rest of that cell is read as any cell.
``note`` says what was left out, in one line. Nothing is executed: JSON is read with
``nbformat`` (nbformat 4, any minor version) and each cell with ``ast.parse``.

Cells are numbered by their position in the notebook, from 1, markdown cells included (what
you count scrolling the notebook). A ``NotebookError`` (one sentence completing "<name> ...")
is raised for a notebook that is not JSON, not nbformat 4, has no code cell, or has a cell that
does not parse; it is the only exception ``from_notebook`` and ``from_cells`` raise. The
notebook's content is the learner's: its JSON nesting is bounded on the raw text before it is
decoded (``bounded.MAX_DEPTH``), a cell Python's parser cannot hold (nested too deeply:
``RecursionError``, ``MemoryError``) is a cell that does not parse, and any other failure
reading it is a ``NotebookError`` naming the exception's type.
"""

from __future__ import annotations

import ast
import re
import warnings
from dataclasses import dataclass, field

from grader.sandbox.harness.source_text import NotSourceText, parse, source_text

from . import bounded, lines

_MAGIC = re.compile(r"^(\s*)(?:[%!]|[A-Za-z_][\w, ]*=\s*[%!])")
_CELL_MAGIC = re.compile(r"^\s*%%(\w+)")
_SIMPLE = (ast.Constant, ast.Name, ast.Attribute, ast.Tuple, ast.List, ast.Set, ast.Dict,
           ast.UnaryOp, ast.BinOp, ast.expr_context, ast.operator, ast.unaryop)
_PER_CELL = 3


class NotebookError(ValueError):
    """The notebook cannot be graded; ``str(exc)`` completes "<name> ...", one sentence."""


@dataclass
class Extraction:
    """The generated learner file's text (header included), its line map and the note."""

    text: str
    line_map: dict[int, tuple[str, int]] = field(default_factory=dict)
    note: str = ""


def from_notebook(content: bytes, name: str) -> Extraction:
    """The definitions of the notebook ``content`` (file name ``name``); raises
    ``NotebookError`` (and nothing else)."""
    cells = read_cells(content)
    return from_cells([(f"cell {n}", src) for n, src in cells], name)


def read_cells(content: bytes) -> list[tuple[int, str]]:
    """``(position from 1, source)`` of each code cell; raises ``NotebookError`` (and nothing
    else)."""
    try:
        return _read_cells(content)
    except NotebookError:
        raise
    except Exception as exc:  # noqa: BLE001 - the learner's file: whatever it makes fail
        raise NotebookError(f"is not a readable notebook ({type(exc).__name__})") from None


def _read_cells(content: bytes) -> list[tuple[int, str]]:
    try:
        text = source_text(content)
    except NotSourceText as exc:
        raise NotebookError(str(exc)) from None
    try:
        raw = bounded.loads(text)
    except bounded.TooDeep as exc:
        raise NotebookError(f"is not a readable notebook: {exc}") from None
    except ValueError as exc:
        raise NotebookError(f"is not a notebook: it is not JSON ({exc})") from None
    if not isinstance(raw, dict) or "cells" not in raw and "worksheets" not in raw:
        raise NotebookError("is not a notebook: its JSON has no cells")
    major = raw.get("nbformat")
    if major != 4:
        raise NotebookError(f"is an nbformat {major} notebook, but only nbformat 4 is read "
                            "(open and save it in a current Jupyter)")
    import nbformat

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    except Exception as exc:  # noqa: BLE001 - nbformat's errors vary by version
        raise NotebookError(f"is not a readable notebook ({type(exc).__name__})") from None
    cells = [(n, _joined(c.get("source", ""))) for n, c in enumerate(nb.get("cells", []), 1)
             if isinstance(c, dict) and c.get("cell_type") == "code"]
    if not cells:
        raise NotebookError("has no code cells")
    return cells


def from_cells(cells: list[tuple[str, str]], name: str) -> Extraction:
    """The definitions of ``cells`` (``(label, source)``, in order); ``name`` is the file the
    header and the note name. Raises ``NotebookError`` (and nothing else) for a cell that
    does not parse or cannot be read."""
    future: list[tuple[str, int, str]] = []
    rest: list[tuple[str, int, str]] = []
    left: list[str] = []
    for label, source in cells:
        try:
            kept, dropped = _cell(label, source)
        except NotebookError:
            raise
        except Exception as exc:  # noqa: BLE001 - the learner's cell: whatever it makes fail
            raise NotebookError(f"has a {label} that could not be read "
                                f"({type(exc).__name__})") from None
        for first_line, segment in kept:
            # ``from __future__`` must come first in a module: such imports are moved up
            into = future if segment.startswith("from __future__ ") else rest
            into.extend((label, first_line + i, text)
                        for i, text in enumerate(segment.splitlines()))
        if dropped:
            shown = dropped[:_PER_CELL] + (["..."] if len(dropped) > _PER_CELL else [])
            left.append(f"{label} ({', '.join(shown)})")
    body: list[str] = []
    line_map: dict[int, tuple[str, int]] = {}
    for label, line, text in future + rest:
        body.append(text)
        line_map[len(body)] = (label, line)
    note = (f"{name}: left out (not run when grading) {'; '.join(left)}" if left else "")
    shifted = {g + lines.HEADER_LINES: where for g, where in line_map.items()}
    header = lines.header(name, note, shifted)
    return Extraction("\n".join(header + body) + "\n", shifted, note)


def _cell(label: str, source: str) -> tuple[list[tuple[int, str]], list[str]]:
    """The kept ``(first line, text)`` segments of one cell and what was left out of it."""
    src_lines = source.splitlines()
    dropped: list[str] = []
    first = next((i for i, s in enumerate(src_lines) if s.strip()), None)
    if first is not None and (m := _CELL_MAGIC.match(src_lines[first])):
        if m.group(1) != "grade":
            return [], [f"a %%{m.group(1)} cell"]
        src_lines[first] = ""
    code = "\n".join(src_lines)
    if not _parses(code):  # magics make a cell unparsable: only then are lines replaced
        for i, text in enumerate(src_lines):
            if (m := _MAGIC.match(text)) is not None:
                stripped = text.strip()
                dropped.append(_short(stripped.split()[0]) if stripped[0] in "%!"
                               else "a magic assignment")
                src_lines[i] = m.group(1) + "pass"  # keeps the lines and the block around
        code = "\n".join(src_lines)
    try:
        tree = parse(code)
    except SyntaxError as exc:
        raise NotebookError(f"has a {label} that does not parse: {exc.msg} (line "
                            f"{exc.lineno})") from None
    except NotSourceText as exc:
        raise NotebookError(f"has a {label} that does not parse: it {exc}") from None
    kept: list[tuple[int, str]] = []
    body = tree.body
    for node in body:
        if isinstance(node, ast.Pass) or _is_docstring(node):
            continue  # no experiment: nothing to report
        if not _defines(node):
            dropped.append(_describe(node))
            continue
        start = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        end = node.end_lineno or node.lineno
        shares = any(other.lineno <= end and (other.end_lineno or other.lineno) >= start
                     for other in body if other is not node)
        segment = ast.get_source_segment(code, node) if shares else None
        kept.append((start, segment or "\n".join(src_lines[start - 1:end])))
    return kept, list(dict.fromkeys(dropped))


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(
        node.value.value, str)


def _parses(code: str) -> bool:
    try:
        parse(code)
    except (SyntaxError, NotSourceText):
        return False
    return True


def _defines(node: ast.stmt) -> bool:
    if isinstance(node, (ast.Import, ast.ImportFrom, ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
        return True
    if isinstance(node, ast.Assign):
        return all(_plain_target(t) for t in node.targets) and _constant(node.value)
    if isinstance(node, ast.AnnAssign):
        return isinstance(node.target, ast.Name) and (node.value is None
                                                      or _constant(node.value))
    if isinstance(node, ast.Try):
        inner = node.body + node.orelse + node.finalbody + [
            s for h in node.handlers for s in h.body]
        return all(isinstance(s, ast.Pass) or _defines(s) for s in inner)
    return False


def _plain_target(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and all(
        isinstance(e, ast.Name) for e in target.elts)


def _constant(value: ast.expr) -> bool:
    return all(isinstance(n, _SIMPLE) for n in ast.walk(value))


def _describe(node: ast.stmt) -> str:
    """A few words on a left-out statement ("a for loop", "a call to plt.plot")."""
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return "a for loop"
    if isinstance(node, ast.While):
        return "a while loop"
    if isinstance(node, ast.If):
        return "an if block"
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return "a with block"
    if isinstance(node, ast.Try):
        return "a try block"
    if isinstance(node, ast.Expr):
        if isinstance(node.value, ast.Call):
            return f"a call to {_short(_unparsed(node.value.func))}"
        return "an expression"
    if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return f"{_short(', '.join(_unparsed(t) for t in targets))} = ... (not a constant)"
    return f"a {type(node).__name__.lower()} statement"


def _unparsed(node: ast.AST) -> str:
    """``ast.unparse(node)``, or "..." for an expression nested too deeply for it (it
    recurses once per level)."""
    try:
        return ast.unparse(node)
    except RecursionError:
        return "..."


def _short(text: str, width: int = 30) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[:width - 3] + "..."


def _joined(source: object) -> str:
    return "".join(source) if isinstance(source, list) else str(source)
