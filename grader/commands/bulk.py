"""`grade bulk`: grade a whole class and write the class report, gradebook and exports.

The command reads its options (the option files included) and checks the machine; the run
itself is ``grader/bulk/pipeline.py``'s, whose lines and progress it prints."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from grader.bulk.adjust import AdjustError, Line, read_adjustments
from grader.report.gradebooks import Roster, RosterError, read_roster
from grader.report.progress import Progress

from .common import (
    apply_private,
    check_isolation,
    device_option,
    isolation_option,
    load_assignment,
    parse_exercises,
    private_option,
    read_option_file,
    resolve_device,
)


class _Terminal:
    """A run's lines on the terminal (``pipeline.Report``), its progress as a bar (none with
    ``quiet``)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.bar: Progress | None = None

    def say(self, text: str, *, stdout: bool = False, warning: bool = False) -> None:
        if warning:
            click.secho(text, fg="yellow", err=not stdout)
        else:
            click.echo(text, err=not stdout)

    def begin(self, total: int) -> None:
        self.bar = Progress(total, enabled=not self.quiet)

    def advance(self, label: str, n: int) -> None:
        if self.bar is not None:
            self.bar.advance(label, n)

    def end(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _read_roster(path: Path | None) -> Roster | None:
    return read_option_file(path, read_roster, RosterError)


def _read_adjustments(path: Path | None) -> list[Line] | None:
    return read_option_file(path, read_adjustments, AdjustError)


@click.command("bulk")
@click.argument("inputs", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Report folder: index.html, grades.csv, junit.xml, one folder per submission.")
@click.option("--assignment", "assignment_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="An assignment.toml: its exercises, points, time limits, "
              "due date and feedback level (see docs/teacher.md).")
@click.option("--exercises", help="Comma-separated exercises to grade (default: the "
              "assignment's, else those found in at least one submission).")
@click.option("--feedback", type=click.Choice(["graded", "full"]), default=None,
              help="What hidden tests tell (default: the assignment's, else graded): graded "
                   "shows no input, expected value, difference map or printed output.")
@click.option("--workers", type=click.IntRange(1, 512), default=os.cpu_count() or 1,
              show_default="the number of cores", help="Submissions graded in parallel "
              "(on this machine; with --scheduler the Dask workers decide).")
@click.option("--scheduler", metavar="ADDRESS|local:N", help="Grade on a Dask cluster: a "
              "scheduler's address (tls://host:8786, with the Dask configuration's TLS "
              "credentials), or local:N for N worker processes on this machine (TLS, "
              "loopback). Workers grade at strict isolation (see docs/cluster.md).")
@click.option("--allow-insecure-cluster", is_flag=True, help="Accept a plain tcp:// scheduler "
              "(no encryption, no authentication: whoever reaches it runs code as you on "
              "every worker); use tls:// instead.")
@device_option
@click.option("--force", is_flag=True, help="Regrade everything, ignoring cached results.")
@click.option("--title", help="The report's title (default: the assignment's, else "
              "\"Class report\").")
@click.option("--time-budget", type=click.FloatRange(min=1), default=None,
              help="Seconds of wall-clock time for all the calls of one submission (default: "
                   "the assignment's, else 900).")
@click.option("--roster", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The gradebook CSV exported from Canvas (canvas.csv then holds every "
                   "student of it, and moodle.csv its logins), or a Moodle assignment's "
                   "grading worksheet (filled in as moodle-worksheet.csv). Its names show "
                   "in the class report and grades.csv.")
@click.option("--adjust", "adjust_file", type=click.Path(exists=True, dir_okay=False,
              path_type=Path), help="A CSV or TOML file of adjustments (student, points or "
              "total, comment), applied after grading to every export (see docs/teacher.md).")
@isolation_option
@private_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
@click.option("--similarity", is_flag=True, help="Also compare every pair of submissions "
              "exercise by exercise: OUT/similarity.html ranks the pairs whose code is "
              "unusually alike (the stub ignored), OUT/similarity.csv lists them.")
def bulk(inputs: tuple[Path, ...], out: Path, assignment_file: Path | None,
         exercises: str | None, feedback: str | None, workers: int, scheduler: str | None,
         allow_insecure_cluster: bool, device: str, force: bool,
         title: str | None, time_budget: float | None, roster: Path | None,
         adjust_file: Path | None, isolation: str,
         private: bool, quiet: bool, similarity: bool) -> None:
    """Grade a whole class: SUBMISSIONS is a folder of folders (<id>/<exercise>.py), a folder
    of <id>.zip files, one Canvas "download submissions" zip, one Moodle "Download all
    submissions" zip (or its folder unzipped), or a list of .py files.

    Results are cached in OUT: a second run grades only new or changed submissions, and an
    interrupted run resumes where it stopped. Exit codes: 0 when every submission could be
    graded (whatever its score), 3 when grading itself failed for some, 130 when interrupted.
    """
    # (the run imports the engine: only when a class is graded, not at every `grade`)
    from grader.bulk import pipeline

    if scheduler is None:  # on a cluster, each worker checks its own (strict only)
        check_isolation(isolation)
    else:
        _check_scheduler(scheduler, allow_insecure_cluster)
    apply_private(private)
    task = load_assignment(assignment_file)
    students = _read_roster(roster)
    adjust_lines = _read_adjustments(adjust_file)
    asked = tuple(parse_exercises(exercises)) if exercises else None
    settings = pipeline.BulkSettings(
        inputs=inputs, out=out, exercises=asked, assignment=task,
        assignment_file=assignment_file, roster=students, roster_file=roster,
        adjustments=adjust_lines, adjust_file=adjust_file, feedback=feedback, title=title,
        time_budget=time_budget, workers=workers, scheduler=scheduler,
        allow_insecure_cluster=allow_insecure_cluster, device=device,
        resolve_device=resolve_device, force=force, similarity=similarity)
    try:
        done = pipeline.run(settings, _Terminal(quiet))
    except pipeline.BulkUsageError as exc:
        raise click.UsageError(str(exc)) from None
    for notice in done.notices:
        click.echo(notice, err=True)
    totals = [r.final_score / r.max_score for r in done.results if r.max_score]
    mean = f" · mean {100 * sum(totals) / len(totals):.0f}%" if totals else ""
    click.echo(done.scope, err=True)
    click.echo(f"Graded {done.graded}, {done.cached} from cache, {len(done.rejected)} not "
               f"graded{mean} · class report: {out / 'index.html'}")
    if done.interrupted:
        click.secho(f"Interrupted after {done.graded + done.cached} of "
                    f"{done.submissions}: what finished is kept; run the same command "
                    "again to resume.", fg="yellow", err=True)
    sys.exit(done.exit_status)


def _check_scheduler(scheduler: str, allow_insecure: bool) -> None:
    """Exit 2 before any work for a plain ``tcp://`` scheduler not accepted with
    ``--allow-insecure-cluster``; print why it is unsafe when accepted."""
    from grader.bulk import cluster as dask_cluster  # (it imports the engine: heavy)

    try:
        warning = dask_cluster.check_address(scheduler, allow_insecure=allow_insecure)
    except dask_cluster.ClusterError as exc:
        raise click.UsageError(str(exc)) from None
    if warning is not None:
        click.secho(warning, fg="yellow", err=True)
