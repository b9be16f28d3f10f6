"""Hints that answer the failure: each kind of failure, triggered through the real grader.

One learner file per exercise answers each test's inputs with a different kind of failure,
so a single grading run exercises many kinds (``TestResult.kind`` / ``kind_hint``).
"""

from __future__ import annotations

import textwrap

from conftest import by_name, reference_source

GRID = "grid_local_mask"
ROLLOUT = "attention_rollout"
CONV = "conv_via_attention"

# grid_local_mask: the reference, then one failure per test, keyed by the test's arguments.
GRID_KINDS = reference_source(GRID).replace("def grid_local_mask(", "def _reference(") + \
    textwrap.dedent('''

    def grid_local_mask(H_p, W_p, radius, n_prefix=1):
        key = (H_p, W_p, radius, n_prefix)
        if min(H_p, W_p, radius, n_prefix) < 0 or min(H_p, W_p) < 1:
            return np.ones((1, 1), dtype=bool)          # no validation: never raises
        m = _reference(H_p, W_p, radius, n_prefix)
        if key == (3, 3, 1, 1):
            return m[1:, 1:]                             # the class token left out
        if key == (4, 4, 0, 1):
            return m.astype(int)                         # 0/1 instead of booleans
        if key == (2, 5, 1, 1):
            return None                                  # a missing return
        if key == (4, 3, 2, 3):
            raise IndexError("index 12 is out of bounds for axis 0 with size 12")
        if key == (3, 4, 1, 0):
            return m[None]                               # an extra axis
        if key == (2, 3, 5, 1):
            return "a mask"
        if key == (1, 1, 0, 1):
            return object()                              # not plain data
        return m
    ''')

# grid_local_mask: right on every small input, wrong on the large one; TypeError for bad input.
GRID_LARGE = reference_source(GRID).replace("def grid_local_mask(", "def _reference(") + \
    textwrap.dedent('''

    def grid_local_mask(H_p, W_p, radius, n_prefix=1):
        if radius < 0 or min(H_p, W_p) < 1 or n_prefix < 0:
            raise TypeError("bad arguments")
        m = _reference(H_p, W_p, radius, n_prefix)
        if H_p * W_p > 500:
            m[5, 700] = not m[5, 700]
        return m
    ''')

ROLLOUT_KINDS = reference_source(ROLLOUT).replace("def attention_rollout(", "def _reference(") \
    + textwrap.dedent('''

    def attention_rollout(A_layers, n_prefix, H_p, W_p):
        layers = [np.asarray(a, dtype=float) for a in A_layers]
        T = n_prefix + H_p * W_p
        if layers and layers[0].shape[-1] != T:
            raise TypeError("wrong T")                   # the contract says ValueError
        R = _reference(A_layers, n_prefix, H_p, W_p)
        heads = layers[0].shape[0] if layers and layers[0].ndim == 3 else 1
        key = (len(layers), H_p, W_p, n_prefix)
        if key == (1, 2, 2, 1):
            return 3 * R                                 # a factor 3
        if key == (3, 3, 3, 1) and heads == 4:
            return R * (1 + 3e-7)                        # float32-sized rounding
        if key == (6, 3, 3, 1):                          # first layer on the left
            P = np.eye(T)
            for A in layers:
                A_hat = 0.5 * A.mean(axis=0) + 0.5 * np.eye(T)
                P = P @ (A_hat / A_hat.sum(axis=-1, keepdims=True))
            return P[0, n_prefix:].reshape(H_p, W_p)
        if n_prefix == 3:
            return -R                                    # the sign flipped
        if key == (2, 3, 5, 1):
            out = R.copy()
            out[0, :] += 0.05                            # only the top edge is wrong
            return out
        if key == (3, 3, 3, 1):
            out = R.copy()
            out[1, :] = np.nan                           # a row divided by a zero sum
            return out
        if key == (3, 2, 3, 1):
            import os
            os._exit(3)
        if H_p == 14:
            out = R.copy()
            out[7, 7] = np.inf
            return out
        return R
    ''')


