"""Grade submissions: the hidden suites run in this process against a learner worker.

The suites are collected once per process: ``grade_each`` runs one pytest session whose test
loop grades job after job (a job is one submission, or one phase of it), so pytest's start, the
suites' import and collection are paid once, not once per submission. ``grade`` is a session
of one job.

A job's ``phase`` says which tests it runs: ``WHOLE`` every test of the submission (public ones
first, in one worker, where hidden tests show less than public ones); ``PUBLIC`` its public
tests only, delivered as a ``Handover``; ``HIDDEN`` its hidden tests only, in a fresh worker,
completing the ``Handover`` of its public phase into the submission's result. ``grade bulk``
grades a class's public phases first, and its hidden phases only once every public phase has
ended (``grader/bulk/runner.py``): no hidden input exists while any public test runs.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

import pytest

from grader import catalog
from grader.catalog import Exercise
from grader.engine import verdict
from grader.engine.items import ItemRunner
from grader.engine.plugin import GradingPlugin, Loaded, slug_of
from grader.engine.policy import Policy, Runner
from grader.feedback import levels as feedback
from grader.judge import evidence
from grader.judge.observer import Observer
from grader.results import (
    ExerciseResult,
    ExerciseStatus,
    SubmissionResult,
    TestResult,
    from_dict,
    test_dict,
    test_from_dict,
)
from grader.sandbox import gpu_watch, isolation
from grader.sandbox.process import WorkerProcess

OnTest = Callable[[str, TestResult], None]


class Phase(StrEnum):
    """Which tests of a submission a job runs (see the module's docstring)."""

    WHOLE = "whole"
    PUBLIC = "public"
    HIDDEN = "hidden"


@dataclass
class Handover:
    """A submission's public phase, as its hidden phase takes it over; plain data (``to_dict``)
    so that it can cross a pipe or a Dask task, and be kept by whoever schedules the phases.

    ``result``: the public tests' results (every exercise, its status from them alone);
    ``timeouts``: per exercise, the limits of its calls that timed out (``MAX_TIMEOUTS``
    counts over both phases); ``sizes``: per exercise, ``(size, passed, functions)`` of its
    valued tests (the hints' "smaller tests" history); ``loaded``: per submitted exercise, what
    its import came to (``plugin.Loaded``: made before any hidden input existed, the hidden
    phase's only word on failed imports and missing names); ``carried`` and ``unnamed``: what
    its tests' evidence leaves the hidden phase's naming of mistakes, and the public results
    that name one as they read without it (``plugin._finish``); ``budget_left_s``: what is left
    of the submission's time budget; ``seconds``: the phase's wall-clock time."""

    result: SubmissionResult
    timeouts: dict[str, list[float]] = field(default_factory=dict)
    sizes: dict[str, list[tuple[int, bool, frozenset[str]]]] = field(default_factory=dict)
    loaded: dict[str, Loaded] = field(default_factory=dict)
    carried: dict[str, evidence.Carried] = field(default_factory=dict)
    unnamed: dict[str, dict[str, TestResult]] = field(default_factory=dict)
    budget_left_s: float = 0.0
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {"result": self.result.to_dict(), "timeouts": self.timeouts,
                "sizes": {slug: [[size, passed, sorted(funcs)] for size, passed, funcs in seen]
                          for slug, seen in self.sizes.items()},
                "loaded": {slug: {"missing": sorted(record.missing), "failed": record.failed}
                           for slug, record in self.loaded.items()},
                "carried": {slug: c.to_dict() for slug, c in self.carried.items()},
                "unnamed": {slug: {name: test_dict(t) for name, t in tests.items()}
                            for slug, tests in self.unnamed.items()},
                "budget_left_s": self.budget_left_s, "seconds": self.seconds}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Handover:
        """The handover of its ``to_dict`` form (raises ``ValueError`` when malformed)."""
        try:
            return cls(result=from_dict(data["result"]),
                       timeouts={str(s): [float(t) for t in ts]
                                 for s, ts in data["timeouts"].items()},
                       sizes={str(s): [(int(n), bool(ok), frozenset(map(str, f)))
                                       for n, ok, f in seen]
                              for s, seen in data["sizes"].items()},
                       loaded={str(s): Loaded(missing=frozenset(map(str, r["missing"])),
                                              failed=None if r["failed"] is None
                                              else str(r["failed"]))
                               for s, r in data["loaded"].items()},
                       carried={str(s): evidence.Carried.from_dict(c)
                                for s, c in data["carried"].items()},
                       unnamed={str(s): {str(n): test_from_dict(t) for n, t in tests.items()}
                                for s, tests in data["unnamed"].items()},
                       budget_left_s=float(data["budget_left_s"]),
                       seconds=float(data["seconds"]))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise ValueError(f"a public phase's handover cannot be read: {exc}") from None


@dataclass
class Job:
    """One submission to grade: ``files`` maps slug -> learner file, ``None`` if not submitted.

    ``budget_s`` bounds the wall-clock time of all the learner's calls together. ``phase``:
    which of its tests this job runs; a ``HIDDEN`` job needs its public phase's ``handover``.
    """

    files: dict[str, Path | None]
    submission: str
    device: str = "cpu"
    budget_s: float = 900.0
    on_test: OnTest | None = None
    policy: Policy | None = None  # feedback level, call limit, points (an assignment's)
    observer: Observer | None = None  # told what the suites do (judge/observer.py)
    phase: Phase = Phase.WHOLE
    handover: Handover | None = None  # a HIDDEN job's: what its public phase came to

    def __post_init__(self) -> None:
        if (self.phase is Phase.HIDDEN) != (self.handover is not None):
            raise ValueError("a hidden phase, and only one, takes its public phase's handover")


# What a job came to: its result (a PUBLIC job's: its handover), or the exception that made it
# ungradable.
Deliver = Callable[[Job, SubmissionResult | Handover | Exception], None]


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


def grade_each(slugs: list[str], jobs: Iterable[Job], deliver: Deliver,
               runner: Runner | None = None) -> None:
    """Collect the suites of ``slugs`` once, then grade each job of ``jobs`` (which may only
    name these exercises) and hand ``deliver`` its outcome, in order, as soon as it is known
    (its worker ended before: what it printed is taken). ``jobs`` is read lazily: a job is not
    asked for before the previous one's outcome is delivered.

    ``runner``: who runs the items (``policy.Runner``; default: ``GRADER_RUNNER``, else the
    engine where it can).

    Raises ``RuntimeError`` when the suites cannot run at all (jobs not yet taken stay
    untaken); ``KeyboardInterrupt`` passes through.
    """
    driver = _SessionDriver(jobs, deliver, runner or Runner.from_env())
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

    def __init__(self, jobs: Iterable[Job], deliver: Deliver, runner: Runner) -> None:
        self.jobs, self.deliver = jobs, deliver
        self.plugin = GradingPlugin()
        self.items = ItemRunner(self.plugin, (self, self.plugin), runner)
        self.looped = self.interrupted = False
        self._items: dict[str, list[pytest.Item]] = {}
        self._config: pytest.Config | None = None

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> bool:
        if session.testsfailed:  # a suite failed to collect: nothing can be graded
            raise session.Interrupted(f"{session.testsfailed} errors during collection")
        self.looped = True
        self._config = session.config
        for item in session.items:
            self._items.setdefault(slug_of(item), []).append(item)
        self.loop()
        return True

    def loop(self) -> None:
        try:
            for job in self.jobs:
                try:
                    outcome: SubmissionResult | Handover | Exception = self._grade(job)
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
             items: list[pytest.Item] | None = None,
             handover: Handover | None = None) -> None:
        """Run ``items`` (default: every test of ``slugs``) against ``worker`` as a new
        submission, or as the rest of the one whose public phase left ``handover``."""
        items = self._items_of(slugs) if items is None else items
        policy = job.policy or Policy()
        self.plugin.begin(worker, device=job.device, submitted=submitted, on_result=on_test,
                          feedback_level=policy.feedback, call_timeout_s=policy.call_timeout_s,
                          observer=job.observer,
                          loaded=handover.loaded if handover is not None else None,
                          round_of=job.phase.value,
                          carried=handover.carried if handover is not None else None,
                          timeouts=handover.timeouts if handover is not None else None)
        if items:
            verdict.forget_sizes(items[0].config,
                                 handover.sizes if handover is not None else None)
        if handover is not None:
            self._take_over(handover)
        self.plugin.plan(items)
        try:
            self.items.run(items)
        finally:
            self.plugin.finish()  # (an interrupted run: the verdicts of what ran)

    def _take_over(self, handover: Handover) -> None:
        """The paragraphs the public phase's tests said (said once per exercise), as if its
        tests went on in the same session (its timeouts and sizes: ``_run``)."""
        for ex in handover.result.exercises:
            for test in ex.tests:
                self.plugin.paragraphs.once(ex.exercise, copy.copy(test))

    def _left_by_public(self, worker: WorkerProcess, job: Job) -> Handover:
        """What this public phase leaves its hidden phase, taken from the session before
        anything else runs in it (its ``result`` and ``seconds`` are set when known)."""
        left = job.budget_s if worker.deadline is None else worker.deadline - time.monotonic()
        return Handover(result=SubmissionResult(submission=job.submission, device=job.device),
                        timeouts=self.plugin.timeouts,
                        sizes=verdict.sizes(self._config) if self._config else {},
                        loaded=self.plugin.loads(), carried=dict(self.plugin.carried),
                        unnamed=dict(self.plugin.unnamed), budget_left_s=max(0.0, left))

    def _grade(self, job: Job) -> SubmissionResult | Handover:
        exercises: list[Exercise] = [catalog.get(slug) for slug in job.files]
        present = {slug: p for slug, p in job.files.items() if p is not None and p.is_file()}
        started = time.perf_counter()
        preload = "torch" if any(ex.needs_torch for ex in exercises if ex.slug in present) \
            else "numpy"  # numpy-only submissions never pay for importing torch
        items = self._items_of([ex.slug for ex in exercises if ex.slug in present])
        ordered = _in_phases(items, (job.policy or Policy()).feedback, job.phase)
        earlier = job.handover  # (a hidden phase: its public phase's)
        with WorkerProcess(present, device=job.device, budget_s=job.budget_s,
                           preload=preload) as worker:
            if earlier is not None:  # what the public phase left of the budget
                worker.deadline = time.monotonic() + earlier.budget_left_s
            if present and ordered:
                worker.start()  # a sandbox that cannot start makes the submission ungradable
            self._run([], worker, job, set(present), job.on_test, ordered, earlier)
            if job.phase is Phase.PUBLIC and present:
                self.plugin.load_all()  # every import said before any hidden input exists
            if self.plugin.sandbox_error is not None:
                raise self.plugin.sandbox_error
        if ordered != items:
            self.plugin.in_order(items)
        plugin = self.plugin
        results, import_faults = plugin.results, plugin.import_faults
        refuted_public = plugin.refuted_public
        unconfirmed_public = plugin.unconfirmed_public
        # (taken now: the session of the exercises not submitted forgets this one's state)
        handover = self._left_by_public(worker, job) if job.phase is Phase.PUBLIC else None
        absent = self._not_submitted([ex for ex in exercises if ex.slug not in present], job)
        for slug, tests in absent.items() if job.on_test is not None else ():
            for test in tests:
                job.on_test(slug, test)
        summary = isolation.probe().summary()
        if job.device.startswith("cuda") and present:
            summary["device"] = worker.device_evidence or (
                earlier.result.isolation.get("device") if earlier is not None else None) or \
                gpu_watch.SELF_REPORTED
        result = SubmissionResult(submission=job.submission, device=job.device,
                                  isolation=summary, feedback=(job.policy or Policy()).feedback)
        before = {ex.exercise: ex for ex in earlier.result.exercises} if earlier else {}
        for ex in exercises:
            tests = results.get(ex.slug, []) if ex.slug in present else absent[ex.slug]
            _scale_points(ex.slug, tests, dict((job.policy or Policy()).points))
            if handover is not None:  # (their stand-ins too)
                _scale_points(ex.slug, list(handover.unnamed.get(ex.slug, {}).values()),
                              dict((job.policy or Policy()).points))
            fault = import_faults.get(ex.slug)
            message = fault.message if fault is not None else \
                (_left_out(present[ex.slug]) if ex.slug in present else "not submitted")
            unloadable = fault is not None
            public = before.get(ex.slug)
            if public is not None:  # the public phase's tests, in the suite's order; a public
                # test's mistake the hidden tests' evidence refutes is not named (unnamed)
                swap = refuted_public.get(ex.slug, set())
                shown = [earlier.unnamed.get(ex.slug, {}).get(t.name, t) if t.name in swap
                         else t for t in public.tests]
                # and one whose points the hidden tests' calls do not confirm is not counted
                gate = unconfirmed_public.get(ex.slug, {})
                shown = [feedback.unconfirmed(t, gate[t.name], result.feedback)
                         if t.passed and t.name in gate else t for t in shown]
                tests = self._in_suite_order(ex.slug, shown + tests)
                if public.status == ExerciseStatus.ERROR:  # its import failed there first
                    unloadable, message = True, public.message
            result.exercises.append(ExerciseResult(
                exercise=ex.slug, title=ex.title, tests=tests,
                status=_exercise_status(tests, ex.slug in present, unloadable),
                message=message))
        seconds = time.perf_counter() - started + (earlier.seconds if earlier else 0.0)
        # the graded level writes no clock reading (feedback/levels.py)
        result.duration_s = None if result.feedback == "graded" else seconds
        if handover is not None:
            handover.result, handover.seconds = result, seconds
            return handover
        return result

    def _in_suite_order(self, slug: str, tests: list[TestResult]) -> list[TestResult]:
        rank = {item.name.removeprefix("test_"): i
                for i, item in enumerate(self._items.get(slug, []))}
        return sorted(tests, key=lambda t: rank.get(t.name, len(rank)))

    def _not_submitted(self, exercises: list[Exercise], job: Job) -> dict[str, list[TestResult]]:
        """Each test of ``exercises`` as it stands when the exercise was not submitted: the
        items run once per process with no learner file, the verdicts are copied after that."""
        level = (job.policy or Policy()).feedback
        missing = [ex.slug for ex in exercises
                   if (ex.slug, job.device, level, job.phase) not in _NOT_SUBMITTED]
        if missing:  # (a phase's own tests only: a public phase builds no hidden input)
            with WorkerProcess({}, device=job.device) as nobody:
                self._run(missing, nobody, job, set(), None, None if job.phase is Phase.WHOLE
                          else _in_phases(self._items_of(missing), level, job.phase))
            for slug in missing:
                key = (slug, job.device, level, job.phase)
                _NOT_SUBMITTED[key] = self.plugin.results.get(slug, [])
                for test in _NOT_SUBMITTED[key]:
                    if test.duration_s is not None:
                        test.duration_s = 0.0  # nothing ran for any submission
        return {ex.slug: copy.deepcopy(_NOT_SUBMITTED[ex.slug, job.device, level, job.phase])
                for ex in exercises}


