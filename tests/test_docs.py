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

Every relative link of ``README.md`` and ``docs/*.md`` must name an existing file, and an
``#anchor`` on a Markdown file must name one of its headings (GitHub's heading slugs).
"""

from __future__ import annotations

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
BLOCK_SECONDS = 60  # one block's limit; every runnable block together takes well under a minute

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
    assert {"learner.md", "teacher.md", "security.md"} <= names, names


@pytest.mark.parametrize("doc", DOCS_WITH_BLOCKS, ids=lambda d: d.name)
def test_runnable_blocks_run(doc: Path, tmp_path: Path):
    copy = copy_of_this_project(tmp_path / "project", fresh=True)  # what the docs describe
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADER_", "PYTHON"))}
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=str(copy), HOME=str(home), NO_COLOR="1")
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
