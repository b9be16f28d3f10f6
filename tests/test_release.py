"""What a teacher hands out, through the real commands: a student release installed in a
fresh venv grades offline with the public tests and holds no answer; the Gradescope bundle's
run_autograder, laid out as /autograder in a temporary root, writes Gradescope's results."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from conftest import edit_source

from grader import catalog
from grader.engine.runner import grade
from grader.judge.observer import Observer

GRADE = str(Path(sys.executable).with_name("grade"))
EXERCISES = ["grid_local_mask", "shift_equivariance"]
ASSIGNMENT = f"""title = "Week 3: locality and symmetry"
exercises = {json.dumps(EXERCISES)}
due = 2026-12-15T23:59:00Z

[points]
grid_local_mask = 10
"""
WRONG = {"grid_local_mask": ("return mask", "return ~mask")}  # the inverted convention


def _run(*args: str, cwd: Path | None = None, env: dict | None = None,
         timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), capture_output=True, text=True, cwd=cwd, timeout=timeout,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    base = tmp_path_factory.mktemp("release")
    (base / "assignment.toml").write_text(ASSIGNMENT)
    student = _run(GRADE, "release", "--assignment", str(base / "assignment.toml"),
                   str(base / "student"))
    assert student.returncode == 0, student.stderr
    bundle = _run(GRADE, "release", "--gradescope", "--assignment",
                  str(base / "assignment.toml"), str(base / "autograder.zip"))
    assert bundle.returncode == 0, bundle.stderr
    return {"base": base, "student": base / "student", "zip": base / "autograder.zip",
            "said": student.stdout}


def test_the_release_holds_the_assignment_and_no_answer_file(made):
    rel = made["student"]
    names = {p.relative_to(rel).as_posix() for p in rel.rglob("*") if p.is_file()}
    assert {f"exercises/{s}{x}" for s in EXERCISES for x in (".py", ".md")} <= names
    assert {"README.md", "assignment.toml", "pyproject.toml", "dev"} <= names
    assert not [n for n in names if n.startswith("solutions/")]
    suites = sorted(n for n in names if n.startswith("grader/suites/test_"))
    assert suites == [f"grader/suites/test_{s}.py" for s in sorted(EXERCISES)]
    for suite in suites:  # generated: two lines that replay recorded public tests
        assert "public_tests(__file__)" in (rel / suite).read_text()
    assert "hidden tests" in (rel / "README.md").read_text()
    assert "public tests shipped" in made["said"]


def _bodies(source: str) -> set[str]:
    """The AST of every function body in ``source`` with three statements or more."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(node.body) >= 3:
            found.add(ast.dump(ast.Module(body=node.body, type_ignores=[])))
    return found


def test_no_reference_function_body_is_in_the_release(made):
    references = set()
    for ex in catalog.load().values():
        references |= _bodies(ex.solution.read_text())
    assert len(references) > 20
    for path in made["student"].rglob("*.py"):
        assert not _bodies(path.read_text()) & references, path


def _values(slugs: list[str]) -> dict[str, list[np.ndarray]]:
    """The expected values and inputs of the hidden and the public tests of ``slugs``, as the
    teacher's suites make them (the reference graded with its calls watched)."""
    seen: dict[str, list[np.ndarray]] = {"hidden": [], "public": []}
    pending: list[np.ndarray] = []

    def arrays(value, out):
        if isinstance(value, np.ndarray) and value.dtype.kind in "fc" and value.size >= 8:
            out.append(np.ascontiguousarray(value))
        elif isinstance(value, (list, tuple)):
            for v in value:
                arrays(v, out)
        elif isinstance(value, dict):
            for v in value.values():
                arrays(v, out)

    class Watch(Observer):
        def expected(self, func, args, kwargs, value):
            arrays([args, kwargs, value], pending)

        def decided(self, item, result):
            marker = item.get_closest_marker("grading")
            public = marker and marker.kwargs.get("visibility") == "public"
            seen["public" if public else "hidden"].extend(pending)
            pending.clear()

    grade({s: catalog.get(s).solution for s in slugs}, submission="reference",
          observer=Watch())
    return seen


def test_no_hidden_expected_value_or_input_is_in_the_release(made):
    seen = _values(EXERCISES)
    public = {a.tobytes() for a in seen["public"]}
    hidden = [a for a in seen["hidden"] if a.tobytes() not in public]
    assert len(hidden) > 10
    blobs = [p.read_bytes() for p in made["student"].rglob("*") if p.is_file()]
    for array in hidden:
        raw = array.tobytes()
        texts = {f"{x:.6g}" for x in array.real.reshape(-1)[:20] if x != round(x, 2)}
        assert not any(raw in blob for blob in blobs)
        assert not any(t.encode() in blob for t in texts if len(t) >= 7 for blob in blobs), texts


