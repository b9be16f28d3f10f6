"""Hints that answer the failure: each kind of failure, triggered through the real grader.

One learner file per exercise answers each test's inputs with a different kind of failure,
so a single grading run exercises many kinds (``TestResult.kind`` / ``kind_hint``).
"""

from __future__ import annotations

import importlib
import textwrap

import numpy as np
import pytest
from conftest import by_name, declared, edit_source, reference_source, reference_variant

from grader import catalog
from grader.failure_kinds import LABELS, FailureKind
from grader.feedback import hints
from grader.judge.compare import compare
from grader.suite import graded

GRID = "grid_local_mask"
ROLLOUT = "attention_rollout"
CONV = "conv_via_attention"

# grid_local_mask: the reference, then one failure per test, keyed by the test's arguments.
GRID_KINDS = edit_source(reference_source(GRID), ("def grid_local_mask(", "def _reference(")) + \
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
GRID_LARGE = edit_source(reference_source(GRID), ("def grid_local_mask(", "def _reference(")) + \
    textwrap.dedent('''

    def grid_local_mask(H_p, W_p, radius, n_prefix=1):
        if radius < 0 or min(H_p, W_p) < 1 or n_prefix < 0:
            raise TypeError("bad arguments")
        m = _reference(H_p, W_p, radius, n_prefix)
        if H_p * W_p > 500:
            m[5, 700] = not m[5, 700]
        return m
    ''')

ROLLOUT_KINDS = edit_source(reference_source(ROLLOUT),
                            ("def attention_rollout(", "def _reference(")) \
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
        if key in ((6, 3, 3, 1), (3, 2, 3, 2), (2, 4, 3, 1)):  # first layer on the left
            # (on the suite's probes too: a mistake is named only where it explains them)
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
    # right on the large grid alone, wrong on every other value of each parameter: its
    # points are not counted (judge/confirm.py)
    assert tests["large_grid"].kind == "unconfirmed" and tests["large_grid"].score == 0


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
    assert tests["one_layer_one_head"].kind_hint == "Every value of yours is 3 times the " \
        "expected one."
    close = tests["three_layers_four_heads"]
    assert close.kind == "precision" and "times what is allowed" in close.kind_hint
    assert "float32 number" not in close.kind_hint  # its values are not float32 numbers
    # its results equal the first-layer-on-the-left mistake's on this test's inputs, but not
    # on the exercise's other inputs (a factor 3, a rounding...): the mistake is not named
    known = tests["order_of_layers"]
    assert known.mistake is None and known.kind != "known_mistake"
    assert "the expected one with the opposite sign" in tests["several_prefix_tokens"].kind_hint
    # where the values are wrong, as measured: no cause guessed from the place
    assert tests["non_square_grid"].kind_hint == ("All 5 wrong values are in row 0, and yours "
                                                  "is larger than the expected value at each "
                                                  "of them.")
    nan = tests["rows_that_do_not_sum_to_one"]
    assert nan.kind == "nan" and "Whole rows of your result are NaN" in nan.kind_hint
    crashed = tests["identity_attention"]
    assert crashed.status == "crashed" and crashed.kind == "crashed"
    assert tests["vit_b16_sized_input"].kind == "inf"
    assert tests["invalid_arguments_raise"].kind == "wrong_exception"


def test_nan_next_to_large_inputs_guesses_no_overflow(grade_src):
    """NaN where the inputs are large: the generic sources of NaN, not "exp overflowed" (the
    inputs' size is no evidence of an exp), and not the test's hint, which is about other
    kinds of failure."""
    src = edit_source(reference_source(CONV), (
        '    alpha = float(alpha)\n', '    alpha = float(alpha)\n    if alpha > 1000:\n'
        '        return float("nan")\n'))
    t = by_name(grade_src(CONV, src))["rho_extremes"]
    assert t.kind == "nan" and t.kind_hint.startswith("NaN comes from 0/0")
    assert "overflows" not in t.kind_hint and "subtract" not in t.kind_hint.lower()
    assert t.hint == ""


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
    assert "0/1 public tests pass; 0/8 hidden tests pass" in out  # (large_grid: not counted)


# -- observations, measured on the learner's output ----------------------------------------------

