"""`grade bulk`: grade a whole class and write the class report, gradebook and exports."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from grader import numbers
from grader.engine.policy import Policy
from grader.files import atomic_write_bytes, defer_sync, make_dir

from .common import (
    EXIT_INTERNAL,
    EXIT_OK,
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

RESERVED_IDS = {"index.html", "grades.csv", "junit.xml", "canvas.csv",
                "moodle.csv", "moodle-worksheet.csv"}  # class-level files in a bulk report
RESERVED_IDS |= {"similarity.html", "similarity.csv"}  # grade bulk --similarity


def _read_roster(path: Path | None):
    from grader.report.gradebooks import RosterError, read_roster

    return read_option_file(path, read_roster, RosterError)


def _read_adjustments(path: Path | None):
    from grader.bulk.adjust import AdjustError, read_adjustments

    return read_option_file(path, read_adjustments, AdjustError)


def _resolve_adjustments(path: Path | None, lines, people: list, roster, klass) -> dict:
    """Submission id -> adjustment line; exit 2 (naming the line) for a student not in the
    class, before anything is graded or written."""
    from grader.bulk.adjust import AdjustError
    from grader.bulk.exports import adjustments

    try:
        return adjustments(path, lines, people, roster, klass)
    except AdjustError as exc:
        raise click.UsageError(str(exc)) from None


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
    import contextlib
    import tempfile

    from grader.bulk import exports, layouts, manifest, runner
    from grader.engine import expected
    from grader.report import gradebooks
    from grader.report.progress import Progress
    from grader.sandbox import readable
    from grader.sandbox.isolation import staging_folder, sweep_stale_cgroups

    if scheduler is None:  # on a cluster, each worker checks its own (strict only)
        check_isolation(isolation)
    else:
        _check_scheduler(scheduler, allow_insecure_cluster)
    apply_private(private)
    task = load_assignment(assignment_file)
    students = _read_roster(roster)
    adjust_lines = _read_adjustments(adjust_file)
    # other pages of the report, (href, label), linked from the class report's footer: an
    # option that writes a page beside index.html appends it here
    pages: list[tuple[str, str]] = []
    slugs = parse_exercises(exercises) if exercises else \
        list(task.exercises) if task else parse_exercises(None)
    policy = task.policy(feedback) if task else Policy(feedback=feedback or "graded")
    title = title or (task.title if task else "Class report")
    budget = time_budget or (task.submission_seconds if task and task.submission_seconds
                             else 900.0)
    _check_canvas_column(students, title)
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="grade-bulk-"))
        try:
            found = layouts.discover(list(inputs), slugs, Path(tmp))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
        if exercises:
            scope = f"Graded the exercises asked for: {', '.join(slugs)}."
        elif task:
            scope = f"Graded the assignment's exercises: {', '.join(slugs)}."
        else:  # no assignment: what the class handed in, never the whole pack
            seen = {slug for sub in found.submissions for slug in sub.files}
            slugs = [slug for slug in slugs if slug in seen]
            scope = (f"No assignment given: graded the exercises found in at least one "
                     f"submission ({', '.join(slugs) or 'none'}).")
        dev = resolve_device(device, slugs) if scheduler is None else device
        people = [gradebooks.Person(s.id, s.lms_id, s.lms_name, s.lms_kind)
                  for s in found.submissions] + [gradebooks.Person(r.id) for r in found.rejected]
        klass = gradebooks.class_list(students, people)
        # checked now (exit 2 naming the line), applied with the exports when grading ends
        _resolve_adjustments(adjust_file, adjust_lines, people, students, klass)
        _check_extensions(task, people, students, klass)
        make_dir(out)  # nothing is written before the input and the option files are checked
        defer_sync()  # every file still whole or absent; flushed once, at the end
        clash = [s for s in found.submissions if s.id in RESERVED_IDS]
        found.submissions = [s for s in found.submissions if s.id not in RESERVED_IDS]
        found.rejected += [layouts.Rejected(id=s.id, reason=f"the id {s.id!r} is the name of a "
                                            "class report file; rename the submission",
                                            source=s.source) for s in clash]
        click.echo(f"Detected {found.description}: {len(found.submissions)} submission(s) to "
                   f"grade, {len(found.rejected)} rejected.", err=True)
        progress = Progress(len(found.submissions), enabled=not quiet)
        # workers' folders go inside a temporary folder of this run's (in RAM where the
        # machine allows: staging_root): even those of workers killed by an interruption
        # are removed with it. (The submissions' copies above stay on disk: a class may hold
        # up to 2 MiB a file, and only the few workers alive at once use RAM here.)
        readable.hide(out)  # every student's report and the expected values' cache
        work = stack.enter_context(staging_folder("grade-bulk-"))
        tempfile.tempdir = work
        cluster = _connect(scheduler, dev, slugs, allow_insecure_cluster) if scheduler \
            else None
        if cluster is not None:
            dev = cluster.device
        else:
            expected.use_disk(out / ".cache" / "expected")
        try:
            outcome = runner.grade_all(
                found.submissions, exercises=slugs, device=dev, out=out, workers=workers,
                force=force, budget_s=budget, policy=policy, cluster=cluster,
                on_done=lambda sub_id, finished: progress.advance(
                    sub_id if finished else f"{sub_id}: public tests", int(finished)))
        finally:
            progress.close()
            tempfile.tempdir = None
            if cluster is not None:
                cluster.close()
        if similarity:  # while the submissions' copies exist
            from grader.report.similarity import write_similarity
            try:
                page = write_similarity(out, found.submissions, slugs, title=title)
            except Exception as exc:  # noqa: BLE001 - it never costs the class its grades
                click.secho(f"No similarity check: it failed ({type(exc).__name__}).",
                            fg="yellow", err=True)
            else:
                pages.append((page.name, "similarity check"))
                click.echo(f"Similarity check: {page}")
        _keep_files(out, found.submissions)  # for `grade review`
    sweep_stale_cgroups()
    rejected = list(found.rejected) + [
        layouts.Rejected(id=i, reason=f"grading failed (not the learner's fault): {why}",
                         source="") for i, why in outcome.failures] + [
        layouts.Rejected(id=i, reason=why, source="") for i, why in outcome.ended]
    done = {r.submission for r in outcome.results} | {e.id for e in rejected}
    graded = {r.submission for r in outcome.results}
    entries = [manifest.Entry(
        id=s.id, status="graded" if s.id in graded else "pending",
        name=klass.names.get(s.id, ""),
        source=s.source, late=s.late, lms_id=s.lms_id, lms_name=s.lms_name,
        lms_kind=s.lms_kind, submitted_at=_iso(getattr(s, "submitted_at", None)))
        for s in found.submissions if s.id not in done or s.id in graded]
    entries += [manifest.Entry(id=e.id, status="rejected", name=klass.names.get(e.id, ""),
                               reason=e.reason, source=e.source) for e in rejected]
    manifest.write(out, manifest.ClassManifest(
        title=title, layout=found.description, generated=numbers.generated(),
        scope=f"{scope} Hidden tests: {policy.feedback} feedback.", exercises=tuple(slugs),
        students=tuple(entries), pages=tuple(pages)),
        {"assignment": assignment_file, "roster": roster, "adjust": adjust_file,
         "extensions": task.late.extensions_file if task and task.late else None})
    try:
        notices = exports.export(out, results=outcome.results).notices
    except ValueError as exc:  # a file the exports read (review.json, ...) does not fit
        raise click.UsageError(f"graded, but the exports could not be written: {exc}") \
            from None
    for notice in notices:
        click.echo(notice, err=True)
    totals = [r.final_score / r.max_score for r in outcome.results if r.max_score]
    mean = f" · mean {100 * sum(totals) / len(totals):.0f}%" if totals else ""
    click.echo(scope, err=True)
    click.echo(f"Graded {outcome.graded}, {outcome.cached} from cache, {len(rejected)} not "
               f"graded{mean} · class report: {out / 'index.html'}")
    if outcome.interrupted:
        click.secho(f"Interrupted after {outcome.graded + outcome.cached} of "
                    f"{len(found.submissions)}: what finished is kept; run the same command "
                    "again to resume.", fg="yellow", err=True)
        sys.exit(130)
    sys.exit(EXIT_INTERNAL if outcome.failures or outcome.ended else EXIT_OK)


def _check_extensions(task, people: list, roster, klass) -> None:
    """Exit 2 before grading for a late policy's extensions file that does not fit (naming
    the line) or an extension naming several submissions."""
    if task is None or task.late is None:
        return
    from grader import late
    from grader.bulk.adjust import student_keys
    from grader.bulk.exports import named

    try:
        late.check_extensions(task.late, student_keys(named(people, roster, klass)))
    except late.ExtensionError as exc:
        raise click.UsageError(str(exc)) from None


def _check_canvas_column(roster, title: str) -> None:
    """Exit 2 before grading when a Canvas roster has two columns for the assignment."""
    from grader.report.gradebooks import RosterError, canvas_column

    if roster is not None and roster.kind == "canvas":
        try:
            canvas_column(roster, title)
        except RosterError as exc:
            raise click.UsageError(str(exc)) from None


def _keep_files(out: Path, submissions: list) -> None:
    """Each submission's files as graded, in ``OUT/<id>/submitted/`` (``grade review`` shows
    them); an earlier run's copies replaced."""
    import shutil

    for sub in submissions:
        folder = out / sub.id / "submitted"
        if folder.exists():
            shutil.rmtree(folder)
        make_dir(folder)
        for path in sub.files.values():  # written as every report file is (--private)
            atomic_write_bytes(folder / path.name, path.read_bytes())


