"""Grade submissions: the hidden suites run in this process against a learner worker.

The suites are collected once per process: ``grade_each`` runs one pytest session whose test
loop grades job after job (a job is one submission), so pytest's start, the suites' import and
collection are paid once, not once per submission. ``grade`` is a session of one job.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from grader import catalog
from grader.catalog import Exercise
from grader.sandbox import gpu_watch, isolation
from grader.sandbox.process import WorkerProcess

from . import verdict
from .observer import Observer
from .plugin import GradingPlugin, slug_of
from .policy import Policy
from .results import ExerciseResult, ExerciseStatus, SubmissionResult, TestResult

OnTest = Callable[[str, TestResult], None]


@dataclass
class Job:
    """One submission to grade: ``files`` maps slug -> learner file, ``None`` if not submitted.

    ``budget_s`` bounds the wall-clock time of all the learner's calls together."""

    files: dict[str, Path | None]
    submission: str
    device: str = "cpu"
    budget_s: float = 900.0
    on_test: OnTest | None = None
    policy: Policy | None = None  # feedback level, call limit, points (an assignment's)
    observer: Observer | None = None  # told what the suites do (engine/observer.py)


# What a job came to: its result, or the exception that made it ungradable.
Deliver = Callable[[Job, SubmissionResult | Exception], None]


def grade(files: dict[str, Path | None], *, submission: str, device: str = "cpu",
          on_test: OnTest | None = None, budget_s: float = 900.0,
          policy: Policy | None = None, observer: Observer | None = None) -> SubmissionResult:
    """Grade the exercises in ``files`` (slug -> learner file, ``None`` when not submitted).

    Learner code runs only in the worker process; this process runs the hidden suites, the
    references and every comparison. Raises ``isolation.SandboxError`` when the sandbox cannot
    be started: the submission is then ungradable, not wrong.
    """
    outcomes: list[SubmissionResult | Exception] = []
    grade_each(list(files), [Job(files, submission, device, budget_s, on_test, policy,
                                 observer)],
               lambda job, outcome: outcomes.append(outcome))
    if isinstance(outcomes[0], Exception):
        raise outcomes[0]
    return outcomes[0]


def grade_each(slugs: list[str], jobs: Iterable[Job], deliver: Deliver) -> None:
    """Collect the suites of ``slugs`` once, then grade each job of ``jobs`` (which may only
    name these exercises) and hand ``deliver`` its outcome, in order, as soon as it is known.

    Raises ``RuntimeError`` when the suites cannot run at all (jobs not yet taken stay
    untaken); ``KeyboardInterrupt`` passes through.
    """
    driver = _SessionDriver(jobs, deliver)
    if not slugs:  # no suite to run: no session either
        driver.loop()
        return
    args = [str(catalog.get(slug).suite) for slug in slugs] + [
        "-c", str(catalog.SUITES_DIR / "pytest.ini"), "--rootdir", str(catalog.SUITES_DIR),
        "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:randomly",
        "-p", "no:unraisableexception", "-p", "no:logging",
        # plugins the suites do not use: each one's hooks run at every test
        *(arg for name in ("doctest", "junitxml", "pastebin", "stepwise", "setuponly",
                           "setupplan", "faulthandler", "threadexception", "legacypath",
                           "tmpdir", "monkeypatch", "recwarn", "unittest", "subtests")
          for arg in ("-p", f"no:{name}")),
        "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    # no plugin of another package (anyio's, say, which watchfiles brings): the suites need
    # none, and each costs start-up time in every grading process
    autoload = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        code = pytest.main(args, plugins=[driver, driver.plugin])
    finally:
        if autoload is None:
            del os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"]
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = autoload
    if driver.interrupted:
        raise KeyboardInterrupt
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED,
                    pytest.ExitCode.NO_TESTS_COLLECTED) or not driver.looped:
        raise RuntimeError(f"the hidden suites could not run (pytest exit {int(code)})")


