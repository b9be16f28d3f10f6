"""`grade [run]`: grade the learner's exercises (or a submission folder) and write a report."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import click

from grader import catalog
from grader.engine.results import SubmissionResult, TestResult
from grader.report import terminal
from grader.state import State

from .common import EXERCISE, EXIT_FAILED, EXIT_INTERNAL, EXIT_OK, resolve_device


def _select(exercises: tuple[str, ...], submission: Path | None,
            exercises_dir: Path) -> tuple[dict[str, Path | None], str]:
    """Map each exercise to grade onto its learner file (None = not submitted)."""
    if submission is not None:
        if not submission.is_dir():
            raise click.UsageError(f"--submission {submission}: not a folder")
        slugs = list(exercises) or list(catalog.load())
        files = {s: (submission / f"{s}.py") for s in slugs}
        return {s: (p if p.is_file() else None) for s, p in files.items()}, \
            submission.resolve().name
    if not exercises_dir.is_dir():
        raise click.UsageError(f"there is no {exercises_dir}/ folder here: run grade from the "
                               "project's root, or pass --submission DIR")
    if exercises:
        missing = [s for s in exercises if not (exercises_dir / f"{s}.py").is_file()]
        if missing:
            raise click.UsageError(f"no learner file for {', '.join(missing)} in "
                                   f"{exercises_dir}/ (run `grade reset` or restore the stub)")
        return {s: exercises_dir / f"{s}.py" for s in exercises}, "local"
    found = {s: exercises_dir / f"{s}.py" for s in catalog.load()
             if (exercises_dir / f"{s}.py").is_file()}
    if not found:
        raise click.UsageError(f"no exercise files found in {exercises_dir}/")
    return dict(found), "local"


def grade_once(files: dict[str, Path | None], name: str, *, device: str, report_dir: Path,
               as_json: bool, verbosity: int, remember: bool = True) -> SubmissionResult:
    """Grade, print, write the report; ``remember`` keeps the scores for `grade list`."""
    from grader.engine.runner import grade
    from grader.report.html import write_report

    out = terminal.Printer(stream=sys.stderr if as_json else sys.stdout, verbosity=verbosity)
    out.start(name, device, len(files))

    def on_test(slug: str, result: TestResult) -> None:
        if files.get(slug) is not None:  # not-submitted exercises get one summary line
            out.test(slug, catalog.get(slug).title, result)

    result = grade(files, submission=name, device=device, on_test=on_test)
    index = write_report(result, report_dir)
    if remember:
        state = State.load()
        for e in result.exercises:
            if e.status != "not_submitted":
                state.last_score[e.exercise] = [e.score, e.max_score]
        state.save()
    out.finish(result, index)
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2))
    return result


@click.command("run")
@click.argument("exercises", nargs=-1, type=EXERCISE)
@click.option("--submission", type=click.Path(path_type=Path, file_okay=False),
              help="Grade the learner files in this folder (DIR/<exercise>.py).")
@click.option("--exercises-dir", type=click.Path(path_type=Path), default=Path("exercises"),
              show_default=True, help="Where the learner's own files are.")
@click.option("--report-dir", type=click.Path(path_type=Path, file_okay=False),
              default=Path("reports"), show_default=True,
              help="Where index.html and results.json are written.")
@click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="auto",
              show_default=True, help="Device for torch exercises (auto: cuda when available).")
@click.option("--json", "as_json", is_flag=True,
              help="Print the machine-readable result to stdout (progress goes to stderr).")
@click.option("--watch", is_flag=True, help="Re-grade whenever a learner file is saved.")
@click.option("--gradescope", is_flag=True,
              help="Run as a Gradescope autograder: grade /autograder/submission (unless "
                   "--submission is given) and write the results in Gradescope's format.")
@click.option("--gradescope-out", type=click.Path(dir_okay=False, path_type=Path),
              default=Path("/autograder/results/results.json"), show_default=True,
              help="Where --gradescope writes its results.")
@click.option("-q", "--quiet", count=True, help="Less output (one line per exercise).")
@click.option("-v", "--verbose", count=True, help="More output (passed tests' notes, output).")
def run(exercises: tuple[str, ...], submission: Path | None, exercises_dir: Path,
        report_dir: Path, device: str, as_json: bool, watch: bool, gradescope: bool,
        gradescope_out: Path, quiet: int, verbose: int) -> None:
    """Grade exercises (the default command: `grade EXERCISE...` is `grade run EXERCISE...`)."""
    if gradescope and submission is None:
        submission = Path("/autograder/submission")
    files, name = _select(exercises, submission, exercises_dir)
    dev = resolve_device(device, list(files))
    verbosity = 1 + verbose - quiet
    if watch:
        _watch(files, name, dev, report_dir, verbosity)
        return
    try:
        result = grade_once(files, name, device=dev, report_dir=report_dir, as_json=as_json,
                            verbosity=verbosity, remember=submission is None)
    except (OSError, RuntimeError) as exc:
        click.secho(f"grading could not run: {exc}", fg="red", err=True)
        sys.exit(EXIT_INTERNAL)
    if gradescope:
        from grader.bulk.exports import write_gradescope_json

        write_gradescope_json(gradescope_out, result.to_dict())
        click.echo(f"Gradescope results: {gradescope_out}", err=True)
    sys.exit(EXIT_OK if result.all_passed else EXIT_FAILED)


def _watch(files: dict[str, Path | None], name: str, device: str, report_dir: Path,
           verbosity: int, poll_s: float = 0.5, debounce_s: float = 0.3) -> None:
    """Poll the learner files; re-grade an exercise when its file changes (Ctrl-C stops)."""

    def stamp(p: Path | None) -> float:
        try:
            return p.stat().st_mtime if p is not None else 0.0
        except OSError:
            return 0.0

    seen = {s: stamp(p) for s, p in files.items()}
    grade_once(files, name, device=device, report_dir=report_dir, as_json=False,
               verbosity=verbosity)
    click.echo("watching for changes (Ctrl-C to stop)...")
    try:
        while True:
            time.sleep(poll_s)
            changed = [s for s, p in files.items() if stamp(p) != seen[s]]
            if not changed:
                continue
            time.sleep(debounce_s)  # editors write several times
            for s in changed:
                seen[s] = stamp(files[s])
            if os.environ.get("TERM"):
                click.clear()
            grade_once({s: files[s] for s in changed}, name, device=device,
                       report_dir=report_dir, as_json=False, verbosity=verbosity)
            click.echo("watching for changes (Ctrl-C to stop)...")
    except KeyboardInterrupt:
        click.echo("stopped watching.")
