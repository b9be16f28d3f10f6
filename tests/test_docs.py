"""The documentation cannot go stale: its runnable shell blocks run, its links resolve.

A fenced block whose info string is ``bash runnable`` (```` ```bash runnable ````) is a
runnable block. Each document's runnable blocks run in the order they appear, with bash
(``set -euo pipefail``), in one fresh copy of this project per document (tracked files and new
ones git does not ignore, as a fresh clone has them), so a block may use what an earlier block
of the same document wrote. ``grade`` resolves to this venv's ``bin/`` (put first on ``PATH``),
and ``PYTHONPATH`` points at the copy so that the copy's grader is the one that runs; ``HOME``
is a temporary folder. A block passes when it ends with exit status 0, or with the status its
first line declares as ``# exit N`` (a block that shows a failing grade, say). Only cheap,
offline commands are marked runnable: ``./dev`` commands (they create a venv), interactive
ones (``--watch``, ``interview``, ``$EDITOR``) and those that need data a reader brings
(``SUBMISSIONS``, a Canvas roster, a cluster) are shown unmarked.

A document may also have its blocks' output checked (``OUTPUT_CHECKS``): AUTHORING.md's
worked example (scaffold, the markers reported, every one written, the working copy included,
then ``grade pack check --grade`` green).

Every relative link of ``README.md`` and ``docs/*.md`` must name an existing file, and an
``#anchor`` on a Markdown file must name one of its headings (GitHub's heading slugs).

The README's teacher sequence writes a student release inside the project: ruff, as ``./dev``
runs it and bare, then finds nothing of it (``test_ruff_skips_what_is_written_inside``).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import copy_of_this_project

from grader import catalog

ROOT = catalog.PROJECT_DIR
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# one block's limit, a guard against a hang (a block takes seconds: AUTHORING.md's longest,
# two `grade pack check --grade` of the scaffold's exercise, about 10 s on a quiet machine)
BLOCK_SECONDS = 300

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
EXIT = re.compile(r"\A\s*# exit (\d+)\s*$", re.MULTILINE)


def runnable_blocks(doc: Path) -> list[tuple[int, str]]:
    """The runnable blocks of ``doc``: (the line its fence opens on, its text)."""
    text = doc.read_text()
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(1).split() == ["bash", "runnable"]:
            blocks.append((text.count("\n", 0, m.start()) + 1, m.group(2)))
    return blocks


def expected_status(block: str) -> int:
    m = EXIT.match(block)
    return int(m.group(1)) if m else 0


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    text = FENCE.sub("", doc.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6}\s+(.+?)\s*$", text, re.MULTILINE)}


DOCS_WITH_BLOCKS = [d for d in DOCS if runnable_blocks(d)]


def test_the_docs_have_runnable_blocks():
    names = {d.name for d in DOCS_WITH_BLOCKS}
    assert {"learner.md", "teacher.md", "security.md", "AUTHORING.md"} <= names, names


def _authoring_worked_example(ran: list[tuple[str, subprocess.CompletedProcess]]) -> None:
    """AUTHORING.md's worked example, as its blocks ran: the scaffold's markers reported, one
    per file written and one in the index entry; then every marker written (the learner's
    working copy reset to the finished stub) and every rule, graded ones too, passing."""
    slug = "window_sum"
    places = {f"exercises/{slug}.md", f"grader/stubs/{slug}.py", f"exercises/{slug}.py",
              f"solutions/{slug}.py", f"solutions/{slug}.variants.toml",
              f"grader/suites/test_{slug}.py", "grader/exercises.toml"}
    blocks = [block for block, _ in ran]
    done = {block: result for block, result in ran}

    def the(command: str, status: int = 0) -> str:
        """The one block that runs ``command`` (a line of its own) and ends with ``status``."""
        found = [b for b in blocks if expected_status(b) == status and any(
            line.split("#")[0].strip() == command for line in b.splitlines())]
        assert len(found) == 1, f"one block of AUTHORING.md runs `{command}`: {found}"
        return found[0]

    left = done[the(f"grade pack check {slug}", status=1)].stdout.splitlines()
    assert left and all(line.endswith("(nothing-left)") for line in left), left
    assert {line.split(": ")[1].rsplit(":", 1)[0] for line in left} == places, left
    filled = the(f"grade reset {slug}")
    assert all(place in filled for place in places - {f"exercises/{slug}.py"}), filled
    assert done[filled].stdout.rstrip().endswith("No problem."), done[filled].stdout
    graded = done[the(f"grade pack check {slug} --grade")].stdout
    assert graded.rstrip().endswith("No problem.") and "mutants-killed" in graded, graded


OUTPUT_CHECKS = {"AUTHORING.md": _authoring_worked_example}


@pytest.mark.parametrize("doc", DOCS_WITH_BLOCKS, ids=lambda d: d.name)
def test_runnable_blocks_run(doc: Path, tmp_path: Path):
    copy = copy_of_this_project(tmp_path / "project", fresh=True)  # what the docs describe
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "PYTHON"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=str(copy), HOME=str(home), NO_COLOR="1")
    ran = []
    for line, block in runnable_blocks(doc):
        where = f"{doc.relative_to(ROOT)}:{line}"
        try:
            done = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=copy, env=env,
                                  capture_output=True, text=True, timeout=BLOCK_SECONDS,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            pytest.fail(f"{where}: the block ran past {BLOCK_SECONDS} s:\n{block}")
        want = expected_status(block)
        assert done.returncode == want, (
            f"{where}: exit status {done.returncode}, the block declares {want}:\n{block}\n"
            f"--- stdout\n{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}")
        ran.append((block, done))
    if doc.name in OUTPUT_CHECKS:
        OUTPUT_CHECKS[doc.name](ran)


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: str(d.relative_to(ROOT)))
def test_relative_links_resolve(doc: Path):
    text = FENCE.sub("", doc.read_text())
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # https:, mailto:, ...
        path, _, anchor = target.partition("#")
        dest = (doc.parent / path).resolve() if path else doc
        if not dest.exists():
            broken.append(f"{target}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            broken.append(f"{target}: no heading '{anchor}' in {dest.name}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def _flagged(done: subprocess.CompletedProcess) -> set[str]:
    """The files named by ruff's concise output."""
    return {m.group(1) for m in re.finditer(r"^(\S+?):\d+:\d+: ", done.stdout, re.MULTILINE)}


