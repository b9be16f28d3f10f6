"""Shared helpers for the project's tests: grade learner source code through the real engine."""

from __future__ import annotations

import csv
import os
import shutil
import signal
import subprocess
import textwrap
from pathlib import Path

import pytest

from grader import catalog
from grader.engine.runner import grade
from grader.results import ExerciseResult, TestResult

# a figure that cannot be drawn fails the test (in this process and the grade commands it starts)
os.environ.setdefault("GRADER_STRICT_FIGURES", "1")

# The fast tier (``./dev test --fast``, ``pytest -m fast``): unit and table tests that grade
# little or nothing, about 40 s on 2 cores for the lot. A module joins when its tests take
# about a second or less each; the whole suite (``./dev test``) still runs them all.
FAST_MODULES = frozenset({
    "test_adjust", "test_assignment", "test_bulk_layouts", "test_compare", "test_csv_cells",
    "test_doctor", "test_evidence", "test_exports", "test_failure_hints", "test_gpu_watch",
    "test_gradebooks", "test_hostile_files", "test_late", "test_learner_edges",
    "test_lms_roundtrip", "test_moodle", "test_notebook_extract", "test_notebook_note",
    "test_oracles", "test_protocol", "test_reply_reader", "test_report_visuals",
    "test_results_model", "test_review", "test_shared_inputs", "test_similarity",
    "test_source_rules", "test_source_text", "test_suite_helpers",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of ``FAST_MODULES`` ``fast``."""
    for item in items:
        if Path(str(item.path)).stem in FAST_MODULES:
            item.add_marker(pytest.mark.fast)


def grade_source(tmp_path: Path, slug: str, source: str, device: str = "cpu") -> ExerciseResult:
    """Grade ``source`` as the learner's ``<slug>.py`` and return the exercise's result."""
    path = tmp_path / f"{slug}.py"
    path.write_text(textwrap.dedent(source))
    return grade({slug: path}, submission="test", device=device).exercises[0]


def grade_file(slug: str, path: Path, device: str = "cpu") -> ExerciseResult:
    return grade({slug: path}, submission="test", device=device).exercises[0]


def by_name(result: ExerciseResult) -> dict[str, TestResult]:
    return {t.name: t for t in result.tests}


def reference_source(slug: str) -> str:
    """The reference solution's source, to derive wrong variants from in tests."""
    return catalog.get(slug).solution.read_text()


def edit_source(src: str, *replacements: tuple[str, str]) -> str:
    """``src`` with each ``(old, new)`` applied; every ``old`` must occur exactly once."""
    for old, new in replacements:
        assert src.count(old) == 1, old
        src = src.replace(old, new)
    return src


def declared(slug: str, name: str) -> str:
    """The source of the variant ``name`` declared in ``solutions/<slug>.variants.toml`` (a
    known mistake or an uncatalogued variant): the one place a reference's edits are kept."""
    from grader.authoring import variants

    return variants.load(slug).by_name(name).source()


def csv_rows(path: Path) -> list[list[str]]:
    """The rows of a CSV file the grader wrote (a gradebook), as lists of cells."""
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def reference_variant(slug: str, *replacements: tuple[str, str]) -> str:
    """A wrong variant of the reference: its source with ``replacements`` applied."""
    return edit_source(reference_source(slug), *replacements)


def interruptible() -> None:
    """``preexec_fn`` of a child the test presses Ctrl-C in: SIGINT's default restored, since
    a shell's background job (as CI may run the suite) starts with SIGINT ignored, and Python
    keeps it ignored."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def copy_of_this_project(dest: Path, *, fresh: bool = False) -> Path:
    """This project's files (tracked, and new ones git does not ignore) copied into ``dest``
    (its grader runs from there when started with ``python -m grader`` in that folder);
    returns ``dest``. ``fresh``: the learner's working copies as a fresh clone has them (the
    pack's stubs), whatever this checkout's learner has written in them."""
    tracked = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                             cwd=catalog.PROJECT_DIR, capture_output=True, text=True,
                             check=True).stdout.split()
    for name in tracked:
        if not (catalog.PROJECT_DIR / name).is_file():
            continue  # deleted in the work tree
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes((catalog.PROJECT_DIR / name).read_bytes())
    if fresh:
        for ex in catalog.load().values():
            target = dest / ex.working_copy.relative_to(catalog.PROJECT_DIR)
            target.write_bytes(ex.stub.read_bytes())
    return dest


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A learner's working folder (the current directory): exercises/ holds the stub of
    grid_local_mask only. Test modules that need another folder define their own."""
    (tmp_path / "exercises").mkdir()
    shutil.copy(catalog.get("grid_local_mask").stub, tmp_path / "exercises")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def grade_src(tmp_path: Path):
    """``grade_src(slug, source)`` grades a learner source string, returns ``ExerciseResult``."""
    return lambda slug, source, device="cpu": grade_source(tmp_path, slug, source, device)


@pytest.fixture(scope="session")
def graded_pack(tmp_path_factory: pytest.TempPathFactory, worker_id: str):
    """Every file ``grade pack check --grade`` grades (references, stubs, bases, the declared
    variants, the trivial answers), graded once for the whole test run (two processes): the
    first pytest-xdist worker that needs it grades and saves it, another waits and reads it
    (``worker_id`` "master": no xdist). ``[(Graded, ExerciseResult or why it could not be
    graded)]``."""
    import fcntl
    import os

    import cloudpickle  # (Dask's: the judges are closures)

    from grader.authoring import graded

    def grade_them() -> list:
        # every "a parameter ignored" shortcut in CI, a sample in the loop between changes
        ignored = None if os.environ.get("CI") == "true" else graded.IGNORED_SAMPLE
        return list(graded.grade_files(graded.files_to_grade(list(catalog.load()),
                                                             ignored=ignored), jobs=2))

    if worker_id == "master":
        return grade_them()
    shared = tmp_path_factory.getbasetemp().parent  # the run's, common to its workers
    with open(shared / "graded_pack.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        saved = shared / "graded_pack.pickle"
        if saved.is_file():
            return cloudpickle.loads(saved.read_bytes())
        found = grade_them()
        saved.write_bytes(cloudpickle.dumps(found))
        return found


@pytest.fixture
def dask_procs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A `dask scheduler` on loopback speaking TLS, to which a test adds `dask worker`
    processes (``dask_helpers.DaskProcesses``): they, ``grade bulk`` (``DASK_CONFIG``) and
    this test process (``dask.config.set``) all use the same certificate."""
    pytest.importorskip("distributed")
    import dask
    from dask_helpers import DaskProcesses, tls_config

    settings = tls_config(tmp_path)
    monkeypatch.setenv("DASK_CONFIG", str(tmp_path))
    with dask.config.set(settings):
        procs = DaskProcesses(tmp_path)
        try:
            yield procs
        finally:
            procs.close()


def set_up_bundle(base: Path, assignment: str) -> Path:
    """The Gradescope autograder of ``assignment`` (a TOML text), laid out in ``base``'s
    temporary /autograder and set up by its own setup.sh: its venv holds the grader installed
    (not linked to this checkout). Returns that /autograder."""
    import os
    import sys
    import zipfile

    base.mkdir(parents=True, exist_ok=True)
    (base / "assignment.toml").write_text(assignment)
    env = {**os.environ}
    grade = Path(sys.executable).with_name("grade")
    made = subprocess.run([str(grade), "release", "--gradescope", "--assignment",
                           str(base / "assignment.toml"), str(base / "autograder.zip")],
                          capture_output=True, text=True, cwd=base, env=env, timeout=600)
    assert made.returncode == 0, made.stderr
    root = base / "autograder"
    with zipfile.ZipFile(base / "autograder.zip") as zf:
        zf.extractall(root / "source")
    for script in ("setup.sh", "run_autograder"):
        os.chmod(root / "source" / script, 0o755)
    setup = subprocess.run(["bash", str(root / "source/setup.sh")], capture_output=True,
                           text=True, cwd=root / "source", timeout=900,
                           env={**env, "AUTOGRADER_ROOT": str(root), "GRADER_TORCH_INDEX": ""})
    assert setup.returncode == 0, setup.stdout[-2000:] + setup.stderr[-4000:]
    return root
