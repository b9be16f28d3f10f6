"""``golden-output``: what a learner reads of each exercise's typical mistake, kept as a file.

The declared variant with a ``what`` (the screenshots' one; else the first known mistake) is
graded with the others; its terminal output (the ``grade`` command's, 100 columns, no colour,
each duration written ``-.--s``) must equal ``solutions/<slug>.golden.txt``. A change of
wording or layout is then a diff to review: ``grade pack check --grade --update-golden``
rewrites the files.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

from grader import catalog
from grader.authoring import variants
from grader.results import ExerciseResult, SubmissionResult

RULE = "golden-output"
WIDTH = 100
_DURATION = re.compile(r"[ \d]{2}\d\.\d\ds$", re.MULTILINE)


def normalise(text: str) -> str:
    """``text`` without what changes from run to run: each test's duration."""
    return _DURATION.sub("  -.--s", text)


def path_of(slug: str) -> Path:
    return catalog.SOLUTIONS_DIR / f"{slug}.golden.txt"


def shown(slug: str) -> variants.Variant | None:
    """The variant whose output is kept: the one with a ``what``, else the first mistake."""
    declared = variants.load(slug)
    every = (*declared.mistakes, *declared.uncatalogued)
    return next((v for v in every if v.what), declared.mistakes[0] if declared.mistakes
                else None)


def render(result: ExerciseResult) -> str:
    """The terminal output of one graded exercise, as the ``grade`` command prints it."""
    from grader.report import terminal

    stream = io.StringIO()
    printer = terminal.Printer(stream=stream, verbosity=1, width=WIDTH)
    for t in result.tests:
        printer.test(result.exercise, result.title, t)
    printer.finish(SubmissionResult("golden", "cpu", [result]), Path("reports/index.html"))
    return normalise(stream.getvalue())


def check(slug: str, name: str, result: ExerciseResult,
          update: bool) -> list[tuple[str, str]]:
    """(what, fix) for each problem of ``slug``'s golden output (of its variant ``name``);
    the file is rewritten instead when ``update``."""
    got, path = render(result), path_of(slug)
    if update:
        path.write_text(got)
        return []
    if not path.is_file():
        return [(f"no golden output {path.name}: what a learner reads of {name}",
                 f"write it with grade pack check {slug} --grade --update-golden, and read "
                 "it")]
    want = path.read_text()
    if got == want:
        return []
    old, new = want.splitlines(), got.splitlines()
    line = next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), min(len(old), len(new)))
    was = old[line].strip() if line < len(old) else "(the end)"
    now = new[line].strip() if line < len(new) else "(the end)"
    return [(f"what a learner reads of {name} changed, first at line {line + 1}: {was!r} is "
             f"now {now!r}", "if intended, rewrite it with --update-golden and review `git diff "
             f"{path.name}`")]
