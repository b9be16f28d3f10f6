"""``grade bulk``'s run, from the submissions given to the class folder written: ``run``.

``run(settings, report)`` finds the submissions (``layouts.py``), checks the option files
against the class (the Canvas column, ``--adjust``'s students, the late policy's extensions),
grades every submission (``runner.py``: a pool of grading processes, or Dask), keeps the files
graded for ``grade review``, optionally compares them (``--similarity``), writes the run's
manifest (``manifest.py``) and every export (``exports.py``), and returns what it came to
(``BulkResult``). Nothing is written before the inputs and option files are found to fit.

What it has to say while it runs (the layout found, the cluster's workers, a similarity
check that failed, ...) and its progress go to ``report`` (a ``Report``: ``grade bulk``
prints them; the default, ``Quiet``, says nothing); a problem of the inputs or options raises
``BulkUsageError`` (one sentence: ``grade bulk`` exits 2 with it). Reading the option files
and the checks of the machine (isolation, the scheduler's address) are the command's.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from grader import catalog, late, numbers
from grader.assignment import Assignment
from grader.engine.policy import Policy
from grader.files import atomic_write_bytes, has_file_mode, make_dir, synced_once
from grader.judge import expected
from grader.report import gradebooks
from grader.results import SubmissionResult
from grader.sandbox import readable
from grader.sandbox.isolation import staging_folder, sweep_stale_cgroups

from . import cluster as dask_cluster
from . import exports, layouts, manifest, runner
from .adjust import AdjustError, Line
from .reading import Rejected, Submission

RESERVED_IDS = {"index.html", "grades.csv", "junit.xml", "canvas.csv",
                "moodle.csv", "moodle-worksheet.csv"}  # class-level files in a bulk report
RESERVED_IDS |= {"similarity.html", "similarity.csv"}  # grade bulk --similarity

# grade bulk's exit statuses (commands/common.py's EXIT_OK and EXIT_INTERNAL, and Ctrl-C's)
EXIT_OK, EXIT_GRADING_FAILED, EXIT_INTERRUPTED = 0, 3, 130


class BulkUsageError(ValueError):
    """The inputs or an option do not fit (one sentence): nothing was graded, or, for the
    exports, nothing exported."""


def _device_as_given(device: str, slugs: list[str]) -> str:
    return device


@dataclass(frozen=True)
class BulkSettings:
    """What ``run`` grades and how: ``grade bulk``'s options, its option files read.

    ``exercises``: those asked for (``--exercises``), else ``None``: the assignment's, else
    those found in at least one submission. ``assignment``, ``roster`` and ``adjustments``
    are the files ``assignment_file``, ``roster_file`` and ``adjust_file`` read (copied to
    OUT for ``grade review``). ``resolve_device(device, exercises)``: the device to grade on
    this machine (``grade bulk``'s: ``auto`` is CUDA when there is one, a usage error when
    the device cannot be had); unused with a ``scheduler``, whose workers decide."""

    inputs: tuple[Path, ...]
    out: Path
    exercises: tuple[str, ...] | None = None
    assignment: Assignment | None = None
    assignment_file: Path | None = None
    roster: gradebooks.Roster | None = None
    roster_file: Path | None = None
    adjustments: list[Line] | None = None
    adjust_file: Path | None = None
    feedback: str | None = None
    title: str | None = None
    time_budget: float | None = None
    workers: int = 1
    scheduler: str | None = None
    allow_insecure_cluster: bool = False
    device: str = "cpu"
    resolve_device: Callable[[str, list[str]], str] = _device_as_given
    force: bool = False
    similarity: bool = False


class Report(Protocol):
    """How a run tells what it does as it does it (``grade bulk`` prints it). ``say``: a line
    (for stderr unless ``stdout``; ``warning``: to be shown as one); ``begin(total)``,
    ``advance(label, n)`` and ``end()``: the progress of grading ``total`` submissions (``n``
    0: a step of the one named, 1: it ended)."""

    def say(self, text: str, *, stdout: bool = False, warning: bool = False) -> None: ...

    def begin(self, total: int) -> None: ...

    def advance(self, label: str, n: int) -> None: ...

    def end(self) -> None: ...


class Quiet:
    """A ``Report`` that says nothing: ``run``'s default."""

    def say(self, text: str, *, stdout: bool = False, warning: bool = False) -> None:
        pass

    def begin(self, total: int) -> None:
        pass

    def advance(self, label: str, n: int) -> None:
        pass

    def end(self) -> None:
        pass


@dataclass
class BulkResult:
    """What a run came to: the results of the submissions graded (now or from the cache),
    sorted by id; every submission not graded (bad input, grading that failed), and why; the
    sentences for the teacher (also in the class report); which exercises were graded
    (``scope``, one sentence); the counts; and ``grade bulk``'s exit status."""

    results: list[SubmissionResult] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    scope: str = ""
    submissions: int = 0  # found and to grade (rejected input aside)
    graded: int = 0
    cached: int = 0
    interrupted: bool = False
    exit_status: int = EXIT_OK


