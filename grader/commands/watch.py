"""`grade --watch`: re-grade an exercise when its file is saved, and say what changed.

Saves are seen through file-system events (``watchfiles``); where those cannot be had (no
``watchfiles``, a watcher that fails) or with ``--poll`` (a network or mounted folder whose
events never arrive), the files are polled instead (stat every ``poll_s``). A change is graded
once the file has stayed unchanged for ``debounce_s`` (editors write several times per save),
and only when its content differs from the version last graded. Keys (see ``keys.py``): ``h``
the next hint of the exercise last graded, ``r`` re-grade it now, ``q`` quit; Ctrl-C quits.
"""

from __future__ import annotations

import hashlib
import queue
import threading
import time
from pathlib import Path

import click

from grader.results import ExerciseResult
from grader.state import State

from .common import resolve_device
from .keys import ENTER, Keys
from .once import grade_once, next_step

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
        if self.remember:
            line = next_step(result)
            if line:
                click.echo(line)
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


class _Polling:
    """The fallback where file events do not work: stat every file at each look."""

    description = "polling the files"

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self.seen = {s: _stamp(p) for s, p in files.items()}

    def changes(self) -> set[str]:
        """The slugs whose file changed (mtime, size, created, removed) since the last look."""
        out = set()
        for s, p in self.files.items():
            st = _stamp(p)
            if st != self.seen[s]:
                self.seen[s] = st
                out.add(s)
        return out

    def close(self) -> None:
        pass


class _EventsFailed(Exception):
    pass


class _Events:
    """File-system events from ``watchfiles`` (inotify, FSEvents, ...), in a thread; the
    folders of the files are watched, so a file created later is seen too."""

    description = "file events"

    def __init__(self, files: dict[str, Path]) -> None:
        import watchfiles  # ImportError: no events on this installation

        self._slugs = {str(p.parent.resolve() / p.name): s for s, p in files.items()}
        folders = sorted({str(p.parent.resolve()) for p in files.values()})
        self._queue: queue.Queue[str | BaseException] = queue.Queue()
        self._stop = threading.Event()
        self._ready = threading.Event()

        def run() -> None:
            try:
                for changes in watchfiles.watch(
                        *folders, watch_filter=lambda _, path: path in self._slugs,
                        debounce=400, step=50, rust_timeout=200, yield_on_timeout=True,
                        stop_event=self._stop, recursive=False, raise_interrupt=False):
                    self._ready.set()
                    for _, path in changes:
                        self._queue.put(self._slugs[path])
            except BaseException as exc:  # noqa: BLE001 - reported to the main thread
                self._queue.put(exc)
            finally:
                self._ready.set()

        self._thread = threading.Thread(target=run, name="grade-watch", daemon=True)
        self._thread.start()

    def wait_ready(self, timeout: float = 2.0) -> None:
        """Wait until the watcher is set up (or has failed), so no early save is missed."""
        self._ready.wait(timeout)

    def changes(self) -> set[str]:
        """The slugs with an event since the last look; _EventsFailed once the watcher died."""
        out = set()
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if isinstance(item, BaseException):
                raise _EventsFailed(str(item) or type(item).__name__)
            out.add(item)
        if not self._thread.is_alive() and not self._stop.is_set() and self._queue.empty():
            raise _EventsFailed("the watcher stopped")
        return out

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=1.0)


def _source(files: dict[str, Path], poll: bool, fallback: _Polling) -> _Events | _Polling:
    """File events where they work; ``fallback`` (polling) when asked for (``--poll``) or
    when events cannot be had (no ``watchfiles``, a watcher that does not start)."""
    if poll:
        return fallback
    try:
        events = _Events(files)
        events.wait_ready()
        events.changes()  # a watcher that could not start says so now (files are graded next)
    except Exception as exc:  # noqa: BLE001 - ImportError, _EventsFailed, a platform's error
        click.echo(f"file events are not available ({exc}): polling the files instead")
        return fallback
    return events


def watch_files(files: dict[str, Path], name: str, *, device: str, report_dir: Path,
                verbosity: int, remember: bool = True, debounce_s: float = 0.4,
                poll_s: float = 0.2, poll: bool = False) -> None:
    """Grade ``files`` (slug -> learner file, existing or not), then re-grade each one when it
    is saved, until ``q`` or Ctrl-C. ``device`` is the option's value (cpu, cuda or auto).

    Saves are seen through file events (``watchfiles``); ``poll`` (or events that cannot be
    had) stats the files every ``poll_s`` instead. Keys are read every ``poll_s`` either way.
    """
    w = _Watch(files, name, device=device, report_dir=report_dir, verbosity=verbosity,
               remember=remember)
    fallback = _Polling(files)  # taken now: a switch to polling later misses no save
    source = _source(files, poll, fallback)
    if verbosity > 1:
        click.echo(f"watch mode: {source.description}")
    pending: dict[str, float] = {}  # slug -> when it last changed (the quiet period's start)
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
                try:
                    changed_now = source.changes()
                except _EventsFailed as exc:
                    click.echo(f"file events stopped working ({exc}): polling the files "
                               "instead")
                    source.close()
                    source = fallback
                    changed_now = source.changes()
                for s in changed_now:
                    pending[s] = now  # (re)start the quiet period
                ready = sorted((s for s, t0 in pending.items() if now - t0 >= debounce_s),
                               key=list(files).index)
                if not ready:
                    continue
                for s in ready:
                    del pending[s]
                removed = [s for s in ready if not files[s].is_file()]
                for s in removed:
                    click.echo(f"{files[s]} was removed; waiting for it to come back.")
                changed = [s for s in ready if s not in removed
                           and _digest(files[s]) != w.graded.get(s)]
                if changed:
                    click.clear()
                    w.grade(changed)
                if changed or removed:
                    w.prompt(keys)
    except KeyboardInterrupt:
        pass
    finally:
        source.close()
    click.echo("stopped watching.")
