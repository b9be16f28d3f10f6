"""A long-lived grading process: one pytest session grades submission after submission.

Two front ends drive the same loop (``grade_stream``):

- the local pool (``runner._Pool``) forks one such process per core from the ``grade bulk``
  process and talks to it over a multiprocessing pipe;
- a Dask worker (``cluster_worker.py``) starts ``python -m grader.bulk.serve`` with
  ``subprocess`` (a fresh interpreter: the multi-threaded Dask worker process is never forked
  to grade) and talks to it in JSON lines, one request per submission, one answer each.

The JSON conversation (``main``): the process first writes a hello line ``{"pack",
"missing"}``, reads a session line ``{"exercises", "device"}``, then answers each request line
``{"id", "files", "budget_s", "policy", "phase", "handover"}`` (a round of ``bulk/runner.py``:
``phase`` ``whole``, ``public`` or ``hidden``, a hidden round with its public round's
``handover``) with ``{"id", "result"}`` (the result model's plain data), ``{"id",
"handover"}`` (a public round's) or ``{"id", "error"}`` (grading itself failed). End of input
ends it. Both conversations carry the messages of ``messages.py``; ``job_of`` makes the
engine's ``Job`` of one, for both.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grader import catalog
from grader.engine.runner import Deliver, Handover, Job, Phase, grade_each
from grader.results import SubmissionResult
from grader.sandbox import isolation
from grader.sandbox.harness.libc import libc

from .messages import Answer, JobMessage, Settings

# Grading processes one submission may end (crash, be killed with) before it is not graded:
# it is retried on a fresh process until then, never forever.
MAX_DEATHS = 3


def job_of(message: JobMessage, settings: Settings) -> Job:
    """The engine's job for ``message``, graded with ``settings`` (the one place a message
    becomes a ``Job``); raises ``ValueError`` when its handover cannot be read."""
    handover = Handover.from_dict(message.handover) if message.handover is not None else None
    return Job({s: Path(p) if p else None for s, p in message.files.items()}, message.id,
               settings.device, settings.budget_s, policy=settings.policy,
               phase=Phase(message.phase), handover=handover)


def _keep_freed_memory() -> None:
    """Let glibc keep and reuse the memory of freed arrays (up to 32 MiB each, 64 MiB idle)
    instead of mapping fresh pages for every array a test builds: each fresh page is a fault,
    hundreds per submission. A C library without ``mallopt`` keeps its defaults."""
    m_trim_threshold, m_mmap_threshold = -1, -3
    try:
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 64 << 20)
    except AttributeError:
        pass


def grade_stream(exercises: list[str], jobs: Iterator[Job], deliver: Deliver) -> None:
    """Grade each ``Job`` of ``jobs`` in one session; when the suites cannot run at all,
    every job (taken or not) is delivered that error."""
    _keep_freed_memory()
    try:
        grade_each(exercises, jobs, deliver)
    except RuntimeError as exc:  # the suites cannot run: every submission says so
        for job in jobs:
            deliver(job, exc)


def hello() -> dict[str, Any]:
    """What a Dask worker's client must know of this grading process before it sends work."""
    return {"pack": catalog.pack_version(), "missing": isolation.probe().missing()}


# This process's staging folder (``main``): removed before an orphaned process ends itself.
_STAGING: list[str] = []


def _exit_when_orphaned(parent: int) -> None:
    """End this process (and with it its learner workers) soon after its Dask worker dies,
    removing its staging folder first (SIGTERM ends it without clean-up). Polled, not
    ``PR_SET_PDEATHSIG``: that fires when the *thread* that started this process ends, and a
    Dask worker starts it from a pool thread that may be retired."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.2)
        for folder in _STAGING:
            shutil.rmtree(folder, ignore_errors=True)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="orphan-watch").start()


def main() -> None:
    """The JSON-lines grading process (see the module's docstring). Requests come on the file
    descriptor named by ``--requests FD``, answers go to ``--answers FD``: not stdin and
    stdout, which pytest's capture replaces while the session runs."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _exit_when_orphaned(os.getppid())
    answers = os.fdopen(int(sys.argv[sys.argv.index("--answers") + 1]), "w", buffering=1)
    requests = os.fdopen(int(sys.argv[sys.argv.index("--requests") + 1]), "r")

    def send(message: dict[str, Any]) -> None:
        answers.write(json.dumps(message) + "\n")
        answers.flush()

    isolation.sweep_stale_cgroups()
    send(hello())
    line = requests.readline()
    if not line:
        return
    session = json.loads(line)

    def jobs() -> Iterator[Job]:
        for line in requests:
            request = json.loads(line)
            yield job_of(JobMessage.from_json(request),
                         Settings.from_json({**session, **request}))

    def deliver(job: Job, outcome: SubmissionResult | Handover | Exception) -> None:
        send(Answer.of(job.submission, outcome).to_json(job.phase))

    with isolation.staging_folder("grade-serve-") as tmp:
        _STAGING.append(tmp)
        tempfile.tempdir = tmp  # learner workers' folders: removed with this process's
        grade_stream(list(session["exercises"]), jobs(), deliver)
    isolation.sweep_stale_cgroups()


if __name__ == "__main__":
    main()
