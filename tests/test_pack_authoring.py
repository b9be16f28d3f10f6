"""Authoring through the real CLI, in a copy of this project: `grade pack new` scaffolds an
exercise that `grade pack check` grades at once and lists what is left to write; filled in,
`grade pack check --grade` is green; each rule broken once gives its message and exit 1."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_of_this_project

SLUG = "toy_scale"
TODO = "TODO(pack new)"


def _grade(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "grader", *args], cwd=project,
                          capture_output=True, text=True, timeout=300)


def _files(project: Path) -> list[Path]:
    return [project / p for p in (f"exercises/{SLUG}.md", f"grader/stubs/{SLUG}.py",
                                  f"solutions/{SLUG}.py", f"solutions/{SLUG}.variants.toml",
                                  f"grader/suites/test_{SLUG}.py",
                                  "grader/exercises.toml")]


@pytest.fixture(scope="module")
def filled(tmp_path_factory):
    project = copy_of_this_project(tmp_path_factory.mktemp("pack") / "project")
    made = _grade(project, "pack", "new", SLUG, "--title", "Scale a vector")
    assert made.returncode == 0, made.stderr
    assert f"grader/suites/test_{SLUG}.py" in made.stdout and "(nothing-left)" in made.stdout
    left = _grade(project, "pack", "check", SLUG)
    assert left.returncode == 1 and f"{SLUG}: exercises/{SLUG}.md:3:" in left.stdout
    assert all(line.endswith("(nothing-left)") for line in left.stdout.splitlines())
    for path in _files(project):  # the author writes what was marked
        path.write_text(path.read_text().replace(f"{TODO}: ", "").replace(f"  # {TODO}", ""))
    unread = _grade(project, "pack", "check", SLUG, "--grade")  # no golden output yet
    said = unread.stdout.splitlines()
    assert unread.returncode == 1 and any(line.endswith("(golden-output)") for line in said)
    assert any(line.endswith("(confirm-table)") for line in said)  # nor its table
    written = _grade(project, "pack", "check", SLUG, "--grade", "--update-golden")
    assert written.returncode == 0 and "Golden outputs rewritten" in written.stdout
    assert "Your output equals the input" in (project / f"solutions/{SLUG}.golden.txt").read_text()
    green = _grade(project, "pack", "check", SLUG, "--grade")
    assert green.returncode == 0, green.stdout + green.stderr
    assert "No problem" in green.stdout and "reference-full-marks" in green.stdout
    return project


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) >= 1, (path, old)
    path.write_text(text.replace(old, new, 1))


BREAKS = {
    "files-exist": lambda p: (p / f"grader/suites/test_{SLUG}.py").unlink(),
    "index-schema": lambda p: _edit(p / "grader/exercises.toml",
                                    f'slug = "{SLUG}"\ntitle = "Scale a vector"\n'
                                    'difficulty = "easy"',
                                    f'slug = "{SLUG}"\ntitle = "Scale a vector"\n'
                                    'difficulty = "tricky"'),
    "statement-headings": lambda p: _edit(p / f"exercises/{SLUG}.md",
                                          "## The interview question", "## Questions"),
    "stub-contract": lambda p: _edit(p / f"grader/stubs/{SLUG}.py", "raise NotImplementedError",
                                     "return x"),
    "reference-signatures": lambda p: _edit(p / f"solutions/{SLUG}.py", "factor: float",
                                            "scale: float = 1.0"),
    "suite-tests": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                   ', hint_for=("values", "shape")', ""),
    "suite-mistakes": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                      '@mistake(F, "divided"', '@staticmethod  # (F, "divided"'),
    "points-sum": lambda p: _edit(p / "grader/exercises.toml", "points = 2\nrtol = 1e-7",
                                  "points = 3\nrtol = 1e-7"),
    "raises-confirmed": lambda p: (p / f"grader/suites/test_{SLUG}.py").open("a").write(
        '\n\n@graded(1, "Reject a bad factor.", hint_for=("not_raised",))\n'
        'def test_bad(check):\n    """Raises."""\n'
        '    check.raises("ValueError", F, [1.0], None)\n'),
    "nothing-left": lambda p: _edit(p / f"solutions/{SLUG}.py", '"""Reference',
                                    f'# {TODO}: again\n"""Reference'),
    "index-order": lambda p: (p / "solutions/ghost.py").write_text("x = 1\n"),
    "variants-declared": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                         '[[variant]]\nname = "flattened"', '[[ignored]]'),
    "edits-apply": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                   '"np.ravel(x) * factor"]', '"np.ravel(x) * factor"], '
                                   '["no such text", "x"]'),
    "mistake-has-variant": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                           'small = "divided"', 'small = "halved"'),
    # planted nothing: the file is wrong, but not as the mistake it says
    "mistake-named": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                     '"np.asarray(x, dtype=float)"]]',
                                     '"np.asarray(x, dtype=float) * factor * 1.5"]]'),
    # an uncatalogued variant that is in fact a known mistake
    "variant-no-cause": lambda p: _edit(p / f"solutions/{SLUG}.variants.toml",
                                        '"np.asarray(x, dtype=float) + factor"',
                                        '"np.asarray(x, dtype=float) / factor"'),
    "base-full-marks": lambda p: p.joinpath(f"solutions/{SLUG}.variants.toml").write_text(
        p.joinpath(f"solutions/{SLUG}.variants.toml").read_text().replace(
            'name = "factor_squared"\n', 'name = "factor_squared"\nbase = "wrong"\n')
        + '\n[bases.wrong]\nappend = "\\nraise ValueError(\'a base must be right\')\\n"\n'),
    # a change of wording: the reference's message of a mistake
    "golden-output": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                     "Your output equals the input: multiply by factor.",
                                     "Your output equals the input: scale it by factor."),
    # the suite changed after its table was written
    "confirm-table": lambda p: (p / f"grader/suites/test_{SLUG}.py").open("a").write(
        "\n# a comment: the suite's text changed\n"),
    "mistakes-separated": lambda p: _edit(p / f"grader/suites/test_{SLUG}.py",
                                          "PROBES = probes(F, ", "PROBES = ("),
    # a test whose answer is all zeros: returning zeros earns its point
    "trivial-scores-nothing": lambda p: (
        _edit(p / "grader/exercises.toml", "points = 2\nrtol = 1e-7", "points = 3\nrtol = 1e-7"),
        (p / f"grader/suites/test_{SLUG}.py").open("a").write(
            '\n\n@graded(1, "Zero stays zero.", hint_for=("values",))\n'
            'def test_zero(check):\n    """A zero vector."""\n'
            '    check.call(F, np.zeros(3), 2.0)\n')),
    # graded against itself, a reference fails where it cannot compute a test's input (or
    # breaks a property a test checks): here, a matrix
    "reference-full-marks": lambda p: _edit(p / f"solutions/{SLUG}.py", "    return np.asarray",
                                            "    if np.ndim(x) == 2:\n        raise ValueError("
                                            "'not yet')\n    return np.asarray"),
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