def _observed(actual, expected, regions=(), rtol=0.0, atol=0.0):
    """``hints.classify`` of the comparison of ``actual`` with ``expected``."""
    cmp = compare(np.asarray(actual), np.asarray(expected), rtol=rtol, atol=atol)
    cmp.regions = [(where, means, np.asarray(mask)) for where, means, mask in regions]
    return hints.classify(status="failed", kind=cmp.kind, comparison=cmp)


def _grid_mask(T=10, n_prefix=1):
    mask = np.ones((T, T), dtype=bool)
    mask[n_prefix:, n_prefix:] = np.eye(T - n_prefix, dtype=bool)
    return mask


def test_a_wrong_column_is_said_where_it_is_not_why():
    """A grid mask with the prefix column forgotten. The values are wrong in column 0 (an
    edge of the array): the hint says so, and guesses no cause from the place."""
    expected = _grid_mask()
    actual = expected.copy()
    actual[1:, 0] = False
    kind, text = _observed(actual, expected)
    assert (kind, text) == ("values", "All 9 wrong values are in column 0, and yours is False "
                                      "at each of them.")
    prefix = np.zeros((10, 10), dtype=bool)
    prefix[0, :] = prefix[:, 0] = True
    kind, text = _observed(actual, expected, [("in the prefix tokens' rows and columns",
                                               "They see and are seen by every token.",
                                               prefix)])
    assert text == ("All 9 wrong values are in the prefix tokens' rows and columns (in column "
                    "0), and yours is False at each of them. They see and are seen by every "
                    "token.")
    # a region says nothing when the wrong values are not all in it, or it is everything
    spread = expected.copy()
    spread[3, 7] = True
    assert "prefix" not in _observed(spread, expected, [("in the prefix", "", prefix)])[1]
    assert _observed(spread, expected, [("anywhere", "", np.ones((10, 10), bool))])[1] == ""


@pytest.mark.parametrize("actual, expected, text", [
    # the rows of a row-stochastic matrix all sum to the same, wrong, value
    (np.array([[0.1, 0.4], [0.3, 0.2], [0.25, 0.25]]),
     np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]]), "Every row of yours sums to 0.5."),
    (np.array([[0.5, 0.6], [0.2, 0.8], [0.9, 0.3]]),
     np.array([[0.5, 0.5], [0.2, 0.8], [0.9, 0.1]]),
     "All 2 wrong values are in column 1, and yours is larger than the expected value at each "
     "of them. Your rows have different sums (from 1 to 1.2), where the expected rows all have "
     "the same sum."),
    (np.arange(8.0) + 0.25, np.arange(8.0), "Every value of yours is the expected one plus "
                                             "0.25."),
    (-np.arange(1.0, 5.0), np.arange(1.0, 5.0), "Every value of yours is the expected one "
                                                 "with the opposite sign."),
    (np.arange(6.0)[::-1], np.arange(6.0), "Your result holds the expected values, in "
                                           "another order."),
    (np.r_[9.0, np.ones(6), 9.0], np.ones(8), "All 2 wrong values are at indices 0 and 7, "
                                              "and yours is larger than the expected value at "
                                              "each of them."),
    (np.where(np.arange(20).reshape(4, 5) % 5 == 2, 0.0, 1.0), np.ones((4, 5)),
     "All 4 wrong values are in column 2, and yours is smaller than the expected value at "
     "each of them. Every row of yours sums to 4."),
], ids=["row_sums", "row_sums_differ", "offset", "sign", "order", "indices", "column"])
def test_observations(actual, expected, text):
    assert _observed(actual, expected) == ("values", text)


def test_another_order_only_where_the_values_tell_a_permutation():
    """A 0/1 matrix with as many ones as expected is not "the expected values in another
    order": its sorted values match whatever it holds."""
    expected = np.eye(6)
    actual = np.zeros((6, 6))
    actual[0, :] = 1.0
    assert "another order" not in _observed(actual, expected)[1]
    assert "another order" in _observed(np.arange(6.0)[::-1], np.arange(6.0))[1]


