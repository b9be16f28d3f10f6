"""Every deployment form grades a class alike: the same class (torch and numpy files, right and
wrong, an exercise left out) graded from this checkout, with ``--scheduler local:2``, from an
install outside the source (the Gradescope bundle's venv, a non-editable install as a wheel's),
by the Gradescope bundle's ``run_autograder`` one submission at a time, and as the notebooks of a
notebook release (``grade release --notebooks``) handed back, gets the same points per student
and exercise in each.

The Dask form once lost the torch files' points (their import of ``pynvml``, which torch.cuda
makes, was unreadable in a Dask worker's sandbox: "raised PermissionError while being
imported"); the right torch file is there for that. The cause, a worker's view that depended
on the process computing it (the checkout on ``sys.path`` made the site folder's shared
``__pycache__`` readable, and with it ``pynvml``'s byte code), is tested on its own too.
"""

from __future__ import annotations

import csv
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import edit_source, reference_source, set_up_bundle

from grader import catalog

GRADE = Path(sys.executable).with_name("grade")
EXERCISES = ("grid_local_mask", "mean_attention_distance")
ASSIGNMENT = """title = "deployment forms"
exercises = ["grid_local_mask", "mean_attention_distance"]
feedback = "graded"
"""


def _with_torch(src: str) -> str:
    """``src`` importing torch (after its ``from __future__`` line, which must come first)."""
    lines = src.split("\n")
    at = max((i for i, line in enumerate(lines) if line.startswith("from __future__")),
             default=-1) + 1
    return "\n".join([*lines[:at], "import torch  # noqa: F401", *lines[at:]])


def _students() -> dict[str, dict[str, str]]:
    grid, mad = (reference_source(s) for s in EXERCISES)
    half = edit_source(grid, ("<= radius  # (H_p, H_p)", "<= radius // 2  # (H_p, H_p)"),
                       ("<= radius  # (W_p, W_p)", "<= radius // 2  # (W_p, W_p)"))
    return {
        "torch_right": {s: _with_torch(src) for s, src in zip(EXERCISES, (grid, mad))},
        "numpy_right": dict(zip(EXERCISES, (grid, mad))),
        "torch_wrong": {"grid_local_mask": _with_torch(half)},
        "numpy_wrong": {"grid_local_mask": half, "mean_attention_distance":
                        "def mean_attention_distance(*args, **kwargs):\n    return 0.0\n"},
    }


def _run(*args, cwd, env=None, timeout=900) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd,
                          timeout=timeout, env={**os.environ, **(env or {})})
    assert done.returncode in (0, 1), done.stdout[-2000:] + done.stderr[-3000:]
    return done