def test_ruff_skips_what_is_written_inside(tmp_path: Path):
    """The README's teacher sequence writes a student release in the project's folder (whose
    generated suites are not this project's style), and a learner keeps notebooks and reports
    there: ruff as `./dev` runs it (its `lint`, a bare `ruff check`) finds nothing in them, and
    `ruff check .` agrees. pyproject.toml's [tool.ruff] `include` lists the project's own
    sources; a release's pyproject.toml has no [tool.ruff], so it is no ruff project of its own.
    Each folder holds a planted unused import, and so does one of the project's own files: ruff
    must name that one."""
    copy = copy_of_this_project(tmp_path / "project", fresh=True)
    (copy / "assignment.toml").write_text(
        'title = "Week 3"\nexercises = ["grid_local_mask", "conv_via_attention"]\n')
    made = subprocess.run([sys.executable, "-m", "grader", "release", "--assignment",
                           "assignment.toml", "student/"], cwd=copy, capture_output=True,
                          text=True, timeout=300)
    assert made.returncode == 0, made.stderr
    assert "[tool.ruff" not in (copy / "student/pyproject.toml").read_text()
    written = ("student/scratch.py", "student/grader/suites/scratch.py", "reports/scratch.py",
               "notebooks/scratch.py")
    for name in (*written, "grader/scratch_own.py"):
        (copy / name).parent.mkdir(parents=True, exist_ok=True)
        (copy / name).write_text("import os\n")
    (copy / "notebooks/kept.ipynb").write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                   "source": ["import os\n"]}],
        "metadata": {"language_info": {"name": "python"}}, "nbformat": 4, "nbformat_minor": 5}))
    venv = Path(sys.executable).parent.parent
    lint = re.search(r"^lint\(\) \{\n.*?^\}\n", (copy / "dev").read_text(),
                     re.MULTILINE | re.DOTALL).group(0)
    env = {**os.environ, "RUFF_OUTPUT_FORMAT": "concise", "RUFF_NO_CACHE": "true"}
    as_dev = subprocess.run(["bash", "-euo", "pipefail", "-c", f'VENV="$1"\n{lint}lint', "lint",
                             str(venv)], cwd=copy, capture_output=True, text=True, env=env,
                            timeout=120)
    bare = subprocess.run([str(venv / "bin/ruff"), "check", "."], cwd=copy,
                          capture_output=True, text=True, env=env, timeout=120)
    for done in (as_dev, bare):
        flagged = _flagged(done)
        assert "grader/scratch_own.py" in flagged, done.stdout + done.stderr
        assert not {f for f in flagged if f.split("/")[0] in ("student", "reports",
                                                                 "notebooks")}, flagged
    assert _flagged(as_dev) == _flagged(bare)
