"""The engine's item runner: the collected tests of a job, run without pytest's per-item cycle.

pytest collects the suites once per grading process (fixtures resolved, marks read, asserts
rewritten, parameters expanded). ``way`` then decides once per item how it runs:

- ``Runner.ENGINE``: a module-level, synchronous test function whose fixtures are all the
  engine's (``GradingPlugin``'s, ``ENGINE_FIXTURES``) or direct parameters, with no mark but
  ``grading`` and ``parametrize``, in a session where no plugin but pytest's own and the
  engine's implements a hook of a test's run. The engine sets its fixtures up, calls it (what
  it prints captured and dropped, as pytest's capture would) and tells the plugin it ended
  (``GradingPlugin.ended``): what pytest's protocol does for such a test, without the hooks
  around each phase (setup, call and teardown, each with its report and log).
- ``Runner.PYTEST``: any other item (a conftest's fixture or hook, a skip mark, ``request``, a
  test class, ...) runs through pytest's own protocol, as every item did before.

A session whose runner is ``Runner.PYTEST`` (``policy.Runner``: ``GRADER_RUNNER=pytest``)
runs every item through pytest's protocol: the reference the engine's way is held to, result
field by result field (``tests/test_item_runner.py``).
"""

from __future__ import annotations

import contextlib
import inspect
import io
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

import pytest
from _pytest.python import get_direct_param_fixture_func
from _pytest.warnings import catch_warnings_for_item

from grader.engine.policy import Runner

if TYPE_CHECKING:
    from grader.engine.plugin import GradingPlugin


# The engine's fixtures: name -> (the plugin's method making its value, the fixtures it
# takes, in the order of its parameters). The plugin's ``@pytest.fixture`` methods of the
# same names call the same methods: one definition, two ways of running it.
ENGINE_FIXTURES: dict[str, tuple[str, tuple[str, ...]]] = {
    "engine_context": ("make_context", ()),
    "device": ("make_device", ("engine_context",)),
    "learner": ("make_learner", ("engine_context",)),
    "reference": ("make_reference", ()),
    "learner_source": ("make_learner_source", ("engine_context",)),
    "enforce_rule": ("make_enforce_rule", ("learner_source", "learner")),
    "check": ("make_check", ("engine_context", "learner", "reference")),
}
_MARKS = frozenset({"grading", "parametrize"})
# a test function that is a generator or a coroutine of any kind: pytest's to handle
_NOT_PLAIN = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ITERABLE_COROUTINE | \
    inspect.CO_ASYNC_GENERATOR
# pytest's own plugins whose hooks of a test's run the engine's way stands in for (or that
# have nothing to do for an item it runs): any other implementation makes items PYTEST
_OWN = frozenset({"runner", "skipping", "capturemanager", "logging-plugin", "main", "python",
                  "fixtures", "warnings", "assertion", "faulthandler", "unittest", "tmpdir",
                  "session", "terminalreporter", "threadexception", "unraisableexception",
                  "setuponly", "setupplan", "nose"})
_RUN_HOOKS = ("pytest_runtest_protocol", "pytest_runtest_setup", "pytest_runtest_call",
              "pytest_runtest_teardown", "pytest_runtest_makereport", "pytest_pyfunc_call",
              "pytest_fixture_setup", "pytest_runtest_logstart", "pytest_runtest_logfinish",
              "pytest_runtest_logreport")


