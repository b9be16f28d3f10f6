"""The ``grade`` command line (Click).

``grade [EXERCISE]...`` grades (the default command, ``grade run``); ``grade list``,
``grade show`` and ``grade hint`` help the learner between runs. Exit codes: 0 when every
graded test passed, 1 when any did not, 2 for a usage error, 3 when grading itself failed.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import click

from grader import catalog
from grader.engine.results import SubmissionResult, TestResult
from grader.report import terminal
from grader.state import State

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERNAL = 0, 1, 2, 3
RESERVED_IDS = {"index.html", "grades.csv", "junit.xml"}  # class-level files in a bulk report


def _complete_exercise(ctx: click.Context, param: click.Parameter | None,
                       incomplete: str) -> list[Any]:
    return [click.shell_completion.CompletionItem(s) for s in catalog.load()
            if s.startswith(incomplete)]


class ExerciseName(click.ParamType):
    """An exercise slug; an unknown name is a usage error that lists the valid ones."""

    name = "EXERCISE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value in catalog.load():
            return value
        self.fail(f"unknown exercise {value!r}. Valid exercises: "
                  f"{', '.join(catalog.load())}", param, ctx)

    def shell_complete(self, ctx: click.Context, param: click.Parameter,
                       incomplete: str) -> list[Any]:
        return _complete_exercise(ctx, param, incomplete)


EXERCISE = ExerciseName()


class DefaultGroup(click.Group):
    """A group whose first argument, when it is not a command, goes to ``run``."""

    default_command = "run"

    def shell_complete(self, ctx: click.Context, incomplete: str) -> list[Any]:
        """`grade <TAB>` offers exercise names as well as the commands."""
        return super().shell_complete(ctx, incomplete) + _complete_exercise(ctx, None,
                                                                           incomplete)

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if not args or (args[0] not in self.commands and args[0] not in ("--help", "-h")):
            args = [self.default_command, *args]
        return super().parse_args(ctx, args)


@click.group(cls=DefaultGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="vit-grader")
def main() -> None:
    """Grade ML interview exercises (Vision Transformers and inductive bias).

    \b
    grade                       grade every exercise whose file exists in ./exercises
    grade grid_local_mask       grade one exercise (names tab-complete)
    grade --submission DIR      grade a folder of learner files (DIR/<exercise>.py)
    grade list | show EX | hint EX
    grade bulk SUBMISSIONS --out DIR   grade a whole class (teachers)

    The learner's code runs in a separate process; the report goes to reports/index.html.
    Options for grading: grade run --help.
    """


def _resolve_device(device: str, slugs: list[str]) -> str:
    if device == "cpu":
        return "cpu"
    needs_torch = any(catalog.get(s).needs_torch for s in slugs)
    if device == "auto" and not needs_torch:
        return "cpu"  # numpy-only runs never pay for importing torch
    try:
        import torch

        available = torch.cuda.is_available()
    except ImportError:
        available = False
    if device == "cuda" and not available:
        raise click.UsageError("--device cuda was asked for, but no CUDA device is available "
                               "(use --device cpu or auto)")
    return "cuda" if available else "cpu"


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


@main.command("run")
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
    dev = _resolve_device(device, list(files))
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


@main.command("list")
def list_exercises() -> None:
    """List the exercises with title, difficulty, points and your last score."""
    state = State.load()
    rows = []
    for ex in catalog.load().values():
        last = state.last_score.get(ex.slug)
        score = f"{last[0]:g}/{last[1]:g}" if last else "-"
        rows.append((ex.slug, ex.title, ex.difficulty, f"{ex.points:g}", score))
    widths = [max(len(r[i]) for r in rows + [("exercise", "title", "difficulty", "points",
                                                "last score")]) for i in range(5)]
    header = ("exercise", "title", "difficulty", "points", "last score")
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)))
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)))


@main.command("show")
@click.argument("exercise", type=EXERCISE)
def show(exercise: str) -> None:
    """Print an exercise's statement."""
    ex = catalog.get(exercise)
    click.echo(ex.statement.read_text() if ex.statement.is_file() else ex.summary)
    click.echo(f"\nYour file: exercises/{exercise}.py · grade it with: grade {exercise}")


@main.command("hint")
@click.argument("exercise", type=EXERCISE)
def hint(exercise: str) -> None:
    """Show the next hint you have not seen yet (they go from a nudge to a near-giveaway)."""
    ex = catalog.get(exercise)
    state = State.load()
    seen = state.hints_seen.get(exercise, 0)
    if seen >= len(ex.hints):
        click.echo(f"All {len(ex.hints)} hints for {exercise} are shown:")
        for i, text in enumerate(ex.hints, 1):
            click.echo(f"  {i}. {text}")
        return
    click.echo(f"Hint {seen + 1} of {len(ex.hints)} for {exercise}:\n  {ex.hints[seen]}")
    state.hints_seen[exercise] = seen + 1
    state.save()


def _parse_exercises(value: str | None) -> list[str]:
    if not value:
        return list(catalog.load())
    slugs = [s.strip() for s in value.split(",") if s.strip()]
    unknown = [s for s in slugs if s not in catalog.load()]
    if unknown:
        raise click.UsageError(f"unknown exercise(s) {', '.join(unknown)}. Valid exercises: "
                               f"{', '.join(catalog.load())}")
    return slugs


@main.command("bulk")
@click.argument("inputs", nargs=-1, required=True,
                type=click.Path(exists=True, path_type=Path))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="Report folder: index.html, grades.csv, junit.xml, one folder per submission.")
@click.option("--exercises", help="Comma-separated exercises to grade (default: all).")
@click.option("--workers", type=click.IntRange(1, 512), default=os.cpu_count() or 1,
              show_default="the number of cores", help="Submissions graded in parallel.")
@click.option("--device", type=click.Choice(["cpu", "cuda", "auto"]), default="auto",
              show_default=True, help="Device for torch exercises.")
@click.option("--force", is_flag=True, help="Regrade everything, ignoring cached results.")
@click.option("--title", default="Class report", show_default=True, help="The report's title.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar.")
def bulk(inputs: tuple[Path, ...], out: Path, exercises: str | None, workers: int, device: str,
         force: bool, title: str, quiet: bool) -> None:
    """Grade a whole class: SUBMISSIONS is a folder of folders (<id>/<exercise>.py), a folder
    of <id>.zip files, one Canvas "download submissions" zip, or a list of .py files.

    Results are cached in OUT: a second run grades only new or changed submissions, and an
    interrupted run resumes where it stopped. Exit codes: 0 when every submission could be
    graded (whatever its score), 3 when grading itself failed for some, 130 when interrupted.
    """
    import datetime as dt
    import tempfile

    from grader.bulk import class_report, exports, layouts, runner
    from grader.report.progress import Progress

    slugs = _parse_exercises(exercises)
    dev = _resolve_device(device, slugs)
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
        outcome = runner.grade_all(
            found.submissions, exercises=slugs, device=dev, out=out, workers=workers,
            force=force, on_done=lambda sub_id, cached: progress.advance(sub_id))
        progress.close()
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
