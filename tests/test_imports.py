"""No import cycle between the grader's modules, hidden ones included.

The graph is built statically with ``ast`` from every module under ``grader/``: imports at
module level and inside functions alike (a function-level import hides a cycle, it does not
remove it), relative imports resolved. An import under ``if TYPE_CHECKING:`` is left out: it
never runs. ``import a.b`` and ``from a import b`` point at the module ``a.b`` when it is one,
else at ``a``; a package's ``__init__`` run on the way is not an edge (no ``__init__`` under
``grader/`` imports a module of the grader's).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "grader"

# Cycles not removed yet: the sorted modules of each strongly connected component -> why it is
# still there. The test fails when one is gone or changes: remove or update its entry then.
ALLOWED: dict[tuple[str, ...], str] = {}


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(root: Path = ROOT, package: str = PACKAGE) -> dict[str, Path]:
    """Every module of ``package`` (under ``root``) -> its file."""
    return {_module_name(p, root): p for p in sorted((root / package).rglob("*.py"))
            if "__pycache__" not in p.parts}


def _type_checking(node: ast.AST) -> bool:
    """An ``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``) block."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(node: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement under ``node``, at any depth, but those only type checkers
    run (an ``if TYPE_CHECKING:`` block's; its ``else:`` runs)."""
    found: list[ast.Import | ast.ImportFrom] = []
    todo = [node]
    while todo:
        current = todo.pop()
        if isinstance(current, (ast.Import, ast.ImportFrom)):
            found.append(current)
        if _type_checking(current):
            todo.extend(current.orelse)  # type: ignore[attr-defined]
        else:
            todo.extend(ast.iter_child_nodes(current))
    return found


def _resolve(name: str, known: dict[str, Path]) -> str | None:
    """The module ``name`` is, or the closest package holding it; None outside ``known``."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def edges(name: str, source: str, known: dict[str, Path], is_package: bool = False) -> set[str]:
    """The modules of ``known`` that module ``name`` (its ``source``) imports, anywhere."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in _imports(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base
                       for alias in node.names]
        resolved = (_resolve(target, known) for target in targets)
        found |= {target for target in resolved if target is not None and target != name}
    return found


def import_graph(root: Path = ROOT, package: str = PACKAGE) -> dict[str, set[str]]:
    """Module -> the modules of ``package`` it imports (anywhere in it)."""
    known = modules(root, package)
    return {name: edges(name, path.read_text(encoding="utf-8"), known,
                        path.name == "__init__.py") for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> dict[tuple[str, ...], list[str]]:
    """Each strongly connected component of more than one module (Tarjan's, iterative), its
    modules sorted, -> one cycle through it: a path from its first module back to it."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: dict[tuple[str, ...], list[str]] = {}
    for root in sorted(graph):
        if root in index:
            continue
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        work = [(root, iter(sorted(graph[root])))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while not component or component[-1] != node:
                    component.append(stack.pop())
                    on_stack.discard(component[-1])
                if len(component) > 1:
                    members = tuple(sorted(component))
                    found[members] = _path_through(members, graph)
    return found


def _path_through(members: tuple[str, ...], graph: dict[str, set[str]]) -> list[str]:
    """A shortest cycle from ``members[0]`` back to itself inside the component."""
    inside, start = set(members), members[0]
    came: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & inside):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(came[path[-1]])
                    return [*reversed(path), start]
                if child not in came:
                    came[child] = node
                    following.append(child)
        frontier = following
    return list(members)


def test_edges_take_every_import_but_type_checking_ones():
    known = {name: Path() for name in ("g", "g.a", "g.b", "g.b.c", "g.d", "g.e", "g.f")}
    source = ("import os\nimport g.a\nfrom typing import TYPE_CHECKING\n"
              "if TYPE_CHECKING:\n    from g import e\nelse:\n    from g import f\n"
              "def later():\n    from .c import thing\n    from .. import d\n")
    assert edges("g.b.x", source, {**known, "g.b.x": Path()}) == \
        {"g.a", "g.b.c", "g.d", "g.f"}
    # a name imported from a module is that module; a package's relative imports start in it
    assert edges("g.b", "from .c import thing\nfrom g.a import name\n", known,
                 is_package=True) == {"g.b.c", "g.a"}


def test_the_graph_of_the_grader_sees_hidden_imports():
    graph = import_graph()
    assert "grader.bulk.cluster_worker" in graph["grader.bulk.cluster"]  # in a function
    assert "grader.bulk.pipeline" in graph["grader.commands.bulk"]  # in a function
    assert "grader.engine.runner" in graph["grader.bulk.serve"]


def test_cycle_finder_finds_each_cycle_once():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"f"}, "f": set()}
    assert cycles(graph) == {("a", "b", "c"): ["a", "b", "c", "a"]}
    assert cycles({"a": {"b"}, "b": set()}) == {}
    assert cycles({"a": {"b"}, "b": {"a", "c"}, "c": {"b"}}) == \
        {("a", "b", "c"): ["a", "b", "a"]}


def test_no_import_cycle_under_grader():
    found = cycles(import_graph())
    new = {key: path for key, path in found.items() if key not in ALLOWED}
    assert not new, "import cycles (each module imports the next):\n" + "\n".join(
        " -> ".join(path) for path in new.values())
    gone = [key for key in ALLOWED if key not in found]
    assert not gone, f"these cycles are gone, or changed: update ALLOWED: {gone}"


@pytest.mark.parametrize("key", sorted(ALLOWED))
def test_each_allowed_cycle_says_why(key):
    assert ALLOWED[key].strip()
