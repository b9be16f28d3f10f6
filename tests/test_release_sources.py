"""A release and a Gradescope bundle are built from the pack, never from the teacher's working
copies: in a copy of this project whose every `exercises/<slug>.py` holds its reference (a
teacher who solved them all), the release ships the pack's stubs and no reference body, and
the bundle holds the assignment's exercises only."""

from __future__ import annotations

import ast
import subprocess
import sys
import zipfile

import pytest
from conftest import copy_of_this_project

from grader import catalog

ASSIGNMENT = """title = "two of them"
exercises = ["grid_local_mask", "attention_rollout"]
"""
CHOSEN = {"grid_local_mask", "attention_rollout"}


def _bodies(source: str) -> set[str]:
    """Each function's body, as an AST dump (names and layout do not hide it)."""
    return {ast.dump(ast.Module(body=node.body, type_ignores=[]))
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef) and not _is_stub(node)}


def _is_stub(node: ast.FunctionDef) -> bool:
    return any(isinstance(n, ast.Raise) for n in node.body)


REFERENCE_BODIES = {b for ex in catalog.load().values() for b in _bodies(ex.solution.read_text())}


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """This project copied (its tracked files), every working copy replaced by the reference,
    then `grade release` and `grade release --gradescope` run from that copy."""
    base = tmp_path_factory.mktemp("solved")
    project = copy_of_this_project(base / "project")
    for ex in catalog.load().values():
        (project / "exercises" / f"{ex.slug}.py").write_bytes(ex.solution.read_bytes())
    (base / "assignment.toml").write_text(ASSIGNMENT)
    for args in ([base / "release"], ["--gradescope", base / "bundle.zip"]):
        done = subprocess.run([sys.executable, "-m", "grader", "release", "--assignment",
                               base / "assignment.toml", *args], cwd=project,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
    return base


def test_the_release_ships_the_packs_stubs(solved):
    shipped = sorted((solved / "release" / "exercises").glob("*.py"))
    assert {p.stem for p in shipped} == CHOSEN
    for path in shipped:
        assert path.read_bytes() == catalog.get(path.stem).stub.read_bytes()


def test_no_reference_body_is_in_the_release(solved):
    found = [(p, b) for p in (solved / "release").rglob("*.py")
             for b in _bodies(p.read_text()) & REFERENCE_BODIES]
    assert not found, found[:3]


def test_the_bundle_holds_the_assignments_exercises_only(solved):
    with zipfile.ZipFile(solved / "bundle.zip") as zf:
        names = set(zf.namelist())
        texts = {n: zf.read(n).decode() for n in names if n.endswith(".py")}
    suites = {n for n in names if n.startswith("grader/suites/test_")}
    assert suites == {f"grader/suites/test_{s}.py" for s in CHOSEN}
    assert {n for n in names if n.startswith("solutions/")} == \
        {f"solutions/{s}{suffix}" for s in CHOSEN for suffix in (".py", ".confirm.json")}
    assert {n for n in names if n.startswith("grader/stubs/") and n.endswith(".py")} == \
        {f"grader/stubs/{s}.py" for s in CHOSEN}
    assert not [n for n in names if n.startswith("exercises/")]  # no working copy
    outside = [n for n, text in texts.items() if not n.startswith("solutions/")
               and _bodies(text) & REFERENCE_BODIES]
    assert not outside, outside