_NOT_SUBMITTED: dict[tuple[str, str, str, Phase], list[TestResult]] = {}


def _left_out(path: Path) -> str:
    """For a learner file made from a notebook, what of the notebook was not graded (one
    line, every report shows it); "" for any other file, or when nothing was left out."""
    from grader.notebook import lines

    made = lines.read(path)
    if made is None or made[2] == "nothing was left out":
        return ""
    return made[2]


def _scale_points(slug: str, tests: list[TestResult], points: dict[str, float]) -> None:
    """Scale the tests of exercise ``slug`` by the points given over the exercise's points in
    the index (the sum of its suite's: a student release's public tests, a part of them, keep
    their share; its index holds the assignment's points already)."""
    total = catalog.get(slug).points
    if slug in points and total > 0:
        factor = points[slug] / total
        for t in tests:
            t.score, t.max_score = t.score * factor, t.max_score * factor


def _in_phases(items: list[pytest.Item], level: str,
               phase: Phase = Phase.WHOLE) -> list[pytest.Item]:
    """The ``items`` a job of ``phase`` runs, in the order they run: a ``PUBLIC`` job's public
    ones, a ``HIDDEN`` job's hidden ones. A ``WHOLE`` job runs them all; where hidden tests
    show less than public ones (any level but ``full``), every public test first, and only
    then the hidden ones: each public test has ended, and its output been taken, before the
    worker is sent its first hidden input, so the output a public test shows can carry
    nothing of one (what a hidden test's call prints is never shown at those levels). At
    ``full``, the suite's order."""
    public = [item for item in items if verdict.visibility(item) == "public"]
    hidden = [item for item in items if verdict.visibility(item) != "public"]
    if phase is Phase.PUBLIC:
        return public
    if phase is Phase.HIDDEN:
        return hidden
    return items if level == "full" else public + hidden


def _exercise_status(tests: list[TestResult], submitted: bool,
                     import_error: bool) -> ExerciseStatus:
    if not submitted:
        return ExerciseStatus.NOT_SUBMITTED
    if import_error:
        return ExerciseStatus.ERROR
    return ExerciseStatus.PASSED if tests and all(t.passed for t in tests) else \
        ExerciseStatus.FAILED


def grade_references(slugs: list[str], observer: Observer) -> SubmissionResult:
    """Grade each exercise's reference as a learner's file (in the sandbox, as ever), with
    ``observer`` told what the suites do: how the authoring tools and ``grade release`` learn
    about the suites."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="grade-references-") as tmp:
        files: dict[str, Path | None] = {}
        for slug in slugs:
            files[slug] = Path(tmp) / f"{slug}.py"
            files[slug].write_bytes(catalog.get(slug).solution.read_bytes())
        return grade(files, submission="reference", observer=observer)
