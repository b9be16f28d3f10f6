"""The exercise pack as a whole: the pack checker's rules hold, and the references, graded as
one submission through the real CLI, score full marks."""

from __future__ import annotations

import json

from click.testing import CliRunner

from grader import catalog
from grader.authoring import check
from grader.cli import main

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


def test_the_graded_rules_hold_for_the_whole_pack(graded_pack):
    """What `grade pack check --grade` checks, on every exercise (tests/test_pack_authoring.py
    runs the command itself): the references score full marks, every declared known mistake
    (solutions/<slug>.variants.toml) is named on its tests with nothing beside it, every
    uncatalogued variant names no cause and fails with its declared kinds, trivial answers
    score nothing, each function's probes tell its mistakes apart, no grader error."""
    from grader.authoring import graded
    from grader.authoring.separation import separation_problems

    assert len(graded_pack) > 150
    problems = graded.judge(graded_pack) + [p for ex in EXERCISES
                                            for p in separation_problems(ex.slug)]
    assert [str(p) for p in problems] == []



def test_the_authoring_guide_lists_every_rule_under_its_id():
    import re

    from grader.authoring import graded

    text = (catalog.PROJECT_DIR / "docs" / "AUTHORING.md").read_text()
    listed = re.findall(r"^\| `([a-z-]+)`(?: \(`--grade`\))? \|", text, flags=re.M)
    assert sorted(listed) == sorted([r.id for r in check.RULES] + ["index-order"]
                                    + list(graded.GRADED_RULES))


def test_the_suites_declarations_never_import_the_engine():
    """grader/suite.py and the hidden suites declare; the engine reads them (one direction:
    what a suite needs of the engine, the engine installs when it loads)."""
    import subprocess
    import sys

    code = ("import importlib, sys, grader.suite\n"
            f"for slug in {list(catalog.load())!r}:\n"
            "    importlib.import_module('grader.suites.test_' + slug)\n"
            "print(sorted(m for m in sys.modules if m.startswith('grader.engine')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stdout.strip() == "[]"
