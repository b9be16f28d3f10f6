"""`grade --watch`, driven through the installed command: a file saved, keys pressed."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from cli_driver import Session
from click.testing import CliRunner
from conftest import edit_source

from grader import catalog
from grader.cli import main

SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A learner's folder with the stubs of two quick exercises."""
    (tmp_path / "exercises").mkdir()
    for slug in ("grid_local_mask", "shape_bias"):
        shutil.copy(catalog.get(slug).stub, tmp_path / "exercises")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_watch_regrades_the_saved_file_says_what_changed_and_takes_keys(project):
    target = project / "exercises" / "grid_local_mask.py"
    solution = (SOLUTIONS / "grid_local_mask.py").read_text()
    # a long debounce: the two writes of one save below are never graded apart
    s = Session(["--watch", "-q", "--debounce", "1.0"], project)
    try:
        first = s.until("watching for changes")
        assert "grid_local_mask" in first and "shape_bias" in first  # both graded at start

        target.write_text(solution[: len(solution) // 2])  # an editor's save: two writes
        target.write_text(solution)
        second = s.until("watching for changes")
        assert second.count("Score ") == 1, second  # one grading, of the complete file
        assert "Since the last run: 9 more tests pass" in second
        assert "Score 9/9" in second
        assert "shape_bias" not in second  # only the exercise whose file changed
        report = json.loads((project / "reports" / "results.json").read_text())
        assert [e["exercise"] for e in report["exercises"]] == ["grid_local_mask", "shape_bias"]

        target.write_text(edit_source(solution, ("if radius < 0:", "if radius < -5:")))
        third = s.until("watching for changes")
        assert "Since the last run: 1 test now fails: invalid_arguments_raise" in third

        s.send("h\n")
        hint = s.until("Hint 1 of")
        assert "grid_local_mask" in s.until(catalog.get("grid_local_mask").hints[0][:30])
        assert "Traceback" not in first + second + third + hint
        s.send("q\n")
        code, rest = s.finish()
        assert code == 0 and "stopped watching." in rest
    finally:
        s.close()


def test_watch_reads_single_keys_on_a_terminal_and_restores_it(project):
    termios = pytest.importorskip("termios")
    s = Session(["--watch", "grid_local_mask", "-q"], project, tty=True)
    try:
        s.until("watching for changes")
        s.send("h")  # a single key, no Enter
        s.until("Hint 1 of 3 for grid_local_mask")
        s.send("q")
        code, rest = s.finish()
        assert code == 0 and "stopped watching." in rest
        lflag = termios.tcgetattr(s.tty_fd)[3]
        assert lflag & termios.ICANON and lflag & termios.ECHO  # the terminal is given back
    finally:
        s.close()


def test_a_file_created_later_is_graded_when_watching_everything(project):
    (project / "exercises" / "shape_bias.py").unlink()
    s = Session(["--watch", "-q", "--debounce", "0.2"], project)
    try:
        first = s.until("watching for changes")
        assert "shape_bias" not in first
        shutil.copy(catalog.get("shape_bias").stub, project / "exercises")
        assert "shape_bias" in s.until("watching for changes")
        s.send("q\n")
        assert s.finish()[0] == 0
    finally:
        s.close()


def test_watch_with_json_is_a_usage_error(project):
    result = CliRunner().invoke(main, ["--watch", "--json"])
    assert result.exit_code == 2
    assert "--watch cannot be combined with --json" in result.output


def _save_keeping_size_and_mtime(path: Path) -> None:
    """A save that changes the content only: same size, same mtime (stat polling misses it,
    a file event does not)."""
    st = path.stat()
    text = path.read_text()
    assert "Read grid_local_mask.md" in text
    path.write_text(text.replace("Read grid_local_mask.md", "READ grid_local_mask.md", 1))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)


def test_watch_sees_saves_through_file_events(project):
    pytest.importorskip("watchfiles")
    target = project / "exercises" / "grid_local_mask.py"
    s = Session(["--watch", "grid_local_mask", "-v", "--debounce", "0.2"], project)
    try:
        first = s.until("watching for changes")
        assert "watch mode: file events" in first and "polling" not in first
        _save_keeping_size_and_mtime(target)  # only an event can tell this save
        second = s.until("watching for changes", timeout=60)
        assert "Since the last run: no test changed its verdict (0/9 pass)" in second
        s.send("q\n")
        assert s.finish()[0] == 0
    finally:
        s.close()


def _watch_by_polling(project: Path, args: list[str], expected: str) -> None:
    """Watch mode without file events: ``expected`` says so, and a save is still graded."""
    target = project / "exercises" / "grid_local_mask.py"
    s = Session(["--watch", "grid_local_mask", "-v", "--debounce", "0.2", *args], project)
    try:
        first = s.until("watching for changes")
        assert expected in first, first
        shutil.copy(SOLUTIONS / "grid_local_mask.py", target)
        second = s.until("watching for changes", timeout=60)
        assert "Since the last run: 9 more tests pass" in second and "Score 9/9" in second
        assert "Traceback" not in first + second
        s.send("q\n")
        assert s.finish()[0] == 0
    finally:
        s.close()


def test_poll_option_polls_the_files(project):
    _watch_by_polling(project, ["--poll"], "watch mode: polling the files")


@pytest.mark.parametrize("shim, why", [
    ("raise ImportError('no module named watchfiles')\n", "no module named watchfiles"),
    ("def watch(*paths, **options):\n    raise OSError('OS file watch limit reached')\n",
     "OS file watch limit reached"),
])
def test_without_working_file_events_watch_falls_back_to_polling(project, tmp_path, monkeypatch,
                                                                 shim, why):
    (tmp_path / "shim").mkdir()
    (tmp_path / "shim" / "watchfiles.py").write_text(shim)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path / "shim"))
    _watch_by_polling(project, [], f"file events are not available ({why}): polling the "
                                   "files instead")
