"""Grade the learner's files once, print the verdicts and write the report: what `grade`
(``grading.py``) and watch mode (``watch.py``) share, so that neither imports the other."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from grader import catalog
from grader.engine.policy import Policy
from grader.report import terminal
from grader.results import ExerciseResult, SubmissionResult, TestResult
from grader.state import State

from . import workspace
from .common import in_project

NOTEBOOK_DIR_PREFIX = "grade-notebooks-"  # where a grading's notebooks become learner files


def grade_once(files: dict[str, Path | None], name: str, *, device: str, report_dir: Path,
               as_json: bool, verbosity: int, remember: bool = True,
               others: list[ExerciseResult] | None = None,
               spent_s: dict[str, float] | None = None, policy: Policy | None = None,
               budget_s: float = 900.0) -> SubmissionResult:
    """Grade ``files``, print a line per test and the summary, write the report.

    ``remember``: the files are the learner's own; record the grading in ``.grade/state.json``
    (scores, attempts, time). ``others``: earlier results of other exercises, written to the
    report beside these (watch mode re-grades one exercise). Returns this grading's result.
    """
    from grader.engine.runner import grade
    from grader.judge import expected
    from grader.report.submission_html import write_report
    from grader.sandbox import readable

    readable.hide(report_dir)
    expected.use_disk(in_project(".grade") / "cache" / "expected")
    before = workspace.versions(files) if remember else {}
    files, left_out = _from_notebooks(files)
    out = terminal.Printer(stream=sys.stderr if as_json else sys.stdout, verbosity=verbosity)
    out.start(name, device, len(files))
    for note in left_out:
        click.echo(note, err=as_json)

    def on_test(slug: str, result: TestResult) -> None:
        if files.get(slug) is not None:  # not-submitted exercises get one summary line
            out.test(slug, catalog.get(slug).title, result)

    try:
        result = grade(files, submission=name, device=device, on_test=on_test, policy=policy,
                       budget_s=budget_s)
    finally:
        for folder in {p.parent for p in files.values() if p is not None
                       and p.parent.name.startswith(NOTEBOOK_DIR_PREFIX)}:
            shutil.rmtree(folder, ignore_errors=True)
    shown = result
    if others:
        graded = {e.exercise for e in result.exercises}
        shown = SubmissionResult(submission=name, device=device, duration_s=result.duration_s,
                                 feedback=result.feedback, isolation=result.isolation,
                                 exercises=[e for e in others if e.exercise not in graded]
                                 + result.exercises)
        order = list(catalog.load())
        shown.exercises.sort(key=lambda e: order.index(e.exercise) if e.exercise in order
                             else len(order))
    index = write_report(shown, report_dir)
    if remember:
        workspace.remember(result, before, spent_s)
    out.finish(result, index)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    return result


def _from_notebooks(files: dict[str, Path | None]) -> tuple[dict[str, Path | None], list[str]]:
    """``files`` with each notebook replaced by its generated learner file, and the notes on
    the cells left out; a notebook that cannot be graded is a usage error (one line)."""
    if not any(p is not None and p.suffix == ".ipynb" for p in files.values()):
        return files, []
    import tempfile

    from grader.notebook.files import materialise

    try:
        return materialise(files, Path(tempfile.mkdtemp(prefix=NOTEBOOK_DIR_PREFIX)))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


def next_step(result: SubmissionResult) -> str | None:
    """``next: grade show NEXT`` once an exercise of ``result`` passed: the first exercise after
    it in the index's order (wrapping round) not passed yet; None when none passed."""
    passed = [e.exercise for e in result.exercises if e.status == "passed"]
    order = list(catalog.load())
    if not passed or not set(passed) & set(order):
        return None
    done = {s for s, p in State.load().progress.items() if p.mastered} | set(passed)
    last = max(order.index(s) for s in passed if s in order)
    left = [s for s in order[last + 1:] + order[:last + 1] if s not in done]
    if not left:
        return (f"next: nothing left, all {len(order)} exercises pass (grade progress: your "
                "record; grade interview: against the clock)")
    return f"next: grade show {left[0]}"
