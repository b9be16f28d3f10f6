"""Terminal output of a grading run: a line per test as it finishes, then a summary."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import TextIO

import click

from grader import catalog, numbers
from grader.engine.hints import LABELS
from grader.engine.results import SubmissionResult, TestResult

from .summary import SYMBOLS, summary_counts

COLOURS = {"passed": "green", "failed": "red", "error": "yellow", "timeout": "magenta",
           "crashed": "yellow", "not_submitted": "bright_black"}


def hidden_in_release(result: SubmissionResult) -> int:
    """In a student release: how many hidden tests of the graded exercises it left out."""
    info = catalog.release_info()
    if not info:
        return 0
    return sum(info["exercises"].get(e.exercise, {}).get("hidden", 0) for e in result.exercises)


class Printer:
    """``verbosity``: 0 = a line per exercise, 1 = a line per test (+ why it failed),
    2 = also notes and captured output of passed tests."""

    def __init__(self, stream: TextIO = sys.stdout, verbosity: int = 1) -> None:
        self.stream, self.verbosity = stream, verbosity
        self._current: str | None = None
        self._done = 0

    def _echo(self, text: str = "", **style: object) -> None:
        click.secho(text, file=self.stream, **style)

    def start(self, name: str, device: str, n_exercises: int) -> None:
        if self.verbosity >= 1:
            self._echo(f"Grading {name} ({n_exercises} exercise"
                       f"{'s' if n_exercises != 1 else ''}, device {device})", bold=True)

    def test(self, slug: str, title: str, t: TestResult) -> None:
        if self.verbosity < 1:
            return
        if slug != self._current:
            self._current = slug
            self._echo(f"\n{slug} — {title}", bold=True)
        status = click.style(f"{SYMBOLS.get(t.status, '?')} {t.status:<7}",
                             fg=COLOURS.get(t.status))
        points = f"{numbers.points(t.score)}/{numbers.points(t.max_score)}"
        self._echo(f"  {status} {t.name:<38} {points:>7}  {t.duration_s:6.2f}s")
        indent = " " * 12
        if not t.passed and t.message:
            self._echo(textwrap.fill(t.reason, 96, initial_indent=indent,
                                     subsequent_indent=indent))
            if t.mistake:
                self._echo(textwrap.fill(f"known mistake: {t.mistake_message}", 96,
                                         initial_indent=indent,
                                         subsequent_indent=indent + "      "), fg="red")
            if t.kind_hint:
                self._echo(textwrap.fill(f"{LABELS.get(t.kind or '', 'why')}: {t.kind_hint}", 96,
                                         initial_indent=indent,
                                         subsequent_indent=indent + "      "), fg="yellow")
            for call in t.inputs[:3]:
                line = f"input: {call}"
                self._echo(indent + (line if len(line) <= 96 else line[:93] + "..."), dim=True)
            if t.traceback:
                for line in t.traceback[-3:]:
                    self._echo(f"{indent}  {line}", dim=True)
            if t.hint:
                self._echo(textwrap.fill(f"hint: {t.hint}", 96, initial_indent=indent,
                                         subsequent_indent=indent + "      "), fg="cyan")
        if self.verbosity >= 2:
            for note in t.notes:
                self._echo(f"{indent}{note}", dim=True)
            if t.output:
                self._echo(textwrap.indent(t.output.rstrip(), indent + "| "), dim=True)

    def finish(self, result: SubmissionResult, report: Path) -> None:
        self._echo()
        for e in result.exercises:
            if self.verbosity < 1 or e.status in ("not_submitted", "error"):
                line = f"{e.exercise:<26} {e.status.replace('_', ' '):<14} " \
                       f"{numbers.points(e.score)}/{numbers.points(e.max_score)}"
                if e.message and e.status != "not_submitted":
                    line += "  " + " ".join(e.message.splitlines())  # one line: no fake lines
                self._echo(line, fg=COLOURS.get(e.status))
        counts = summary_counts(result)
        self._echo(f"Score {numbers.points(result.score)}/{numbers.points(result.max_score)} · "
                   f"{counts['passed']}/{counts['total']} tests pass"
                   + (f" ({counts['public']})" if counts["public"] else ""), bold=True)
        hidden = hidden_in_release(result)
        if hidden:
            self._echo(f"{hidden} hidden test{'s' if hidden != 1 else ''} will run when your "
                       "work is graded (this release holds the public tests only).")
        self._echo(f"Report: {report}")
