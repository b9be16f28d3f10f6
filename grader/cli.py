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
@click.option("-q", "--quiet", count=True, help="Less output (one line per exercise).")
@click.option("-v", "--verbose", count=True, help="More output (passed tests' notes, output).")
def run(exercises: tuple[str, ...], submission: Path | None, exercises_dir: Path,
        report_dir: Path, device: str, as_json: bool, watch: bool, quiet: int,
        verbose: int) -> None:
    """Grade exercises (the default command: `grade EXERCISE...` is `grade run EXERCISE...`)."""
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
