"""The comparison helper on values that are not a single array."""

import numpy as np

from grader.engine.compare import compare


def test_tuples_of_arrays_are_compared_item_by_item():
    expected = (np.eye(2), np.zeros(3))
    assert compare((np.eye(2), np.zeros(3)), expected, rtol=1e-7, atol=0).ok
    wrong = compare((np.eye(2), np.ones(3)), expected, rtol=1e-7, atol=0)
    assert not wrong.ok and wrong.reason.startswith("item 1 of the tuple: 3 of 3 values")
    assert "expected" not in wrong.hidden_reason.split(":", 1)[1]
    short = compare([np.eye(2)], expected, rtol=1e-7, atol=0)
    assert not short.ok and short.reason.startswith("expected a tuple of 2 items")


def test_flat_sequences_of_numbers_stay_arrays():
    assert compare([1, 2, 3], [1, 2, 3], rtol=0, atol=0).ok
    assert compare((0.5, 0.25), (0.5, 0.25), rtol=0, atol=0).ok
    assert not compare((0.5, 0.26), (0.5, 0.25), rtol=0, atol=1e-3).ok
