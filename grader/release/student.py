"""A student release of an assignment: a folder a teacher hands out (or pushes to a GitHub
Classroom template) that holds no answer.

It has the assignment's stubs and statements, a README for students, and the grader
installable with the same two commands as this project, whose suites are the public tests
replayed from recorded data (``record.py``, ``replay.py``): the expected values and
known-mistake outputs of the public tests only. No reference solution, no hidden suite, no
hidden expected value is written; the grader says how many hidden tests will run when the
work is graded, and ``grade solution`` is not offered.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from grader import catalog
from grader.assignment import Assignment, released_text
from grader.sandbox.harness import protocol

from .record import record

SUITE = '''"""The public tests of {slug}, replayed from {slug}.public (recorded from the
reference by `grade release`; this release holds no reference solution and no hidden test)."""

from grader.release.replay import public_tests

globals().update(public_tests(__file__))
'''

README = """# {title}

Your exercises: {exercises}. Each has a statement (`exercises/<name>.md`) and a file to
complete (`exercises/<name>.py`).

## Set up and grade (Python 3.11+, Linux)

```bash
./dev setup     # first time only: creates .venv and installs the grader
./dev grade     # grades every exercise in exercises/ and writes reports/index.html
```

`./dev grade grid_local_mask` grades one exercise; after the set-up, `.venv/bin/grade --help`
lists every command (`grade show`, `grade hint`, `grade --watch` ...).

This grader runs the **public tests** only ({public} of them). When your work is graded{due},
**{hidden} hidden tests** run as well, with other inputs: passing every public test is a good
sign, not a guarantee. Hidden tests report what failed and roughly by how much, never their
inputs or expected values.
"""


NOTEBOOK_FILES = ("Each has a statement (`exercises/<name>.md`) and a file to\ncomplete "
                  "(`exercises/<name>.py`).",
                  "Each is a notebook, `exercises/<name>.ipynb`: the statement, then\na cell "
                  "to complete, headed by `%%grade <name>` (the statement is also in\n"
                  "`exercises/<name>.md`).")
NOTEBOOK_README = """
## In Jupyter

`./dev setup` installs the notebook kernel, not a Jupyter front end: `.venv/bin/python -m pip
install -e '.[notebook-ui]'` adds JupyterLab (then `.venv/bin/jupyter lab`), or use your own
Jupyter with this kernel (`.venv/bin/python -m ipykernel install --user --name grader`).
Run the `%load_ext grader` cell, then the `%%grade <name>` cell: it
runs as usual and shows its grading below it. `%grade_hint <name>` shows the next hint.
Hand in the `.ipynb` files: only their imports, functions, classes and constants are graded.
"""


# a [tool.ruff] or [tool.ruff.*] table, to the next table or the end
_RUFF_TABLE = re.compile(r"^\[tool\.ruff(\.[^\]]*)?\]\n(?:(?!\[)[^\n]*\n?)*", re.MULTILINE)


def _index_entries(slugs: list[str], points: dict[str, float]) -> str:
    """The exercise index with only ``slugs``' entries (kept as they are written), each
    exercise's ``points`` those of the assignment where it sets them."""
    text = catalog.INDEX.read_text()
    head, *blocks = re.split(r"(?m)^(?=\[\[exercise\]\])", text)
    kept = []
    for block in blocks:
        slug = re.search(r'(?m)^slug\s*=\s*"([^"]+)"', block).group(1)
        if slug in slugs:
            if slug in points:
                block = re.sub(r"(?m)^points\s*=.*$", f"points = {points[slug]:g}", block)
            kept.append(block)
    return head + "".join(kept)


def _on_the_assignments_scale(tests: list[dict], slug: str, points: dict[str, float]) -> list:
    """Recorded public tests with their points scaled as the assignment scales the exercise
    (the release shows one scale: the assignment's)."""
    if slug not in points:
        return tests
    factor = points[slug] / catalog.get(slug).points
    return [{**t, "points": t["points"] * factor} for t in tests]


