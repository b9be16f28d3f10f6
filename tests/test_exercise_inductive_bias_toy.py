"""inductive_bias_toy through the real grader: reference, stub, wrong answers, and the seed's
figures reproduced by the reference (every declared mistake is checked by
``grade pack check --grade``)."""

import math

import numpy as np
import pytest
from conftest import by_name, declared, edit_source, reference_source

from grader import catalog
from grader.engine.plugin import load_reference

SLUG = "inductive_bias_toy"


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points == 16
    track = by_name(result)["measured_errors_track_predictions"]
    assert any("measured test errors" in note for note in track.notes)


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0
    assert all("not implemented" in t.message for t in result.tests)


def test_seed_figures():
    """Crossover 121.9 rows (the seed rounds to 122); gains 1.3, 1.0, 0.7 at positions 0, 8, 16;
    the shared kernel's floor sigma^2 + beta^2 = 0.34; the best kernel is (1, 0, -1)."""
    ref = load_reference(SLUG)
    assert round(ref.crossover_rows(), 1) == 121.9 and round(ref.crossover_rows()) == 122
    n = 32
    Y = ref.toy_targets(np.roll(np.eye(n), -1, axis=1), 0.3, 0.0, np.zeros((n, n)))
    assert [round(Y[t, t], 2) for t in (0, 8, 16)] == [1.3, 1.0, 0.7]
    conv, full = ref.predicted_test_errors(122)
    assert conv == pytest.approx(0.34, abs=1e-3) and full == pytest.approx(0.34, abs=1e-3)
    assert ref.predicted_test_errors(33)[1] == math.inf
    rng = np.random.default_rng(0)
    X = rng.standard_normal((4000, n))
    w = ref.fit_shared_kernel(X, ref.toy_targets(X, 0.3, 0.5, rng.standard_normal((4000, n))))
    np.testing.assert_allclose(w, [1.0, 0.0, -1.0], atol=0.01)


def test_wrong_fits_fail_the_measured_error_test(grade_src):
    """Reversed taps predict the slope with the wrong sign: the measured error is far above the
    prediction, and the message says by how much and what the tolerance is."""
    src = declared(SLUG, "taps_reversed")
    t = by_name(grade_src(SLUG, src))["measured_errors_track_predictions"]
    assert t.status == "failed"
    assert "shared kernel at N = 60: measured test error" in t.message
    assert "4 standard errors + 1% of the prediction" in t.message


def test_wrong_submissions_fail_with_useful_messages(grade_src):
    src = reference_source(SLUG)
    # a ridge-regularised full map: close, but not the least-squares fit
    ridge = edit_source(src, ("return np.linalg.lstsq(X, Y, rcond=None)[0]",
                        "return np.linalg.solve(X.T @ X + 0.5 * np.eye(X.shape[1]), X.T @ Y)"))
    tests = by_name(grade_src(SLUG, ridge))
    over = tests["full_map_overdetermined"]
    assert over.status == "failed" and over.mistake is None
    assert "outside the tolerance" in over.message
    # no validation at all
    lax = edit_source(src, ('    _check_rows(X, noise, "noise")\n', ""))
    tests = by_name(grade_src(SLUG, lax))
    assert tests["invalid_arguments_raise"].status == "failed"
    assert "should raise ValueError" in tests["invalid_arguments_raise"].message
    assert tests["toy_targets_small"].status == "passed"
