"""Grade many submissions: in parallel, cached, resumable, interruptible.

Each submission's result is cached in ``OUT/<id>/results.json`` under a key made of its files'
contents, the pack version (suites, references, tolerances, engine) and the run's settings; a
submission whose key matches is not graded again. Every file is written atomically, so a run
killed at any point leaves complete reports or none, and the next run resumes.

Below ``full`` feedback a class is graded in two rounds (``phases``): every submission's
public tests first, then, once the last public round has ended and its answer been taken,
every submission's hidden tests, each in a fresh learner worker (``engine.runner.Phase``). No
hidden input of the run exists while any public test runs, so nothing a public test shows
(what it printed, what it returned) can carry one, whatever channel the kernel offers
between workers. At ``full`` each submission is one job, public tests first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import multiprocessing
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from multiprocessing import connection as mp_connection
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from grader import catalog
from grader.engine.policy import Policy
from grader.engine.runner import Handover, Job, Phase
from grader.files import make_dir
from grader.report.submission_html import write_report
from grader.results import SubmissionResult, from_dict
from grader.sandbox.harness.libc import die_with_parent

from . import cluster as dask_cluster
from .messages import Answer, JobMessage, Settings, failure
from .reading import Submission
from .serve import MAX_DEATHS, grade_stream, job_of

CACHE_KEY = "cache_key"


def phases(policy: Policy | None) -> tuple[Phase, ...]:
    """The rounds a class is graded in under ``policy`` (see the module's docstring)."""
    return (Phase.WHOLE,) if (policy or Policy()).feedback == "full" else \
        (Phase.PUBLIC, Phase.HIDDEN)


@dataclass
class BulkOutcome:
    results: list[SubmissionResult] = field(default_factory=list)  # sorted by id
    graded: int = 0
    cached: int = 0
    interrupted: bool = False
    failures: list[tuple[str, str]] = field(default_factory=list)  # (id, why grading failed)
    # (id, why): submissions that ended MAX_DEATHS grading processes, not retried again
    ended: list[tuple[str, str]] = field(default_factory=list)


def cache_key(sub: Submission, exercises: list[str], device: str, budget_s: float,
              policy: Policy | None = None) -> str:
    digest = hashlib.sha256(catalog.pack_version().encode())
    digest.update(json.dumps({"exercises": exercises, "device": device, "budget_s": budget_s,
                              "policy": dataclasses.asdict(policy or Policy())}).encode())
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


def _write_folder(result: Any, folder: Path, key: str) -> None:
    """A graded submission's report folder (``results.json`` and its HTML report; its
    ``gradescope.json`` is written once, with the class's adjustments, when the run ends)."""
    make_dir(folder)
    write_report(result, folder, extra={CACHE_KEY: key})


def _serve(conn: Connection, parent: int, others: list[Connection], settings: Settings,
           out: str) -> None:
    """A pool process: one pytest session (suites collected once) grades each ``JobMessage``
    it is sent (in its wire form), writes its report folder and answers an ``Answer`` (in
    its wire form). ``None`` ends it."""
    # Ctrl-C is handled by the parent, which stops the pool; a pool process ignores SIGINT so
    # that a keypress does not leave half-finished pytest runs printing tracebacks, and dies
    # quietly on SIGTERM (its learner workers die with it: PR_SET_PDEATHSIG), which it also
    # gets if the parent dies without stopping it (killed).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    die_with_parent(signal.SIGTERM)
    if os.getppid() != parent:
        return
    for other in others:  # the parent's ends of the other processes' channels, inherited
        other.close()
    keys: dict[str, str] = {}

    def jobs() -> Iterator[Job]:
        while True:
            try:
                wire = conn.recv()
            except (EOFError, OSError):  # the parent is gone: end quietly
                return
            if wire is None:
                return
            message = JobMessage.from_wire(wire)
            keys[message.id] = message.key
            try:
                job = job_of(message, settings)
            except ValueError as exc:
                send(Answer(message.id, error=str(exc)))
                continue
            yield job

    def send(answer: Answer) -> None:
        try:
            conn.send(answer.to_wire())
        except OSError:  # the parent is gone: the next recv ends this process
            pass

    def deliver(job: Job, outcome: SubmissionResult | Handover | Exception) -> None:
        sub_id, key = job.submission, keys.pop(job.submission)
        answer = Answer.of(sub_id, outcome)
        if answer.error is not None or isinstance(outcome, Handover):
            send(answer)  # an error, or a public round (its hidden round completes it)
            return
        try:
            _write_folder(outcome, Path(out) / sub_id, key)
        except Exception as exc:  # noqa: BLE001 - the report could not be written
            send(Answer(sub_id, error=failure(exc)))
            return
        send(dataclasses.replace(answer, data={**answer.data, CACHE_KEY: key}))

    grade_stream(list(settings.exercises), jobs(), deliver)


def grade_all(subs: list[Submission], *, exercises: list[str], device: str, out: Path,
              workers: int, force: bool, budget_s: float = 900.0,
              policy: Policy | None = None, cluster: Any = None,
              on_done: Callable[[str, bool], None] | None = None) -> BulkOutcome:
    """Grade ``subs`` (cache first, then a process pool, or the Dask ``cluster`` of
    ``cluster.connect``), in the rounds of ``phases(policy)``; results come back sorted by
    id. ``on_done(id, finished)``: a round of the submission ended, ``finished`` when it was
    its last (or the submission came from the cache, or cannot be graded)."""
    policy = policy or Policy()
    settings = Settings(tuple(exercises), device, budget_s, policy)
    rounds = phases(policy)
    outcome = BulkOutcome()
    by_id: dict[str, SubmissionResult] = {}
    todo: list[tuple[Submission, str]] = []
    for sub in subs:
        key = cache_key(sub, exercises, device, budget_s, policy)
        hit = None if force else cached_result(out, sub.id, key)
        if hit is not None:
            by_id[sub.id] = from_dict(hit)
            outcome.cached += 1
            if on_done:
                on_done(sub.id, True)
        else:
            todo.append((sub, key))

    # Ctrl-C (or SIGTERM) raises KeyboardInterrupt, and is also remembered: one raised
    # where Python swallows exceptions (a garbage-collector callback of Dask's, a __del__)
    # still ends the run between two answers, and the outcome says it was interrupted
    stop = _Stop()
    previous_term = signal.signal(signal.SIGTERM, stop.handle)
    previous_int = signal.signal(signal.SIGINT, stop.handle)
    pool = None if cluster is not None or not todo else \
        _Pool(min(workers, len(todo)), settings, out)
    earlier: dict[str, dict[str, Any]] = {}  # id -> its public round's handover data
    try:
        for phase in rounds:
            jobs = [JobMessage(sub.id, {s: (str(sub.files[s]) if s in sub.files else None)
                                        for s in exercises}, phase, earlier.get(sub.id), key)
                    for sub, key in todo if phase is not Phase.HIDDEN or sub.id in earlier]
            if cluster is not None:
                answers = _on_cluster(cluster, jobs, out, settings)
            else:
                answers = pool.run(jobs) if jobs else ()
            # every answer of a round is taken before the next round's first job is sent
            for answer in answers:
                sub_id, error, result = answer.id, answer.error, None
                if error is None and phase is Phase.PUBLIC:
                    earlier[sub_id] = answer.data
                elif error is None:
                    try:
                        result = from_dict(answer.data)
                    except (KeyError, TypeError, AttributeError, ValueError) as exc:
                        error = failure(exc)
                if error is not None and answer.ended > 0:
                    # a reason, as a rejected submission's: the writers say "not graded: "
                    outcome.ended.append((sub_id, f"it ended {answer.ended} grading processes "
                                                  f"(the last: {error})"))
                elif error is not None:
                    outcome.failures.append((sub_id, error))
                elif result is not None:
                    by_id[sub_id] = result
                    outcome.graded += 1
                if on_done:  # a failed public round ends the submission's rounds
                    on_done(sub_id, error is not None or phase is rounds[-1])
                if stop.asked:
                    raise KeyboardInterrupt
    except KeyboardInterrupt:
        stop.asked = True
    finally:
        if pool is not None:
            pool.close()
        signal.signal(signal.SIGTERM, previous_term)
        signal.signal(signal.SIGINT, previous_int)
    if stop.asked:
        outcome.interrupted = True
        # a pool process killed while writing leaves its temporary file: the reports stay
        # complete (writes are atomic), and the leftovers go
        for tmp in [*out.glob(".*.tmp"), *out.glob("*/.*.tmp")]:
            tmp.unlink(missing_ok=True)
    outcome.results = [by_id[k] for k in sorted(by_id)]
    return outcome


def _on_cluster(cluster: Any, jobs: list[JobMessage], out: Path,
                settings: Settings) -> Iterator[Answer]:
    """The cluster's answers to one round, each result written here as the pool processes
    write theirs."""
    by_id = {job.id: job for job in jobs}
    for answer in dask_cluster.run(cluster, jobs, settings):
        job = by_id[answer.id]
        if answer.data is not None and job.phase != Phase.PUBLIC:
            try:
                _write_folder(dask_cluster.decode(answer.data), out / job.id, job.key)
                answer = dataclasses.replace(answer, data={**answer.data, CACHE_KEY: job.key})
            except (ValueError, OSError) as exc:
                answer = dataclasses.replace(answer, data=None, error=failure(exc))
        yield answer


_SWALLOWING = ("__del__", "_gc_callback")


class _Stop:
    """The run's stop request: ``handle`` is the SIGINT/SIGTERM handler."""

    def __init__(self) -> None:
        self.asked = False

    def handle(self, signum: int, frame: Any) -> None:
        self.asked = True
        # where Python would swallow the exception (printing a traceback): a __del__ or a
        # garbage-collector callback (Dask's Future.__del__, GCDiagnosis._gc_callback); the
        # run then stops at its next answer
        for _ in range(4):
            if frame is None:
                break
            if frame.f_code.co_name in _SWALLOWING:
                return
            frame = frame.f_back
        raise KeyboardInterrupt


class _Pool:
    """``size`` pool processes (forked, each running ``_serve`` with ``settings``, writing
    under ``out``), one submission in flight each; a process that dies is replaced and its
    submission reported as failed."""

    def __init__(self, size: int, settings: Settings, out: Path) -> None:
        self.size, self.settings, self.out = max(1, size), settings, str(out)
        self._ctx = multiprocessing.get_context("fork")
        self._procs: dict[Connection, tuple[BaseProcess, str | None]] = {}

    def _spawn(self) -> Connection:
        mine, theirs = self._ctx.Pipe()
        proc = self._ctx.Process(target=_serve, args=(theirs, os.getpid(), list(self._procs),
                                                      self.settings, self.out))
        proc.start()
        theirs.close()
        self._procs[mine] = (proc, None)
        return mine

    def run(self, jobs: list[JobMessage]) -> Iterator[Answer]:
        """Grade ``jobs``; yield each one's answer as it ends, with the processes it ended. A
        submission whose process dies is graded again by a fresh one, up to ``MAX_DEATHS``
        processes. The processes stay for the next round (``close`` ends them); a round
        interrupted ends them at once."""
        queue = list(reversed(jobs))
        self._jobs = {job.id: job for job in jobs}
        self._deaths: dict[str, int] = {}
        if not self._procs:
            for _ in range(min(self.size, len(jobs))):
                self._spawn()
        finished = False
        try:
            while queue or any(sub for _, sub in self._procs.values()):
                for conn, (proc, sub) in list(self._procs.items()):
                    if sub is None and queue:
                        job = queue.pop()
                        try:
                            conn.send(job.to_wire())
                        except OSError:  # it died idle: another takes the submission
                            self._replace(conn)
                            queue.append(job)
                            continue
                        self._procs[conn] = (proc, job.id)
                sentinels = {proc.sentinel: conn for conn, (proc, sub) in self._procs.items()
                             if sub is not None}
                for ready in mp_connection.wait([*sentinels.values(), *sentinels]):
                    conn = sentinels.get(ready, ready)
                    if conn not in self._procs or self._procs[conn][1] is None:
                        continue  # its answer was read already
                    answer = self._answer(conn)
                    deaths = self._deaths.get(answer.id, 0)
                    if answer.data is None and 0 < deaths < MAX_DEATHS:
                        queue.append(self._jobs[answer.id])  # once more, on a fresh process
                        continue
                    yield dataclasses.replace(answer, ended=deaths)
            finished = True
        finally:
            if not finished:
                self.close()

    def _answer(self, conn: Connection) -> Answer:
        proc, sub = self._procs[conn]
        try:
            answer = Answer.from_wire(conn.recv())
            self._procs[conn] = (proc, None)
            return answer
        except (EOFError, OSError):  # the pool process died with this submission
            self._replace(conn)
            self._deaths[sub] = self._deaths.get(sub, 0) + 1
            return Answer(sub, error=f"the grading process died (exit code {proc.exitcode})")

    def _replace(self, conn: Connection) -> None:
        proc, _ = self._procs.pop(conn)
        proc.join()
        conn.close()
        self._spawn()

    def close(self) -> None:
        """Ask each idle process to end; end the busy ones (interrupted) now."""
        for conn, (proc, sub) in self._procs.items():
            try:
                if sub is None:
                    conn.send(None)
                elif proc.is_alive():
                    os.kill(proc.pid, signal.SIGTERM)  # its learner workers die with it
            except (OSError, ProcessLookupError):
                pass
        for conn, (proc, _) in self._procs.items():
            proc.join(timeout=10)
            if proc.is_alive():
                proc.kill()
                proc.join()
            conn.close()
        self._procs.clear()
