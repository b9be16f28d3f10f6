"""The learner's rough edges of issue 35, as a learner meets them: the project found from any
folder inside it, one "could not be loaded" for every file the grader cannot use, a failing
test's description in the terminal, "not implemented yet" once per exercise, a source rule
shown as a rule, and a notebook learner told what to install and handed the statements."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from html import unescape
from pathlib import Path

import pytest
from cli_driver import invoke as run
from conftest import csv_rows, reference_source, reference_variant
from markupsafe import escape

from grader import catalog
from grader.state import State

ROOT = Path(__file__).resolve().parents[1]
GRID, CONV = "grid_local_mask", "conv_via_attention"
NOT_IMPLEMENTED = "not implemented yet (the function raises NotImplementedError)"


def _line(output: str, start: str) -> str:
    return next(ln for ln in output.splitlines() if ln.startswith(start))


def _joined(output: str) -> str:
    """The output with its wrapped lines joined: each paragraph on one line of words."""
    return " ".join(output.split())


def _submission(folder: Path, **files: str) -> Path:
    folder.mkdir(parents=True)
    for slug, source in files.items():
        (folder / f"{slug}.py").write_text(source)
    return folder


# -- 1. the project from any folder inside it ------------------------------------------------

def test_list_and_hints_from_a_subfolder_are_the_projects(project, monkeypatch):
    state = State.load()
    state.last_score[GRID] = [3.0, 9.0]
    state.save()
    assert (project / ".grade" / "state.json").is_file()
    monkeypatch.chdir(project / "exercises")
    assert "3/9" in _line(run("list").output, GRID)  # not "-", as if progress were lost
    assert "Hint 1 of" in run("hint", GRID).output
    monkeypatch.chdir(project)
    assert "Hint 2 of" in run("hint", GRID).output
    assert not (project / "exercises" / ".grade").exists()


def test_grading_from_a_subfolder_grades_the_projects_files(project, monkeypatch):
    monkeypatch.chdir(project / "exercises")
    result = run(GRID, "-q")
    assert result.exit_code == 1, result.output
    assert "Report: ../reports/index.html" in result.output
    assert (project / "reports" / "index.html").is_file()
    assert State.load(project / ".grade" / "state.json").last_score[GRID] == [0.0, 9.0]
    assert f"Your file: ../exercises/{GRID}.py" in run("show", GRID).output


def test_a_notebook_in_a_subfolder_shares_the_projects_state(project):
    from grader.notebook import magic

    notebooks = project / "notebooks"
    (notebooks / ".grade").mkdir(parents=True)  # left there by an older grader: not the project's
    (notebooks / ".grade" / "state.json").write_text(json.dumps({"hints_seen": {GRID: 3}}))
    assert "Hint 1 of" in run("hint", GRID).output
    assert "Hint 2 of" in magic.hint(GRID, cwd=notebooks)["text/plain"]  # not 1 of 3 again
    shown = magic.grade_cell(GRID, reference_source(GRID), [], cwd=notebooks)
    assert "Score 9/9" in shown["text/plain"], shown
    state = State.load(project / ".grade" / "state.json")
    assert state.hints_seen[GRID] == 2 and state.last_score[GRID] == [9.0, 9.0]
    assert "9/9" in _line(run("list").output, GRID)


def test_outside_any_project_the_state_stays_where_the_learner_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert "Hint 1 of" in run("hint", GRID).output
    assert (tmp_path / ".grade" / "state.json").is_file()


# -- 2. one "could not be loaded" ------------------------------------------------------------

UNUSABLE = {
    "empty": ("", f"{GRID}.py is empty: it should define the exercise's function {GRID}"),
    "defines_none": ("import numpy as np\n\n\ndef helper(x):\n    return x\n",
                     f"{GRID}.py does not define the exercise's function {GRID}"),
    "syntax_error": ("def grid_local_mask(H_p, W_p:\n    pass\n",
                     f"{GRID}.py has a SyntaxError at line 1"),
}


@pytest.mark.parametrize("case", list(UNUSABLE))
def test_a_file_that_cannot_be_used_is_said_once_as_not_loaded(tmp_path, case):
    source, message = UNUSABLE[case]
    sub = _submission(tmp_path / case, **{GRID: source})
    result = run("--submission", str(sub), GRID, "--report-dir", str(tmp_path / "out"))
    assert result.exit_code == 1, result.output
    out = result.output
    assert _joined(out).count(message) == 1, out
    assert "all 9 tests" in out and "does not define 'grid_local_mask'" not in out
    assert not re.search(rf"^{GRID}\s+error", out, re.MULTILINE), out  # no second line of it
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    exercise = data["exercises"][0]
    assert exercise["status"] == "error" and exercise["message"].startswith(message)
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.count(str(escape(exercise["message"]))) == 1


def test_a_class_report_and_gradebook_say_not_loaded_alike(tmp_path):
    klass = tmp_path / "class"
    for case, (source, _) in UNUSABLE.items():
        _submission(klass / case, **{GRID: source})
    result = run("bulk", str(klass), "--out", str(tmp_path / "out"), "--exercises", GRID,
                 "--workers", "1", "--quiet")
    assert result.exit_code == 0, result.output
    rows = {r[0]: r for r in csv_rows(tmp_path / "out" / "grades.csv")}
    page = (tmp_path / "out" / "index.html").read_text()
    for case, (_, message) in UNUSABLE.items():
        assert rows[case][-1] == f"graded; could not be loaded: {GRID}", rows[case]
        cell = re.search(rf'<a href="[^"]*">{case}</a>.*?<td class="num ([^"]*)"[^>]*'
                         r'title="([^"]*)">([^<]*)</td>', page, re.DOTALL)
        assert cell is not None, case
        assert "err" in cell.group(1).split() and cell.group(3) == "0", cell.group(0)  # "0 !"
        assert unescape(cell.group(2)).startswith(f"0/9 · error: {message}")


def test_a_file_lacking_one_function_of_several_keeps_its_tests_verdicts(grade_src):
    src = reference_source(CONV)
    result = grade_src(CONV, src[:src.index("def rho(")])
    assert result.status == "failed"  # loaded: only rho's tests are stopped
    rho = [t for t in result.tests if t.fault == "missing_name"]
    assert rho and all(t.message == f"{CONV}.py does not define 'rho'" for t in rho)


# -- 3. a failing test's description ---------------------------------------------------------

def test_a_failing_test_shows_its_description_in_the_terminal(tmp_path):
    sub = _submission(tmp_path / "sub", **{GRID: reference_variant(GRID, (
        'raise ValueError(f"radius must be >= 0, got {radius}")', "radius = 0"))})
    out = run("--submission", str(sub), GRID, "--report-dir", str(tmp_path / "out"),
              "--gradescope", "--feedback", "full",
              "--gradescope-out", str(tmp_path / "gradescope.json")).output
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if "invalid_arguments_raise" in ln)
    assert "✗ failed" in lines[at]
    data = json.loads((tmp_path / "out" / "results.json").read_text())
    description = next(t["description"] for t in data["exercises"][0]["tests"]
                       if t["name"] == "invalid_arguments_raise")
    assert description.startswith("Negative radius")
    assert lines[at + 1].strip().startswith("description: Negative radius")  # under its line
    assert "description: " + description in _joined(out)
    # the kind hint that points at the description is beside one the learner can read
    assert "The test's description lists which arguments are invalid" in _joined(out)
    tests = json.loads((tmp_path / "gradescope.json").read_text())["tests"]
    failing = next(t for t in tests if t["name"].endswith("invalid_arguments_raise"))
    assert "Description: " + description in failing["output"]
    assert "The test's description lists" in failing["output"]


# -- 4. "not implemented yet" once per exercise ----------------------------------------------

def test_fresh_stubs_say_not_implemented_once_per_exercise(tmp_path):
    sub = _submission(tmp_path / "fresh", **{s: catalog.get(s).stub.read_text()
                                             for s in (GRID, CONV)})
    result = run("--submission", str(sub), GRID, CONV, "--report-dir", str(tmp_path / "out"))
    assert result.exit_code == 1
    out = result.output
    assert out.count(NOT_IMPLEMENTED) == 2, out
    assert out.count("not implemented yet") == 2  # the rule's "not checked yet" folded in
    assert "all 9 tests" in out and "all 15 tests" in out
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.count(NOT_IMPLEMENTED) == 2


# -- 5. a source rule shown as a rule --------------------------------------------------------

def test_a_source_rule_reads_as_a_rule_kept_or_broken(tmp_path):
    kept = _submission(tmp_path / "kept", **{CONV: reference_source(CONV)})
    out = run("--submission", str(kept), CONV, "--report-dir", str(tmp_path / "a")).output
    line = _line(out, "  · rule")
    assert "rule_no_convolution_routine" in line and "kept" in line and "0/0" not in line
    broken = _submission(tmp_path / "broken", **{
        CONV: reference_source(CONV) + "\n\ndef _spare(x):\n    return np.convolve(x, x)\n"})
    out = run("--submission", str(broken), CONV, "--report-dir", str(tmp_path / "b")).output
    line = _line(out, "  ✗ rule")
    assert "rule_no_convolution_routine" in line and "broken" in line and "0/0" not in line
    assert "✗ failed  rule_" not in out
    assert "rule broken" in (tmp_path / "b" / "index.html").read_text()


# -- 6. notebooks: a front end to install, a release with its statements ---------------------

def test_the_notebook_docs_name_a_front_end_the_extras_offer():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    front = [name for name, deps in extras.items() if any(d.startswith("jupyterlab")
                                                          for d in deps)]
    assert front == ["notebook-ui"]
    guide = (ROOT / "docs" / "learner.md").read_text()
    section = guide[guide.index("## Notebooks"):guide.index("## Commands and options")]
    assert "pip install -e '.[notebook-ui]'" in section and "jupyter lab" in section
    from grader.release.student import NOTEBOOK_README

    assert "'.[notebook-ui]'" in NOTEBOOK_README


def test_a_notebook_release_carries_the_statements(tmp_path):
    (tmp_path / "assignment.toml").write_text(f'title = "Notebooks"\nexercises = ["{GRID}"]\n')
    made = run("release", "--notebooks", "--assignment", str(tmp_path / "assignment.toml"),
               str(tmp_path / "student"))
    assert made.exit_code == 0, made.output
    folder = tmp_path / "student" / "exercises"
    assert sorted(p.name for p in folder.iterdir()) == [f"{GRID}.ipynb", f"{GRID}.md"]
    notebook = (folder / f"{GRID}.ipynb").read_text()
    assert f"Read {GRID}.md" in notebook  # the stub's pointer names a file that is there
    statement = catalog.get(GRID).statement.read_text()
    assert (folder / f"{GRID}.md").read_text() == statement
    shown = subprocess.run([sys.executable, "-m", "grader", "show", GRID],
                           cwd=tmp_path / "student", capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0, shown.stderr
    assert statement.strip() in shown.stdout  # the whole statement, not the summary
