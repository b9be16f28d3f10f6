"""The learner's helpers between runs: `grade list`, `show`, `hint`, `reset`, `solution`,
`progress`."""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
from pathlib import Path

import click

from grader import catalog
from grader.state import IDLE_GAP_S, State

from . import workspace
from .common import EXERCISE, EXIT_FAILED, EXIT_INTERNAL, exercises_dir_option, in_project

DEFINITIONS = {
    "attempts": "gradings of a new version of your own file (the same content again, or the "
                "untouched stub, is not an attempt)",
    "time spent": "the time between your attempts, `grade show` and `grade hint` of an "
                  f"exercise, a gap of more than {IDLE_GAP_S / 60:g} minutes counted as a break "
                  "(not counted); an interview counts its own clock",
    "mastered": "the first grading of your own file with full marks",
}


def fmt_duration(seconds: float) -> str:
    """``"1h 02m"``, ``"12m 30s"``, ``"45s"``."""
    s = int(round(seconds))
    if s >= 3600:
        return f"{s // 3600}h {s % 3600 // 60:02d}m"
    if s >= 60:
        return f"{s // 60}m {s % 60:02d}s"
    return f"{s}s"


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> None:
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    click.echo("  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip())
    for r in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())


@click.command("list")
def list_exercises() -> None:
    """List the exercises with title, difficulty, points and your last score."""
    state = State.load()
    rows = []
    for ex in catalog.load().values():
        last = state.last_score.get(ex.slug)
        score = f"{last[0]:g}/{last[1]:g}" if last else "-"
        rows.append((ex.slug, ex.title, ex.difficulty, f"{ex.points:g}", score))
    _table(("exercise", "title", "difficulty", "points", "last score"), rows)


@click.command("show")
@click.argument("exercise", type=EXERCISE)
def show(exercise: str) -> None:
    """Print an exercise's statement."""
    ex = catalog.get(exercise)
    click.echo(ex.statement.read_text() if ex.statement.is_file() else ex.summary)
    folder = in_project("exercises")
    mine = "ipynb" if (folder / f"{exercise}.ipynb").is_file() else "py"
    click.echo(f"\nYour file: {folder / exercise}.{mine} · grade it with: grade {exercise}")
    workspace.touch(exercise)


def show_next_hint(exercise: str) -> None:
    """Print the next hint of ``exercise`` not seen yet (all of them once all are seen)."""
    ex = catalog.get(exercise)
    state = State.load()
    seen = state.hints_seen.get(exercise, 0)
    if seen >= len(ex.hints):
        click.echo(f"All {len(ex.hints)} hints for {exercise} are shown:")
        for i, text in enumerate(ex.hints, 1):
            click.echo(f"  {i}. {text}")
    else:
        click.echo(f"Hint {seen + 1} of {len(ex.hints)} for {exercise}:\n  {ex.hints[seen]}")
        state.hints_seen[exercise] = seen + 1
    state.of(exercise).touch(time.time())
    state.save()


@click.command("hint")
@click.argument("exercise", type=EXERCISE)
def hint(exercise: str) -> None:
    """Show the next hint you have not seen yet (they go from a nudge to a near-giveaway)."""
    show_next_hint(exercise)


@click.command("reset")
@click.argument("exercise", type=EXERCISE)
@exercises_dir_option
def reset(exercise: str, exercises_dir: Path) -> None:
    """Restore an exercise's stub; your version is kept in .grade/backups/.

    Your progress (best score, attempts, time) is kept.
    """
    stub = workspace.pristine_stub(exercise)
    if not stub.is_file():
        click.secho(f"this installation has no pristine stub for {exercise} ({stub})",
                    fg="red", err=True)
        sys.exit(EXIT_INTERNAL)
    if not exercises_dir.is_dir():
        raise click.UsageError(f"there is no {exercises_dir}/ folder here: run grade inside the "
                               "project, or pass --exercises-dir DIR")
    notebook = exercises_dir / f"{exercise}.ipynb"  # a notebook is reset as a notebook
    target = notebook if notebook.is_file() else exercises_dir / f"{exercise}.py"
    try:
        if target.is_file() and target.read_bytes() == stub.read_bytes():
            click.echo(f"{target} is already the stub: nothing to do.")
            return
        saved = workspace.backup(target, exercise) if target.is_file() else None
        workspace.restore_stub(exercise, target)
    except OSError as exc:
        click.secho(f"could not reset {target}: {exc}", fg="red", err=True)
        sys.exit(EXIT_FAILED)
    if saved is not None:
        click.echo(f"Restored the stub in {target}. Your version is kept in {saved}")
    else:
        click.echo(f"Restored the stub in {target} (there was no file of yours to keep).")


