"""`grade --watch`: re-grade an exercise when its file is saved, and say what changed.

Files are polled (stat every ``poll_s``): it works on every file system and platform, needs no
dependency, and a poll costs microseconds next to a grading. A change is graded once the file
has stayed unchanged for ``debounce_s`` (editors write several times per save), and only when
its content differs from the version last graded. Keys (see ``keys.py``): ``h`` the next hint
of the exercise last graded, ``r`` re-grade it now, ``q`` quit; Ctrl-C quits too.
"""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import click

from grader.engine.results import ExerciseResult
from grader.state import State

from .common import resolve_device
from .keys import ENTER, Keys

Stamp = tuple[int, int] | None  # (mtime_ns, size), None when the file is missing


def _stamp(path: Path) -> Stamp:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _names(names: list[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def describe_change(before: dict[str, str] | None, after: dict[str, str]) -> str:
    """What changed between two gradings of an exercise (test name -> status), one line.

    A test absent from ``before`` counts as not passing there. Empty when there is no
    earlier grading to compare with (or no test in this one).
    """
    if not before or not after:
        return ""
    gained = [n for n, s in after.items() if s == "passed" and before.get(n) != "passed"]
    lost = [n for n, s in after.items() if s != "passed" and before.get(n) == "passed"]
    parts = []
    if gained:
        parts.append(f"{len(gained)} more test{'s pass' if len(gained) > 1 else ' passes'}: "
                     f"{_names(gained)}")
    if lost:
        parts.append(f"{len(lost)} test{'s now fail' if len(lost) > 1 else ' now fails'}: "
                     f"{_names(lost)}")
    if not parts:
        passing = sum(s == "passed" for s in after.values())
        parts.append(f"no test changed its verdict ({passing}/{len(after)} pass)")
    return "Since the last run: " + " · ".join(parts)


class _Watch:
    def __init__(self, files: dict[str, Path], name: str, *, device: str, report_dir: Path,
                 verbosity: int, remember: bool) -> None:
        self.files, self.name, self.device = files, name, device
        self.report_dir, self.verbosity, self.remember = report_dir, verbosity, remember
        self.results: dict[str, ExerciseResult] = {}
        self.graded: dict[str, str | None] = {}  # slug -> digest of the content last graded
        self.current: str | None = None
        state = State.load() if remember else State()
        self.previous = {s: dict(p.last_tests) for s, p in state.progress.items()
                         if p.last_tests}

    def grade(self, slugs: list[str]) -> None:
        """Grade the exercises ``slugs`` whose file exists, then say what changed."""
        from .grading import grade_once

        present: dict[str, Path | None] = {s: self.files[s] for s in slugs
                                           if self.files[s].is_file()}
        if not present:
            return
        for s in present:
            self.graded[s] = _digest(self.files[s])
        try:
            # resolved per grading: torch is imported only once a torch exercise is graded
            device = resolve_device(self.device, list(present))
            result = grade_once(present, self.name, device=device,
                                report_dir=self.report_dir, as_json=False,
                                verbosity=self.verbosity, remember=self.remember,
                                others=list(self.results.values()))
        except (OSError, RuntimeError) as exc:
            click.secho(f"grading could not run: {exc}", fg="red")
            return
        for e in result.exercises:
            tests = {t.name: t.status for t in e.tests}
            change = describe_change(self.previous.get(e.exercise), tests)
            if change:
                click.secho(f"{e.exercise}: {change}" if len(result.exercises) > 1 else change,
                            bold=True)
            self.previous[e.exercise] = tests
            self.results[e.exercise] = e
        failing = [e.exercise for e in result.exercises if e.status != "passed"]
        self.current = (failing or [e.exercise for e in result.exercises])[0]

    def prompt(self, keys: Keys) -> None:
        paths = list(self.files.values())
        what = str(paths[0]) if len(paths) == 1 else f"{paths[0].parent}/ ({len(paths)} files)"
        if keys.available:
            hint = f"h: next hint for {self.current} · " if self.current else ""
            click.echo(f"watching for changes to {what} · {hint}r: re-grade · q: quit")
        else:
            click.echo(f"watching for changes to {what} (Ctrl-C to stop)")

    def hint(self) -> None:
        from .learner import show_next_hint

        if self.current is None:
            click.echo("No exercise graded yet: save one of the watched files first.")
        else:
            show_next_hint(self.current)


def watch_files(files: dict[str, Path], name: str, *, device: str, report_dir: Path,
                verbosity: int, remember: bool = True, debounce_s: float = 0.4,
                poll_s: float = 0.2) -> None:
    """Grade ``files`` (slug -> learner file, existing or not), then re-grade each one when it
    is saved, until ``q`` or Ctrl-C. ``device`` is the option's value (cpu, cuda or auto)."""
    w = _Watch(files, name, device=device, report_dir=report_dir, verbosity=verbosity,
               remember=remember)
    seen = {s: _stamp(p) for s, p in files.items()}
    pending: dict[str, tuple[Stamp, float]] = {}  # slug -> (stamp, when it was last seen change)
    present = [s for s, p in files.items() if p.is_file()]
    try:
        with Keys() as keys:
            if present:
                w.grade(present)
            else:
                click.echo(f"No exercise file yet in {next(iter(files.values())).parent}/.")
            w.prompt(keys)
            while True:
                key = keys.read(poll_s)
                if key == "q":
                    break
                if key == "h":
                    w.hint()
                elif key == "r" and w.current is not None:
                    click.clear()
                    w.grade([w.current])
                    w.prompt(keys)
                elif key is not None and key != ENTER:
                    click.echo("keys: h next hint · r re-grade · q quit")
                now = time.monotonic()
                for s, p in files.items():
                    st = _stamp(p)
                    if st != seen[s] and (s not in pending or pending[s][0] != st):
                        pending[s] = (st, now)  # (re)start the quiet period
                ready = sorted((s for s, (_, t0) in pending.items() if now - t0 >= debounce_s),
                               key=list(files).index)
                if not ready:
                    continue
                for s in ready:
                    seen[s] = pending.pop(s)[0]
                removed = [s for s in ready if seen[s] is None]
                for s in removed:
                    click.echo(f"{files[s]} was removed; waiting for it to come back.")
                changed = [s for s in ready if seen[s] is not None
                           and _digest(files[s]) != w.graded.get(s)]
                if changed:
                    click.clear()
                    w.grade(changed)
                if changed or removed:
                    w.prompt(keys)
    except KeyboardInterrupt:
        pass
    click.echo("stopped watching.")

