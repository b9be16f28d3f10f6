"""The exercise pack as a whole: every index entry is complete, and the references, graded
as one submission through the real CLI, score full marks."""

from __future__ import annotations

import ast
import json

import pytest
from click.testing import CliRunner

from grader import catalog
from grader.cli import main
from grader.suite import mistakes_in

EXERCISES = list(catalog.load().values())


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.slug)
def test_index_entry_is_complete(ex):
    assert ex.title and ex.summary and ex.difficulty in ("easy", "medium", "hard")
    assert len(ex.hints) >= 3, "at least three progressive hints"
    assert {"numpy", "torch"} >= set(ex.tags) and ex.tags
    for path in (ex.stub, ex.statement, ex.solution, ex.suite):
        assert path.is_file(), path
    assert "## The interview question" in ex.statement.read_text()


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.slug)
def test_stub_functions_are_not_implemented(ex):
    tree = ast.parse(ex.stub.read_text())
    defs = {n.name: n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    for name in ex.functions:
        assert name in defs, f"{ex.stub.name} does not define {name}"
        assert ast.get_docstring(defs[name]), f"{name} has no docstring stating its contract"
    assert "NotImplementedError" in ex.stub.read_text()


@pytest.mark.parametrize("ex", EXERCISES, ids=lambda e: e.slug)
def test_suite_has_known_mistakes_and_graded_tests(ex):
    import importlib

    module = importlib.import_module(f"grader.suites.test_{ex.slug}")
    mistakes = mistakes_in(vars(module))
    assert len(mistakes) >= 2, "at least two known mistakes per exercise"
    assert all(m.message for m in mistakes)
    assert len({m.name for m in mistakes}) == len(mistakes)
    tests = [v for k, v in vars(module).items() if k.startswith("test_")]
    assert tests and all(any(m.name == "grading" for m in getattr(t, "pytestmark", []))
                         for t in tests), "every test is @graded"


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
    """Each @mistake's name must be asserted in tests/test_exercise_<slug>.py."""
    import importlib
    from pathlib import Path

    module = importlib.import_module(f"grader.suites.test_{ex.slug}")
    tests_file = Path(__file__).with_name(f"test_exercise_{ex.slug}.py")
    assert tests_file.is_file()
    text = tests_file.read_text()
    untested = [m.name for m in mistakes_in(vars(module)) if f'"{m.name}"' not in text]
    assert untested == []