def _grades(out: Path) -> dict[str, dict[str, float]]:
    with open(out / "grades.csv", newline="") as fh:
        return {row["id"]: {s: float(row[s] or 0) for s in EXERCISES}
                for row in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("forms")
    (base / "assignment.toml").write_text(ASSIGNMENT)
    for form in ("py", "ipynb"):
        for student, files in _students().items():
            folder = base / f"class_{form}" / student
            folder.mkdir(parents=True)
            for slug, src in files.items():
                if form == "py":
                    (folder / f"{slug}.py").write_text(src)
                else:
                    (folder / f"{slug}.ipynb").write_text(_handed_back(slug, src))
    return {"base": base}


def _handed_back(slug: str, src: str) -> str:
    """The notebook ``grade release --notebooks`` hands out for ``slug`` (the statement as
    markdown, ``%load_ext grader``, the stub under ``%%grade SLUG``: the release writes it with
    this same function), handed back with ``src`` in place of the stub."""
    from grader.notebook.release import exercise_notebook

    return exercise_notebook(slug, catalog.get(slug).statement.read_text(encoding="utf-8"), src)


@pytest.fixture(scope="module")
def reference(world) -> dict[str, dict[str, float]]:
    """The checkout's grades (``grade bulk``, the local pool): what every form must give."""
    base = world["base"]
    _run(GRADE, "bulk", base / "class_py", "--assignment", base / "assignment.toml", "--out",
         base / "out_checkout", "--workers", "2", "--quiet", cwd=base)
    grades = _grades(base / "out_checkout")
    assert grades["torch_right"] == grades["numpy_right"] == {"grid_local_mask": 9,
                                                              "mean_attention_distance": 8}
    assert grades["torch_wrong"]["grid_local_mask"] == grades["numpy_wrong"]["grid_local_mask"]
    assert grades["numpy_wrong"]["grid_local_mask"] < 9
    return grades


def test_a_dask_cluster_grades_the_class_as_the_checkout_does(world, reference):
    pytest.importorskip("distributed")
    base = world["base"]
    _run(GRADE, "bulk", base / "class_py", "--assignment", base / "assignment.toml", "--out",
         base / "out_dask", "--scheduler", "local:2", "--quiet", cwd=base)
    assert _grades(base / "out_dask") == reference


def test_notebooks_are_graded_as_their_code_is(world, reference):
    base = world["base"]
    _run(GRADE, "bulk", base / "class_ipynb", "--assignment", base / "assignment.toml",
         "--out", base / "out_notebooks", "--workers", "2", "--quiet", cwd=base)
    assert _grades(base / "out_notebooks") == reference


@pytest.fixture(scope="module")
def bundle(world) -> Path:
    """The Gradescope autograder set up by its own setup.sh (``conftest.set_up_bundle``)."""
    return set_up_bundle(world["base"] / "gradescope", ASSIGNMENT)


def test_an_install_outside_the_source_grades_the_class_as_the_checkout_does(world, reference,
                                                                            bundle):
    base = world["base"]
    outside = base / "elsewhere"
    outside.mkdir(exist_ok=True)
    _run(bundle / "venv/bin/grade", "bulk", base / "class_py", "--assignment",
         base / "assignment.toml", "--out", base / "out_installed", "--workers", "2",
         "--quiet", cwd=outside, env={"PYTHONPATH": ""})
    assert _grades(base / "out_installed") == reference


def test_the_gradescope_bundle_grades_each_student_as_the_checkout_does(world, reference,
                                                                       bundle):
    base = world["base"]
    for student in reference:
        submission, results = bundle / "submission", bundle / "results"
        for folder in (submission, results):
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
        for file in (base / "class_py" / student).iterdir():
            shutil.copy(file, submission / file.name)
        _run("bash", bundle / "source/run_autograder", cwd=bundle,
             env={"AUTOGRADER_ROOT": str(bundle)})
        data = json.loads((results / "results.json").read_text())
        points = {s: 0.0 for s in EXERCISES}
        for test in data["tests"]:  # named "<exercise>: <test>"
            points[test["name"].split(":", 1)[0]] += float(test.get("score", 0))
        assert {s: round(p, 6) for s, p in points.items()} == reference[student], student


VIEW = """import json, sys
from grader.sandbox import readable
view = readable.worker_view(sys.argv[1])
print(json.dumps([view.read, view.list]))
"""


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_every_grading_process_computes_the_same_worker_view(tmp_path, device):
    """What learner code may read is a function of what is installed, not of the process
    computing it: a Dask worker's grading process (``python -P``, wherever it was started),
    the local pool's (the checkout on ``sys.path``, as pytest puts it) and one started by
    ``python -m grader`` in the checkout (``""`` on ``sys.path``) compute the same view; what
    torch imports when installed (``pynvml`` for torch.cuda, ``tqdm`` for torch.hub) is
    readable in it."""
    checkout = str(catalog.PROJECT_DIR)
    views = [_run(sys.executable, *flags, "-c", VIEW, device, cwd=cwd,
                  env={"PYTHONPATH": path}).stdout
             for flags, cwd, path in ((["-P"], tmp_path, ""), (["-P"], checkout, ""),
                                      ([], tmp_path, checkout), ([], checkout, ""))]
    assert all(view == views[0] for view in views), "the view depends on the process"
    read, _ = json.loads(views[0])
    for module in ("pynvml", "tqdm"):
        found = importlib.util.find_spec(module)
        if found is not None and found.origin:
            origin = os.path.realpath(found.origin)
            assert any(origin == p or origin.startswith(p + "/") for p in read), module
