"""The learner's working files: pristine stubs, backups, and recording gradings in the state.

The learner works on ``exercises/<slug>.py`` in the project folder, which is also where the
stubs ship, so the stub a reset restores cannot be read from there. The pristine stubs are
package data: ``grader/stubs/<slug>.py``, byte-for-byte copies of the tracked
``exercises/<slug>.py`` (a test in ``tests/test_learner_commands.py`` keeps them in step).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import time
from pathlib import Path

from grader import catalog
from grader.files import atomic_write_bytes
from grader.results import SubmissionResult
from grader.state import State, project_dir, state_path

PRISTINE_DIR = catalog.PACKAGE_DIR / "stubs"
BACKUP_DIR = Path(".grade") / "backups"  # inside the project (``state.project_dir``)


def pristine_stub(slug: str) -> Path:
    """The stub of ``slug`` as shipped (what `grade reset` restores)."""
    return PRISTINE_DIR / f"{slug}.py"


def version(slug: str, path: Path | None) -> str | None:
    """The content hash of a learner file; ``None`` when it is missing or the pristine stub."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    digest = hashlib.sha256(data).hexdigest()[:16]
    stub = pristine_stub(slug)
    try:
        if stub.is_file() and stub.read_bytes() == data:
            return None
    except OSError:
        pass
    return digest


def backup(path: Path, slug: str, now: dt.datetime | None = None) -> Path:
    """Copy ``path`` to the project's ``.grade/backups/<slug>-<YYYYmmdd-HHMMSS>.py`` (never
    overwriting; a notebook's copy ends in ``.ipynb``)."""
    stamp = (now or dt.datetime.now()).strftime("%Y%m%d-%H%M%S")
    suffix = ".ipynb" if path.suffix == ".ipynb" else ".py"
    backups = project_dir() / BACKUP_DIR
    target = backups / f"{slug}-{stamp}{suffix}"
    n = 1
    while target.exists():
        n += 1
        target = backups / f"{slug}-{stamp}-{n}{suffix}"
    atomic_write_bytes(target, path.read_bytes())
    return target


def restore_stub(slug: str, path: Path) -> None:
    """Write the pristine stub of ``slug`` to ``path`` (atomically); for a ``.ipynb`` path,
    the stub as a notebook (the statement, then the stub under ``%%grade SLUG``)."""
    if path.suffix == ".ipynb":
        from grader.notebook.release import exercise_notebook

        ex = catalog.get(slug)
        statement = ex.statement.read_text(encoding="utf-8") if ex.statement.is_file() else ""
        text = exercise_notebook(slug, statement, pristine_stub(slug).read_text(encoding="utf-8"))
        atomic_write_bytes(path, text.encode("utf-8"))
        return
    atomic_write_bytes(path, pristine_stub(slug).read_bytes())


def versions(files: dict[str, Path | None]) -> dict[str, str | None]:
    """The version of each learner file (read before grading: the learner may save meanwhile)."""
    return {slug: version(slug, path) for slug, path in files.items()}


def remember(result: SubmissionResult, versions: dict[str, str | None],
             spent_s: dict[str, float] | None = None) -> State:
    """Record a grading of the learner's own files in the state file; returns the state."""
    state = State.load()
    now = time.time()
    for e in result.exercises:
        if e.status == "not_submitted":
            continue
        state.record_grading(
            e.exercise, score=e.score, max_score=e.max_score, passed=e.status == "passed",
            tests={t.name: t.status for t in e.tests}, version=versions.get(e.exercise),
            now=now, spent_s=(spent_s or {}).get(e.exercise))
    state.save()
    return state


def touch(slug: str) -> None:
    """Count the learner's activity on ``slug`` now (for time spent): only in a learner's
    project (one with ``exercises/`` or ``.grade/``), never leaving a state file elsewhere."""
    path = state_path()
    if not ((path.parent.parent / "exercises").is_dir() or path.parent.is_dir()):
        return
    state = State.load(path)
    state.of(slug).touch(time.time())
    state.save()
