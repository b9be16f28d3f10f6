"""The exercise index: one TOML file (``grader/exercises.toml``) lists every exercise.

Per exercise: slug, title, difficulty, tags, points, default tolerances, progressive hints.
The files of exercise ``slug`` sit side by side by convention:

- ``grader/stubs/<slug>.py`` the stub (the only one: what a release ships, what ``grade
  reset`` restores), ``exercises/<slug>.md`` the statement; ``exercises/<slug>.py`` is the
  learner's working copy, which nothing in the grader reads as a stub;
- ``solutions/<slug>.py`` the reference, ``solutions/<slug>.variants.toml`` its declared edits
  (known mistakes and other wrong files); ``grader/suites/test_<slug>.py`` the hidden suite.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
PROJECT_DIR = PACKAGE_DIR.parent
INDEX = PACKAGE_DIR / "exercises.toml"
SUITES_DIR = PACKAGE_DIR / "suites"
# the references: the checkout's (or a bundle source's) solutions/, else those an install
# outside the source carries (setup.py); a student release has neither
SOLUTIONS_DIR = PROJECT_DIR / "solutions" if (PROJECT_DIR / "solutions").is_dir() else \
    PACKAGE_DIR / "_references"
STUBS_DIR = PACKAGE_DIR / "stubs"   # the pack's stubs
EXERCISES_DIR = PROJECT_DIR / "exercises"  # statements, and the learner's working copies


@dataclass(frozen=True)
class Exercise:
    slug: str
    title: str
    difficulty: str
    tags: tuple[str, ...]
    points: float
    rtol: float
    atol: float
    hints: tuple[str, ...]
    summary: str = ""
    functions: tuple[str, ...] = field(default_factory=tuple)
    # tests the statement documents as points for the form alone (a trivial answer earns them)
    format_only: tuple[str, ...] = field(default_factory=tuple)
    # functions whose statement allows them to change their arguments in place (every other
    # call that does fails: faults.ArgumentsModified)
    may_modify: tuple[str, ...] = field(default_factory=tuple)

    @property
    def needs_torch(self) -> bool:
        return "torch" in self.tags

    @property
    def stub(self) -> Path:
        return STUBS_DIR / f"{self.slug}.py"

    @property
    def statement(self) -> Path:
        return EXERCISES_DIR / f"{self.slug}.md"

    @property
    def working_copy(self) -> Path:
        """The learner's file in this project (theirs: never read as the stub)."""
        return EXERCISES_DIR / f"{self.slug}.py"

    @property
    def solution(self) -> Path:
        return SOLUTIONS_DIR / f"{self.slug}.py"

    @property
    def variants(self) -> Path:
        """The one declaration of the reference's edits (grader/authoring/variants.py)."""
        return SOLUTIONS_DIR / f"{self.slug}.variants.toml"

    @property
    def suite(self) -> Path:
        return SUITES_DIR / f"test_{self.slug}.py"


@lru_cache(maxsize=1)
def load() -> dict[str, Exercise]:
    """All exercises, in index order, keyed by slug."""
    out: dict[str, Exercise] = {}
    for entry in tomllib.loads(INDEX.read_text())["exercise"]:
        out[entry["slug"]] = Exercise(
            slug=entry["slug"], title=entry["title"], difficulty=entry["difficulty"],
            tags=tuple(entry.get("tags", ())), points=float(entry["points"]),
            rtol=float(entry.get("rtol", 1e-7)), atol=float(entry.get("atol", 1e-9)),
            hints=tuple(entry["hints"]), summary=entry.get("summary", ""),
            functions=tuple(entry.get("functions", ())),
            format_only=tuple(entry.get("format_only", ())),
            may_modify=tuple(entry.get("may_modify", ())))
    return out


def get(slug: str) -> Exercise:
    return load()[slug]


def pack_needs_torch() -> bool:
    """Whether an exercise of the pack (a release's: its assignment's) is tagged torch."""
    return any(ex.needs_torch for ex in load().values())


TORCH_INSTALL = ("pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu "
                 "(the CPU build; without --index-url pip may take a multi-GB CUDA build)")


RELEASE_INFO = PACKAGE_DIR / "release.json"


@lru_cache(maxsize=1)
def closest(name: str) -> str | None:
    """The exercise a mistyped ``name`` most likely means (difflib; else the one slug that
    contains it), or None."""
    import difflib

    slugs = list(load())
    wanted = name.strip().lower().replace("-", "_")
    close = difflib.get_close_matches(wanted, slugs, n=1, cutoff=0.6)
    if close:
        return close[0]
    containing = [s for s in slugs if len(wanted) >= 3 and wanted in s]
    return containing[0] if len(containing) == 1 else None


def release_info() -> dict | None:
    """In a student release (``grade release``): its assignment and, per exercise, how many
    hidden tests run only when the work is graded; None in the full project."""
    import json

    try:
        return json.loads(RELEASE_INFO.read_text())
    except (OSError, ValueError):
        return None


@lru_cache(maxsize=1)
def pack_version() -> str:
    """A fingerprint of everything a verdict depends on: the index (tolerances, points), the
    hidden suites, the references, the engine and the worker harness, and the version."""
    import hashlib

    from grader import __version__

    digest = hashlib.sha256(__version__.encode())
    roots = {"index": INDEX, "suites": SUITES_DIR, "solutions": SOLUTIONS_DIR,
             "engine": PACKAGE_DIR / "engine", "sandbox": PACKAGE_DIR / "sandbox",
             "suite": PACKAGE_DIR / "suite.py"}
    for label, root in roots.items():  # (named by label: the same wherever it is installed)
        files = sorted(root.rglob("*.py")) + sorted(root.rglob("*.ini")) if root.is_dir() \
            else [root] if root.exists() else []  # (a student release has no references)
        for f in files:
            digest.update(f"{label}/{f.relative_to(root) if root.is_dir() else ''}".encode())
            digest.update(f.read_bytes())
    return digest.hexdigest()[:16]


# `python3 -m grader.catalog needs-torch`: the set-up scripts ask before anything is installed
# (this module needs the standard library only)
if __name__ == "__main__":
    import sys

    sys.exit(0 if sys.argv[1:] == ["needs-torch"] and pack_needs_torch() else 1)
