"""The pytest plugin that runs hidden suites against one submission.

It provides the suites' fixtures (``learner``, ``reference``, ``check``, ``device``) and
turns every finished test into a ``TestResult`` through ``verdict.decide``. The job being
graded reaches the fixtures as one ``EngineContext``, made by ``GradingPlugin.begin`` for each
submission (or round of one) and given to them as the ``engine_context`` fixture.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from grader import catalog
from grader.engine import verdict
from grader.engine.verdict import slug_of
from grader.feedback import hints
from grader.feedback import levels as feedback
from grader.judge import confirm, evidence, rules
from grader.judge.check import Check, mistake_output
from grader.judge.observer import Observer
from grader.results import TestResult
from grader.sandbox import faults
from grader.sandbox.isolation import SandboxError
from grader.sandbox.process import WorkerProcess
from grader.sandbox.proxy import CallLog, LearnerProxy
from grader.suite import DEFAULT_TIMEOUT_S, GradeFailure, SourceRule, mistakes_in
from grader.suite import reference as load_reference  # (the suites' own: one module each)

# After this many timed-out calls of one exercise, its remaining tests are not run: a file
# that hangs costs two call limits, not one per test.
MAX_TIMEOUTS = 2


@dataclass(frozen=True)
class Loaded:
    """What importing one exercise's file came to in a submission's public phase: the names of
    the exercise it lacks, or, when it could not be imported, the message its exercise says.
    A hidden phase decides failed imports and missing names from these records alone."""

    missing: frozenset[str] = frozenset()
    failed: str | None = None


@dataclass(frozen=True)
class EngineContext:
    """One job: a submission (or one round of it) as the fixtures are given it (the
    ``engine_context`` fixture). Made by ``GradingPlugin.begin``, never changed: the next job
    gets a new one. What the session finds out while grading it (imports, results, evidence)
    is the plugin's, not the context's.

    ``worker``: the sandboxed worker holding the submitted ``files``; ``device``: the device
    it grades on; ``submitted``: the exercises it has a file for; ``feedback_level``: what its
    hidden results may tell (``feedback.py``); ``call_timeout_s``: the wall clock of a call in
    place of the default (a test that sets its own keeps it); ``observer``: told of every use
    of ``check``, request and verdict (``observer.py``); ``on_result``: told of each verdict,
    as soon as it is made; ``round_of``: ``whole``, or the ``public`` or ``hidden`` round of
    a class graded in rounds; ``loaded``: a hidden phase's, what its public phase's imports
    came to (``Loaded``), the only word on which files failed to import and which names they
    lack."""

    worker: WorkerProcess
    device: str
    submitted: frozenset[str]
    feedback_level: str = "full"
    call_timeout_s: float | None = None
    observer: Observer | None = None
    on_result: Callable[[str, TestResult], None] | None = None
    round_of: str = "whole"
    loaded: Mapping[str, Loaded] | None = None

    def call_timeout(self, item: pytest.Item) -> float:
        """The wall clock of each of ``item``'s calls: its ``@graded(timeout=...)``, the job's
        ``call_timeout_s`` in place of the default."""
        marker = verdict.grading_mark(item)
        timeout = float(marker.kwargs.get("timeout", DEFAULT_TIMEOUT_S)) if marker else \
            DEFAULT_TIMEOUT_S
        if self.call_timeout_s is not None and timeout == DEFAULT_TIMEOUT_S:
            return self.call_timeout_s
        return timeout


class GradingPlugin:
    """Lives as long as its pytest session; ``begin`` points it at the next submission."""

    def __init__(self) -> None:
        # slug -> its suite's ``confirm.Table``: read once per session (a suite does not
        # change while it runs), not once per submission
        self._tables: dict[str, confirm.Table | None] = {}
        self.begin(WorkerProcess({}), device="cpu", submitted=set())

    def begin(self, worker: WorkerProcess, *, device: str, submitted: set[str],
              on_result: Callable[[str, TestResult], None] | None = None,
              feedback_level: str = "full", call_timeout_s: float | None = None,
              observer: Observer | None = None,
              loaded: dict[str, Loaded] | None = None, round_of: str = "whole",
              carried: dict[str, evidence.Carried] | None = None,
              timeouts: dict[str, list[float]] | None = None) -> None:
        """Forget the last submission: the next tests grade the job these arguments make
        (``EngineContext``, whose fields they are); a hidden round's ``carried``: what its
        public round's evidence left (``evidence.Carried``), and ``timeouts`` its calls that
        timed out (``MAX_TIMEOUTS`` counts over both rounds)."""
        self.context = EngineContext(
            worker, device, frozenset(submitted), feedback_level=feedback_level,
            call_timeout_s=call_timeout_s, observer=observer, on_result=on_result,
            round_of=round_of, loaded=loaded)
        self.paragraphs = hints.Paragraphs()
        self.results: dict[str, list[TestResult]] = {}
        self.import_faults: dict[str, faults.LearnerFault] = {}
        self._loaded: dict[str, frozenset[str]] = {}  # slug -> the names its module lacks
        self._all_loaded = False
        for slug, record in (loaded or {}).items():
            if record.failed is not None:
                fault = faults.ImportFailed(record.failed)
                fault.at_import = True
                self.import_faults[slug] = fault
        self._logs: dict[str, CallLog] = {}
        self._pending: dict[str, list[_Pending]] = {}  # slug -> tests awaiting their verdict
        self._last: dict[str, str] = {}  # slug -> the node id of its last test (``plan``)
        self._ledgers: dict[str, evidence.Ledger] = {}  # slug -> its tests' evidence
        # a public round's: what its evidence leaves the hidden round, and per slug the
        # public results that name a mistake, as they read unnamed (test name -> result)
        self.carried: dict[str, evidence.Carried] = dict(carried or {})
        self.unnamed: dict[str, dict[str, TestResult]] = {}
        # a hidden round's: per slug, the public tests whose mistake its evidence refutes,
        # and those whose points its calls do not confirm (``confirm.py``)
        self.refuted_public: dict[str, set[str]] = {}
        self.unconfirmed_public: dict[str, dict[str, confirm.Unconfirmed]] = {}
        self._counted_calls: dict[str, list[str]] = {}  # node id -> its counted calls' functions
        self._started: dict[str, float] = {}
        # slug -> each timed-out call's limit
        self._timeouts: dict[str, list[float]] = {s: list(t) for s, t in (timeouts or {}).items()}
        self.sandbox_error: SandboxError | None = None
        self._item: Any = None  # the test being run (pytest_runtest_setup), and its slug
        self._slug = ""

    @property
    def timeouts(self) -> dict[str, list[float]]:
        """A copy of each exercise's timed-out calls' limits so far."""
        return {slug: list(t) for slug, t in self._timeouts.items()}

    def in_order(self, items: list[pytest.Item]) -> None:
        """Put each exercise's results in the order of ``items`` (the suite's)."""
        rank = {(slug_of(item), item.name.removeprefix("test_")): i
                for i, item in enumerate(items)}
        for slug, tests in self.results.items():
            tests.sort(key=lambda t, s=slug: rank.get((s, t.name), len(rank)))

    # -- fixtures -------------------------------------------------------------------------
    # The fixtures are given the job as ``engine_context``. They read the test being set up
    # from the plugin (``pytest_runtest_setup``), not from pytest's ``request``: a fixture
    # that asks for ``request`` costs pytest a new fixture definition, with a signature
    # inspection, at every test.
    # Each fixture calls a plain ``make_*`` method: the engine's item runner
    # (``items.ENGINE_FIXTURES``) calls the same methods without pytest's fixture machinery.
    @pytest.fixture
    def engine_context(self) -> EngineContext:
        return self.make_context()

    def make_context(self) -> EngineContext:
        """The job being graded (``begin``): what the other fixtures are made from."""
        return self.context

    @pytest.fixture
    def device(self, engine_context: EngineContext) -> str:
        return self.make_device(engine_context)

    def make_device(self, engine_context: EngineContext) -> str:
        return engine_context.device

    @pytest.fixture
    def learner(self, engine_context: EngineContext) -> LearnerProxy:
        return self.make_learner(engine_context)

    def make_learner(self, engine_context: EngineContext) -> LearnerProxy:
        """The ``learner`` fixture's value: the proxy of the test's exercise in the worker."""
        job, item, slug = engine_context, self._item, self._slug
        timeout = job.call_timeout(item)
        log = self._logs.setdefault(item.nodeid, CallLog())
        if slug not in job.submitted:
            raise faults.NotSubmitted(f"{slug}.py was not submitted")
        if slug in self.import_faults:
            raise self.import_faults[slug]
        self._stop_if_hanging(slug)
        if self.sandbox_error is not None:
            pytest.skip("ungradable: the sandbox failed")
        if job.feedback_level != "full" and not self._all_loaded and \
                verdict.visibility(item) != "public":
            self._load_all(job, timeout)  # before the first hidden input exists
            if slug in self.import_faults:
                raise self.import_faults[slug]
        if slug not in self._loaded:
            self._load(job, slug, timeout, log)
        counted = self._counted_calls.setdefault(item.nodeid, [])
        return LearnerProxy(job.worker, slug, timeout=timeout, log=log,
                            observer=job.observer, missing=self._loaded[slug],
                            noted=lambda func, args, kwargs: self._note(slug, counted, func,
                                                                        args, kwargs),
                            may_modify=frozenset(catalog.get(slug).may_modify))

    def _note(self, slug: str, counted: list[str], func: str, args: tuple,
              kwargs: dict) -> None:
        """Count a call of learner function ``func`` in a test (``confirm.py``: only calls
        that bind to the reference's function, as its ``Table`` counts them)."""
        if len(counted) < confirm.MAX_CALLS and \
                confirm.bound(load_reference(slug), func, args, kwargs) is not None:
            counted.append(func)

    def _table(self, slug: str) -> confirm.Table | None:
        """The suite's ``confirm.Table`` (None: missing or older than the suite)."""
        if slug not in self._tables:
            self._tables[slug] = confirm.current(slug)
        return self._tables[slug]

    def _load(self, job: EngineContext, slug: str, timeout: float, log: CallLog) -> None:
        """Import ``slug``'s module in ``job``'s worker and record what came of it: the names
        of the exercise it lacks, or the fault that makes every test of it fail. These
        records, made before any hidden input is sent (``_load_all``), are the only place a
        failed import or a missing name is decided."""
        proxy = LearnerProxy(job.worker, slug, timeout=timeout, log=log, observer=job.observer)
        try:
            missing = proxy.load(catalog.get(slug).functions)
        except faults.LearnerFault as raised:
            fault = raised
            observed = isinstance(fault, (faults.TimedOut, faults.Crashed))  # (grader-owned)
            if job.loaded is not None and not observed:  # its public round imported it:
                fault = faults.ImportFailed(f"{slug}.py imported in its public tests but not "
                                            "again for its hidden tests")  # grader words only
            elif observed:
                fault.message = f"importing {slug}.py: {fault.message}"
            fault.at_import = True  # every later test of the exercise gets this fault
            self.import_faults[slug] = fault
            if fault is raised:
                raise
            raise fault from None
        earlier = (job.loaded or {}).get(slug)
        self._loaded[slug] = earlier.missing if earlier is not None else missing

    def loads(self) -> dict[str, Loaded]:
        """What each submitted exercise's import came to so far (``Loaded``)."""
        found = {slug: Loaded(missing=missing) for slug, missing in self._loaded.items()}
        found.update({slug: Loaded(failed=fault.message)
                      for slug, fault in self.import_faults.items()})
        return found

    def load_all(self, timeout: float | None = None) -> None:
        """Load every submitted exercise not loaded yet (a public phase's last step: what its
        imports say is said before any hidden input exists), each within ``timeout`` (the
        call limit by default)."""
        job = self.context
        self._load_all(job, timeout or job.call_timeout_s or DEFAULT_TIMEOUT_S)

    def _load_all(self, job: EngineContext, timeout: float) -> None:
        """Below ``full``: load every submitted exercise before the first hidden test, so that
        what a file's import says (shown at every level) is said before any hidden input is
        sent to its worker."""
        self._all_loaded = True
        for slug in sorted(job.submitted):
            if slug in self._loaded or slug in self.import_faults:
                continue
            try:
                self._load(job, slug, timeout,
                           self._logs.setdefault(f"load:{slug}", CallLog()))
            except faults.LearnerFault:
                pass  # recorded: every test of that exercise gets it

    @pytest.fixture
    def reference(self) -> ModuleType:
        return self.make_reference()

    def make_reference(self) -> ModuleType:
        return load_reference(self._slug)

    @pytest.fixture
    def learner_source(self, engine_context: EngineContext) -> rules.LearnerSource:
        return self.make_learner_source(engine_context)

    def make_learner_source(self, engine_context: EngineContext) -> rules.LearnerSource:
        """The learner's file as text, for source rules (read here, never imported)."""
        slug = self._slug
        if slug not in engine_context.submitted:
            raise faults.NotSubmitted(f"{slug}.py was not submitted")
        self._stop_if_hanging(slug)
        return rules.read_source(Path(engine_context.worker.files[slug]))

    @pytest.fixture
    def enforce_rule(self, learner_source: rules.LearnerSource,
                     learner: LearnerProxy) -> Callable[[SourceRule], None]:
        return self.make_enforce_rule(learner_source, learner)

    def make_enforce_rule(self, learner_source: rules.LearnerSource,
                          learner: LearnerProxy) -> Callable[[SourceRule], None]:
        """A source rule's test: ``learner`` has loaded the file in the worker first."""
        return lambda rule: rules.enforce(learner_source, rule)

    @pytest.fixture
    def check(self, engine_context: EngineContext, learner: LearnerProxy,
              reference: ModuleType) -> Check:
        return self.make_check(engine_context, learner, reference)

    def make_check(self, engine_context: EngineContext, learner: LearnerProxy,
                   reference: ModuleType) -> Check:
        ex = catalog.get(self._slug)
        return Check(learner, reference, mistakes_in(vars(self._item.module)), ex.rtol,
                     ex.atol, engine_context.observer,
                     ledger=self._ledgers.setdefault(self._slug, evidence.Ledger()),
                     counted=self._counted_calls.setdefault(self._item.nodeid, []))

    def _stop_if_hanging(self, slug: str) -> None:
        timeouts = self._timeouts.get(slug, [])
        if len(timeouts) >= MAX_TIMEOUTS:
            raise faults.NotRun(len(timeouts), max(timeouts))

    # -- hooks ----------------------------------------------------------------------------
    def pytest_configure(self, config: pytest.Config) -> None:
        # verdicts never show pytest's tracebacks: do not spend time formatting long ones
        config.option.tbstyle = "line"

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        self.starting(item)

    def starting(self, item: pytest.Item) -> None:
        """Before the test's fixtures are set up: they read ``_item`` and ``_slug``."""
        self._item, self._slug = item, slug_of(item)
        self._started[item.nodeid] = time.perf_counter()

    @pytest.hookimpl(tryfirst=True, specname="pytest_runtest_makereport")
    def pytest_runtest_makereport_short(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        """A failure's report without pytest's traceback (formatting one costs ~3 ms a test,
        and verdicts are made from ``call.excinfo``, never from the report's text)."""
        excinfo = call.excinfo
        if excinfo is None or isinstance(excinfo.value, (pytest.skip.Exception,
                                                         BaseExceptionGroup)):
            return None  # pytest's own report: cheap, or a case it knows better
        return pytest.TestReport(
            item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "failed",
            f"{excinfo.typename}: {excinfo.value}", call.when, [], call.duration, call.start,
            call.stop)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[Any]) -> Any:
        outcome = yield
        report = outcome.get_result()
        if call.when == "setup" and report.passed:
            return
        if call.when == "teardown":
            return
        self.ended(item, call.excinfo, getattr(item, "funcargs", {}).get("check"))

    def ended(self, item: pytest.Item, excinfo: pytest.ExceptionInfo[BaseException] | None,
              check: Check | None) -> None:
        """Test ``item`` ended: ``excinfo`` is what its fixtures' setup or its call raised
        (None: it passed), ``check`` its ``check`` fixture's value, if it had one. Its
        verdict waits for the rest of its exercise's evidence (``_finish``)."""
        if excinfo is not None and isinstance(excinfo.value, SandboxError):
            self.sandbox_error = excinfo.value  # ungradable: the runner raises it
        duration = time.perf_counter() - self._started.get(item.nodeid, time.perf_counter())
        slug = slug_of(item)
        exc = excinfo.value if excinfo is not None else None
        if isinstance(exc, faults.TimedOut) and exc is not self.import_faults.get(slug):
            self._timeouts.setdefault(slug, []).append(exc.seconds)
        pending = _Pending(item, excinfo, duration, check)
        self._pending.setdefault(slug, []).append(pending)
        observer = self.context.observer
        if observer is not None:  # told as each test ends (its verdict before the evidence)
            observer.decided(item, self._aside(pending, excinfo))
        if self._last.get(slug) == item.nodeid:
            self._finish(slug)

    # -- verdicts, once an exercise's evidence is all in ---------------------------------
    def plan(self, items: list[pytest.Item]) -> None:
        """The items about to run: an exercise's verdicts are made once its last one ran."""
        self._last = {slug_of(item): item.nodeid for item in items}

    def finish(self) -> None:
        """Make the verdicts of every exercise whose tests are still pending."""
        for slug in list(self._pending):
            self._finish(slug)

    def _finish(self, slug: str) -> None:
        """The verdicts of exercise ``slug``'s tests, in the order they ran: a known mistake a
        test matched is named only where the exercise's evidence agrees (``evidence.py``),
        in a class graded in rounds the public round's evidence too (``Carried``)."""
        job = self.context
        pending = self._pending.pop(slug, [])
        ledger = self._ledgers.pop(slug, evidence.Ledger())
        named = {evidence.key(p.exc.mistake, p.exc.form): (p.exc.mistake, p.exc.form)
                 for p in pending if isinstance(p.exc, GradeFailure) and p.exc.mistake}
        catalogue = mistakes_in(vars(pending[0].item.module)) \
            if pending and getattr(pending[0].item, "module", None) is not None else []
        # every mistake of the catalogue, on every form of call its function was seen with
        forms = {(s.func, s.signature) for s in ledger.seen}
        everything = {evidence.key(m, form): (m, form) for m in catalogue
                      for func, form in forms if func == m.func}
        earlier = self.carried.get(slug) if job.round_of == "hidden" else None
        judged = dict(named)
        if job.round_of == "public":  # every mistake: the hidden round may name any
            judged.update(everything)
        if earlier is not None:  # the mistakes public tests named: the hidden evidence too
            judged.update(_by_key(catalogue, earlier.named))
        source = job.worker.files.get(slug)
        refuted = evidence.refuted(
            judged.values(), ledger, _failed_alone(pending),
            evidence.depends_on(Path(source) if source else None, catalog.get(slug).functions),
            mistake_output) if judged else {}
        if earlier is not None:
            self.refuted_public[slug] = {t for k in earlier.named if k in refuted
                                         for t in earlier.named[k]}
            refuted.update({k: evidence.Refutation(disagrees=-1) for k in earlier.refuted
                            if k not in refuted})
        counted = [self._counted(p) for p in pending]
        if job.round_of == "public":
            self.carried[slug] = evidence.Carried(refuted=set(refuted), counted=counted)
        unconfirmed = {} if job.round_of == "public" else confirm.unconfirmed(
            counted + (earlier.counted if earlier is not None else []), self._table(slug))
        if earlier is not None:
            public = {c.name for c in earlier.counted}
            self.unconfirmed_public[slug] = {n: why for n, why in unconfirmed.items()
                                             if n in public}
        alone = hints.localised([
            (p.item.name, p.excinfo is not None,
             frozenset(p.check.tally.functions) if p.check is not None else frozenset())
            for p in pending])
        for p in pending:
            excinfo = p.excinfo
            mistake = p.exc.mistake if isinstance(p.exc, GradeFailure) else None
            if mistake is not None and evidence.key(mistake, p.exc.form) in refuted:
                why = refuted[evidence.key(mistake, p.exc.form)]
                excinfo = _info(verdict.unnamed(p.exc, mistake.func, why.fix_first))
                mistake = None
            if mistake is not None and job.round_of == "public":
                self._keep_unnamed(slug, p, mistake)
            if mistake is not None and job.feedback_level == "full" and \
                    job.round_of == "whole" and ledger.complete:
                p.exc.agreed = evidence.agreeing(mistake, p.exc.form, ledger)
            result = self._verdict(slug, p, excinfo,
                                   unconfirmed.get(p.item.name.removeprefix("test_")),
                                   localised=p.item.name in alone)
            self.results.setdefault(slug, []).append(result)
            if job.on_result is not None:
                job.on_result(slug, result)

    def _counted(self, p: _Pending) -> confirm.Counted:
        """What test ``p``'s calls say for the count of its exercise's points."""
        return confirm.Counted(
            p.item.name.removeprefix("test_"), verdict.visibility(p.item) == "public",
            p.excinfo is None, len(self._counted_calls.pop(p.item.nodeid, [])),
            set(p.check.tally.right) if p.check is not None else set(),
            verdict.points(p.item) > 0, p.check is not None and bool(p.check.tally.confirmed))

    def _verdict(self, slug: str, p: _Pending,
                 excinfo: pytest.ExceptionInfo[BaseException] | None,
                 unconfirmed: confirm.Unconfirmed | None = None,
                 localised: bool = True) -> TestResult:
        """The result of test ``p``; ``unconfirmed``: why its points are not counted
        (``confirm.py``), where it passed; ``localised``: whether its failure is localised to
        it (``hints.localised``: else its own hint is not shown)."""
        result = verdict.decide(p.item, excinfo, p.duration, self._logs.get(p.item.nodeid),
                                p.check)
        level = self.context.feedback_level
        if unconfirmed is not None and result.passed:
            result = feedback.unconfirmed(result, unconfirmed, level)
        elif level == "graded":
            result = feedback.graded(result, excinfo.value if excinfo else None, slug)
        return self.paragraphs.once(
            slug, result, localised=localised,
            functions=frozenset(p.check.tally.functions) if p.check is not None
            else frozenset())

    def _aside(self, p: _Pending,
               excinfo: pytest.ExceptionInfo[BaseException] | None) -> TestResult:
        """The verdict of ``p`` with ``excinfo``, made aside: the sizes' history (and the
        paragraphs said) are left as they were."""
        history = verdict.sizes_of(p.item)
        saved = list(history)
        try:
            return verdict.decide(p.item, excinfo, p.duration, self._logs.get(p.item.nodeid),
                                  p.check)
        finally:
            history[:] = saved

    def _keep_unnamed(self, slug: str, p: _Pending, mistake: Any) -> None:
        """A public round: how test ``p``, which names ``mistake``, reads without it (the
        hidden round's evidence may refute it), made aside."""
        plain = self._aside(p, _info(verdict.unnamed(p.exc, mistake.func, None)))
        if self.context.feedback_level == "graded":
            plain = feedback.graded(plain, None, slug)
        self.unnamed.setdefault(slug, {})[plain.name] = plain
        self.carried[slug].named.setdefault(evidence.key(mistake, p.exc.form),
                                            []).append(plain.name)


@dataclass
class _Pending:
    """A finished test whose verdict waits for the rest of its exercise's evidence."""

    item: pytest.Item
    excinfo: pytest.ExceptionInfo[BaseException] | None
    duration: float
    check: Check | None

    @property
    def exc(self) -> BaseException | None:
        return self.excinfo.value if self.excinfo is not None else None


def _by_key(catalogue: list[Any], keys: Iterable[str]) -> dict[str, tuple[Any, tuple]]:
    """The ``(mistake, form)`` each ``evidence.key`` of ``keys`` stands for."""
    found = {}
    for k in keys:
        func, name, form = k.split(":", 2)
        for m in catalogue:
            if m.func == func and m.name == name:
                found[k] = (m, tuple(int(n) for n in form.split(",") if n))
    return found


def _info(exc: BaseException) -> pytest.ExceptionInfo[BaseException]:
    """``exc`` as pytest holds a raised exception (with a traceback)."""
    try:
        raise exc
    except BaseException:  # noqa: BLE001 - the one just raised
        return pytest.ExceptionInfo.from_current()


def _failed_alone(pending: list[_Pending]) -> set[str]:
    """The functions some test failed on without calling others of the exercise."""
    return {f for p in pending if p.exc is not None and p.check is not None
            and len(p.check.tally.functions) == 1 for f in p.check.tally.functions}