def test_kinds_of_grid_failures(grade_src):
    tests = by_name(grade_src(GRID, GRID_KINDS))
    shape = tests["square_grid_radius_1"]
    assert shape.kind == "shape" and "each have 1 entry too few" in shape.kind_hint
    assert "prefix tokens" in shape.kind_hint
    assert tests["radius_0"].kind == "dtype" and "boolean array" in tests["radius_0"].kind_hint
    assert tests["non_square_grid"].kind == "none"
    assert "return statement" in tests["non_square_grid"].kind_hint
    raised = tests["several_prefix_tokens"]
    assert raised.status == "error" and raised.kind == "raised"
    assert "index ran past the end" in raised.kind_hint
    extra = tests["no_prefix"]
    assert extra.kind == "shape" and "extra axis of size 1 at position 0" in extra.kind_hint
    assert tests["radius_covers_grid"].kind == "type"
    assert tests["smallest_grid"].kind == "type"      # not plain data, from the worker
    not_raised = tests["invalid_arguments_raise"]
    assert not_raised.kind == "not_raised" and "raise ValueError" in not_raised.kind_hint
    assert tests["large_grid"].passed and tests["large_grid"].kind is None


def test_right_on_small_inputs_wrong_on_the_large_one(grade_src):
    tests = by_name(grade_src(GRID, GRID_LARGE))
    large = tests["large_grid"]
    assert large.status == "failed" and large.kind == "large"
    assert "Right on the 7 smaller tests" in large.kind_hint
    assert "1,050,625 values" in large.kind_hint
    wrong = tests["invalid_arguments_raise"]
    assert wrong.kind == "wrong_exception" and "raise ValueError explicitly" in wrong.kind_hint
    assert all(t.kind is None for t in tests.values() if t.passed)


def test_kinds_of_rollout_failures(grade_src):
    tests = by_name(grade_src(ROLLOUT, ROLLOUT_KINDS))
    assert tests["one_layer_one_head"].kind == "values"
    assert "times 3 everywhere" in tests["one_layer_one_head"].kind_hint
    close = tests["three_layers_four_heads"]
    assert close.kind == "precision" and "float32 rounding" in close.kind_hint
    known = tests["order_of_layers"]
    assert known.mistake == "first_layer_on_left" and known.kind == "known_mistake"
    assert known.kind_hint == ""  # the mistake's own message says it
    assert "right up to their sign" in tests["several_prefix_tokens"].kind_hint
    assert "at the edges" in tests["non_square_grid"].kind_hint
    nan = tests["rows_that_do_not_sum_to_one"]
    assert nan.kind == "nan" and "Whole rows of your result are NaN" in nan.kind_hint
    crashed = tests["identity_attention"]
    assert crashed.status == "crashed" and crashed.kind == "crashed"
    assert tests["vit_b16_sized_input"].kind == "inf"
    assert tests["invalid_arguments_raise"].kind == "wrong_exception"


def test_nan_at_large_inputs_points_at_overflow(grade_src):
    src = reference_source(CONV).replace(
        '    alpha = float(alpha)\n', '    alpha = float(alpha)\n    if alpha > 1000:\n'
        '        return float("nan")\n', 1)
    t = by_name(grade_src(CONV, src))["rho_extremes"]
    assert t.kind == "nan"
    assert "they reach |x| = 1e+04" in t.kind_hint and "exp overflows" in t.kind_hint


def test_terminal_shows_the_kind_hint_and_the_public_inputs(tmp_path):
    from click.testing import CliRunner

    from grader.cli import main

    sub = tmp_path / "sub"
    sub.mkdir()
    (sub / f"{GRID}.py").write_text(GRID_KINDS)
    result = CliRunner().invoke(main, [GRID, "--submission", str(sub), "--report-dir",
                                       str(tmp_path / "report"), "--device", "cpu"])
    out = result.output
    assert "wrong shape: Axes 0 and 1 each have 1 entry too few" in out
    assert "input: grid_local_mask(3, 3, 1, 1)" in out        # a public test's inputs
    assert "no exception: Check the arguments" in out
    assert "0/1 public tests pass; 1/8 hidden tests pass" in out
