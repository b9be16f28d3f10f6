"""What runs inside a Dask worker: the plugin that owns the worker's grading process, and the
task that grades one submission through it.

The Dask worker process itself runs no learner code and imports no suite: the plugin starts
``python -m grader.bulk.serve`` (``serve.py``) with ``subprocess`` on first use and keeps it
for the worker's life, restarting it when it dies or when a task asks for other exercises or
another device. One submission is graded at a time per worker (start workers with
``--nthreads 1``; more threads only queue on the plugin's lock).

A task's argument is the client's plain data (``messages.JobMessage.task``: the submission's
files as bytes, the settings, the client's pack version), read only as far as its session and
pack version until they are found to match; its return value is a JSON text: the grading
process's own answer (``{"result": ...}`` or ``{"error": ...}``) or a refusal (``{"refused":
...}``) from a worker whose pack version differs from the client's or which cannot isolate
learner code strictly. A grading process that dies raises ``GradingProcessDied``, which Dask
retries.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

from distributed import Scheduler, Worker, WorkerPlugin, get_worker

from .messages import JobMessage, Settings

PLUGIN_NAME = "vit-grader"


class _NoHttp:
    """A Dask server that serves nothing over HTTP: Dask starts one HTTP server per scheduler
    and per worker even without a dashboard (health, metrics and, on a scheduler, information
    pages: its address, the workers, running tasks' keys and call stacks, its log), which
    answers whoever can reach its port, without authentication. No port is opened for it."""

    def start_http_server(self, routes: Any, dashboard_address: Any, default_port: int = 0,
                          ssl_options: Any = None) -> None:
        return None


class QuietScheduler(_NoHttp, Scheduler):
    """The scheduler of ``--scheduler local:N``: no HTTP server (``_NoHttp``)."""


class QuietWorker(_NoHttp, Worker):
    """A worker of ``--scheduler local:N`` (started by its nanny): no HTTP server."""


def refusal(hello: dict[str, Any], pack: str) -> str | None:
    """Why a grading process that said ``hello`` may not grade for a client of ``pack``:
    ``"pack"`` (another version), ``"isolation"`` (not strict), or None."""
    if hello["pack"] != pack:
        return "pack"
    if hello["missing"]:
        return "isolation"
    return None


class GradingProcessDied(RuntimeError):
    """The worker's grading process ended during a submission (Dask retries the task)."""


class _GradingProcess:
    """``python -m grader.bulk.serve``: requests and answers on two pipes of their own."""

    def __init__(self) -> None:
        req_read, req_write = os.pipe()
        ans_read, ans_write = os.pipe()
        self.proc = subprocess.Popen(
            # -P: import grader where this worker did, not from the folder it was started in
            [sys.executable, "-P", "-m", "grader.bulk.serve", "--requests", str(req_read),
             "--answers", str(ans_write)], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, pass_fds=(req_read, ans_write), start_new_session=True)
        os.close(req_read)
        os.close(ans_write)
        self.requests = os.fdopen(req_write, "w")
        self.answers = os.fdopen(ans_read, "r")
        self.session: tuple[tuple[str, ...], str] | None = None
        self.hello = self._read()
        if self.hello is None:
            raise GradingProcessDied(f"the grading process did not start "
                                     f"(exit code {self.proc.wait()})")

    def _read(self) -> dict[str, Any] | None:
        line = self.answers.readline()
        return json.loads(line) if line else None

    def _write(self, message: dict[str, Any]) -> bool:
        try:
            self.requests.write(json.dumps(message) + "\n")
            self.requests.flush()
            return True
        except OSError:  # it died
            return False

    def grade(self, session: tuple[tuple[str, ...], str],
              request: dict[str, Any]) -> dict[str, Any] | None:
        """The answer to ``request``; ``None`` when the process died (or was already dead)."""
        if self.session is None:
            self.session = session
            if not self._write({"exercises": list(session[0]), "device": session[1]}):
                return None
        return self._read() if self._write(request) else None

    def stop(self) -> None:
        try:
            self.requests.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.answers.close()


class GradingPlugin(WorkerPlugin):
    """Registered by the client (``cluster.py``) on every worker, present and future."""

    name = PLUGIN_NAME

    def setup(self, worker: Any) -> None:
        self.worker = worker
        self._lock = threading.Lock()
        self._process: _GradingProcess | None = None

    def teardown(self, worker: Any) -> None:
        if self._process is not None:
            self._process.stop()
            self._process = None

    def _current(self, session: tuple[tuple[str, ...], str] | None) -> _GradingProcess:
        proc = self._process
        if proc is not None and (proc.proc.poll() is not None or
                                 (session is not None and proc.session not in (None, session))):
            proc.stop()
            proc = self._process = None
        if proc is None:
            proc = self._process = _GradingProcess()
        return proc

    def info(self) -> dict[str, Any]:
        """The grading process's hello: pack version, missing isolation layers, CUDA."""
        with self._lock:
            return self._current(None).hello

    def grade(self, task: dict[str, Any]) -> str:
        address = self.worker.address
        with self._lock:
            proc = self._current((tuple(task["exercises"]), task["device"]))
            why = refusal(proc.hello, task["pack"])
            if why is not None:
                return json.dumps({**proc.hello, "refused": why, "worker": address})
            folder = Path(tempfile.mkdtemp(prefix="grade-task-"))  # mode 0700
            try:
                files: dict[str, str | None] = {}
                for slug, data in task["files"].items():
                    files[slug] = None
                    if data is not None:
                        (folder / f"{slug}.py").write_bytes(data)
                        files[slug] = str(folder / f"{slug}.py")
                request = dataclasses.replace(JobMessage.from_json(task), files=files)
                answer = proc.grade((tuple(task["exercises"]), task["device"]),
                                    request.to_json(Settings.from_json(task)))
            finally:
                shutil.rmtree(folder, ignore_errors=True)
            if answer is None:
                code = proc.proc.wait()
                self._process = None
                raise GradingProcessDied(f"the grading process on {address} died while "
                                         f"grading it (exit code {code})")
            return json.dumps({**answer, "worker": address})


def grade_task(task: dict[str, Any]) -> str:
    """The Dask task: grade one submission on this worker (see the module's docstring)."""
    worker = get_worker()
    plugin = worker.plugins.get(PLUGIN_NAME)
    if plugin is None:
        return json.dumps({"refused": "plugin", "worker": worker.address})
    return plugin.grade(task)


def worker_info(dask_worker: Any) -> dict[str, Any]:
    """For ``Client.run``: this worker's hello, or why it has none."""
    plugin = dask_worker.plugins.get(PLUGIN_NAME)
    if plugin is None:
        return {"error": "the vit-grader plugin is not registered on it"}
    try:
        return plugin.info()
    except GradingProcessDied as exc:
        return {"error": str(exc)}