def _copy_package(dest: Path, slugs: list[str]) -> None:
    def skip(folder: str, names: list[str]) -> set[str]:
        here = Path(folder)
        dropped = {n for n in names if n in ("__pycache__", "release.json")
                   or n.endswith((".pyc", ".public"))}
        if here == catalog.SUITES_DIR:
            dropped |= {n for n in names if n.startswith("test_")}  # hidden suites stay here
        if here == catalog.PACKAGE_DIR / "stubs":
            dropped |= {n for n in names if n.endswith(".py") and n[:-3] not in slugs}
        return dropped

    shutil.copytree(catalog.PACKAGE_DIR, dest, ignore=skip)


def write_release(task: Assignment, out: Path, *, force: bool = False,
                  notebooks: bool = False) -> str:
    """Write the student release of ``task`` to the folder ``out``; return a summary.

    ``notebooks``: each exercise is ``exercises/SLUG.ipynb`` (the statement as markdown
    cells, the stub in a cell headed by ``%%grade SLUG``) instead of ``SLUG.py`` and
    ``SLUG.md``; the release's ``./dev setup`` installs the notebook extra (the magic)."""
    slugs = list(task.exercises)
    recorded = record(slugs)
    if out.exists() and force:
        shutil.rmtree(out)
    out.mkdir(parents=True)
    package = out / "grader"
    _copy_package(package, slugs)
    points = dict(task.points)
    (package / "exercises.toml").write_text(_index_entries(slugs, points))
    info = {"assignment": task.to_dict(), "exercises": {}}
    for slug in slugs:
        rec = recorded[slug]
        (package / "suites" / f"test_{slug}.py").write_text(SUITE.format(slug=slug))
        (package / "suites" / f"{slug}.public").write_bytes(
            protocol.encode_message({}, _on_the_assignments_scale(rec.tests, slug, points)))
        info["exercises"][slug] = {"public": len(rec.tests),
                                   "hidden": rec.hidden + len(rec.left_out)}
        # the pack's stub, never the teacher's working copy in exercises/
        ex = catalog.get(slug)
        (out / "exercises").mkdir(exist_ok=True)
        if notebooks:  # the statement beside it too: `grade show`, and the stub's "Read SLUG.md"
            from grader.notebook.release import write_exercise_notebook

            write_exercise_notebook(slug, ex.statement, ex.stub, out / "exercises")
        for source in ((ex.statement,) if notebooks else (ex.stub, ex.statement)):
            shutil.copyfile(source, out / "exercises" / source.name)
    (package / "release.json").write_text(json.dumps(info, indent=2) + "\n")
    for name in ("pyproject.toml", "setup.py", "dev"):
        shutil.copy2(catalog.PROJECT_DIR / name, out / name)
    # without the project's lint settings: a release made inside the project (the README's
    # `student/`) is then no ruff project of its own, and the project's `include` skips it
    pyproject = out / "pyproject.toml"
    pyproject.write_text(_RUFF_TABLE.sub("", pyproject.read_text()))
    if task.path is not None:
        (out / "assignment.toml").write_text(released_text(task), encoding="utf-8")
    public = sum(e["public"] for e in info["exercises"].values())
    hidden = sum(e["hidden"] for e in info["exercises"].values())
    due = f" (due {task.due:%Y-%m-%d %H:%M %Z})" if task.due else ""
    readme = README.format(title=task.title, exercises=", ".join(f"`{s}`" for s in slugs),
                           public=public, hidden=hidden, due=due)
    if notebooks:
        readme = readme.replace(NOTEBOOK_FILES[0], NOTEBOOK_FILES[1]) + NOTEBOOK_README
    (out / "README.md").write_text(readme)
    (out / ".gitignore").write_text(".venv/\n__pycache__/\n*.egg-info/\nreports/\n.grade/\n")
    return f"{public} public tests shipped, {hidden} hidden tests kept back"
