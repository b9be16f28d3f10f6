"""The engine's item runner (``grader/engine/items.py``) grades as pytest's protocol does.

- Every file the pack checker grades (references, stubs, bases, declared variants, trivial
  answers, mutants: the session's ``graded_pack``, graded the engine's way) is graded again
  with ``GRADER_RUNNER=pytest``: every field of every result is the same, durations aside
  (in CI every file; between changes, positional_attention's training files aside).
- A class graded in two rounds (public, then hidden) at the ``graded`` level, both ways: the
  same results.
- Which way an item runs: the engine's only where everything it uses is the engine's; an
  item with a fixture of a conftest, ``request``, a skip mark, a class, a coroutine, ...
  runs through pytest's protocol, and still grades.
"""

from __future__ import annotations

import dataclasses
import os
import re
import textwrap
from pathlib import Path

import pytest

from grader import catalog
from grader.authoring import graded
from grader.engine.items import ItemRunner
from grader.engine.plugin import GradingPlugin
from grader.engine.policy import Policy, Runner
from grader.engine.runner import Job, Phase, grade_each
from grader.results import ExerciseResult, SubmissionResult


def _fields(ex: ExerciseResult | str) -> object:
    """Every field of an exercise's result, what differs from one run to the next left out:
    durations, the figures of a runtime note ("runtime of f: yours 1.1 ms, the reference's
    0.8 ms (1.4x; information, not graded)") and the name of the worker's folder in what
    the learner's code printed (its warnings name their file)."""
    if isinstance(ex, str):
        return ex
    data = dataclasses.asdict(ex)
    for test in data["tests"]:
        test.pop("duration_s")
        test["output"] = re.sub(r"grade-worker-[\w-]+", "grade-worker-#", test["output"])
        test["notes"] = [re.sub(r"\d+(\.\d+)?", "#", note) if note.startswith("runtime of ")
                         else note for note in test["notes"]]
    return data


