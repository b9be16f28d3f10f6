"""Authoring through the real CLI, in a copy of this project: `grade pack new` scaffolds an
exercise (a sliding-window sum) that `grade pack check` grades at once and lists what is left
to write, a `TODO(pack new)` marker in each file, the working copy and the index entry; filled
in, `grade pack check --grade` is green; each rule broken once gives its message and exit 1."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_of_this_project

SLUG = "toy_window"
TITLE = "Sum over a sliding window"
TODO = "TODO(pack new)"
# where `grade pack new` leaves a marker line: the files the author writes, the learner's
# working copy (the unfinished stub) and the index entry
AUTHORED = (f"exercises/{SLUG}.md", f"grader/stubs/{SLUG}.py", f"solutions/{SLUG}.py",
            f"solutions/{SLUG}.variants.toml", f"grader/suites/test_{SLUG}.py",
            "grader/exercises.toml")
WORKING_COPY = f"exercises/{SLUG}.py"


def _grade(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=project,
                          capture_output=True, text=True, timeout=300)


def _marked(stdout: str) -> dict[str, str]:
    """The file of each `nothing-left` problem of a check's output, by the problem's line."""
    return {line: line.split(": ")[1].rsplit(":", 1)[0] for line in stdout.splitlines()
            if line.endswith("(nothing-left)")}


def _delete_markers(path: Path) -> None:
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True)
                            if TODO not in line))


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    project = copy_of_this_project(tmp_path_factory.mktemp("pack") / "project")
    made = _grade(project, "pack", "new", SLUG, "--title", TITLE)
    assert made.returncode == 0, made.stderr
    assert f"grader/suites/test_{SLUG}.py" in made.stdout and "(nothing-left)" in made.stdout
    left = _grade(project, "pack", "check", SLUG)  # one marker in each file and in the entry
    assert left.returncode == 1 and f"{SLUG}: exercises/{SLUG}.md:3:" in left.stdout
    assert all(line.endswith("(nothing-left)") for line in left.stdout.splitlines())
    assert sorted(_marked(left.stdout).values()) == sorted((*AUTHORED, WORKING_COPY))
    for name in AUTHORED:  # the author keeps the example (a sliding-window sum)
        _delete_markers(project / name)
    stale = _grade(project, "pack", "check", SLUG)  # the working copy is the unfinished stub
    assert stale.returncode == 1 and list(_marked(stale.stdout).values()) == [WORKING_COPY]
    assert f"grade reset {SLUG}" in stale.stdout
    assert _grade(project, "reset", SLUG).returncode == 0
    static = _grade(project, "pack", "check", SLUG)
    assert static.returncode == 0 and "No problem" in static.stdout, static.stdout
    unread = _grade(project, "pack", "check", SLUG, "--grade")  # no golden output yet
    said = unread.stdout.splitlines()
    assert unread.returncode == 1 and any(line.endswith("(golden-output)") for line in said)
    assert any(line.endswith("(confirm-table)") for line in said)  # nor its table
    written = _grade(project, "pack", "check", SLUG, "--grade", "--update-golden")
    assert written.returncode == 0 and "Golden outputs rewritten" in written.stdout
    golden = (project / f"solutions/{SLUG}.golden.txt").read_text()
    assert "Your output is each window's mean" in golden
    green = _grade(project, "pack", "check", SLUG, "--grade")
    assert green.returncode == 0, green.stdout + green.stderr
    assert "No problem" in green.stdout and "reference-full-marks" in green.stdout
    return project


def test_a_marker_is_reported_wherever_it_is_left(filled, tmp_path):
    """A `TODO(pack new)` line in any file of the exercise, its working copy or its index
    entry is one problem naming that file and line; one in another entry or in the index's
    header is not this exercise's."""
    project = tmp_path / "project"
    shutil.copytree(filled, project, ignore=shutil.ignore_patterns("__pycache__"))
    for name in (*AUTHORED, WORKING_COPY):
        path = project / name
        lines = path.read_text().splitlines(keepends=True)
        at = len(lines) if name == "grader/exercises.toml" else 1  # the entry is the last one
        comment = "" if name.endswith(".md") else "# "
        lines.insert(at, f"{comment}{TODO}: planted in {name}\n")
        path.write_text("".join(lines))
    index = project / "grader/exercises.toml"
    index.write_text(f"# {TODO}: not an entry's\n" + index.read_text().replace(
        'slug = "grid_local_mask"\n', f'slug = "grid_local_mask"\n# {TODO}: another\n'))
    planted = {name: next(n for n, line in enumerate((project / name).read_text().splitlines(), 1)
                          if f"planted in {name}" in line) for name in (*AUTHORED, WORKING_COPY)}
    done = _grade(project, "pack", "check", SLUG)
    assert done.returncode == 1
    found = _marked(done.stdout)
    assert sorted(found.values()) == sorted(planted), done.stdout
    for line, name in found.items():
        assert line.startswith(f"{SLUG}: {name}:{planted[name]}: {TODO} in the ")
        assert f"planted in {name} — " in line


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, (path, old)
    path.write_text(text.replace(old, new, 1))


