"""The comparison helper on values that are not a single array."""

import numpy as np

from grader.judge.compare import compare


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


def test_no_relative_error_against_expected_values_at_rounding_noise():
    """An expected 1e-17 is a rounded 0: a relative error against it (1e14) says nothing, so
    only the absolute error is given; away from 0 the relative error is the wrong value's."""
    near_zero = compare(np.array([1e-3, 1.0]), np.array([1e-17, 1.0]), rtol=1e-6, atol=1e-9)
    assert not near_zero.ok and near_zero.max_rel_error is None
    assert "relative" not in near_zero.reason
    away = compare(np.array([1e-3, 2.0]), np.array([1e-17, 1.0]), rtol=1e-6, atol=1e-9)
    assert away.max_rel_error == 1.0
