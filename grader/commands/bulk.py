"""`grade bulk`: grade a whole class and write the class report, gradebook and exports."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import click

from grader import numbers
from grader.engine.policy import Policy
from grader.files import defer_sync, make_dir, sync_tree

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


def _people(submissions: list, rejected: list) -> list:
    from grader.report.gradebooks import Person

    return [Person(s.id, s.lms_id, s.lms_name, s.lms_kind) for s in submissions] + \
        [Person(r.id) for r in rejected]


def _resolve_adjustments(path: Path | None, lines, people: list, roster, klass) -> dict:
    """Submission id -> adjustment line; exit 2 (naming the line) for a student not in the
    class, before anything is graded or written."""
    if lines is None:
        return {}
    from grader.bulk.adjust import AdjustError, resolve, student_keys

    by_sub = {sub: sid for sid, sub in klass.by_student.items()}
    students = {s["ID"]: s for s in roster.students} if roster is not None else {}
    named = [(p.id, [p.lms_id, p.lms_name, klass.names.get(p.id, ""),
                     *students.get(by_sub.get(p.id, ""), {}).values()]) for p in people]
    try:
        return resolve(path, lines, student_keys(named))
    except AdjustError as exc:
        raise click.UsageError(str(exc)) from None


def _gradebooks(out: Path, title: str, results: list, people: list, roster,
                klass) -> tuple[list[str], list[str]]:
    """Write the LMS gradebooks: canvas.csv (a Canvas roster, or a Canvas download's user
    ids), moodle-worksheet.csv (a Moodle grading worksheet as the roster) or moodle.csv;
    return (the files written, the sentences the summary and the class report must show)."""
    from grader.numbers import exact
    from grader.report.gradebooks import (
        lms_totals,
        write_canvas_csv,
        write_moodle_csv,
        write_moodle_worksheet,
    )

    totals = lms_totals(results)
    # every result of a run has the same exercises and points (scaled by the assignment)
    most = max((r.max_score for r in results), default=0)
    files, notices = [], []
    for stale in ("canvas.csv", "moodle.csv", "moodle-worksheet.csv"):  # an earlier run's
        (out / stale).unlink(missing_ok=True)
    moodle = roster is not None and roster.kind == "moodle"
    if klass.unmatched and roster is not None:
        book = "moodle-worksheet.csv" if moodle else "canvas.csv"
        notices.append(f"{len(klass.unmatched)} submission(s) match no student of the "
                       f"roster and are not in {book}: {', '.join(klass.unmatched)}.")
    if moodle:
        write_moodle_worksheet(out / "moodle-worksheet.csv", roster, results, people, klass.late)
        return ["moodle-worksheet.csv"], notices
    if roster is not None or any(p.lms_id and not p.lms_kind for p in people):
        unplaced = write_canvas_csv(out / "canvas.csv", title, totals, exact(most),
                                    roster, people)
        files.append("canvas.csv")
        if unplaced and roster is None:
            notices.append(f"{len(unplaced)} submission(s) have no Canvas user id and are "
                           f"not in canvas.csv: {', '.join(unplaced)}.")
    if any(p.lms_kind == "moodle" for p in people):
        notices.append("No moodle.csv: a Moodle download's names are not Moodle usernames; "
                       "pass the assignment's grading worksheet as --roster to get "
                       "moodle-worksheet.csv.")
        return files, notices
    left_out = write_moodle_csv(out / "moodle.csv", title, totals, roster, people)
    if left_out is None:
        notices.append("No moodle.csv: no student has a username Moodle could know (a "
                       "Canvas download's names are not usernames).")
        return files, notices
    files.append("moodle.csv")
    if left_out:
        notices.append(f"{len(left_out)} row(s) left out of moodle.csv (no username Moodle "
                       f"knows): {', '.join(left_out)}.")
    return files, notices


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

    from grader.bulk import adjust, layouts, runner
    from grader.engine import expected
    from grader.report import class_html, gradebooks, gradescope, junit
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
        people = _people(found.submissions, found.rejected)
        klass = gradebooks.class_list(students, people)
        adjustments = _resolve_adjustments(adjust_file, adjust_lines, people, students, klass)
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
    sweep_stale_cgroups()
    rejected = list(found.rejected) + [
        layouts.Rejected(id=i, reason=f"grading failed (not the learner's fault): {why}",
                         source="") for i, why in outcome.failures] + [
        layouts.Rejected(id=i, reason=why, source="") for i, why in outcome.ended]
    generated = numbers.generated()
    done = {r.submission for r in outcome.results} | {e.id for e in rejected}
    pending = [s.id for s in found.submissions if s.id not in done]
    late = [s.id for s in found.submissions if s.late or s.id in klass.late]
    notices = adjust.apply(outcome.results, adjustments)
    for result in outcome.results:  # written at grading time: now with today's adjustments
        gradescope.write_gradescope_json(out / result.submission / "gradescope.json", result)
    files, lms_notices = _gradebooks(out, title, outcome.results, people, students, klass)
    notices += lms_notices
    class_html.write_class_report(out, outcome.results, rejected, title=title,
                                  layout=found.description, generated=generated,
                                  scope=f"{scope} Hidden tests: {policy.feedback} feedback.",
                                  notices=notices, names=klass.names, absent=klass.absent,
                                  late=late, files=["grades.csv", *files, "junit.xml"],
                                  pages=pages)
    gradebooks.write_grades_csv(out / "grades.csv", outcome.results, slugs, rejected,
                                pending=pending, late=late, names=klass.names,
                                absent=klass.absent)
    junit.write_junit(out / "junit.xml", outcome.results, rejected)
    sync_tree(out)
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
