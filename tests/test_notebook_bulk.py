"""Notebooks through the real CLI: ``grade --submission`` and ``grade bulk`` (a Canvas zip
mixing ``.py`` and ``.ipynb`` students, a nested zip, one notebook given alone), and a hostile
notebook contained as a hostile ``.py`` is."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import nbformat
import pytest
from conftest import reference_source

from grader import catalog

GRADE = str(Path(sys.executable).with_name("grade"))
SLUG = "grid_local_mask"
WRONG = """def grid_local_mask(H_p, W_p, radius, n_prefix=1):
    T = n_prefix + H_p * W_p
    if radius == 0:
        return 1 / 0
    return np.ones((T, T), dtype=bool)
"""


def as_notebook(code: str, *, experiments: bool = True) -> bytes:
    """``code`` split into notebook cells: a markdown cell, the imports (with a magic), the
    rest, then an experiment cell."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# grid_local_mask"),
                nbformat.v4.new_code_cell("%time x = 1\nimport numpy as np"),
                nbformat.v4.new_code_cell(code)]
    if experiments:
        nb.cells.append(nbformat.v4.new_code_cell("m = grid_local_mask(3, 3, 1)\nprint(m)"))
    return nbformat.writes(nb).encode()


def grade(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([GRADE, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def test_a_submission_folder_notebook_is_graded_with_cell_lines(tmp_path: Path):
    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / f"{SLUG}.ipynb").write_bytes(as_notebook(WRONG))
    done = grade(SLUG, "--submission", str(sub), "--report-dir", str(tmp_path / "r"),
                 cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert (f"{SLUG}.ipynb: left out (not run when grading) cell 2 (%time); cell 4 (m = ... "
            "(not a constant), a call to print)") in done.stdout
    assert f"{SLUG}.ipynb, cell 3, line 4, in grid_local_mask: return 1 / 0" in done.stdout
    assert "cell 3, line 4" in (tmp_path / "r" / "index.html").read_text()


def test_a_notebook_beside_a_py_is_an_error_naming_both(tmp_path: Path):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / f"{SLUG}.py").write_text(reference_source(SLUG))
    (tmp_path / "exercises" / f"{SLUG}.ipynb").write_bytes(as_notebook(WRONG))
    done = grade(SLUG, cwd=tmp_path)
    assert done.returncode == 2
    assert f"{SLUG}.py" in done.stderr and f"{SLUG}.ipynb" in done.stderr


def test_a_bad_notebook_in_exercises_is_one_line(tmp_path: Path):
    (tmp_path / "exercises").mkdir()
    (tmp_path / "exercises" / f"{SLUG}.ipynb").write_bytes(as_notebook("def f(:\n  pass"))
    done = grade(SLUG, cwd=tmp_path)
    assert done.returncode == 2
    assert f"{SLUG}.ipynb has a cell 3 that does not parse: " in done.stderr


def _canvas(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def _nested(name: str, data: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(f"work/{name}", data)
    return buf.getvalue()


def _grades(out: Path) -> dict[str, dict[str, str]]:
    with open(out / "grades.csv", newline="") as fh:
        return {row["id"]: row for row in csv.DictReader(fh)}


@pytest.fixture(scope="module")
def canvas(tmp_path_factory) -> dict[str, dict[str, str]]:
    base = tmp_path_factory.mktemp("canvas")
    right, wrong = reference_source(SLUG), "import numpy as np\n" + WRONG
    klass = _canvas(base / "class.zip", {
        f"alice_101_5001_{SLUG}.ipynb": as_notebook(WRONG),
        f"bob_102_5002_{SLUG}.py": wrong.encode(),
        f"carol_103_5003_{SLUG}.ipynb": as_notebook(right),
        f"dave_104_5004_{SLUG}.py": right.encode(),
        f"erin_105_5005_{SLUG}.ipynb": b"not json",
        f"frank_106_5006_{SLUG}.ipynb": as_notebook(right),
        f"frank_106_5006_{SLUG}.py": right.encode(),
        "gina_107_5007_work.zip": _nested(f"{SLUG}.ipynb", as_notebook(right)),
        f"hal_108_5008_{SLUG}.ipynb": as_notebook("def f(:\n    pass"),
    })
    done = grade("bulk", str(klass), "--out", str(base / "out"), "--workers", "1",
                 "--exercises", SLUG, cwd=base)
    assert done.returncode == 0, done.stderr
    return _grades(base / "out")


def test_notebook_students_get_the_grades_of_the_same_code_as_py(canvas):
    assert canvas["alice_101"]["total"] == canvas["bob_102"]["total"] != "9"
    assert canvas["carol_103"]["total"] == canvas["dave_104"]["total"] == "9"
    assert canvas["gina_107"]["total"] == "9"  # a notebook in a student's nested zip


@pytest.mark.parametrize(("student", "reason"), [
    ("erin_105", f"{SLUG}.ipynb (submission 5005) is not a notebook: it is not JSON"),
    ("frank_106", f"{SLUG}.ipynb (submission 5006) and {SLUG}.py (submission 5006) are both "
                  f"there for {SLUG}"),
    ("hal_108", f"{SLUG}.ipynb (submission 5008) has a cell 3 that does not parse"),
])
def test_bad_notebooks_get_one_line_and_the_class_goes_on(canvas, student, reason):
    assert canvas[student]["status"].startswith("not graded: ")
    assert reason in canvas[student]["status"]


def test_one_notebook_alone_is_a_submission(tmp_path: Path):
    one = tmp_path / "one"
    one.mkdir()
    (one / f"{SLUG}.ipynb").write_bytes(as_notebook(reference_source(SLUG)))
    done = grade("bulk", str(one / f"{SLUG}.ipynb"), "--out", str(tmp_path / "out"),
                 "--workers", "1", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert _grades(tmp_path / "out")["files"]["total"] == "9"


def test_a_hostile_notebook_is_contained_as_a_hostile_py(tmp_path: Path):
    from grader.sandbox import isolation

    if isolation.probe().level != "strict":
        pytest.skip("this machine offers no filesystem/network isolation")
    marker = tmp_path / "pwned"
    solution = str(catalog.get(SLUG).solution)
    steal = (f"def grid_local_mask(H_p, W_p, radius, n_prefix=1):\n"
             f"    ns = {{}}\n    exec(open({solution!r}).read(), ns)\n"
             f"    return ns['grid_local_mask'](H_p, W_p, radius, n_prefix)\n")
    system = f"import os\nos.system('touch {marker}')\n"
    klass = tmp_path / "class"
    for name in ("as_notebook", "as_py"):
        (klass / name).mkdir(parents=True)
    (klass / "as_notebook" / f"{SLUG}.ipynb").write_bytes(as_notebook(system + steal))
    (klass / "as_py" / f"{SLUG}.py").write_text(system + steal)
    done = grade("bulk", str(klass), "--out", str(tmp_path / "out"), "--workers", "1",
                 "--isolation", "strict", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not marker.exists()
    for name in ("as_notebook", "as_py"):
        result = json.loads((tmp_path / "out" / name / "results.json").read_text())
        tests = result["exercises"][0]["tests"]
        assert tests and not any(t["status"] == "passed" for t in tests), name


def test_a_notebook_release_hands_out_notebooks_that_bulk_grades(tmp_path: Path):
    (tmp_path / "assignment.toml").write_text(
        f'title = "Notebooks"\nexercises = ["{SLUG}"]\n')
    done = grade("release", "--notebooks", "--assignment", str(tmp_path / "assignment.toml"),
                 str(tmp_path / "student"), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    folder = tmp_path / "student" / "exercises"
    assert sorted(p.name for p in folder.iterdir()) == [f"{SLUG}.ipynb", f"{SLUG}.md"]
    nb = nbformat.read(folder / f"{SLUG}.ipynb", as_version=4)
    nbformat.validate(nb)
    kinds = [c.cell_type for c in nb.cells]
    assert kinds[0] == "markdown" and kinds[-2:] == ["code", "code"]
    assert nb.cells[-2].source == "%load_ext grader"
    assert nb.cells[-1].source.startswith(f"%%grade {SLUG}\n")
    assert (tmp_path / "student" / "grader" / "notebook" / "magic.py").is_file()
    assert "notebook" in (tmp_path / "student" / "dev").read_text()
    # two students hand it back: the stub as it was, and the stub completed
    klass = tmp_path / "class"
    for name, code in (("stub", None), ("done", reference_source(SLUG))):
        (klass / name).mkdir(parents=True)
        if code is not None:
            nb.cells[-1].source = f"%%grade {SLUG}\n{code}"
        nbformat.write(nb, klass / name / f"{SLUG}.ipynb")
    done = grade("bulk", str(klass), "--out", str(tmp_path / "out"), "--workers", "1",
                 "--exercises", SLUG, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    grades = _grades(tmp_path / "out")
    assert grades["done"]["total"] == "9" and grades["stub"]["total"] == "0"


def test_reset_and_show_keep_a_notebook_a_notebook(tmp_path: Path):
    (tmp_path / "exercises").mkdir()
    mine = tmp_path / "exercises" / f"{SLUG}.ipynb"
    original = as_notebook(WRONG)
    mine.write_bytes(original)
    assert f"exercises/{SLUG}.ipynb" in grade("show", SLUG, cwd=tmp_path).stdout
    done = grade("reset", SLUG, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "exercises" / f"{SLUG}.py").exists()
    nb = nbformat.read(mine, as_version=4)
    assert nb.cells[-1].source.startswith(f"%%grade {SLUG}\n")
    kept = list((tmp_path / ".grade" / "backups").glob(f"{SLUG}-*.ipynb"))
    assert len(kept) == 1 and kept[0].read_bytes() == original


def test_a_source_rule_names_the_cell_line(tmp_path: Path):
    from grader.engine.runner import grade as grade_files
    from grader.notebook.files import materialise

    slug = "conv_via_attention"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# conv"),
                nbformat.v4.new_code_cell(reference_source(slug)),
                nbformat.v4.new_code_cell("def _helper(x):\n    return np.convolve(x, x)")]
    path = tmp_path / f"{slug}.ipynb"
    nbformat.write(nb, path)
    files, _ = materialise({slug: path}, tmp_path)
    result = grade_files(files, submission="nb").exercises[0]
    rule = next(t for t in result.tests if t.name == "rule_no_convolution_routine")
    assert rule.status == "failed"
    assert "cell 3, line 2 uses numpy.convolve" in rule.message
