"""shift_equivariance through the real grader: reference, stub, wrong files with useful
messages, and the seed's figures reproduced by the reference on the suite's recipes (its known
mistakes are declared in solutions/shift_equivariance.variants.toml, checked by
`grade pack check --grade`)."""

from __future__ import annotations

import numpy as np
from conftest import by_name, edit_source, reference_source

from grader import catalog
from grader.engine.plugin import load_reference
from grader.sandbox.harness import recipes

SLUG = "shift_equivariance"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed", [(t.name, t.message) for t in result.tests]
    assert result.score == result.max_score == catalog.get(SLUG).points == 21


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0
    assert all(t.status == "failed" for t in result.tests)
    assert "not implemented yet" in by_name(result)["stride1_conv_commutes"].message


def test_wrong_submissions_fail_with_useful_messages(grade_src):
    src = edit_source(reference_source(SLUG),
                ("perm = np.zeros((H_p * W_p, H_p * W_p), dtype=np.int64)",
                 "perm = np.zeros((H_p * W_p, H_p * W_p), dtype=bool)"),
                ("    scale = scale if scale > 0 else 1.0\n", ""),
                ("return err / scale", "return float(np.divide(err, scale))"))
    tests = by_name(grade_src(SLUG, src))
    assert tests["permutation_2x2"].status == "failed"
    assert "wrong dtype: expected int" in tests["permutation_2x2"].message
    # bool @ float works, but a permutation right nowhere else is not counted
    assert tests["permutation_moves_patch_tokens"].kind == "unconfirmed"
    zero = tests["zero_output_denominator"]
    assert zero.status == "failed" and "NaN where a number was expected" in zero.message
    assert tests["stride2_odd_shift"].status == "passed"


def test_seed_figures_reproduced():
    """The seed's pattern with the suite's recipes, on the image of the seed's cell (3x16x24)."""
    ref = load_reference(SLUG)
    x = np.random.default_rng(0).standard_normal((3, 16, 24))
    build = recipes.build
    conv1 = build("circular_conv", {"c_in": 3, "c_out": 8, "k": 3, "stride": 1, "seed": 1})
    conv2 = build("circular_conv", {"c_in": 3, "c_out": 8, "k": 3, "stride": 2, "seed": 2})
    patch = build("patch_embed", {"c_in": 3, "dim": 32, "patch": 8, "seed": 3})
    vit = {"c_in": 3, "dim": 32, "patch": 8, "depth": 2, "heads": 2, "seed": 4}
    plain = build("patch_transformer", vit)
    pos = build("patch_transformer", {**vit, "grid": (2, 3), "pos_std": 1.0})
    shifts = range(9)
    assert ref.which_shifts_commute(conv1, x) == list(range(24))
    assert ref.which_shifts_commute(conv2, x, stride=2) == list(range(0, 24, 2))
    odd = [ref.equivariance_error(conv2, x, d, 2) for d in (1, 3, 5, 7)]
    assert min(odd) > 1.0  # wrong by more than the output's own size (seed: 1.12)
    assert [d for d in shifts if ref.equivariance_error(patch, x, d, 8) <= 1e-8] == [0, 8]
    assert [d for d in shifts if ref.equivariance_error(plain, x, d, 8) <= 1e-8] == [0, 8]
    assert ref.which_shifts_commute(pos, x, stride=8) == [0]
    assert ref.equivariance_error(pos, x, 8, 8) > 0.5  # seed: 0.85 at 8 pixels
    # the figures reported in the statement (computed here, to two decimals)
    assert round(odd[0], 2) == 1.12
    assert round(ref.equivariance_error(pos, x, 8, 8), 2) == 1.05


def test_recipes_agree_between_builds():
    """Two builds of a seeded recipe (as in grader and worker) give identical functions."""
    x = np.random.default_rng(5).standard_normal((3, 16, 24))
    spec = ("patch_transformer", {"grid": [2, 3], "seed": 9})
    a, b = recipes.build(*spec), recipes.build(*spec)
    np.testing.assert_array_equal(a(x), b(x))
    assert a(x).shape == (32, 2, 3)