@pytest.fixture(scope="module")
def venv(made, tmp_path_factory):
    """A fresh venv with the release installed (not editable: what a student gets)."""
    env = tmp_path_factory.mktemp("venv") / "v"
    for step in ([sys.executable, "-m", "venv", str(env)],
                 [str(env / "bin/python"), "-m", "pip", "install", "-q", "torch==2.13.0"],
                 [str(env / "bin/python"), "-m", "pip", "install", "-q",
                  str(made["student"])]):
        done = _run(*step, timeout=900)
        assert done.returncode == 0, done.stderr[-2000:]
    return env


def _student_files(folder: Path, wrong: bool) -> Path:
    folder.mkdir()
    for slug in EXERCISES:
        src = catalog.get(slug).solution.read_text()
        if wrong and slug in WRONG:
            src = edit_source(src, WRONG[slug])
        (folder / f"{slug}.py").write_text(src)
    return folder


def test_a_student_grades_offline_with_the_public_tests(made, venv, tmp_path):
    grade_cmd = str(venv / "bin/grade")
    good = _run(grade_cmd, "--submission", str(_student_files(tmp_path / "good", False)),
                "--report-dir", str(tmp_path / "r1"), cwd=made["student"])
    assert good.returncode == 0, good.stdout + good.stderr
    info = json.loads((made["student"] / "grader/release.json").read_text())
    hidden = sum(e["hidden"] for e in info["exercises"].values())
    assert f"{hidden} hidden tests will run when your work is graded" in good.stdout
    results = json.loads((tmp_path / "r1/results.json").read_text())
    tests = [t for e in results["exercises"] for t in e["tests"]]
    assert tests and all(t["visibility"] == "public" and t["status"] == "passed" for t in tests)
    bad = _run(grade_cmd, "--submission", str(_student_files(tmp_path / "bad", True)),
               "--report-dir", str(tmp_path / "r2"), cwd=made["student"])
    assert bad.returncode == 1
    assert "opposite convention" in bad.stdout  # the known mistake, from recorded outputs
    solution = _run(grade_cmd, "solution", "grid_local_mask", cwd=made["student"])
    assert solution.returncode == 2 and "student release" in solution.stderr


def test_a_release_shows_the_assignments_points_only(made, venv, tmp_path):
    """The assignment gives grid_local_mask 10 points (the pack: 9): `grade list` says 10 and
    each public test carries its share of the 10."""
    grade_cmd = str(venv / "bin/grade")
    listed = _run(grade_cmd, "list", cwd=made["student"])
    row = next(ln for ln in listed.stdout.splitlines() if ln.startswith("grid_local_mask"))
    assert " 10 " in f" {row} " and " 9 " not in f" {row} ", row
    _run(grade_cmd, "--submission", str(_student_files(tmp_path / "good", False)),
         "--report-dir", str(tmp_path / "r"), cwd=made["student"])
    grid = next(e for e in json.loads((tmp_path / "r/results.json").read_text())["exercises"]
                if e["exercise"] == "grid_local_mask")
    pack = catalog.get("grid_local_mask").points
    public = sum(1 for t in grid["tests"])  # one point each in the pack
    assert grid["max_score"] == pytest.approx(public * 10 / pack)


def test_the_gradescope_bundle_grades_the_assignment(made, tmp_path):
    root = tmp_path / "autograder"
    with zipfile.ZipFile(made["zip"]) as zf:
        zf.extractall(root / "source")
        names = set(zf.namelist())
    assert {"setup.sh", "run_autograder", "assignment.toml"} <= names
    assert any(n.startswith("grader/suites/test_") for n in names)  # hidden suites: teachers'
    (root / "venv/bin").mkdir(parents=True)
    stand_in = root / "venv/bin/python"  # setup.sh's venv, stood in for by this one
    stand_in.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    stand_in.chmod(0o755)
    (root / "results").mkdir()
    (root / "submission").symlink_to(_student_files(tmp_path / "sub", True))
    os.chmod(root / "source/run_autograder", 0o755)
    done = _run("bash", str(root / "source/run_autograder"), env={"AUTOGRADER_ROOT": str(root)})
    assert done.returncode == 0, done.stderr
    data = json.loads((root / "results/results.json").read_text())
    names = {t["name"].split(":")[0] for t in data["tests"]}
    assert names == set(EXERCISES)  # exactly the assignment's exercises
    assert data["score"] == pytest.approx(sum(t["score"] for t in data["tests"]))
    wrong = [t for t in data["tests"] if t["name"].startswith("grid_local_mask")]
    assert sum(t["max_score"] for t in wrong) == pytest.approx(10)  # its points override
    hidden = [t for t in wrong if t.get("visibility") == "after_due_date"]
    assert hidden and all("first at index" not in t.get("output", "") for t in hidden)
