"""A release's exercise as a notebook: ``exercises/SLUG.ipynb`` made from the statement and
the stub (nbformat 4): the statement as markdown cells (split before each ``## `` heading),
a ``%load_ext grader`` cell, and the stub in a code cell headed by ``%%grade SLUG``."""

from __future__ import annotations

import re
from pathlib import Path


def exercise_notebook(slug: str, statement: str, stub: str) -> str:
    """The notebook's JSON text."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    parts = [p.strip() for p in re.split(r"(?m)^(?=## )", statement) if p.strip()]
    nb.cells = [nbformat.v4.new_markdown_cell(p) for p in parts]
    nb.cells.append(nbformat.v4.new_markdown_cell(
        f"Complete `{slug}` in the cell below, then run it: the cell runs as usual and is "
        f"graded (the same as `grade {slug}`). `%grade_hint {slug}` shows the next hint. Only "
        "imports, functions, classes and constants are graded: experiments in other cells "
        "are never run by the grader."))
    nb.cells.append(nbformat.v4.new_code_cell("%load_ext grader"))
    nb.cells.append(nbformat.v4.new_code_cell(f"%%grade {slug}\n{stub.rstrip()}\n"))
    return nbformat.writes(nb)


def write_exercise_notebook(slug: str, statement: Path, stub: Path, dest: Path) -> Path:
    """Write ``dest/SLUG.ipynb``; returns its path."""
    path = dest / f"{slug}.ipynb"
    path.write_text(exercise_notebook(slug, statement.read_text(encoding="utf-8"),
                                      stub.read_text(encoding="utf-8")), encoding="utf-8")
    return path
