"""Grade one submission: run the hidden suites in this process against a learner worker."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from grader import catalog
from grader.catalog import Exercise
from grader.sandbox import isolation
from grader.sandbox.process import WorkerProcess

from .plugin import GradingPlugin
from .results import ExerciseResult, SubmissionResult, TestResult

OnTest = Callable[[str, TestResult], None]


def _exercise_status(tests: list[TestResult], submitted: bool, import_error: bool) -> str:
    if not submitted:
        return "not_submitted"
    if import_error:
        return "error"
    return "passed" if tests and all(t.passed for t in tests) else "failed"


def grade(files: dict[str, Path | None], *, submission: str, device: str = "cpu",
          on_test: OnTest | None = None, budget_s: float = 900.0) -> SubmissionResult:
    """Grade the exercises in ``files`` (slug -> learner file, ``None`` when not submitted).

    Learner code runs only in the worker process; this process runs the hidden suites, the
    references and every comparison. Raises ``isolation.SandboxError`` when the sandbox cannot
    be started: the submission is then ungradable, not wrong. ``budget_s`` bounds the
    wall-clock time of all the learner's calls together. Only the submitted exercises' suites
    run; the others' verdicts ("not submitted") are the same for everyone, made once.
    """
    exercises: list[Exercise] = [catalog.get(slug) for slug in files]
    present = {slug: p for slug, p in files.items() if p is not None and p.is_file()}
    started = time.perf_counter()
    preload = "torch" if any(ex.needs_torch for ex in exercises if ex.slug in present) \
        else "numpy"  # numpy-only submissions never pay for importing torch
    with WorkerProcess(present, device=device, budget_s=budget_s, preload=preload) as worker:
        if present:
            worker.start()  # a sandbox that cannot start makes the submission ungradable
        plugin = _run_suites([ex for ex in exercises if ex.slug in present], worker, device,
                             set(present), on_test)
    absent = _not_submitted_results([ex for ex in exercises if ex.slug not in present], device)
    for slug, tests in absent.items() if on_test is not None else ():
        for test in tests:
            on_test(slug, test)
    result = SubmissionResult(submission=submission, device=device,
                              isolation=isolation.probe().summary())
    for ex in exercises:
        tests = plugin.results.get(ex.slug, []) if ex.slug in present else absent[ex.slug]
        fault = plugin.import_faults.get(ex.slug)
        result.exercises.append(ExerciseResult(
            exercise=ex.slug, title=ex.title, tests=tests,
            status=_exercise_status(tests, ex.slug in present, fault is not None),
            message=fault.message if fault is not None else
            ("" if ex.slug in present else "not submitted")))
    result.duration_s = time.perf_counter() - started
    return result


def _run_suites(exercises: list[Exercise], worker: WorkerProcess, device: str,
                submitted: set[str], on_test: OnTest | None) -> GradingPlugin:
    """Run the hidden suites of ``exercises`` with pytest, in this process."""
    plugin = GradingPlugin(worker, device=device, submitted=submitted, on_result=on_test)
    if not exercises:
        return plugin
    args = [str(ex.suite) for ex in exercises] + [
        "-c", str(catalog.SUITES_DIR / "pytest.ini"), "--rootdir", str(catalog.SUITES_DIR),
        "-p", "no:cacheprovider", "-p", "no:terminal", "-p", "no:randomly",
        "-p", "no:unraisableexception", "-p", "no:logging",
        "-W", "ignore::pytest.PytestAssertRewriteWarning"]
    code = pytest.main(args, plugins=[plugin])
    if plugin.sandbox_error is not None:
        raise plugin.sandbox_error
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        raise RuntimeError(f"the hidden suites could not run (pytest exit {int(code)})")
    return plugin


_NOT_SUBMITTED: dict[tuple[str, str], list[TestResult]] = {}


def _not_submitted_results(exercises: list[Exercise], device: str) -> dict[str, list[TestResult]]:
    """Each test of ``exercises`` as it stands when the exercise was not submitted: the suites
    run once per process with no learner file, the verdicts are copied after that."""
    missing = [ex for ex in exercises if (ex.slug, device) not in _NOT_SUBMITTED]
    if missing:
        with WorkerProcess({}, device=device) as nobody:
            plugin = _run_suites(missing, nobody, device, set(), None)
        for ex in missing:
            _NOT_SUBMITTED[ex.slug, device] = plugin.results.get(ex.slug, [])
            for test in _NOT_SUBMITTED[ex.slug, device]:
                test.duration_s = 0.0  # nothing ran for any submission
    return {ex.slug: copy.deepcopy(_NOT_SUBMITTED[ex.slug, device]) for ex in exercises}
