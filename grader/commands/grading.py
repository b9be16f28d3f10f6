"""`grade [run]`: grade the learner's exercises (or a submission folder) and write a report."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from grader import catalog
from grader.engine.policy import Policy

from .common import (
    EXERCISE,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    apply_private,
    check_isolation,
    device_option,
    exercises_dir_option,
    isolation_option,
    load_assignment,
    private_option,
    report_dir_option,
    resolve_device,
)
from .once import grade_once, next_step
from .watch import watch_files


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
