"""`grade interview`: a mock interview on exercises the learner has not mastered yet.

The exercises come one at a time: the statement, then a clock. The learner edits the file in
their editor and submits (Enter or ``s``); the file is graded as it stands and the next
exercise comes. ``q`` gives up. At the deadline the current exercise is graded as it stands;
exercises not reached are graded too (time 0, "not reached"). The clock runs only while the
learner works: it stops while the grader grades. The report goes to
``reports/interview-<timestamp>/`` (``index.html``, and ``results.json`` with an
``interview`` field: the time and outcome per exercise).
"""

from __future__ import annotations

import datetime as dt
import math
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from grader import catalog
from grader.results import ExerciseResult, SubmissionResult
from grader.state import State

from . import workspace
from .common import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    check_isolation,
    device_option,
    exercises_dir_option,
    in_project,
    resolve_device,
)
from .keys import ENTER, Keys
from .learner import fmt_duration

SUBMITTED, TIME_UP, GAVE_UP, NOT_REACHED = "submitted", "time up", "gave up", "not reached"


def _clock(seconds: float) -> str:
    s = max(0, math.ceil(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else \
        f"{s // 60:02d}:{s % 60:02d}"


def _step(remaining: float) -> int:
    """How often a plain (non-terminal) clock line is printed: each minute, then each 10 s,
    then each second."""
    return 60 if remaining > 60 else (10 if remaining > 10 else 1)


class Interview:
    """Run the interview on ``slugs``; ``clock`` is injectable (seconds, monotonic)."""

    def __init__(self, slugs: list[str], files: dict[str, Path], *, total_s: float,
                 device: str, keys: Keys, live: bool,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.slugs, self.files, self.total_s = slugs, files, total_s
        self.device, self.keys, self.live, self.clock = device, keys, live, clock
        self.used_s = 0.0
        self.time_s: dict[str, float] = {s: 0.0 for s in slugs}
        self.outcome: dict[str, str] = {s: NOT_REACHED for s in slugs}
        self.results: dict[str, ExerciseResult] = {}

    def run(self) -> None:
        for i, slug in enumerate(self.slugs, 1):
            if self.live:
                self.keys.discard()  # keys pressed while grading were not meant for this one
            self._present(i, slug)
            outcome = self._work(i, slug)
            self.outcome[slug] = outcome
            if outcome == SUBMITTED:
                self._grade([slug])
                continue
            click.echo("Time is up." if outcome == TIME_UP else "You gave up.")
            break
        left = [s for s in self.slugs if s not in self.results]
        if left:
            self._grade(left)

    def _present(self, i: int, slug: str) -> None:
        ex = catalog.get(slug)
        click.secho(f"\n── Exercise {i}/{len(self.slugs)}: {slug} — {ex.title} "
                    f"({ex.difficulty}, {ex.points:g} points) ──", bold=True)
        click.echo(ex.statement.read_text() if ex.statement.is_file() else ex.summary)
        click.secho(f"Your file: {self.files[slug]} · Enter (or s): submit · q: give up",
                    bold=True)

    def _work(self, i: int, slug: str) -> str:
        """Wait for the learner: the outcome; the time spent is added to ``time_s``."""
        started = self.clock()
        budget = self.total_s - self.used_s
        shown: object = None
        outcome = TIME_UP
        while True:
            remaining = budget - (self.clock() - started)
            if remaining <= 0:
                break
            line = f"⏱ {_clock(remaining)} left · exercise {i}/{len(self.slugs)} {slug}"
            if self.live:
                if line != shown:
                    click.echo(f"\r{line} · Enter: submit · q: give up\x1b[K", nl=False)
                    shown = line
            elif (_step(remaining), math.ceil(remaining / _step(remaining))) != shown:
                shown = (_step(remaining), math.ceil(remaining / _step(remaining)))
                click.echo(line)
            # wake at the next whole second of the clock, to redraw it
            key = self.keys.read(min(remaining, (remaining % 1.0 or 1.0) + 0.01))
            if key in (ENTER, "s"):
                outcome = SUBMITTED
                break
            if key == "q":
                outcome = GAVE_UP
                break
        if self.live:
            click.echo()
        spent = min(self.clock() - started, budget)
        self.used_s += spent
        self.time_s[slug] = spent
        return outcome

    def _grade(self, slugs: list[str]) -> None:
        from grader.engine.runner import grade

        files: dict[str, Path | None] = {s: self.files[s] for s in slugs}
        versions = workspace.versions(files)
        click.echo(f"grading {', '.join(slugs)}...")
        result = grade(files, submission="interview", device=self.device)
        workspace.remember(result, versions, spent_s={s: self.time_s[s] for s in slugs})
        for e in result.exercises:
            self.results[e.exercise] = e
            passing = sum(t.passed for t in e.tests)
            outcome = self.outcome[e.exercise]
            if outcome != NOT_REACHED:
                outcome += f" after {fmt_duration(self.time_s[e.exercise])}"
            click.secho(f"  {'✓' if e.status == 'passed' else '✗'} {e.exercise}: "
                        f"{e.score:g}/{e.max_score:g} · {passing}/{len(e.tests)} tests pass · "
                        f"{outcome}", fg="green" if e.status == "passed" else "red")

    def summary(self) -> dict[str, Any]:
        """The ``interview`` field of results.json."""
        return {
            "minutes": self.total_s / 60, "time_s": round(self.used_s, 3),
            "exercises": [{"exercise": s, "outcome": self.outcome[s],
                           "time_s": round(self.time_s[s], 3),
                           "score": self.results[s].score, "max_score": self.results[s].max_score}
                          for s in self.slugs],
        }


def _report_dir(root: Path, started: dt.datetime) -> Path:
    base = root / f"interview-{started.strftime('%Y%m%d-%H%M%S')}"
    target, n = base, 1
    while target.exists():
        n += 1
        target = base.with_name(f"{base.name}-{n}")
    return target


@click.command("interview")
@click.option("--minutes", type=click.FloatRange(min=0, min_open=True), default=45.0,
              show_default=True, help="The time for the whole interview.")
@click.option("--count", type=click.IntRange(min=1), default=3, show_default=True,
              help="How many exercises (fewer when fewer are left to master).")
@click.option("--seed", type=int, default=None,
              help="Seed of the random choice of exercises (the same seed, the same choice).")
@exercises_dir_option
@click.option("--report-dir", type=click.Path(path_type=Path, file_okay=False),
              default=lambda: in_project("reports"), show_default="reports/ of the project",
              help="The report goes to DIR/interview-<timestamp>/.")
@device_option
def interview(minutes: float, count: int, seed: int | None, exercises_dir: Path,
              report_dir: Path, device: str) -> None:
    """A mock interview: exercises you have not mastered, one at a time, against the clock."""
    check_isolation("auto")
    if not exercises_dir.is_dir():
        raise click.UsageError(f"there is no {exercises_dir}/ folder here: run grade inside the "
                               "project, or pass --exercises-dir DIR")
    state = State.load()
    candidates = [s for s in catalog.load()
                  if not (s in state.progress and state.progress[s].mastered)]
    if not candidates:
        click.echo("You have full marks on every exercise: nothing is left for an interview "
                   "(`grade progress` shows them).")
        sys.exit(EXIT_OK)
    slugs = random.Random(seed).sample(candidates, min(count, len(candidates)))
    files = {s: exercises_dir / f"{s}.py" for s in slugs}
    for s, path in files.items():
        if not path.is_file():
            workspace.restore_stub(s, path)
            click.echo(f"{path} was missing: the stub is restored.")
    dev = resolve_device(device, slugs)
    started = dt.datetime.now()
    click.secho(f"Mock interview: {len(slugs)} exercise{'s' if len(slugs) != 1 else ''} in "
                f"{_clock(minutes * 60)}. Work in your editor; the clock stops while grading.",
                bold=True)
    try:
        with Keys() as keys:
            session = Interview(slugs, files, total_s=minutes * 60, device=dev, keys=keys,
                                live=keys.tty and sys.stdout.isatty())
            session.run()
    except KeyboardInterrupt:
        click.echo("\nInterview stopped (Ctrl-C): no report written.")
        sys.exit(130)
    except (OSError, RuntimeError) as exc:
        click.secho(f"grading could not run: {exc}", fg="red", err=True)
        sys.exit(EXIT_INTERNAL)

    from grader.report.submission_html import write_report

    result = SubmissionResult(submission="interview", device=dev,
                              exercises=[session.results[s] for s in slugs])
    summary = {**session.summary(), "seed": seed,
               "started_at": started.isoformat(timespec="seconds")}
    index = write_report(result, _report_dir(report_dir, started), extra={"interview": summary})
    click.secho(f"\n{'exercise':<27} {'outcome':<13} {'time':<9} score", bold=True)
    for s in slugs:
        e = session.results[s]
        click.echo(f"{s:<27} {session.outcome[s]:<13} {fmt_duration(session.time_s[s]):<9} "
                   f"{e.score:g}/{e.max_score:g}")
    click.secho(f"Score {result.score:g}/{result.max_score:g} in "
                f"{fmt_duration(session.used_s)} of {fmt_duration(minutes * 60)}", bold=True)
    click.echo(f"Report: {index}")
    sys.exit(EXIT_OK if result.all_passed else EXIT_FAILED)
