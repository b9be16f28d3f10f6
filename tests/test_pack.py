"""The exercise pack as a whole: the pack checker's rules hold, and the references, graded as
one submission through the real CLI, score full marks."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from grader import catalog
from grader.authoring import check
from grader.cli import main
from grader.suite import mistakes_in

EXERCISES = list(catalog.load().values())


def test_the_pack_checker_finds_no_problem():
    """Every static rule of `grade pack check` (docs/AUTHORING.md), over the whole pack."""
    problems, count = check.check()
    assert count == len(EXERCISES)
    assert [str(p) for p in problems] == []


def test_references_score_full_marks_through_the_cli(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["--submission", str(catalog.SOLUTIONS_DIR), "-q",
                                       "--report-dir", str(tmp_path / "report"),
                                       "--device", "cpu"])
    data = json.loads((tmp_path / "report" / "results.json").read_text())
    failing = [(e["exercise"], t["name"], t["message"]) for e in data["exercises"]
               for t in e["tests"] if t["status"] != "passed"]
    assert failing == []
    assert result.exit_code == 0
    for e in data["exercises"]:
        assert e["status"] == "passed"
        assert e["score"] == e["max_score"] == catalog.get(e["exercise"]).points


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.slug)
def test_every_known_mistake_is_triggered_by_a_project_test(ex):
    """Each @mistake's name must be what a test in tests/test_exercise_<slug>.py asserts a
    verdict's ``.mistake`` equals: the name, a string in a test function (or its parametrize
    rows, or a module-level table those rows name) that compares ``.mistake`` to something."""
    import ast
    import importlib
    from pathlib import Path

    module = importlib.import_module(f"grader.suites.test_{ex.slug}")
    tests_file = Path(__file__).with_name(f"test_exercise_{ex.slug}.py")
    assert tests_file.is_file()
    tree = ast.parse(tests_file.read_text())
    tables = {t.id: node.value for node in tree.body if isinstance(node, ast.Assign)
              for t in node.targets if isinstance(t, ast.Name)}

    def strings(node: ast.AST) -> set[str]:
        return {n.value for n in ast.walk(node) if isinstance(n, ast.Constant)
                and isinstance(n.value, str)}

    asserted: set[str] = set()
    for fn in tree.body:
        if not isinstance(fn, ast.FunctionDef) or not any(
                isinstance(a, ast.Attribute) and a.attr == "mistake"
                for c in ast.walk(fn) if isinstance(c, ast.Compare) for a in ast.walk(c)):
            continue
        asserted |= strings(fn)
        for d in fn.decorator_list:
            asserted |= set().union(*(strings(tables[n.id]) for n in ast.walk(d)
                                      if isinstance(n, ast.Name) and n.id in tables))
    untested = [m.name for m in mistakes_in(vars(module)) if m.name not in asserted]
    assert untested == []