def test_nan_observations():
    expected = np.ones((3, 4))
    rows = expected.copy()
    rows[1] = np.nan
    kind, text = _observed(rows, expected)
    assert kind == "nan" and text.startswith("Whole rows of your result are NaN, and no "
                                             "other value is. NaN comes from 0/0")
    column = expected.copy()
    column[:, 2] = np.nan
    column[0, 0] = np.inf
    kind, text = _observed(column, expected)
    # shown at every feedback level, so it names no index
    assert text.startswith("All 3 NaN values of yours are in one column. Your result also "
                           "holds inf, and inf - inf, inf / inf and 0 * inf are NaN.")


@pytest.mark.parametrize("actual, rtol, kind, words", [
    (lambda e: e.astype(np.float32).astype(np.float64), 1e-9, "precision",
     "every value of yours is a float32 number stored as float64"),
    (lambda e: e * (1 + 1e-11), 1e-12, "precision", "A truncated sum or series"),
    (lambda e: e * (1 + 1e-7), 1e-12, "values", ""),  # 1e5 times the tolerance: not close
    (lambda e: e * 1.05, 1e-3, "values", ""),  # within 100 tolerances, but 5% off: not close
], ids=["float32_numbers", "series", "far_over_the_tolerance", "loose_tolerance"])
def test_close_is_close_to_the_values_and_to_the_tolerance(actual, rtol, kind, words):
    """The precondition of the precision hint: within ``hints.CLOSE_TIMES`` of what the
    tolerance allows and within 1e-3 of the values; float32 is named only where the values
    are float32 numbers."""
    expected = np.linspace(1.0, 2.0, 12) / 3
    got = _observed(actual(expected), expected, rtol=rtol)
    assert got[0] == kind and words in got[1], got
    if kind == "precision" and "float32 number" not in words:
        assert "float32 number" not in got[1]


def test_failure_kinds():
    assert hints.failure_kinds("tolerance", "precision") == {"precision"}
    assert hints.failure_kinds("tolerance", None) == {"values"}
    assert hints.failure_kinds(None, None) == {"values"}          # a property the test checks
    assert hints.failure_kinds("none", "none") == {"type"}
    assert hints.failure_kinds("timeout", "large") == {"timeout", "large"}
    assert hints.failure_kinds("raised", "raised", large=True) == {"raised", "large"}
    assert hints.failure_kinds("nan", "nan") == {"nan"}


def test_a_test_hint_names_known_failure_kinds():
    with pytest.raises(ValueError, match="hint_for must name failure kinds"):
        graded(1, "h", hint_for=("nan", "overflow"))
    assert graded(1, "h", hint_for="nan").kwargs["hint_for"] == ("nan",)
    assert "hint_for" not in graded(1, "h").kwargs     # a replayed test: DEFAULT_HINT_FOR


@pytest.mark.parametrize("ex", catalog.load().values(), ids=lambda e: e.slug)
def test_every_test_hint_of_the_pack_declares_its_failure_kinds(ex):
    module = importlib.import_module(f"grader.suites.test_{ex.slug}")
    for name, fn in vars(module).items():
        if name.startswith("test_"):
            marker = next(m for m in fn.pytestmark if m.name == "grading")
            assert marker.kwargs["hint"] and marker.kwargs.get("hint_for"), name
            rule = hasattr(fn, "__source_rule__")
            assert (marker.kwargs["hint_for"] == ("rule",)) == rule, name


# -- a test's own hint only where it fits the failure ---------------------------------------------

def test_no_test_hint_beside_a_known_mistake(grade_src):
    """conv_via_attention without wrap-around, a known mistake. The mistake is named; no
    test's hint is shown beside it (large_alpha_stays_finite's is about NaN)."""
    src = reference_variant(
        CONV,
        ("    target = (np.arange(n)[None, :] + np.arange(k)[:, None] - a) % n",
         "    target = np.arange(n)[None, :] + np.arange(k)[:, None] - a"),
        ("    diff = (np.arange(n)[None, None, :] - target[:, :, None]) % n",
         "    diff = np.abs(np.arange(n)[None, None, :] - target[:, :, None])"),
        ("    return np.minimum(diff, n - diff) ** 2", "    return diff ** 2"))
    tests = by_name(grade_src(CONV, src))
    failed = [t for t in tests.values() if not t.passed and not t.name.startswith("rho")
              and t.kind != "unconfirmed"]  # (right only where no wrap-around happens)
    assert len(failed) >= 10 and {t.mistake for t in failed} == {"no_wrap_around"}
    assert all(t.hint == "" and t.kind == "known_mistake" for t in failed)
    assert "exp" not in tests["large_alpha_stays_finite"].message


