"""`grade bulk`'s run as a function (`grader/bulk/pipeline.py`): settings in, what it came to
out, what it says and its progress through a `Report`; the command only prints it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from grader import catalog
from grader.bulk import pipeline
from grader.judge import expected

SLUG = "grid_local_mask"


class Collected:
    """A ``pipeline.Report`` that keeps what it is told."""

    def __init__(self) -> None:
        self.lines: list[tuple[str, bool, bool]] = []
        self.progress: list[tuple] = []

    def say(self, text: str, *, stdout: bool = False, warning: bool = False) -> None:
        self.lines.append((text, stdout, warning))

    def begin(self, total: int) -> None:
        self.progress.append(("begin", total))

    def advance(self, label: str, n: int) -> None:
        self.progress.append(("advance", label, n))

    def end(self) -> None:
        self.progress.append(("end",))


@pytest.fixture
def klass(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """ann hands in the reference, bob the stub, empty nothing; the run's process-wide
    setting (the expected values' cache) is put back afterwards."""
    monkeypatch.setattr(expected, "_DISK", expected._DISK)
    folder = tmp_path / "class"
    for sid, source in (("ann", catalog.get(SLUG).solution), ("bob", catalog.get(SLUG).stub)):
        (folder / sid).mkdir(parents=True)
        shutil.copy(source, folder / sid / f"{SLUG}.py")
    (folder / "empty").mkdir()
    return folder


def test_a_class_graded_by_a_call(klass: Path, tmp_path: Path):
    settings = pipeline.BulkSettings(inputs=(klass,), out=tmp_path / "out", exercises=(SLUG,))
    said = Collected()
    done = pipeline.run(settings, said)
    assert [r.submission for r in done.results] == ["ann", "bob"]
    assert done.results[0].score == done.results[0].max_score > done.results[1].score
    assert (done.graded, done.cached, done.submissions) == (2, 0, 2)
    assert [r.id for r in done.rejected] == ["empty"]
    assert done.scope == f"Graded the exercises asked for: {SLUG}."
    assert not done.interrupted and done.exit_status == pipeline.EXIT_OK
    assert said.lines == [(f"Detected a folder of 3 sub-folders, one per submission ({klass}): "
                           "2 submission(s) to grade, 1 rejected.", False, False)]
    # a public and a hidden round each (graded feedback): the public one a step only
    assert said.progress[0] == ("begin", 2) and said.progress[-1] == ("end",)
    assert sorted(said.progress[1:-1]) == [
        ("advance", "ann", 1), ("advance", "ann: public tests", 0), ("advance", "bob", 1),
        ("advance", "bob: public tests", 0)]
    rows = (tmp_path / "out" / "grades.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in rows] == ["id", "ann", "bob", "empty"]

    again = pipeline.run(settings)  # quiet: nothing graded again
    assert (again.graded, again.cached) == (0, 2)
    assert [r.submission for r in again.results] == ["ann", "bob"]


def test_a_run_flushes_its_folder_once(klass: Path, tmp_path: Path, monkeypatch):
    """Every file the run writes is whole and renamed, none fsynced on its own: OUT is
    flushed at the end (and a file written after the run is fsynced again)."""
    import os

    from grader import files

    fsyncs, flushed = [], []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: fsyncs.append(fd) or real_fsync(fd))
    monkeypatch.setattr(files, "sync_tree", flushed.append)
    out = tmp_path / "out"
    pipeline.run(pipeline.BulkSettings(inputs=(klass,), out=out, exercises=(SLUG,)))
    assert fsyncs == [] and flushed[-1] == out
    files.atomic_write_text(tmp_path / "after.txt", "x")
    assert len(fsyncs) == 1


def test_inputs_that_do_not_fit_are_a_usage_error(klass: Path, tmp_path: Path):
    settings = pipeline.BulkSettings(inputs=(klass / "ann" / f"{SLUG}.py", klass),
                                     out=tmp_path / "out", exercises=(SLUG,))
    with pytest.raises(pipeline.BulkUsageError, match="cannot grade .* together with"):
        pipeline.run(settings)
    assert not (tmp_path / "out").exists()  # nothing written