def _differences(a: object, b: object, at: str = "") -> list[str]:
    """Where ``a`` and ``b`` differ (their paths), for a readable failure."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) | set(b), key=str)
                for d in _differences(a.get(k), b.get(k), f"{at}.{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in _differences(x, y, f"{at}[{i}]")]
    return [] if a == b else [f"{at}: {a!r:.200} != {b!r:.200}"]


# Between changes (not in CI), positional_attention's files that train a model (its variants,
# trivial answers, shortcuts and mutants: about 6 s of learner time each) are left out here
TRAINS = "positional_attention"
WITHOUT_TRAINING = {"reference", "stub", "base 0", "base 1"}


def test_the_engine_grades_every_checked_file_as_pytest_does(graded_pack, monkeypatch):
    in_ci = os.environ.get("CI") == "true"
    files = graded.files_to_grade(list(catalog.load()),
                                  ignored=None if in_ci else graded.IGNORED_SAMPLE)
    if not in_ci:
        files[TRAINS] = [g for g in files[TRAINS] if g.label in WITHOUT_TRAINING]
    monkeypatch.setenv("GRADER_RUNNER", "pytest")  # (the spawned grading processes read it)
    by_pytest = {(g.slug, g.label): result for g, result in graded.grade_files(files, jobs=2)}
    by_engine = {(g.slug, g.label): result for g, result in graded_pack}
    assert len(by_engine) == len(graded_pack)  # (labels are unique within an exercise)
    assert len(by_pytest) > 100 and set(by_pytest) <= set(by_engine)
    differ = [f"{key}: {_differences(_fields(by_engine[key]), _fields(theirs))[:3]}"
              for key, theirs in by_pytest.items()
              if _fields(by_engine[key]) != _fields(theirs)]
    assert not differ, "\n".join(differ)


def _class(tmp_path: Path, slugs: list[str]) -> list[dict[str, Path | None]]:
    """Submissions of ``slugs``: the references, the stubs, and each declared variant."""
    from grader.authoring import variants

    sources: dict[str, list[str]] = {}
    for slug in slugs:
        ex = catalog.get(slug)
        declared = variants.load(slug)
        sources[slug] = [ex.solution.read_text(), ex.stub.read_text()] + [
            v.source() for v in (*declared.mistakes,
                                                       *declared.uncatalogued)]
    subs = []
    for i in range(max(len(found) for found in sources.values())):
        files: dict[str, Path | None] = {}
        for slug in slugs:
            if i < len(sources[slug]):
                files[slug] = tmp_path / f"s{i}" / f"{slug}.py"
                files[slug].parent.mkdir(exist_ok=True)
                files[slug].write_text(sources[slug][i])
        subs.append(files)
    return subs


def _in_rounds(subs: list[dict[str, Path | None]], slugs: list[str],
               runner: Runner) -> list[dict]:
    """``subs`` graded at the ``graded`` level in two rounds (every public round, then
    every hidden one), by ``runner``."""
    policy = Policy(feedback="graded")
    handovers: list = []
    grade_each(slugs, [Job(files, f"s{i}", policy=policy, phase=Phase.PUBLIC)
                       for i, files in enumerate(subs)],
               lambda job, outcome: handovers.append(outcome), runner)
    results: list[SubmissionResult] = []
    grade_each(slugs, [Job(files, f"s{i}", policy=policy, phase=Phase.HIDDEN, handover=h)
                       for i, (files, h) in enumerate(zip(subs, handovers, strict=True))],
               lambda job, outcome: results.append(outcome), runner)
    return [[_fields(ex) for ex in r.exercises] for r in results]


def test_a_class_in_rounds_is_graded_alike_both_ways(tmp_path):
    slugs = ["grid_local_mask", "inductive_bias_toy", "shift_equivariance"]
    subs = _class(tmp_path, slugs)
    assert len(subs) > 5
    assert _in_rounds(subs, slugs, Runner.ENGINE) == _in_rounds(subs, slugs, Runner.PYTEST)


SUITE = '''
import pytest

from grader.suite import graded


@pytest.fixture
def offset():
    return 1


@graded(1, "plain", hint_for="values")
def test_plain(check):
    pass


@graded(1, "parametrized", hint_for="values")
@pytest.mark.parametrize("n", [1, 2])
def test_parametrized(check, n):
    pass


@graded(1, "conftest", hint_for="values")
def test_own_fixture(check, offset):
    pass


@graded(1, "request", hint_for="values")
def test_request(request, learner):
    pass


@graded(1, "skip", hint_for="values")
@pytest.mark.skip(reason="not this one")
def test_skipped(check):
    pass


@graded(1, "autouse", hint_for="values")
def test_autouse(check, tmp_path_factory):
    pass


@graded(1, "async", hint_for="values")
async def test_async(check):
    pass


class TestInAClass:
    @graded(1, "class", hint_for="values")
    def test_method(self, check):
        pass
'''


def test_only_items_that_use_the_engine_alone_run_the_engine_way(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")  # (as the engine's session)
    (tmp_path / "test_toy.py").write_text(textwrap.dedent(SUITE))
    plugin = GradingPlugin()
    ways: dict[str, Runner] = {}

    class Ways:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session: pytest.Session) -> bool:
            runner = ItemRunner(plugin, (self, plugin), Runner.ENGINE)
            ways.update({item.name: runner.way(item) for item in session.items})
            everything_pytest = ItemRunner(plugin, (self, plugin), Runner.PYTEST)
            assert {everything_pytest.way(item) for item in session.items} == {Runner.PYTEST}
            return True

    assert pytest.main([str(tmp_path), "-q", "-s", "-p", "no:cacheprovider", "-p", "no:randomly",
                        "-c", str(catalog.SUITES_DIR / "pytest.ini"), "--rootdir",
                        str(tmp_path)], plugins=[Ways(), plugin]) == 0
    assert ways == {"test_plain": Runner.ENGINE, "test_parametrized[1]": Runner.ENGINE,
                    "test_parametrized[2]": Runner.ENGINE, "test_own_fixture": Runner.PYTEST,
                    "test_request": Runner.PYTEST, "test_skipped": Runner.PYTEST,
                    "test_autouse": Runner.PYTEST, "test_async": Runner.PYTEST,
                    "test_method": Runner.PYTEST}


def test_a_foreign_hook_sends_every_item_through_pytest(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    (tmp_path / "test_toy_hooked.py").write_text(textwrap.dedent(SUITE))
    (tmp_path / "conftest.py").write_text("def pytest_runtest_call(item):\n    pass\n")
    plugin = GradingPlugin()
    ways: set[Runner] = set()

    class Ways:
        @pytest.hookimpl(tryfirst=True)
        def pytest_runtestloop(self, session: pytest.Session) -> bool:
            runner = ItemRunner(plugin, (self, plugin), Runner.ENGINE)
            ways.update(runner.way(item) for item in session.items)
            return True

    pytest.main([str(tmp_path), "-q", "-s", "-p", "no:cacheprovider", "-p", "no:randomly", "-c",
                 str(catalog.SUITES_DIR / "pytest.ini"), "--rootdir", str(tmp_path)],
                plugins=[Ways(), plugin])
    assert ways == {Runner.PYTEST}


def test_an_unknown_runner_is_refused(monkeypatch):
    monkeypatch.setenv("GRADER_RUNNER", "nose")
    with pytest.raises(ValueError, match="GRADER_RUNNER must be"):
        Runner.from_env()
    monkeypatch.delenv("GRADER_RUNNER")
    assert Runner.from_env() is Runner.ENGINE


def test_grade_refuses_an_unknown_runner_at_once():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "grader", "list"], capture_output=True,
                          text=True, env={**os.environ, "GRADER_RUNNER": "nose"}, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == "grade: GRADER_RUNNER must be 'engine' or 'pytest', not 'nose'\n"