def run(settings: BulkSettings, report: Report | None = None) -> BulkResult:
    """Grade the class of ``settings.inputs`` into ``settings.out`` (see the module's
    docstring); raises ``BulkUsageError`` when the inputs or options do not fit. Every file
    is written whole and renamed, and OUT flushed to the disk once, at the end."""
    with synced_once(settings.out):
        return _run(settings, report or Quiet())


def _run(s: BulkSettings, report: Report) -> BulkResult:
    out, task, students = s.out, s.assignment, s.roster
    # other pages of the report, (href, label), linked from the class report's footer: an
    # option that writes a page beside index.html appends it here
    pages: list[tuple[str, str]] = []
    slugs = list(s.exercises) if s.exercises is not None else \
        list(task.exercises) if task else list(catalog.load())
    policy = task.policy(s.feedback) if task else Policy(feedback=s.feedback or "graded")
    title = s.title or (task.title if task else "Class report")
    budget = s.time_budget or (task.submission_seconds if task and task.submission_seconds
                               else 900.0)
    _check_canvas_column(students, title)
    with contextlib.ExitStack() as stack:
        tmp = stack.enter_context(tempfile.TemporaryDirectory(prefix="grade-bulk-"))
        try:
            found = layouts.discover(list(s.inputs), slugs, Path(tmp))
        except ValueError as exc:
            raise BulkUsageError(str(exc)) from None
        if s.exercises is not None:
            scope = f"Graded the exercises asked for: {', '.join(slugs)}."
        elif task:
            scope = f"Graded the assignment's exercises: {', '.join(slugs)}."
        else:  # no assignment: what the class handed in, never the whole pack
            seen = {slug for sub in found.submissions for slug in sub.files}
            slugs = [slug for slug in slugs if slug in seen]
            scope = (f"No assignment given: graded the exercises found in at least one "
                     f"submission ({', '.join(slugs) or 'none'}).")
        dev = s.resolve_device(s.device, slugs) if s.scheduler is None else s.device
        people = [gradebooks.Person(sub.id, sub.lms_id, sub.lms_name, sub.lms_kind)
                  for sub in found.submissions] + [gradebooks.Person(r.id)
                                                   for r in found.rejected]
        klass = gradebooks.class_list(students, people)
        # checked now (usage errors naming the line), applied with the exports at the end
        try:
            exports.resolve_options(people, students, klass, s.adjust_file, s.adjustments,
                                    task.late if task is not None else None)
        except (AdjustError, late.ExtensionError) as exc:
            raise BulkUsageError(str(exc)) from None
        make_dir(out)  # nothing is written before the input and the option files are checked
        clash = [sub for sub in found.submissions if sub.id in RESERVED_IDS]
        found.submissions = [sub for sub in found.submissions if sub.id not in RESERVED_IDS]
        found.rejected += [Rejected(id=sub.id, reason=f"the id {sub.id!r} is the name of a "
                                    "class report file; rename the submission",
                                    source=sub.source) for sub in clash]
        report.say(f"Detected {found.description}: {len(found.submissions)} submission(s) to "
                   f"grade, {len(found.rejected)} rejected.")
        report.begin(len(found.submissions))
        # workers' folders go inside a temporary folder of this run's (in RAM where the
        # machine allows: staging_root): even those of workers killed by an interruption
        # are removed with it. (The submissions' copies above stay on disk: a class may hold
        # up to 2 MiB a file, and only the few workers alive at once use RAM here.)
        readable.hide(out)  # every student's report and the expected values' cache
        work = stack.enter_context(staging_folder("grade-bulk-"))
        tempfile.tempdir = work
        cluster = _connect(s.scheduler, dev, slugs, s.allow_insecure_cluster, report) \
            if s.scheduler else None
        if cluster is not None:
            dev = cluster.device
        else:
            expected.use_disk(out / ".cache" / "expected")
        try:
            outcome = runner.grade_all(
                found.submissions, exercises=slugs, device=dev, out=out, workers=s.workers,
                force=s.force, budget_s=budget, policy=policy, cluster=cluster,
                on_done=lambda sub_id, finished: report.advance(
                    sub_id if finished else f"{sub_id}: public tests", int(finished)))
        finally:
            report.end()
            tempfile.tempdir = None
            if cluster is not None:
                cluster.close()
        if s.similarity:  # while the submissions' copies exist
            page = _similarity(out, found.submissions, slugs, title, report)
            if page is not None:
                pages.append((page.name, "similarity check"))
        _keep_files(out, found.submissions)  # for `grade review`
    sweep_stale_cgroups()
    rejected = list(found.rejected) + [
        Rejected(id=i, reason=f"grading failed (not the learner's fault): {why}", source="")
        for i, why in outcome.failures] + [
        Rejected(id=i, reason=why, source="") for i, why in outcome.ended]
    done = {r.submission for r in outcome.results} | {e.id for e in rejected}
    graded = {r.submission for r in outcome.results}
    entries = [manifest.Entry(
        id=sub.id, status="graded" if sub.id in graded else "pending",
        name=klass.names.get(sub.id, ""),
        source=sub.source, late=sub.late, lms_id=sub.lms_id, lms_name=sub.lms_name,
        lms_kind=sub.lms_kind, submitted_at=_iso(sub.submitted_at))
        for sub in found.submissions if sub.id not in done or sub.id in graded]
    entries += [manifest.Entry(id=e.id, status="rejected", name=klass.names.get(e.id, ""),
                               reason=e.reason, source=e.source) for e in rejected]
    manifest.write(out, manifest.ClassManifest(
        title=title, layout=found.description, generated=numbers.generated(),
        scope=f"{scope} Hidden tests: {policy.feedback} feedback.", exercises=tuple(slugs),
        students=tuple(entries), pages=tuple(pages)),
        {"assignment": s.assignment_file, "roster": s.roster_file, "adjust": s.adjust_file,
         "extensions": task.late.extensions_file if task and task.late else None})
    try:
        notices = exports.export(out, results=outcome.results).notices
    except ValueError as exc:  # a file the exports read (review.json, ...) does not fit
        raise BulkUsageError(f"graded, but the exports could not be written: {exc}") \
            from None
    status = EXIT_INTERRUPTED if outcome.interrupted else \
        EXIT_GRADING_FAILED if outcome.failures or outcome.ended else EXIT_OK
    return BulkResult(results=outcome.results, rejected=rejected, notices=notices,
                      scope=scope, submissions=len(found.submissions), graded=outcome.graded,
                      cached=outcome.cached, interrupted=outcome.interrupted,
                      exit_status=status)