POSITIONAL = "positional_attention"
UNSTABLE = ("    Z = Q - Q.max(axis=1, keepdims=True)\n    E = np.exp(Z)\n", "    E = np.exp(Q)\n")
NO_TRAINING = ("    return _train(X, y, int(steps), float(lr), seed)",
               "    raise NotImplementedError")


def test_a_nan_hint_shows_on_nan_and_only_there(grade_src):
    nan = by_name(grade_src(POSITIONAL, reference_variant(POSITIONAL, UNSTABLE, NO_TRAINING)))
    t = nan["forward_large_logits"]
    assert t.kind == "nan" and t.hint.startswith("exp(1000) overflows")
    # the training tests: not implemented yet, a fault that says everything: no hint
    assert all(x.hint == "" and x.kind is None for n, x in nan.items() if "training" in n)
    # the same test failing with wrong values (no NaN): its NaN hint is withheld
    doubled = reference_variant(POSITIONAL, NO_TRAINING, (
        "    return (H ** POWER + LINEAR * H).sum(axis=1)",
        "    out = (H ** POWER + LINEAR * H).sum(axis=1)\n"
        "    return 2 * out if np.abs(Q).max() > 500 else out"))
    t = by_name(grade_src(POSITIONAL, doubled))["forward_large_logits"]
    assert t.status == "failed" and t.kind == "values" and t.hint == ""
    assert t.kind_hint == "Every value of yours is 2 times the expected one."


def test_a_match_by_chance_is_not_named(grade_src):
    """A window one step too wide gives, on the 3x3 grid, the mask of one that wraps around
    the grid's edges (a known mistake): the suite's probes tell them apart, so no mistake is
    named, and the observation says where the values are wrong."""
    suite = importlib.import_module(f"grader.suites.test_{GRID}")
    wide = declared(GRID, "window_one_step_too_wide")
    ns: dict = {}
    exec(wide, ns)
    assert (ns["grid_local_mask"](3, 3, 1, 1) == suite._wrap(3, 3, 1, 1)).all()  # by chance
    t = by_name(grade_src(GRID, wide))["square_grid_radius_1"]
    assert t.mistake is None and t.kind == "values"
    assert t.kind_hint.startswith("The wrong values are exactly those at pairs of patches "
                                  "radius + 1 apart")


def test_large_inputs_only_where_every_smaller_test_of_the_function_passed(grade_src):
    """The precondition of the "large inputs" hint: a smaller test of the same function that
    failed (here the 2 x 5 grid, raising before any value was compared) refutes "right on the
    smaller tests"; what was measured is said instead."""
    src = GRID_LARGE.replace("    if H_p * W_p > 500:",
                             "    if H_p * W_p == 10:\n        raise ValueError('x')\n"
                             "    if H_p * W_p > 500:").replace("TypeError", "ValueError")
    tests = by_name(grade_src(GRID, src))
    assert tests["invalid_arguments_raise"].passed
    assert not tests["non_square_grid"].passed
    large = tests["large_grid"]
    assert large.status == "failed" and large.kind != "large"
    assert "smaller tests" not in large.kind_hint


