"""The terminal front of `grade`: --version, "did you mean", the next exercise after a pass,
an empty --submission, shell completion and bulk's progress bar."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from cli_driver import Session
from cli_driver import invoke as run

from grader import catalog
from grader.state import State

GRADE = Path(sys.executable).with_name("grade")
SOLUTIONS = Path(__file__).resolve().parents[1] / "solutions"
ORDER = list(catalog.load())


def test_version_prints_the_installed_version():
    version = importlib.metadata.version("vit-grader")
    result = run("--version")
    assert result.exit_code == 0, result.output
    assert result.output == f"grade, version {version}\n"
    proc = subprocess.run([str(GRADE), "--version"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"grade, version {version}\n"
    assert "--version" in run("--help").output


@pytest.mark.parametrize("args", [
    ["gird_local_mask"], ["run", "grid-local-mask"], ["show", "atention_rollout"],
    ["hint", "GRID_LOCAL_MASK"], ["reset", "grid_local_mak"], ["solution", "grid_locl_mask"],
    ["--watch", "grid_local_msk"], ["show", "rollout"],
])
def test_a_mistyped_exercise_suggests_the_closest_and_lists_the_valid_ones(project, args):
    result = run(*args)
    assert result.exit_code == 2
    want = "attention_rollout" if "rollout" in args[-1] else "grid_local_mask"
    assert f"unknown exercise {args[-1]!r} (did you mean {want}?)" in result.output
    assert "Valid exercises: " + ", ".join(ORDER) in " ".join(result.output.split())
    assert not (project / "reports").exists()


def test_a_name_close_to_nothing_suggests_nothing(project):
    result = run("show", "zzzz")
    assert result.exit_code == 2
    assert "unknown exercise 'zzzz'. Valid exercises:" in result.output
    assert "did you mean" not in result.output


def test_a_mistyped_command_suggests_the_command(project):
    result = run("shwo", "grid_local_mask")
    assert result.exit_code == 2
    assert "unknown exercise 'shwo' (did you mean the command `grade show`?)" in result.output


def test_bulk_exercises_list_suggests_the_closest(tmp_path):
    (tmp_path / "class").mkdir()
    result = run("bulk", str(tmp_path / "class"), "--out", str(tmp_path / "out"),
                 "--exercises", "grid_local_mask,atention_rollout,zzzz")
    assert result.exit_code == 2
    assert ("unknown exercises 'atention_rollout' (did you mean attention_rollout?), 'zzzz'. "
            "Valid exercises:") in " ".join(result.output.split())


def test_a_pass_says_which_exercise_comes_next(project):
    failed = run("grid_local_mask")
    assert failed.exit_code == 1 and "next:" not in failed.output
    shutil.copy(SOLUTIONS / "grid_local_mask.py", project / "exercises")
    result = run("grid_local_mask", "-q")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[-1] == f"next: grade show {ORDER[1]}"
    as_json = run("grid_local_mask", "--json")
    assert json.loads(as_json.stdout)["score"] == 9  # stdout stays pure JSON
    assert "next:" not in as_json.output


def test_next_skips_exercises_already_passed_and_says_when_none_is_left(project):
    state = State.load()
    for slug in ORDER[1:3]:
        state.of(slug).mastered_at = 1.0
    state.save()
    shutil.copy(SOLUTIONS / "grid_local_mask.py", project / "exercises")
    assert run("grid_local_mask").output.splitlines()[-1] == f"next: grade show {ORDER[3]}"
    state = State.load()
    for slug in ORDER[1:]:
        state.of(slug).mastered_at = 1.0
    state.save()
    last = run("grid_local_mask").output.splitlines()[-1]
    assert last.startswith(f"next: nothing left, all {len(ORDER)} exercises pass")


def test_a_submission_folder_without_an_exercise_file_is_a_usage_error(project, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    (empty / "helper.py").write_text("x = 1\n")
    (project / "reports").mkdir()
    (project / "reports" / "index.html").write_text("earlier report")
    result = run("--submission", str(empty))
    assert result.exit_code == 2
    assert "no exercise file in it" in result.output
    assert "grid_local_mask.py, attention_rollout.py" in result.output
    assert "nothing was graded or written" in result.output
    assert (project / "reports" / "index.html").read_text() == "earlier report"
    assert sorted(p.name for p in (project / "reports").iterdir()) == ["index.html"]

    shutil.copy(SOLUTIONS / "grid_local_mask.py", empty)
    named = run("--submission", str(empty), "attention_rollout", "--report-dir",
                str(tmp_path / "out"))
    assert named.exit_code == 2
    assert "(looked for attention_rollout.py, or .ipynb)" in named.output
    assert not (tmp_path / "out").exists()


def _completion_env(**extra: str) -> dict[str, str]:
    return {**os.environ, "PATH": f"{GRADE.parent}{os.pathsep}{os.environ.get('PATH', '')}",
            **extra}


def test_bash_completion_as_the_readme_enables_it(project):
    bash = shutil.which("bash")
    if bash is None:
        pytest.skip("no bash")
    script = ('eval "$(_GRADE_COMPLETE=bash_source grade)"\n'
              'COMP_WORDS=(grade show att); COMP_CWORD=2; _grade_completion grade\n'
              'printf "%s\\n" "${COMPREPLY[@]}"; COMPREPLY=()\n'
              'COMP_WORDS=(grade gr); COMP_CWORD=1; _grade_completion grade\n'
              'printf "%s\\n" "${COMPREPLY[@]}"\n')
    proc = subprocess.run([bash, "-c", script], env=_completion_env(), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["attention_rollout", "grid_local_mask"]
    assert "README" not in proc.stderr
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert 'eval "$(_GRADE_COMPLETE=bash_source grade)"' in readme


@pytest.mark.parametrize("shell, marker", [("zsh", "#compdef grade"),
                                           ("fish", "complete --no-files --command grade")])
def test_zsh_and_fish_completion_scripts_come_from_the_entry_point(shell, marker):
    proc = subprocess.run([str(GRADE)], env=_completion_env(_GRADE_COMPLETE=f"{shell}_source"),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and marker in proc.stdout, proc.stdout + proc.stderr
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert f"_GRADE_COMPLETE={shell}_source grade" in readme
    if shutil.which(shell):  # where the shell is installed, the script loads
        load = ('eval "$(_GRADE_COMPLETE=zsh_source grade)"' if shell == "zsh"
                else "_GRADE_COMPLETE=fish_source grade | source")
        shell_proc = subprocess.run([shell, "-c", load], env=_completion_env(),
                                    capture_output=True, text=True, timeout=60)
        assert shell_proc.returncode == 0, shell_proc.stderr


@pytest.fixture
def small_class(tmp_path):
    for sid in ("s1", "s2", "s3"):
        (tmp_path / "class" / sid).mkdir(parents=True)
        shutil.copy(catalog.get("grid_local_mask").stub, tmp_path / "class" / sid)
    return tmp_path


def _bulk(cwd: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(GRADE), "bulk", "class", "--out", "out", "--exercises",
                           "grid_local_mask", "--force", *extra], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_bulk_progress_bar_is_clicks_on_stderr_and_quiet_turns_it_off(small_class):
    piped = _bulk(small_class)
    assert piped.returncode == 0, piped.stderr
    assert "[" + "#" * 28 + "] 3/3" in piped.stderr  # one line in a log, at the end
    assert "3/3" not in piped.stdout and "\r" not in piped.stderr
    quiet = _bulk(small_class, "-q")
    assert quiet.returncode == 0 and "3/3" not in quiet.stderr

    s = Session(["bulk", "class", "--out", "out", "--exercises", "grid_local_mask", "--force"],
                small_class, tty=True)
    try:
        s.until("class report")
        code, rest = s.finish()
        out = s.output
    finally:
        s.close()
    assert code == 0
    # click's bar: redrawn in place (carriage return, the cursor hidden then shown again)
    assert "\r\x1b[?25l[" in out and "] 3/3" in out and "\x1b[?25h" in out