def _iso(when) -> str | None:
    return when.isoformat() if when is not None else None


def _check_scheduler(scheduler: str, allow_insecure: bool) -> None:
    """Exit 2 before any work for a plain ``tcp://`` scheduler not accepted with
    ``--allow-insecure-cluster``; print why it is unsafe when accepted."""
    from grader.bulk import cluster as dask_cluster

    try:
        warning = dask_cluster.check_address(scheduler, allow_insecure=allow_insecure)
    except dask_cluster.ClusterError as exc:
        raise click.UsageError(str(exc)) from None
    if warning is not None:
        click.secho(warning, fg="yellow", err=True)


def _connect(scheduler: str, device: str, slugs: list[str], allow_insecure: bool):
    """The connected cluster (``bulk/cluster.py``), its workers checked; exit 2 when it
    cannot grade this run. Its ``device`` is the run's device, resolved on the cluster."""
    from grader.bulk import cluster as dask_cluster

    click.echo(f"Connecting to the Dask cluster {scheduler}...", err=True)
    try:
        found = dask_cluster.connect(scheduler, allow_insecure=allow_insecure)
    except dask_cluster.ClusterError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        found.device = dask_cluster.device_for(found, device, slugs)
    except dask_cluster.ClusterError as exc:
        found.close()
        raise click.UsageError(str(exc)) from None
    for line in dask_cluster.worker_notices(found):
        click.secho(line, fg="yellow", err=True)
    click.echo(f"{len(found.good)} Dask worker(s) will grade ({len(found.gpus)} with a GPU).",
               err=True)
    return found