@pytest.mark.parametrize("exc_type, message, words", [
    ("ValueError", "The truth value of an array with more than one element is ambiguous",
     "combine masks with &"),
    ("ValueError", "operands could not be broadcast together with shapes (3,) (4,)",
     "Two shapes do not fit"),
    ("ValueError", "radius must be >= 0", None),             # no shape advice without shapes
    ("RuntimeError", "Expected all tensors to be on the same device, but found cuda:0",
     "different devices"),
    ("RuntimeError", "the learner's own words mention a device", None),
    ("ValueError", "no device here but 'device' in the text", None),
    ("TypeError", "unsupported operand type(s) for +: 'list' and 'int'", "np.asarray"),
    ("TypeError", "'NoneType' object is not subscriptable", None),  # not a list: no asarray
    ("AttributeError", "'list' object has no attribute 'shape'", "np.asarray"),
    ("AttributeError", "'numpy.ndarray' object has no attribute 'dim'", "a torch method"),
    ("NameError", "name 'np' is not defined", "has no value there"),
    ("IndexError", "index 9 is out of bounds for axis 0 with size 9", "ran past the end"),
    ("IndexError", "tuple index out of range", "ran past the end"),
    ("KeyError", "'x'", None),
    ("LinAlgError", "Singular matrix", "lstsq"),
    ("ZeroDivisionError", "division by zero", "division by zero"),
], ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None)
def test_exception_advice_only_under_its_precondition(exc_type, message, words):
    """A table of ``hints.RAISED``: each piece of advice where its class and message say so,
    and only there; elsewhere the hint says what happened and nothing more."""
    kind, text = hints.classify(status="error", kind="raised", exc_type=exc_type,
                                exc_message=message)
    assert kind == "raised"
    if words is None:
        assert text == (f"Your function raised {exc_type} where it should return a result: "
                        "the traceback points at the line.")
    else:
        assert words in text


@pytest.mark.parametrize("expected, actual, tokens", [
    ((10, 10), (9, 9), True),     # a token axis one short: the prefix tokens may be left out
    ((17, 17), (13, 13), True),   # four registers
    ((4,), (1,), False),          # one value per image where one per head is expected
    ((4, 10), (4, 3), False),     # seven of ten missing: not a few prefix tokens
], ids=["one_short", "four_short", "heads", "most_of_the_axis"])
def test_prefix_token_advice_only_where_the_axis_can_count_tokens(expected, actual, tokens):
    kind, text = _observed(np.zeros(actual), np.zeros(expected))
    assert kind == "shape"
    assert ("prefix tokens" in text) == tokens, text


def test_every_hint_text_is_data_and_used():
    """``hints.toml`` holds the texts ``hints.py`` chooses from: every key the code names is
    in the table (with its placeholders filled), and every entry of the table is named by the
    code (read whole: the graded kinds, the exception advice); a kind's key is a
    ``FailureKind`` value."""
    import ast
    import re
    import tomllib
    from pathlib import Path

    source = Path(hints.__file__).read_text()
    table = tomllib.loads(Path(hints.__file__).with_name("hints.toml").read_text())
    literals = {n.value for n in ast.walk(ast.parse(source))
                if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    named = {lit for lit in literals if re.fullmatch(r"[a-z_]+\.[a-z_0-9]+", lit)
             and lit.split(".", 1)[0] in table}
    for key in named:
        section, name = key.split(".", 1)
        assert name in table[section], f"{key} is named in hints.py but not in hints.toml"
    whole = {"graded", "raised"}
    for section, entries in table.items():
        if section in whole:
            continue
        for name in entries:
            key = f"{section}.{name}"
            assert key in named or name in literals or \
                any(v == "@" + key for e in table.values() if isinstance(e, dict)
                    for v in e.values()), f"{key} in hints.toml is named nowhere"
    for kind in hints.GRADED_KINDS:
        hints.graded(kind)  # every reference ("@kind.crashed") resolves
    assert all(FailureKind.of(kind) for section in ("kind", "graded") for kind in table[section])
    assert set(LABELS) <= set(hints.HINT_KINDS) | {"known_mistake", "not_run", "none"}


F, G, NONE = frozenset({"f"}), frozenset({"g"}), frozenset()


@pytest.mark.parametrize("tests, alone", [
    ([("a", True, F), ("b", True, F)], set()),             # one bug, several tests: no hint
    ([("a", True, F), ("b", False, F)], {"a"}),            # the others of f pass
    ([("a", True, F), ("b", True, G)], {"a", "b"}),         # different functions
    ([("rule", True, NONE), ("a", False, F)], {"rule"}),   # a source rule alone
    ([("rule", True, NONE), ("a", True, F)], {"a"}),       # a rule among other failures
])
def test_a_tests_own_hint_is_shown_only_where_the_failure_is_localised(tests, alone):
    assert hints.localised(tests) == alone