BREAKS = {
    "files-exist": lambda p: (p / f"grader/suites/test_{SLUG}.py").unlink(),
    "index-schema": lambda p: _edit(p / "grader/exercises.toml",
                                    f'slug = "{SLUG}"\ntitle = "{TITLE}"\ndifficulty = "easy"',
                                    f'slug = "{SLUG}"\ntitle = "{TITLE}"\n'
                                    'difficulty = "tricky"'),
    "statement-headings": lambda p: _edit(p / f"exercises/{SLUG}.md",
                                          "## The interview question", "## Questions"),
    "stub-contract": lambda p: _edit(p / f"grader/stubs/{SLUG}.py", "raise NotImplementedError",
                                     "return x"),
    "reference-signatures": lambda p: _edit(p / f"solutions/{SLUG}.py", "k: int)",
                                            "k: int = 2)"),
    "suite-tests": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                   ', hint_for=("values", "shape"))', ")"),
    "suite-mistakes": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                      '"Your output stops one window early',
                                      '"The output stops one window early'),
    "points-sum": lambda p: _edit(p / "grader/exercises.toml", "points = 3\nrtol = 1e-7",
                                  "points = 4\nrtol = 1e-7"),
    "raises-confirmed": lambda p: (p / f"grader/suites/test_{SLUG}.py").open("a").write(
        '\n\n@graded(1, "Reject a window of no values.", hint_for=("not_raised",))\n'
        'def test_bad(check):\n    """Raises."""\n'
        '    check.raises("ValueError", F, np.ones(3), 0)\n'),
    "nothing-left": lambda p: _edit(p / f"solutions/{SLUG}.py", '"""Reference',
                                    f'# {TODO}: again\n"""Reference'),
    "index-order": lambda p: (p / "solutions/ghost.py").write_text("x = 1\n"),
    "variants-declared": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                         '[[variant]]\nname = "whole_array_summed"',
                                         '[[ignored]]'),
    "edits-apply": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                   '"np.full(len(windows), x.sum())"]', '"np.full(len(windows), '
                                   'x.sum())"], ["no such text", "x"]'),
    "mistake-has-variant": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                           'small = "last_window_missing"', 'small = "halved"'),
    # planted nothing: the file is wrong, but not as the mistake it says
    "mistake-named": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                     '"windows.mean(axis=1)"]]',
                                     '"windows.mean(axis=1) * 1.5"]]'),
    # an uncatalogued variant that is in fact a known mistake
    "variant-no-cause": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                        '"windows.max(axis=1)"', '"windows.mean(axis=1)"'),
    "base-full-marks": lambda p: p.joinpath(f"solutions/{SLUG}.variants.toml").write_text(
        p.joinpath(f"solutions/{SLUG}.variants.toml").read_text().replace(
            'name = "first_value_left_out"\n', 'name = "first_value_left_out"\nbase = "wrong"\n')
        + '\n[bases.wrong]\nappend = "\\nraise ValueError(\'a base must be right\')\\n"\n'),
    # a change of wording: the reference's message of a mistake
    "golden-output": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                     "Your output is each window's mean:",
                                     "Your output is each window's average:"),
    # the suite changed after its table was written
    "confirm-table": lambda p: (p / f"grader/suites/test_{SLUG}.py").open("a").write(
        "\n# a comment: the suite's text changed\n"),
    "mistakes-separated": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                          "PROBES = probes(F, ", "PROBES = ("),
    # a test whose answer is all zeros: returning zeros earns its point
    "trivial-scores-nothing": lambda p: (
        _edit(p / "grader/exercises.toml", "points = 3\nrtol = 1e-7", "points = 4\nrtol = 1e-7"),
        (p / f"grader/suites/test_{SLUG}.py").open("a").write(
            '\n\n@graded(1, "Zeros sum to zero.", hint_for=("values",))\n'
            'def test_zero(check):\n    """A zero vector."""\n'
            '    check.call(F, np.zeros(3), 2)\n')),
    # graded against itself, a reference fails where it cannot compute a test's input (or
    # breaks a property a test checks): here, seven values
    "reference-full-marks": lambda p: _edit(p / f"solutions/{SLUG}.py", "    x = np.asarray",
                                            "    if len(x) == 7:\n        raise ValueError("
                                            "'not yet')\n    x = np.asarray"),
}


GRADED = ("reference-full-marks", "mistake-named", "variant-no-cause", "base-full-marks",
          "trivial-scores-nothing", "mistakes-separated", "golden-output", "confirm-table")
# rules broken by other tests: no-grader-error only by an engine bug (test_no_grader_errors
# tries the pack's odd returns); the generated files' rules by the pack's own files
# (tests/test_judgement.py, tests/test_mutants.py, tests/test_pack.py)
ELSEWHERE = {"no-grader-error", "shortcut-scores-nothing", "advice-preconditions",
             "mutants-killed", "mutants-no-false-cause"}


def test_every_rule_is_broken_once():
    """The rules the checker lists are the rules broken below, or elsewhere (``ELSEWHERE``)."""
    done = _grade(Path.cwd(), "pack", "check", "grid_local_mask", "--grade")
    checked = next(line for line in done.stdout.splitlines() if line.startswith("Checked "))
    listed = checked.split(": ", 1)[1].split(". No problem")[0].split(", ")
    assert set(listed) | {"index-order"} == set(BREAKS) | ELSEWHERE


@pytest.mark.parametrize("rule", sorted(BREAKS))
def test_each_rule_broken_once_says_so(filled, tmp_path, rule):
    project = tmp_path / "project"
    shutil.copytree(filled, project, ignore=shutil.ignore_patterns("__pycache__"))
    BREAKS[rule](project)
    args = ["pack", "check"] + ([] if rule == "index-order" else [SLUG])
    args += ["--grade"] if rule in GRADED else []
    done = _grade(project, *args)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [ln for ln in done.stdout.splitlines() if ln.endswith(f"({rule})")]
    assert lines, done.stdout
    assert all(" — " in ln and ln.split(":")[0] in (SLUG, "ghost") for ln in lines), lines