class _SessionDriver:
    """pytest's test loop, replaced: each job runs the collected items of its exercises."""

    def __init__(self, jobs: Iterable[Job], deliver: Deliver) -> None:
        self.jobs, self.deliver = jobs, deliver
        self.plugin = GradingPlugin()
        self.looped = self.interrupted = False
        self._items: dict[str, list[pytest.Item]] = {}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:  # a suite failed to collect: nothing can be graded
            raise session.Interrupted(f"{session.testsfailed} errors during collection")
        self.looped = True
        for item in session.items:
            self._items.setdefault(slug_of(item), []).append(item)
        self.loop()
        return True

    def loop(self) -> None:
        try:
            for job in self.jobs:
                try:
                    outcome: SubmissionResult | Exception = self._grade(job)
                except Exception as exc:  # noqa: BLE001 - ungradable: the caller says why
                    outcome = exc
                self.deliver(job, outcome)
        except KeyboardInterrupt:
            self.interrupted = True
            raise

    def _items_of(self, slugs: list[str]) -> list[pytest.Item]:
        return [item for slug in slugs for item in self._items.get(slug, [])]

    def _run(self, slugs: list[str], worker: WorkerProcess, job: Job,
             submitted: set[str], on_test: OnTest | None,
             items: list[pytest.Item] | None = None) -> None:
        """Run ``items`` (default: every test of ``slugs``) against ``worker`` as a new
        submission."""
        items = self._items_of(slugs) if items is None else items
        policy = job.policy or Policy()
        self.plugin.begin(worker, device=job.device, submitted=submitted, on_result=on_test,
                          feedback_level=policy.feedback, call_timeout_s=policy.call_timeout_s,
                          observer=job.observer)
        if items:
            verdict.forget_sizes(items[0].config)
        _run_items(items)

    def _grade(self, job: Job) -> SubmissionResult:
        exercises: list[Exercise] = [catalog.get(slug) for slug in job.files]
        present = {slug: p for slug, p in job.files.items() if p is not None and p.is_file()}
        started = time.perf_counter()
        preload = "torch" if any(ex.needs_torch for ex in exercises if ex.slug in present) \
            else "numpy"  # numpy-only submissions never pay for importing torch
        items = self._items_of([ex.slug for ex in exercises if ex.slug in present])
        ordered = _in_phases(items, (job.policy or Policy()).feedback)
        with WorkerProcess(present, device=job.device, budget_s=job.budget_s,
                           preload=preload) as worker:
            if present:
                worker.start()  # a sandbox that cannot start makes the submission ungradable
            self._run([], worker, job, set(present), job.on_test, ordered)
            if self.plugin.sandbox_error is not None:
                raise self.plugin.sandbox_error
        if ordered != items:
            self.plugin.in_order(items)
        plugin = self.plugin
        results, import_faults = plugin.results, plugin.import_faults
        absent = self._not_submitted([ex for ex in exercises if ex.slug not in present], job)
        for slug, tests in absent.items() if job.on_test is not None else ():
            for test in tests:
                job.on_test(slug, test)
        summary = isolation.probe().summary()
        if job.device.startswith("cuda") and present:
            summary["device"] = worker.device_evidence or gpu_watch.SELF_REPORTED
        result = SubmissionResult(submission=job.submission, device=job.device,
                                  isolation=summary, feedback=(job.policy or Policy()).feedback)
        for ex in exercises:
            tests = results.get(ex.slug, []) if ex.slug in present else absent[ex.slug]
            fault = import_faults.get(ex.slug)
            result.exercises.append(ExerciseResult(
                exercise=ex.slug, title=ex.title, tests=tests,
                status=_exercise_status(tests, ex.slug in present, fault is not None),
                message=fault.message if fault is not None else
                (_left_out(present[ex.slug]) if ex.slug in present else "not submitted")))
        _scale_points(result, dict((job.policy or Policy()).points))
        result.duration_s = time.perf_counter() - started
        return result

    def _not_submitted(self, exercises: list[Exercise], job: Job) -> dict[str, list[TestResult]]:
        """Each test of ``exercises`` as it stands when the exercise was not submitted: the
        items run once per process with no learner file, the verdicts are copied after that."""
        level = (job.policy or Policy()).feedback
        missing = [ex.slug for ex in exercises
                   if (ex.slug, job.device, level) not in _NOT_SUBMITTED]
        if missing:
            with WorkerProcess({}, device=job.device) as nobody:
                self._run(missing, nobody, job, set(), None)
            for slug in missing:
                _NOT_SUBMITTED[slug, job.device, level] = self.plugin.results.get(slug, [])
                for test in _NOT_SUBMITTED[slug, job.device, level]:
                    test.duration_s = 0.0  # nothing ran for any submission
        return {ex.slug: copy.deepcopy(_NOT_SUBMITTED[ex.slug, job.device, level])
                for ex in exercises}


_NOT_SUBMITTED: dict[tuple[str, str, str], list[TestResult]] = {}


def _left_out(path: Path) -> str:
    """For a learner file made from a notebook, what of the notebook was not graded (one
    line, every report shows it); "" for any other file, or when nothing was left out."""
    from grader.notebook import lines

    made = lines.read(path)
    if made is None or made[2] == "nothing was left out":
        return ""
    return made[2]


def _scale_points(result: SubmissionResult, points: dict[str, float]) -> None:
    """Scale each listed exercise's tests by the points given over the exercise's points in
    the index (the sum of its suite's: a student release's public tests, a part of them, keep
    their share; its index holds the assignment's points already)."""
    for ex in result.exercises:
        total = catalog.get(ex.exercise).points
        if ex.exercise in points and total > 0:
            factor = points[ex.exercise] / total
            for t in ex.tests:
                t.score, t.max_score = t.score * factor, t.max_score * factor


def _in_phases(items: list[pytest.Item], level: str) -> list[pytest.Item]:
    """``items`` in the order they run. Where hidden tests show less than public ones (any
    level but ``full``), every public test runs first, and only then the hidden ones: each
    public test has ended, and its output been taken, before the worker is sent its first
    hidden input, so the output a public test shows can carry nothing of one (what a hidden
    test's call prints is never shown at those levels). At ``full``, the suite's order."""
    if level == "full":
        return items
    public = [item for item in items if verdict.visibility(item) == "public"]
    return public + [item for item in items if verdict.visibility(item) != "public"]


def _run_items(items: list[pytest.Item]) -> None:
    """pytest's run protocol for ``items`` (the last one tears every fixture down). A hook
    that raises (a grader bug) still leaves no fixture of this submission set up for the
    next one."""
    for i, item in enumerate(items):
        try:
            item.ihook.pytest_runtest_protocol(
                item=item, nextitem=items[i + 1] if i + 1 < len(items) else None)
        except Exception:
            item.session._setupstate.teardown_exact(None)
            raise


def _exercise_status(tests: list[TestResult], submitted: bool,
                     import_error: bool) -> ExerciseStatus:
    if not submitted:
        return ExerciseStatus.NOT_SUBMITTED
    if import_error:
        return ExerciseStatus.ERROR
    return ExerciseStatus.PASSED if tests and all(t.passed for t in tests) else \
        ExerciseStatus.FAILED
