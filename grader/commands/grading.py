"""`grade [run]`: grade the learner's exercises (or a submission folder) and write a report."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import click

from grader import catalog
from grader.engine.policy import Policy
from grader.engine.results import ExerciseResult, SubmissionResult, TestResult
from grader.report import terminal
from grader.state import State

from . import workspace
from .common import (
    EXERCISE,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    apply_private,
    check_isolation,
    device_option,
    exercises_dir_option,
    in_project,
    isolation_option,
    load_assignment,
    private_option,
    report_dir_option,
    resolve_device,
)

NOTEBOOK_DIR_PREFIX = "grade-notebooks-"  # where a grading's notebooks become learner files


def _select(exercises: tuple[str, ...], submission: Path | None, exercises_dir: Path, *,
            allow_empty: bool = False) -> tuple[dict[str, Path | None], str]:
    """Map each exercise to grade onto its learner file, ``SLUG.py`` or ``SLUG.ipynb`` (None =
    not submitted; both there is a usage error naming both).

    A submission folder without any of the files looked for is a usage error, unless
    ``allow_empty`` (Gradescope: an empty hand-in still gets its results file)."""
    if submission is not None:
        if not submission.is_dir():
            raise click.UsageError(f"--submission {submission}: not a folder")
        slugs = list(exercises) or list(catalog.load())
        files = _learner_files(submission, slugs)
        if not allow_empty and not any(p is not None for p in files.values()):
            raise click.UsageError(
                f"--submission {submission}: no exercise file in it (looked for "
                f"{', '.join(f'{s}.py' for s in slugs)}, or .ipynb); nothing was graded or "
                "written")
        return files, submission.resolve().name
    if not exercises_dir.is_dir():
        raise click.UsageError(f"there is no {exercises_dir}/ folder here: run grade inside the "
                               "project, or pass --submission DIR")
    if exercises:
        chosen = _learner_files(exercises_dir, list(exercises))
        missing = [s for s, p in chosen.items() if p is None]
        if missing:
            raise click.UsageError(f"no learner file for {', '.join(missing)} in "
                                   f"{exercises_dir}/ (run `grade reset` or restore the stub)")
        return chosen, "local"
    found = {s: p for s, p in _learner_files(exercises_dir, list(catalog.load())).items()
             if p is not None}
    if not found:
        raise click.UsageError(f"no exercise files found in {exercises_dir}/")
    return dict(found), "local"


def _learner_files(folder: Path, slugs: list[str]) -> dict[str, Path | None]:
    """``SLUG.py`` or ``SLUG.ipynb`` in ``folder`` per slug; both there is a usage error."""
    from grader.notebook.files import learner_file

    try:
        return {s: learner_file(folder, s) for s in slugs}
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None


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
    from grader.engine import expected
    from grader.engine.runner import grade
    from grader.report.html import write_report
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


@click.command("run")
@click.argument("exercises", nargs=-1, type=EXERCISE)
@click.option("--submission", type=click.Path(path_type=Path, file_okay=False),
              help="Grade the learner files in this folder (DIR/<exercise>.py or .ipynb).")
@exercises_dir_option
@report_dir_option
@device_option
@click.option("--json", "as_json", is_flag=True,
              help="Print the machine-readable result to stdout (progress goes to stderr).")
@click.option("--watch", is_flag=True,
              help="Re-grade an exercise whenever its file is saved; h: next hint, q: quit.")
@click.option("--debounce", type=click.FloatRange(min=0), default=0.4, hidden=True,
              help="Watch mode: seconds a file must stay unchanged before it is graded.")
@click.option("--poll", is_flag=True,
              help="Watch mode: poll the files instead of waiting for file-system events "
                   "(for a network or mounted folder whose events never arrive).")
@click.option("--gradescope", is_flag=True,
              help="Run as a Gradescope autograder: grade /autograder/submission (unless "
                   "--submission is given) and write the results in Gradescope's format.")
@click.option("--gradescope-out", type=click.Path(dir_okay=False, path_type=Path),
              help="Where --gradescope writes its results (default: "
                   "AUTOGRADER_ROOT/results/results.json).")
@click.option("--autograder-root", type=click.Path(file_okay=False, path_type=Path),
              default=Path("/autograder"), show_default=True,
              help="--gradescope: the folder Gradescope lays out (submission/, results/).")
@click.option("--assignment", "assignment_file", type=click.Path(
              exists=True, dir_okay=False, path_type=Path),
              help="An assignment.toml: grade its exercises with its points, limits and "
                   "feedback level.")
@click.option("--feedback", type=click.Choice(["full", "graded"]), default=None,
              help="What hidden tests tell (default: full; graded with --gradescope or an "
                   "assignment): graded shows no input, expected value or printed output.")
@click.option("--record", is_flag=True, hidden=True,
              help="Record the grading of --submission in .grade/state.json, as the learner's "
                   "own (the notebook magic grades the cell from a temporary folder).")
@isolation_option
@private_option
@click.option("-q", "--quiet", count=True, help="Less output (one line per exercise).")
@click.option("-v", "--verbose", count=True, help="More output (passed tests' notes, output).")
def run(exercises: tuple[str, ...], submission: Path | None, exercises_dir: Path,
        report_dir: Path, device: str, as_json: bool, watch: bool, debounce: float, poll: bool,
        gradescope: bool, gradescope_out: Path | None, autograder_root: Path,
        assignment_file: Path | None, feedback: str | None, record: bool, isolation: str,
        private: bool, quiet: int, verbose: int) -> None:
    """Grade exercises (the default command: `grade EXERCISE...` is `grade run EXERCISE...`)."""
    check_isolation(isolation)
    apply_private(private)
    task = load_assignment(assignment_file)
    if gradescope and submission is None:
        submission = autograder_root / "submission"
    gradescope_out = gradescope_out or autograder_root / "results" / "results.json"
    if task and not exercises:
        exercises = task.exercises
    default_level = "graded" if gradescope or task else "full"
    policy = task.policy(feedback) if task else Policy(feedback=feedback or default_level)
    budget = task.submission_seconds if task and task.submission_seconds else 900.0
    files, name = _select(exercises, submission, exercises_dir, allow_empty=gradescope)
    verbosity = 1 + verbose - quiet
    if watch:
        if as_json or gradescope:
            raise click.UsageError("--watch cannot be combined with --json or --gradescope")
        from .watch import watch_files

        folder = submission if submission is not None else exercises_dir
        # without names, every exercise's file is watched, also one not created yet
        # (a notebook there is watched in place of the .py)
        watched = {s: _learner_files(folder, [s])[s] or folder / f"{s}.py"
                   for s in (exercises or catalog.load())}
        if device == "cuda":
            resolve_device(device, list(watched))  # no GPU: a usage error now, not later
        watch_files(watched, name, device=device, report_dir=report_dir, verbosity=verbosity,
                    remember=submission is None, debounce_s=debounce, poll=poll)
        sys.exit(EXIT_OK)
    dev = resolve_device(device, list(files))
    try:
        result = grade_once(files, name, device=dev, report_dir=report_dir, as_json=as_json,
                            verbosity=verbosity, remember=submission is None or record,
                            policy=policy,
                            budget_s=budget)
    except (OSError, RuntimeError) as exc:
        click.secho(f"grading could not run: {exc}", fg="red", err=True)
        sys.exit(EXIT_INTERNAL)
    if gradescope:
        from grader.report.gradescope import write_gradescope_json

        write_gradescope_json(gradescope_out, result)
        click.echo(f"Gradescope results: {gradescope_out}", err=True)
    elif submission is None and not as_json:
        line = next_step(result)
        if line:
            click.echo(line)
    sys.exit(EXIT_OK if result.all_passed else EXIT_FAILED)
