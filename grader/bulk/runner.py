"""Grade many submissions: in parallel, cached, resumable, interruptible.

Each submission's result is cached in ``OUT/<id>/results.json`` under a key made of its files'
contents, the pack version (suites, references, tolerances, engine) and the run's settings; a
submission whose key matches is not graded again. Every file is written atomically, so a run
killed at any point leaves complete reports or none, and the next run resumes.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader import catalog

from .layouts import Submission

CACHE_KEY = "cache_key"


@dataclass
class BulkOutcome:
    results: list[dict[str, Any]] = field(default_factory=list)
    graded: int = 0
    cached: int = 0
    interrupted: bool = False
    failures: list[tuple[str, str]] = field(default_factory=list)  # (id, why grading failed)


def cache_key(sub: Submission, exercises: list[str], device: str, budget_s: float) -> str:
    digest = hashlib.sha256(catalog.pack_version().encode())
    digest.update(json.dumps({"exercises": exercises, "device": device,
                              "budget_s": budget_s}).encode())
    for slug in sorted(sub.files):
        digest.update(slug.encode())
        digest.update(hashlib.sha256(sub.files[slug].read_bytes()).digest())
    return digest.hexdigest()


def cached_result(out: Path, sub_id: str, key: str) -> dict[str, Any] | None:
    try:
        data = json.loads((out / sub_id / "results.json").read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get(CACHE_KEY) == key else None


def grade_one(sub_id: str, files: dict[str, str | None], device: str, out: str,
              key: str, budget_s: float) -> dict[str, Any]:
    """Grade one submission and write its report folder (runs in a pool process)."""
    from grader.engine.runner import grade
    from grader.report.html import write_report

    from .exports import write_gradescope_json

    result = grade({s: Path(p) if p else None for s, p in files.items()}, submission=sub_id,
                   device=device, budget_s=budget_s)
    folder = Path(out) / sub_id
    data = {**result.to_dict(), CACHE_KEY: key}
    folder.mkdir(parents=True, exist_ok=True)
    write_gradescope_json(folder / "gradescope.json", data)
    write_report(result, folder, extra={CACHE_KEY: key})
    return data


def _pool_initializer() -> None:
    # Ctrl-C is handled by the parent, which stops the pool; the children ignore SIGINT so
    # that a keypress does not leave half-finished pytest runs printing tracebacks, and die
    # quietly on SIGTERM (their learner workers die with them: PR_SET_PDEATHSIG).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def grade_all(subs: list[Submission], *, exercises: list[str], device: str, out: Path,
              workers: int, force: bool, budget_s: float = 900.0,
              on_done: Callable[[str, bool], None] | None = None) -> BulkOutcome:
    """Grade ``subs`` (cache first, then a process pool); results come back sorted by id."""
    outcome = BulkOutcome()
    by_id: dict[str, dict[str, Any]] = {}
    todo: list[tuple[Submission, str]] = []
    for sub in subs:
        key = cache_key(sub, exercises, device, budget_s)
        hit = None if force else cached_result(out, sub.id, key)
        if hit is not None:
            by_id[sub.id] = hit
            outcome.cached += 1
            if on_done:
                on_done(sub.id, True)
        else:
            todo.append((sub, key))

    def args(sub: Submission, key: str) -> tuple:
        files = {s: (str(sub.files[s]) if s in sub.files else None) for s in exercises}
        return sub.id, files, device, str(out), key, budget_s

    previous_term = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        for sub_id, data, error in _run_pool(todo, args, workers):
            if error is not None:
                outcome.failures.append((sub_id, error))
            else:
                by_id[sub_id] = data
                outcome.graded += 1
            if on_done:
                on_done(sub_id, False)
    except KeyboardInterrupt:
        outcome.interrupted = True
        # a pool process killed while writing leaves its temporary file: the reports stay
        # complete (writes are atomic), and the leftovers go
        for tmp in [*out.glob(".*.tmp"), *out.glob("*/.*.tmp")]:
            tmp.unlink(missing_ok=True)
    finally:
        signal.signal(signal.SIGTERM, previous_term)
    outcome.results = [by_id[k] for k in sorted(by_id)]
    return outcome


def _raise_interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run_pool(todo: list[tuple[Submission, str]], args: Callable[..., tuple],
              workers: int) -> Iterator[tuple[str, dict[str, Any] | None, str | None]]:
    if not todo:
        return
    ctx = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(max_workers=max(1, min(workers, len(todo))), mp_context=ctx,
                               initializer=_pool_initializer)
    pending: dict[Future[dict[str, Any]], str] = {}
    queue = list(reversed(todo))
    finished = False
    try:
        while queue or pending:
            while queue and len(pending) < 2 * workers:  # a short queue: quick to cancel
                sub, key = queue.pop()
                pending[pool.submit(grade_one, *args(sub, key))] = sub.id
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                sub_id = pending.pop(fut)
                try:
                    yield sub_id, fut.result(), None
                except Exception as exc:  # noqa: BLE001 - grading itself failed: ungradable
                    yield sub_id, None, f"{type(exc).__name__}: {exc}"
        finished = True
    finally:
        if not finished:
            _kill_pool(pool)
        pool.shutdown(wait=True, cancel_futures=True)


def _kill_pool(pool: ProcessPoolExecutor) -> None:
    """Interrupted: end the pool's processes now (their learner workers die with them)."""
    for proc in list(getattr(pool, "_processes", {}).values()):
        if proc.is_alive():
            try:
                os.kill(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
