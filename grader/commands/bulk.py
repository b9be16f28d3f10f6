"""`grade bulk`: grade a whole class and write the class report, gradebook and exports."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from .common import (
    EXIT_INTERNAL,
    EXIT_OK,
    check_isolation,
    device_option,
    isolation_option,
    parse_exercises,
    resolve_device,
)

RESERVED_IDS = {"index.html", "grades.csv", "junit.xml"}  # class-level files in a bulk report


@click.command("bulk")
@click.argument("inputs", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Report folder: index.html, grades.csv, junit.xml, one folder per submission.")
@click.option("--exercises", help="Comma-separated exercises to grade (default: all).")
@click.option("--workers", type=click.IntRange(1, 512), default=os.cpu_count() or 1,
              show_default="the number of cores", help="Submissions graded in parallel.")
@device_option
@click.option("--force", is_flag=True, help="Regrade everything, ignoring cached results.")
@click.option("--title", default="Class report", show_default=True, help="The report's title.")
@click.option("--time-budget", type=click.FloatRange(min=1), default=900, show_default=True,
              help="Seconds of wall-clock time for all the calls of one submission.")
@isolation_option
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def bulk(inputs: tuple[Path, ...], out: Path, exercises: str | None, workers: int, device: str,
         force: bool, title: str, time_budget: float, isolation: str, quiet: bool) -> None:
    """Grade a whole class: SUBMISSIONS is a folder of folders (<id>/<exercise>.py), a folder
    of <id>.zip files, one Canvas "download submissions" zip, or a list of .py files.

    Results are cached in OUT: a second run grades only new or changed submissions, and an
    interrupted run resumes where it stopped. Exit codes: 0 when every submission could be
    graded (whatever its score), 3 when grading itself failed for some, 130 when interrupted.
    """
    import datetime as dt
    import tempfile

    from grader.bulk import class_report, exports, layouts, runner
    from grader.engine import expected
    from grader.report.progress import Progress
    from grader.sandbox.isolation import sweep_stale_cgroups

    check_isolation(isolation)
    slugs = parse_exercises(exercises)
    dev = resolve_device(device, slugs)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="grade-bulk-") as tmp:
        try:
            found = layouts.discover(list(inputs), slugs, Path(tmp))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        clash = [s for s in found.submissions if s.id in RESERVED_IDS]
        found.submissions = [s for s in found.submissions if s.id not in RESERVED_IDS]
        found.rejected += [layouts.Rejected(id=s.id, reason=f"the id {s.id!r} is the name of a "
                                            "class report file; rename the submission",
                                            source=s.source) for s in clash]
        click.echo(f"Detected {found.description}: {len(found.submissions)} submission(s) to "
                   f"grade, {len(found.rejected)} rejected.", err=True)
        progress = Progress(len(found.submissions), enabled=not quiet)
        # workers' folders go inside this run's temporary folder: even those of workers
        # killed by an interruption are removed with it
        (Path(tmp) / "work").mkdir()
        tempfile.tempdir = str(Path(tmp) / "work")
        expected.use_disk(out / ".cache" / "expected")
        outcome = runner.grade_all(
            found.submissions, exercises=slugs, device=dev, out=out, workers=workers,
            force=force, budget_s=time_budget,
            on_done=lambda sub_id, cached: progress.advance(sub_id))
        progress.close()
        tempfile.tempdir = None
    sweep_stale_cgroups()
    rejected = list(found.rejected) + [
        layouts.Rejected(id=i, reason=f"grading failed (not the learner's fault): {why}",
                         source="") for i, why in outcome.failures]
    generated = dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    class_report.write_class_report(out, outcome.results, rejected, title=title,
                                    layout=found.description, generated=generated)
    exports.write_grades_csv(out / "grades.csv", outcome.results, slugs, rejected)
    exports.write_junit(out / "junit.xml", outcome.results, rejected)
    totals = [r["score"] / r["max_score"] for r in outcome.results if r.get("max_score")]
    mean = f" · mean {100 * sum(totals) / len(totals):.0f}%" if totals else ""
    click.echo(f"Graded {outcome.graded}, {outcome.cached} from cache, {len(rejected)} not "
               f"graded{mean} · class report: {out / 'index.html'}")
    if outcome.interrupted:
        click.secho(f"Interrupted after {outcome.graded + outcome.cached} of "
                    f"{len(found.submissions)}: what finished is kept; run the same command "
                    "again to resume.", fg="yellow", err=True)
        sys.exit(130)
    sys.exit(EXIT_INTERNAL if outcome.failures else EXIT_OK)