@click.command("solution")
@click.argument("exercise", type=EXERCISE)
@click.option("--force", is_flag=True,
              help="Show it before you have passed the exercise (asks first).")
@click.option("-y", "--yes", is_flag=True, help="With --force: do not ask.")
def solution(exercise: str, force: bool, yes: bool) -> None:
    """Show the reference solution, once your own file has passed the exercise."""
    if catalog.release_info() is not None:
        raise click.UsageError("this is a student release: the reference solutions stay with "
                               "your teacher")
    state = State.load()
    p = state.progress.get(exercise)
    if p is None or not p.mastered:
        if not force:
            best = f"{p.best[0]:g}/{p.best[1]:g}" if p is not None and p.best else "not graded"
            click.echo(f"The reference for {exercise} is shown once your file passes it (your "
                       f"best so far: {best}). Stuck? `grade hint {exercise}` gives the next "
                       f"hint; to see it anyway: grade solution {exercise} --force", err=True)
            sys.exit(EXIT_FAILED)
        if not yes and not click.confirm(
                f"You have not passed {exercise} yet: reading the reference now spoils the "
                "exercise. Show it anyway?", default=False):
            click.echo("Not shown.")
            sys.exit(EXIT_FAILED)
        state.of(exercise).solution_seen_at = state.of(exercise).solution_seen_at or time.time()
        state.save()
    ref = catalog.get(exercise).solution
    click.secho(f"Reference solution for {exercise} ({ref.name}):", bold=True)
    click.echo(ref.read_text())


@click.command("progress")
@click.option("--json", "as_json", is_flag=True, help="Print the progress as JSON.")
def progress(as_json: bool) -> None:
    """Every exercise with your best score, attempts, time spent and when you mastered it."""
    state = State.load()
    entries = []
    for ex in catalog.load().values():
        p = state.progress.get(ex.slug)
        entries.append({
            "exercise": ex.slug, "difficulty": ex.difficulty,
            "best_score": p.best[0] if p and p.best else None,
            "max_score": p.best[1] if p and p.best else ex.points,
            "attempts": p.attempts if p else 0, "time_s": round(p.time_s, 1) if p else 0.0,
            "mastered_at": (dt.datetime.fromtimestamp(p.mastered_at).isoformat(timespec="seconds")
                            if p and p.mastered_at else None),
            "solution_seen": bool(p and p.solution_seen_at and (
                p.mastered_at is None or p.solution_seen_at < p.mastered_at)),
        })
    if as_json:
        click.echo(json.dumps({"exercises": entries, "definitions": DEFINITIONS}, indent=2))
        return
    rows = []
    for e in entries:
        best = f"{e['best_score']:g}/{e['max_score']:g}" if e["best_score"] is not None else "-"
        mastered = e["mastered_at"][:10] if e["mastered_at"] else "-"
        if e["solution_seen"]:
            mastered += " (saw the solution first)" if e["mastered_at"] else " (saw the solution)"
        rows.append((e["exercise"], e["difficulty"], best, str(e["attempts"]),
                     fmt_duration(e["time_s"]) if e["time_s"] else "-", mastered))
    _table(("exercise", "difficulty", "best", "attempts", "time spent", "mastered"), rows)
    done = sum(e["mastered_at"] is not None for e in entries)
    total = sum(e["time_s"] for e in entries)
    click.secho(f"\n{done}/{len(entries)} exercises mastered · {fmt_duration(total)} spent",
                bold=True)
    for word, meaning in DEFINITIONS.items():
        click.secho(f"{word}: {meaning}", dim=True)