def _check_canvas_column(roster: gradebooks.Roster | None, title: str) -> None:
    """``BulkUsageError`` before grading when a Canvas roster has two columns for the
    assignment."""
    if roster is not None and roster.kind == "canvas":
        try:
            gradebooks.canvas_column(roster, title)
        except gradebooks.RosterError as exc:
            raise BulkUsageError(str(exc)) from None


def _connect(scheduler: str, device: str, slugs: list[str], allow_insecure: bool,
             report: Report) -> dask_cluster.Cluster:
    """The connected cluster (``cluster.py``), its workers checked; ``BulkUsageError`` when
    it cannot grade this run. Its ``device`` is the run's device, resolved on the cluster."""
    report.say(f"Connecting to the Dask cluster {scheduler}...")
    try:
        found = dask_cluster.connect(scheduler, allow_insecure=allow_insecure)
    except dask_cluster.ClusterError as exc:
        raise BulkUsageError(str(exc)) from None
    try:
        found.device = dask_cluster.device_for(found, device, slugs)
    except dask_cluster.ClusterError as exc:
        found.close()
        raise BulkUsageError(str(exc)) from None
    for line in dask_cluster.worker_notices(found):
        report.say(line, warning=True)
    report.say(f"{len(found.good)} Dask worker(s) will grade ({len(found.gpus)} with a GPU).")
    return found


def _similarity(out: Path, submissions: list[Submission], slugs: list[str], title: str,
                report: Report) -> Path | None:
    """``--similarity``'s page (``OUT/similarity.html``), or None when the check failed: it
    never costs the class its grades."""
    from grader.similarity.page import write_similarity  # only with --similarity

    try:
        page = write_similarity(out, submissions, slugs, title=title)
    except Exception as exc:  # noqa: BLE001 - it never costs the class its grades
        report.say(f"No similarity check: it failed ({type(exc).__name__}).", warning=True)
        return None
    report.say(f"Similarity check: {page}", stdout=True)
    return page


def _keep_files(out: Path, submissions: list[Submission]) -> None:
    """Each submission's files as graded, in ``OUT/<id>/submitted/`` (``grade review`` shows
    them): an earlier run's copy kept where it is the same, replaced where not, removed where
    the submission no longer has it."""
    for sub in submissions:
        folder = out / sub.id / "submitted"
        wanted = {path.name: path for path in sub.files.values()}
        earlier = folder.is_dir()
        if earlier:
            for old in folder.iterdir():
                if old.name not in wanted:
                    shutil.rmtree(old) if old.is_dir() and not old.is_symlink() \
                        else old.unlink()
        else:
            make_dir(folder)  # new and empty: nothing in it to compare
        for name, path in wanted.items():  # written as every report file is (--private)
            data = path.read_bytes()
            kept = folder / name
            if earlier:
                try:
                    if kept.read_bytes() == data and has_file_mode(kept):
                        continue
                except OSError:
                    pass
            atomic_write_bytes(kept, data)


def _iso(when: dt.datetime | None) -> str | None:
    return when.isoformat() if when is not None else None
