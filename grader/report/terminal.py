"""Terminal output of a grading run: a line per test as it finishes, then a summary.

Every line of prose is wrapped to the terminal's width (``terminal_width``), between words
(only a word longer than a whole line is cut). One cause is told once per exercise: a known
mistake is explained at the first test it matches, the later ones name it, and the exercise
ends with the tests it matched; the tests that one shared fault stopped (a file that cannot
be loaded, a missing function, a function still the stub, tests not run:
``summary.shared_fault``) are one entry, "all 9 tests" when it stopped every test. A failing
test shows its description (what it checks) above why it failed; a source rule's test, worth
no points, reads as a rule kept, broken or unchecked, not as a score.
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from pathlib import Path
from typing import TextIO

import click

from grader import catalog, numbers
from grader.failure_kinds import LABELS
from grader.results import SubmissionResult, TestResult

from .summary import (
    RULE_SYMBOLS,
    SYMBOLS,
    mistake_label,
    names,
    rule_state,
    shared_fault,
    summary_counts,
)

COLOURS = {"passed": "green", "failed": "red", "error": "yellow", "timeout": "magenta",
           "crashed": "yellow", "not_run": "bright_black", "not_submitted": "bright_black"}
RULE_COLOURS = {"kept": "green", "broken": "red", "unchecked": "bright_black"}
DEFAULT_WIDTH = 100  # when the output is not a terminal (a pipe, a file, a test)
MIN_WIDTH = 40
INDENT = " " * 12    # a test's details, under its name
HANG = INDENT + " " * 6  # the continuation lines of a labelled detail ("hint: ...")


def terminal_width(stream: TextIO) -> int:
    """The width to wrap to: when ``stream`` is a terminal, ``$COLUMNS`` if set, else the
    terminal's own; ``DEFAULT_WIDTH`` for a pipe or a file (whatever the environment says,
    so that captured output is the same everywhere); never under ``MIN_WIDTH``."""
    try:
        if not stream.isatty():
            return DEFAULT_WIDTH
        columns = os.environ.get("COLUMNS", "")
        width = int(columns) if columns.isdigit() and int(columns) > 0 else \
            os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
        return DEFAULT_WIDTH
    return max(MIN_WIDTH, width)


def hidden_in_release(result: SubmissionResult) -> int:
    """In a student release: how many hidden tests of the graded exercises it left out."""
    info = catalog.release_info()
    if not info:
        return 0
    return sum(info["exercises"].get(e.exercise, {}).get("hidden", 0) for e in result.exercises)


SHORT_VALUES = 160  # a result this short (as text, one line) is shown whole beside its shape


class Printer:
    """``verbosity``: 0 = a line per exercise, 1 = a line per test (+ why it failed),
    2 = also notes and captured output of passed tests. ``width``: the width lines are
    wrapped to (default ``terminal_width(stream)``)."""

    def __init__(self, stream: TextIO = sys.stdout, verbosity: int = 1,
                 width: int | None = None) -> None:
        self.stream, self.verbosity = stream, verbosity
        self.width = width or terminal_width(stream)
        self._current: str | None = None
        self._seen = 0                      # tests of the current exercise so far
        self._held: list[TestResult] = []   # consecutive tests stopped by one shared fault
        self._held_from_first = False       # ... starting with the exercise's first test
        self._mistakes: dict[str, list[str]] = {}  # the current exercise's: name -> tests
        self._shown: set[str] = set()       # the exercises whose tests were printed

    def _echo(self, text: str = "", **style: object) -> None:
        click.secho(text, file=self.stream, **style)

    def _wrap(self, text: str, first: str = INDENT, rest: str | None = None,
              **style: object) -> None:
        """``text`` as one paragraph (its newlines are spaces: a learner's text cannot fake
        a line of its own), wrapped to the width between words. Only a word longer than a
        whole line is cut, where the line ends: kept whole, it would end its line early and
        put the learner's next word at the start of one."""
        self._echo(textwrap.fill(text, self.width, initial_indent=first,
                                 subsequent_indent=first if rest is None else rest,
                                 break_on_hyphens=False), **style)

    def start(self, name: str, device: str, n_exercises: int) -> None:
        if self.verbosity >= 1:
            self._echo(f"Grading {name} ({n_exercises} exercise"
                       f"{'s' if n_exercises != 1 else ''}, device {device})", bold=True)

    def test(self, slug: str, title: str, t: TestResult) -> None:
        if self.verbosity < 1:
            return
        if slug != self._current:
            self._end_exercise()
            self._current = slug
            self._shown.add(slug)
            self._echo(f"\n{slug} — {title}", bold=True)
        self._seen += 1
        fault = shared_fault(slug, t)
        if self._held and fault != shared_fault(slug, self._held[0]):
            self._release(whole=False)
        if fault is not None:  # held until the fault's run of tests ends
            if not self._held:
                self._held_from_first = self._seen == 1
            self._held.append(t)
            return
        self._print(t)

    def _status(self, status: str, name: str, score: float, max_score: float,
                duration_s: float | None, *, rule: str | None = None) -> None:
        """A test's line. ``rule`` (``summary.rule_state``): a source rule's test, worth no
        points, reads "· rule ... kept", "✗ rule ... broken" or "– rule ... unchecked"."""
        if rule is None:
            shown = click.style(f"{SYMBOLS.get(status, '?')} {status:<7}",
                                fg=COLOURS.get(status))
            points = f"{numbers.points(score)}/{numbers.points(max_score)}"
        else:
            shown = click.style(f"{RULE_SYMBOLS[rule]} {'rule':<7}", fg=RULE_COLOURS[rule])
            points = rule
        # the name's column: the line fits a narrow width, and a longer word than a score
        column = max(0, min(38, self.width - 29) - max(0, len(points) - 7))
        took = numbers.seconds(duration_s).replace(" ", "")
        self._echo(f"  {shown} {name:<{column}} {points:>7}  {took:>7}".rstrip())

    def _print(self, t: TestResult, *, hint: bool = True) -> None:
        """A test's line and why it failed; ``hint``: its code ran (not a test one shared
        fault stopped), so its description and hint may help."""
        self._status(t.status, t.name, t.score, t.max_score, t.duration_s, rule=rule_state(t))
        if not t.passed and t.message:
            if t.description and hint:  # what the test checks: the failure's context
                self._wrap(f"description: {t.description}", INDENT, INDENT + " " * 13,
                           dim=True)
            self._wrap(t.reason)
            if t.mistake:
                matched = self._mistakes.setdefault(str(t.mistake), [])
                matched.append(t.name)
                if len(matched) == 1:
                    self._wrap(f"known mistake: {t.mistake_message}", INDENT, HANG, fg="red")
                else:
                    self._wrap(f"known mistake: {mistake_label(t.mistake)} (explained above, "
                               f"at {matched[0]})", INDENT, HANG, fg="red")
            if t.kind_hint:
                self._wrap(f"{LABELS.get(t.kind or '', 'why')}: {t.kind_hint}", INDENT, HANG,
                           fg="yellow")
            for call in t.inputs[:3]:
                self._wrap(f"input: {call}", INDENT, INDENT + " " * 7, dim=True)
            if t.values and t.kind == "shape" and all(
                    "\n" not in v and len(v) <= SHORT_VALUES for v in t.values.values()):
                # a short result of the wrong length (a public test's): both, side by side
                self._wrap(f"expected: {t.values['expected']}", INDENT, INDENT + " " * 10,
                           dim=True)
                self._wrap(f"yours:    {t.values['actual']}", INDENT, INDENT + " " * 10,
                           dim=True)
            for line in t.traceback[-3:]:
                self._wrap(line, INDENT + "  ", INDENT + "      ", dim=True)
            if t.hint and hint:
                self._wrap(f"hint: {t.hint}", INDENT, HANG, fg="cyan")
        if self.verbosity >= 2:
            for note in t.notes:
                self._wrap(note, dim=True)
            if t.output:
                self._echo(textwrap.indent(t.output.rstrip(), INDENT + "| "), dim=True)

    def _release(self, *, whole: bool) -> None:
        """Print the held tests: one of them as any test (without its hint: its code never
        ran), several as one entry. ``whole``: the exercise ends here."""
        held, self._held = self._held, []
        if len(held) == 1:
            self._print(held[0], hint=False)
            return
        first = held[0]
        every = whole and self._held_from_first
        self._status(first.status, f"all {len(held)} tests" if every else f"{len(held)} tests",
                     sum(t.score for t in held), sum(t.max_score for t in held),
                     _total_seconds(held))
        fault = shared_fault(self._current or "", first)
        self._wrap(fault[1] if fault is not None else first.reason)
        if first.kind_hint:
            self._wrap(f"{LABELS.get(first.kind or '', 'why')}: {first.kind_hint}", INDENT,
                       HANG, fg="yellow")
        for line in first.traceback[-3:]:
            self._wrap(line, INDENT + "  ", INDENT + "      ", dim=True)
        if not every:
            self._wrap(f"tests: {names([t.name for t in held])}", INDENT, INDENT + " " * 7,
                       dim=True)
        if self.verbosity >= 2 and first.output:
            self._echo(textwrap.indent(first.output.rstrip(), INDENT + "| "), dim=True)

    def _end_exercise(self) -> None:
        """The current exercise's last test was printed: release what is held, then list the
        tests of each known mistake matched more than once."""
        if self._held:
            self._release(whole=True)
        for name, tests in self._mistakes.items():
            if len(tests) > 1:
                self._wrap(f"known mistake {mistake_label(name)}: matched by {len(tests)} "
                           f"tests ({names(tests)})", "  ", "    ", fg="red")
        self._mistakes, self._seen = {}, 0

    def finish(self, result: SubmissionResult, report: Path) -> None:
        self._end_exercise()
        self._current = None
        self._echo()
        for e in result.exercises:
            # the exercise's message is said once: with its tests when they were shown and
            # said it (a graded hidden test says only that the file could not be loaded)
            unsaid = bool(e.message) and e.status != "not_submitted" and (
                e.exercise not in self._shown or all(t.message != e.message for t in e.tests))
            if self.verbosity < 1 or (e.status in ("not_submitted", "error") and (
                    e.exercise not in self._shown or unsaid)):
                line = f"{e.exercise:<26} {e.status.replace('_', ' '):<14} " \
                       f"{numbers.points(e.score)}/{numbers.points(e.max_score)}"
                if unsaid:
                    line += "  " + e.message
                self._wrap(line, "", " " * 28, fg=COLOURS.get(e.status))
        counts = summary_counts(result)
        self._wrap(f"Score {numbers.points(result.score)}/{numbers.points(result.max_score)} · "
                   f"{counts['passed']}/{counts['total']} tests pass"
                   + (f" ({counts['public']})" if counts["public"] else ""), "", "  ",
                   bold=True)
        hidden = hidden_in_release(result)
        if hidden:
            self._wrap(f"{hidden} hidden test{'s' if hidden != 1 else ''} will run when your "
                       "work is graded (this release holds the public tests only).", "")
        self._echo(f"Report: {report}")


def _total_seconds(tests: list[TestResult]) -> float | None:
    """The tests' durations added up; None when one is not reported (the graded level)."""
    durations = [t.duration_s for t in tests]
    return None if None in durations else sum(durations)
