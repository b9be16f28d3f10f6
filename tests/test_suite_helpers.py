"""What the hidden suites' helpers promise (``grader.suite``, ``grader.judge.check``)."""

from __future__ import annotations

import numpy as np
import pytest

from grader.judge import expected
from grader.judge.check import Check
from grader.sandbox.harness import recipes
from grader.suite import Recipe, cached_input

BUILDS: list[int] = []


@cached_input
def _layers(seed: int, n: int) -> dict:
    BUILDS.append(seed)
    rng = np.random.default_rng(seed)
    return {"maps": [rng.random((4, 4)) for _ in range(n)], "note": ["kept"]}


def test_cached_inputs_are_built_once_shared_read_only_in_containers_of_ones_own():
    first, second = _layers(1, 3), _layers(1, 3)
    assert BUILDS == [1]
    assert first["maps"][0] is second["maps"][0]          # one array for every test
    assert first["maps"] is not second["maps"] and first["note"] is not second["note"]
    first["maps"].append(np.zeros(2))                      # its own list: nobody else sees it
    assert len(_layers(1, 3)["maps"]) == 3
    with pytest.raises(ValueError, match="read-only"):
        first["maps"][0][0, 0] = 5.0
    changed = first["maps"][0].copy()                      # what a test that changes one does
    changed[0, 0] = 5.0
    assert second["maps"][0][0, 0] != 5.0


LARGE_BUILDS: list[int] = []


@cached_input(shared=False)
def _large(seed: int) -> tuple:
    LARGE_BUILDS.append(seed)
    return np.random.default_rng(seed).random((512, 512)), [[0, 1], [2]]  # 2 MiB


def test_unshared_cached_inputs_are_cached_read_only_but_reach_workers_by_pipe():
    from grader.sandbox import shared_inputs

    first, second = _large(7), _large(7)
    assert LARGE_BUILDS == [7] and first[0] is second[0]
    assert first[1] == second[1] and first[1] is not second[1]  # lists of its own
    with pytest.raises(ValueError, match="read-only"):
        first[0][0, 0] = 5.0
    assert first[0].nbytes >= shared_inputs.MIN_BYTES and shared_inputs.key_of(first[0]) is None


def test_expected_value_keys_follow_the_values_not_the_objects():
    shared = _layers(2, 1)["maps"][0]
    same = shared.copy()  # writable, equal content
    k = expected.key(None, "f", (shared,), {})
    assert k == expected.key(None, "f", (shared,), {}) == expected.key(None, "f", (same,), {})
    same[0, 0] += 1.0
    assert expected.key(None, "f", (same,), {}) != k
    assert expected.key(None, "f", (shared.astype(np.float32),), {}) != k
    # a read-only view of a writable array can change under it: its key follows
    base = np.arange(6.0)
    view = base[:3]
    view.flags.writeable = False
    before = expected.key(None, "f", (view,), {})
    base[0] = 9.0
    assert expected.key(None, "f", (view,), {}) != before


class _Reference:
    @staticmethod
    def apply(f, x):
        return np.asarray(f(x))


class _Learner:
    """Stands for the worker: builds the recipe it receives, as the worker does."""

    last_call_seconds = 0.0

    def apply(self, recipe, x):
        assert isinstance(recipe, Recipe)  # the learner's side gets the recipe itself
        return np.asarray(recipes.build(recipe.name, recipe.params)(x)) * self.factor


def test_check_builds_recipes_for_the_reference_and_the_known_mistakes():
    from grader.suite import KnownMistake

    doubled = KnownMistake("apply", "doubled", "You doubled it.",
                           lambda f, x: 2 * np.asarray(f(x)))
    learner = _Learner()
    x = np.arange(4.0)
    for factor, outcome in ((1.0, None), (2.0, "You doubled it.")):
        learner.factor = factor
        check = Check(learner, _Reference, [doubled], rtol=1e-9, atol=1e-12)
        if outcome is None:
            check.call("apply", Recipe("scale", {"factor": 3.0}), x)
            continue
        with pytest.raises(AssertionError) as failed:
            check.call("apply", Recipe("scale", {"factor": 3.0}), x)
        assert outcome in str(failed.value)