class ItemRunner:
    """Runs jobs' items for one session's ``plugin`` (and its ``ours``: the plugins of the
    engine whose hooks the engine's way stands in for)."""

    def __init__(self, plugin: GradingPlugin, ours: tuple[object, ...], runner: Runner) -> None:
        self.plugin, self.ours, self.runner = plugin, ours, runner
        self._ways: dict[pytest.Item, Runner] = {}
        self._hooks_ok: dict[str, bool] = {}  # a suite's path -> no foreign hook of a run

    def way(self, item: pytest.Item) -> Runner:
        """Who runs ``item``: the engine, or pytest's protocol (decided once per item; see
        the module's docstring)."""
        found = self._ways.get(item)
        if found is None:
            found = self._ways[item] = Runner.ENGINE if self.runner is Runner.ENGINE and \
                self._engine_can_run(item) else Runner.PYTEST
        return found

    def _engine_can_run(self, item: pytest.Item) -> bool:
        if type(item) is not pytest.Function or not isinstance(item.parent, pytest.Module):
            return False
        if any(mark.name not in _MARKS for mark in item.iter_markers()):
            return False
        code = getattr(item.obj, "__code__", None)
        if code is None or code.co_flags & _NOT_PLAIN:
            return False
        info = item._fixtureinfo
        params = item.callspec.params if hasattr(item, "callspec") else {}
        for name in item.fixturenames:
            defs = info.name2fixturedefs.get(name)
            if not defs:
                return False
            func = defs[-1].func
            if name in ENGINE_FIXTURES:
                if getattr(func, "__self__", None) is not self.plugin:
                    return False  # a fixture of that name defined elsewhere wins
            elif not (func is get_direct_param_fixture_func and name in params):
                return False
        return self._no_foreign_hooks(item)

    def _no_foreign_hooks(self, item: pytest.Item) -> bool:
        """Whether only pytest's own plugins and the engine's implement a hook of a test's
        run for ``item`` (its conftests' included: decided once per suite file)."""
        where = str(item.path)
        known = self._hooks_ok.get(where)
        if known is None:
            ihook = item.ihook
            known = self._hooks_ok[where] = all(
                impl.plugin in self.ours or impl.plugin_name in _OWN
                for hook in _RUN_HOOKS for impl in getattr(ihook, hook).get_hookimpls())
        return known

    def run(self, items: list[pytest.Item]) -> None:
        """Run ``items`` in order, each its way; every fixture pytest set up is torn down
        after the last (a hook that raises, a grader bug, too)."""
        if not items:
            return
        ways = [self.way(item) for item in items]
        later = [None] * len(items)  # each PYTEST item's next PYTEST item (its ``nextitem``)
        following = None
        for i in range(len(items) - 1, -1, -1):
            later[i] = following
            if ways[i] is Runner.PYTEST:
                following = items[i]
        engine = [item for item, way in zip(items, ways, strict=True) if way is Runner.ENGINE]
        with _job_context(engine[0]) if engine else contextlib.nullcontext():
            for item, way, nextitem in zip(items, ways, later, strict=True):
                if way is Runner.ENGINE:
                    self._run_one(item)
                    continue
                try:
                    item.ihook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                except Exception:
                    item.session._setupstate.teardown_exact(None)
                    raise

    def _run_one(self, item: pytest.Item) -> None:
        """Set ``item``'s fixtures up and call it, as pytest would, then tell the plugin."""
        plugin = self.plugin
        plugin.starting(item)
        values: dict[str, Any] = {}
        excinfo: pytest.ExceptionInfo[BaseException] | None = None
        with _captured():
            try:
                for name in item.fixturenames:
                    _value(plugin, item, name, values)
                item.obj(**{name: values[name] for name in item._fixtureinfo.argnames})
            except (KeyboardInterrupt, pytest.exit.Exception):
                raise
            except BaseException:  # noqa: BLE001 - what its setup or call raised: its verdict's
                excinfo = pytest.ExceptionInfo.from_current()
        plugin.ended(item, excinfo, values.get("check"))


def _value(plugin: GradingPlugin, item: pytest.Item, name: str, values: dict[str, Any]) -> Any:
    """Fixture ``name``'s value for ``item`` (its own first, in pytest's order), kept in
    ``values``."""
    if name in values:
        return values[name]
    if name in ENGINE_FIXTURES:
        method, takes = ENGINE_FIXTURES[name]
        make: Callable[..., Any] = getattr(plugin, method)
        values[name] = make(*(_value(plugin, item, dep, values) for dep in takes))
    else:
        values[name] = item.callspec.params[name]  # (a direct parameter)
    return values[name]


class _Dropped(io.TextIOBase):
    """Where a test's prints go (pytest's capture keeps them for a report nobody reads)."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


_DROPPED = _Dropped()


@contextlib.contextmanager
def _captured() -> Iterator[None]:
    with contextlib.redirect_stdout(_DROPPED), contextlib.redirect_stderr(_DROPPED):
        yield


@contextlib.contextmanager
def _job_context(item: pytest.Item) -> Iterator[None]:
    """What pytest's protocol sets around each test, set once around a job's engine-run
    items: its warnings caught and recorded (``catch_warnings_for_item``: filters of the
    configuration, the items carry no mark of their own) and asserts explained by the
    ``pytest_assertrepr_compare`` hook (the assertion plugin's protocol wrapper)."""
    config = item.config
    assertion = config.pluginmanager.get_plugin("assertion")
    with catch_warnings_for_item(config, ihook=item.ihook, when="runtest", item=item):
        wrapper = assertion.pytest_runtest_protocol(item) if assertion is not None else None
        if wrapper is not None:
            next(wrapper)
        try:
            yield
        finally:
            if wrapper is not None:
                with contextlib.suppress(StopIteration):
                    wrapper.send(None)
