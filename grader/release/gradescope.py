"""The zip Gradescope takes as an autograder: ``setup.sh`` and ``run_autograder`` at its top,
the grader with the hidden suites and references of the assignment's exercises only, and the
assignment it grades.

Gradescope unzips it in ``/autograder/source``, runs ``setup.sh`` once (a Python the grader
supports, a venv, the grader installed) and ``run_autograder`` for every submission: it grades
exactly the assignment's exercises, hidden tests at the assignment's feedback level, and
writes ``/autograder/results/results.json``. ``AUTOGRADER_ROOT`` moves ``/autograder``
elsewhere (the project's test lays the bundle out in a temporary folder).
"""

from __future__ import annotations

import zipfile
from pathlib import Path

from grader import catalog
from grader.assignment import Assignment, released_text
from grader.judge import confirm

HERE = Path(__file__).parent / "gradescope"
_SKIP = {"__pycache__", ".pytest_cache", ".ruff_cache"}


def _grader_files(slugs: tuple[str, ...]) -> list[tuple[Path, str]]:
    """(file, name in the zip) of the grader for the exercises ``slugs``: the package without
    any other exercise's suite, recorded data or stub, their references (and the tables of
    the points their suites count, ``judge/confirm.py``) only, the project files."""
    root = catalog.PROJECT_DIR
    others = [ex for ex in catalog.load().values() if ex.slug not in slugs]
    left_out = {p for ex in others for p in (ex.suite, ex.suite.with_suffix(".public"), ex.stub)}
    found = [(root / "pyproject.toml", "pyproject.toml"), (root / "setup.py", "setup.py")]
    for path in sorted(catalog.PACKAGE_DIR.rglob("*")):
        if path.is_file() and not _SKIP & set(path.relative_to(root).parts) \
                and path.suffix != ".pyc" and path not in left_out:
            found.append((path, path.relative_to(root).as_posix()))
    for slug in slugs:
        solution = catalog.get(slug).solution
        found.append((solution, solution.relative_to(root).as_posix()))
        table = confirm.path_of(slug)  # (which points the suite counts)
        if table.is_file():
            found.append((table, table.relative_to(root).as_posix()))
    return found


def write_bundle(task: Assignment, out: Path) -> list[str]:
    """Write the autograder zip for ``task`` to ``out``; return the names it holds."""
    if task.path is None:
        raise ValueError("the assignment has no file to ship")
    out.parent.mkdir(parents=True, exist_ok=True)
    names = []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for script in ("setup.sh", "run_autograder"):
            info = zipfile.ZipInfo(script)
            info.external_attr = 0o100755 << 16  # executable once unzipped
            zf.writestr(info, (HERE / script).read_bytes())
            names.append(script)
        zf.writestr(zipfile.ZipInfo.from_file(task.path, "assignment.toml"),
                    released_text(task), compress_type=zipfile.ZIP_DEFLATED)
        names.append("assignment.toml")
        for path, name in _grader_files(tuple(task.exercises)):
            zf.write(path, name)
            names.append(name)
    return names
