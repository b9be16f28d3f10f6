"""The naive grading baseline of ``bench/bench_grading.py``: a pytest plugin (``-p``).

It runs the SAME hidden suites (``grader/suites/test_<slug>.py``) but provides their fixtures
the naive way, in the pytest process itself: ``learner`` is the learner's module imported from
its file (no worker, no sandbox, no wall-clock limit), ``reference`` the solution module,
``check`` the grader's own ``Check``, ``device`` is ``"cpu"``. One pytest process grades one
submission:

    BENCH_NAIVE_SUBMISSION=DIR BENCH_NAIVE_TIMES=OUT.json PYTHONPATH=bench \\
        python -m pytest -q -p no:cacheprovider -p naive_plugin -c bench/naive_pytest.ini \\
        grader/suites/test_<slug>.py ...

Arguments are copied before each call (recipes built with ``recipes.build``, as the worker
does) and results go through the wire format once (``protocol``), so the checks see the same
types as in the real grader. At the end it writes ``BENCH_NAIVE_TIMES`` (JSON): the learner
code's own time (``learner_s``: the sum of its calls' durations; ``import_s``: importing its
files), the number of calls, and the tests' outcomes.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from grader import catalog
from grader.engine.plugin import load_reference
from grader.judge import rules
from grader.judge.check import Check
from grader.sandbox import faults
from grader.sandbox.harness import protocol, recipes
from grader.suite import mistakes_in

SUBMISSION = Path(os.environ.get("BENCH_NAIVE_SUBMISSION", "."))
TIMES = os.environ.get("BENCH_NAIVE_TIMES")

_STATS: dict[str, Any] = {"learner_s": 0.0, "import_s": 0.0, "calls": 0,
                          "outcomes": {"passed": 0, "failed": 0, "error": 0, "skipped": 0}}
_MODULES: dict[str, ModuleType | faults.LearnerFault] = {}


def _slug(node: pytest.Item) -> str:
    return Path(str(node.path)).stem.removeprefix("test_")


class _Held:
    """A learner object passed back as an argument (what ``RemoteObject.handle`` stands for)."""

    def __init__(self, obj: Any) -> None:
        self.obj = obj


def _materialise(value: Any) -> Any:
    """Copies of the arguments, recipes built, held objects unwrapped (as the worker does)."""
    if isinstance(value, protocol.Recipe):
        return recipes.build(value.name, _materialise(value.params))
    if isinstance(value, _Held):
        return value.obj
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, list):
        return [_materialise(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_materialise(v) for v in value)
    if isinstance(value, dict):
        return {k: _materialise(v) for k, v in value.items()}
    if hasattr(value, "detach") and hasattr(value, "clone"):
        return value.detach().clone()
    return value


def _plain(value: Any) -> Any:
    """The result as the grader would receive it from a worker (one encode/decode)."""
    try:
        frame = protocol.encode_message({}, value)
    except protocol.ProtocolError as exc:
        raise faults.BadReturn(f"the function returned {exc}") from None
    (size,) = protocol.HEADER.unpack(frame[:protocol.HEADER.size])
    head = json.loads(frame[protocol.HEADER.size:protocol.HEADER.size + size])
    blobs, at = [], protocol.HEADER.size + size
    for n in head["blobs"]:
        blobs.append(frame[at:at + n])
        at += n
    return protocol.decode_value(head, blobs)


class NaiveLearner:
    """``learner.fn(...)`` calls the learner's module directly, in this process."""

    def __init__(self, module: ModuleType, slug: str) -> None:
        self._module, self._slug = module, slug
        self._last = 0.0

    def _run(self, fn: Any, args: tuple, kwargs: dict) -> Any:
        args, kwargs = _materialise(args), _materialise(kwargs)
        started = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        except NotImplementedError:
            raise faults.NotImplementedYet("not implemented yet (the function raises "
                                           "NotImplementedError)") from None
        except Exception as exc:  # noqa: BLE001 - every learner failure is a fault
            mro = [c.__name__ for c in type(exc).__mro__ if c.__module__ == "builtins"]
            raise faults.LearnerRaised(type(exc).__name__, mro, str(exc)[:2000]) from None
        finally:
            self._last = time.perf_counter() - started
            _STATS["learner_s"] += self._last
            _STATS["calls"] += 1

    def _resolve(self, target: Any, func: str) -> Any:
        for name in func.split("."):
            if not hasattr(target, name):
                raise faults.MissingName(f"{self._slug}.py does not define {name!r}")
            target = getattr(target, name)
        return target

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        return lambda *args, **kwargs: _plain(
            self._run(self._resolve(self._module, name), args, kwargs))

    @property
    def last_call_seconds(self) -> float:
        return self._last

    def apply(self, recipe: protocol.Recipe, *args: Any, **kwargs: Any) -> Any:
        fn = recipes.build(recipe.name, _materialise(recipe.params))
        return _plain(self._run(fn, args, kwargs))

    def new(self, name: str, *args: Any, **kwargs: Any) -> NaiveObject:
        return NaiveObject(self, self._run(self._resolve(self._module, name), args, kwargs))


class NaiveObject:
    """A learner object built by ``learner.new``; its methods are called directly."""

    def __init__(self, learner: NaiveLearner, obj: Any) -> None:
        self._learner, self._obj = learner, obj

    @property
    def handle(self) -> _Held:
        return _Held(self._obj)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        learner = self._learner
        return lambda *args, **kwargs: _plain(
            learner._run(learner._resolve(self._obj, name), args, kwargs))


def _import(slug: str) -> ModuleType:
    """The learner's module (imported once; an import failure is re-raised each time)."""
    if slug not in _MODULES:
        path = SUBMISSION / f"{slug}.py"
        if str(SUBMISSION) not in sys.path:
            sys.path.insert(0, str(SUBMISSION))
        started = time.perf_counter()
        spec = importlib.util.spec_from_file_location(slug, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[slug] = module
        try:
            spec.loader.exec_module(module)
            _MODULES[slug] = module
        except BaseException as exc:  # noqa: BLE001 - the learner's file did not import
            sys.modules.pop(slug, None)
            _MODULES[slug] = faults.ImportFailed(
                f"{slug}.py raised {type(exc).__name__} while being imported: {exc}")
        _STATS["import_s"] += time.perf_counter() - started
    loaded = _MODULES[slug]
    if isinstance(loaded, faults.LearnerFault):
        raise loaded
    return loaded


@pytest.fixture
def device() -> str:
    return "cpu"


@pytest.fixture
def learner(request: pytest.FixtureRequest) -> NaiveLearner:
    slug = _slug(request.node)
    return NaiveLearner(_import(slug), slug)


@pytest.fixture
def reference(request: pytest.FixtureRequest) -> ModuleType:
    return load_reference(_slug(request.node))


@pytest.fixture
def learner_source(request: pytest.FixtureRequest) -> rules.LearnerSource:
    return rules.read_source(SUBMISSION / f"{_slug(request.node)}.py")


@pytest.fixture
def check(request: pytest.FixtureRequest, learner: NaiveLearner, reference: ModuleType) -> Check:
    ex = catalog.get(_slug(request.node))
    return Check(learner, reference, mistakes_in(vars(request.module)), ex.rtol, ex.atol)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or (report.when == "setup" and not report.passed):
        key = {"passed": "passed", "failed": "failed" if report.when == "call" else "error",
               "skipped": "skipped"}[report.outcome]
        _STATS["outcomes"][key] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if TIMES:
        Path(TIMES).write_text(json.dumps(_STATS))
