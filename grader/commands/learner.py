"""The learner's helpers between runs: `grade list`, `grade show`, `grade hint`."""

from __future__ import annotations

import click

from grader import catalog
from grader.state import State

from .common import EXERCISE


@click.command("list")
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


@click.command("show")
@click.argument("exercise", type=EXERCISE)
def show(exercise: str) -> None:
    """Print an exercise's statement."""
    ex = catalog.get(exercise)
    click.echo(ex.statement.read_text() if ex.statement.is_file() else ex.summary)
    click.echo(f"\nYour file: exercises/{exercise}.py · grade it with: grade {exercise}")


@click.command("hint")
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
