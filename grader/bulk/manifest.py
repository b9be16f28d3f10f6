"""What a graded class folder knows of its run: ``OUT/class.json`` and ``OUT/.class/``.

``grade bulk`` writes them when grading ends, so that every export can be written again from
OUT alone (``bulk/exports.py``: after a review in ``grade review``, with the same names,
roster, adjustments and late policy): the class's students in order (graded, rejected or
pending, with what the LMS download said of them), the run's title, scope and layout, the
other pages of the report, and copies of the option files the exports read
(``.class/assignment.toml``, ``.class/roster.csv``, ``.class/adjust.csv`` or ``.toml``).

Only grader-owned data is written here; a submission's id, name and the LMS fields are the
download's (shown escaped wherever they appear, as in every report).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Literal

from grader.files import atomic_write_bytes, atomic_write_text, make_dir

FILE = "class.json"
FOLDER = ".class"
VERSION = 1
Status = Literal["graded", "rejected", "pending"]


class ManifestError(ValueError):
    """OUT is not a class folder ``grade bulk`` wrote (one sentence naming it)."""


@dataclass(frozen=True)
class Entry:
    """One submission of the class: ``status`` graded (its ``OUT/<id>/results.json``),
    rejected (``reason`` why, ``source`` where it came from) or pending (an interrupted run
    had not graded it); ``late`` flagged by the LMS download; ``submitted_at`` (ISO 8601)
    when the download says when; ``lms_*`` what the download knows of its student."""

    id: str
    status: Status
    name: str = ""
    reason: str = ""
    source: str = ""
    late: bool = False
    submitted_at: str | None = None
    lms_id: str = ""
    lms_name: str = ""
    lms_kind: str = ""


@dataclass(frozen=True)
class ClassManifest:
    title: str
    layout: str
    scope: str
    generated: str
    exercises: tuple[str, ...]
    students: tuple[Entry, ...]
    pages: tuple[tuple[str, str], ...] = ()
    files: dict[str, str] = field(default_factory=dict)  # role -> name under .class/
    out: Path = Path(".")

    def graded(self) -> list[str]:
        """The ids of the graded submissions, in the class's order."""
        return [e.id for e in self.students if e.status == "graded"]

    def copy(self, role: str) -> Path | None:
        """The run's copy of an option file (``assignment``, ``roster``, ``adjust``)."""
        name = self.files.get(role)
        return self.out / FOLDER / name if name else None

    def assignment(self):  # -> grader.assignment.Assignment | None
        """The run's assignment (its rubric and late policy), read from the copy."""
        from grader.assignment import AssignmentError, load

        path = self.copy("assignment")
        if path is None:
            return None
        try:
            return load(path)
        except AssignmentError as exc:
            raise ManifestError(f"{self.out}: the run's assignment no longer reads ({exc})") \
                from None


def write(out: Path, manifest: ClassManifest, options: dict[str, Path | None]) -> None:
    """Write ``OUT/class.json`` and copy the option files (``role -> path``; ``None``: the
    run had none, and an earlier run's copy is removed)."""
    folder = make_dir(out / FOLDER)
    files = {}
    for role, path in options.items():
        for old in folder.glob(f"{role}.*"):
            old.unlink()
        if path is not None:
            name = f"{role}{path.suffix.lower() or '.txt'}"
            atomic_write_bytes(folder / name, path.read_bytes())  # modes as --private says
            files[role] = name
    data = {"version": VERSION, **{k: v for k, v in asdict(manifest).items()
                                   if k not in ("out", "files", "students", "pages")},
            "files": files, "pages": [list(p) for p in manifest.pages],
            "students": [asdict(e) for e in manifest.students]}
    atomic_write_text(out / FILE, json.dumps(data, indent=1, ensure_ascii=False) + "\n")


def read(out: Path) -> ClassManifest:
    """The manifest of the class folder ``out``; ``ManifestError`` when it has none or it
    does not read."""
    path = Path(out) / FILE
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ManifestError(f"{out}: not a class folder written by `grade bulk` (no "
                            f"{FILE}; grade the class again with this version)") from None
    except (OSError, ValueError) as exc:
        raise ManifestError(f"{path}: cannot be read ({exc})") from None
    try:
        if data["version"] > VERSION:
            raise ManifestError(f"{path}: written by a newer grader (version "
                                f"{data['version']})")
        students = tuple(Entry(**e) for e in data["students"])
        return ClassManifest(
            title=str(data["title"]), layout=str(data["layout"]), scope=str(data["scope"]),
            generated=str(data["generated"]), exercises=tuple(data["exercises"]),
            students=students, pages=tuple((str(a), str(b)) for a, b in data["pages"]),
            files={str(k): str(v) for k, v in data["files"].items()}, out=Path(out))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, ManifestError):
            raise
        raise ManifestError(f"{path}: not a class manifest this grader reads ({exc})") \
            from None
