"""The learner files of one grading, with each notebook replaced by its generated ``.py``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from .extract import NotebookError, from_notebook

SUFFIXES = (".py", ".ipynb")


def learner_file(folder: Path, slug: str) -> Path | None:
    """``folder/SLUG.py`` or ``folder/SLUG.ipynb``, whichever is there (None: neither);
    raises ``ValueError`` (one sentence) when both are."""
    found = [folder / f"{slug}{s}" for s in SUFFIXES if (folder / f"{slug}{s}").is_file()]
    if len(found) > 1:
        raise ValueError(f"both {found[0]} and {found[1]} are there for {slug}: keep one of "
                         "them (a notebook or a .py file, not both)")
    return found[0] if found else None


def materialise(files: dict[str, Path | None], dest: Path | None = None
                ) -> tuple[dict[str, Path | None], list[str]]:
    """``files`` with each ``.ipynb`` replaced by a generated ``SLUG.py`` in ``dest`` (a new
    temporary folder by default), and the notes on what was left out. Raises ``ValueError``
    (one sentence naming the notebook) for a notebook that cannot be graded."""
    out: dict[str, Path | None] = {}
    notes: list[str] = []
    for slug, path in files.items():
        if path is None or path.suffix != ".ipynb":
            out[slug] = path
            continue
        try:
            made = from_notebook(path.read_bytes(), f"{slug}.ipynb")
        except NotebookError as exc:
            raise ValueError(f"{path} {exc}") from None
        except OSError as exc:
            raise ValueError(f"{path} could not be read ({exc.strerror})") from None
        if dest is None:
            dest = Path(tempfile.mkdtemp(prefix="grade-notebooks-"))
        target = dest / f"{slug}.py"
        target.write_text(made.text, encoding="utf-8")
        out[slug] = target
        if made.note:
            notes.append(made.note)
    return out, notes
