"""conv_via_attention through the real grader: reference, stub, wrong answers, and the seed's
figures reproduced by the reference (every declared mistake is checked by
``grade pack check --grade``)."""

import numpy as np
import pytest
from conftest import by_name, declared, edit_source, reference_source

from grader import catalog
from grader.engine.plugin import load_reference

SLUG = "conv_via_attention"


def _xcorr1(X, W):
    a = W.shape[2] // 2
    return sum(np.roll(X, a - u, axis=0) @ W[:, :, u].T for u in range(W.shape[2]))


def test_reference_scores_full_marks(grade_src):
    result = grade_src(SLUG, reference_source(SLUG))
    assert result.status == "passed"
    assert result.score == result.max_score == catalog.get(SLUG).points == 16


def test_stub_scores_zero(grade_src):
    result = grade_src(SLUG, catalog.get(SLUG).stub.read_text())
    assert result.score == 0
    assert all("not implemented" in t.message for t in result.tests)


def test_seed_figures():
    """alpha = 2: ~0.79 on the target, ~0.11 per neighbour; alpha = 10: 0.99991; the error on a
    random 1-D signal is order 1 at alpha = 1, ~1e-4 at 10, ~1e-8 at 20, tracking rho."""
    ref = load_reference(SLUG)
    n, q = 16, 5
    X, W = np.eye(n), np.zeros((n, n, 3))
    W[:, :, 2] = np.eye(n)                     # only the offset +1 head, value = identity
    A = ref.conv_via_attention(X, W, 2.0)      # = that head's (n, n) attention weights
    assert round(A[q, q + 1], 2) == 0.79 and round(A[q, q], 2) == round(A[q, q + 2], 2) == 0.11
    np.testing.assert_allclose(A.sum(axis=1), 1.0, rtol=1e-12)
    A = ref.conv_via_attention(X, W, 10.0)
    assert round(A[q, q + 1], 5) == 0.99991

    rng = np.random.default_rng(2)             # the signal of the hidden test error_tracks_rho
    X, W = rng.standard_normal((32, 1)), rng.standard_normal((1, 1, 3))
    err = {a: np.abs(ref.conv_via_attention(X, W, a) - _xcorr1(X, W)).max() for a in (1, 10, 20)}
    assert 0.1 <= err[1] <= 10 and 1e-5 <= err[10] <= 1e-3 and 1e-9 <= err[20] <= 1e-7
    assert err[20] / err[10] == pytest.approx(ref.rho(20) / ref.rho(10), rel=0.05)
    assert ref.rho(10) == pytest.approx(2 * np.exp(-10), rel=1e-12)   # e^-40 is far below 1e-12
    assert ref.rho(1e-3) == pytest.approx(np.sqrt(np.pi / 1e-3) - 1, rel=1e-12)  # Poisson sum
    big = ref.conv_via_attention(rng.standard_normal((5, 6, 2)), rng.standard_normal((2, 2, 3, 3)),
                                 1e4)
    assert np.all(np.isfinite(big))


def test_unstable_softmax_only_fails_at_large_alpha(grade_src):
    src = declared(SLUG, "unstable_softmax")
    tests = by_name(grade_src(SLUG, src))
    failed = {name for name, t in tests.items() if t.status != "passed"}
    assert failed == {"large_alpha_stays_finite"}
    assert "NaN or inf" in tests["large_alpha_stays_finite"].message


def test_wrong_submissions_fail_with_useful_messages(grade_src):
    src = reference_source(SLUG)
    # the heads are right but nothing is validated
    no_checks = edit_source(src, ("    k = _validate(X, W_conv, float(alpha))\n",
                            "    k = W_conv.shape[2]\n"))
    tests = by_name(grade_src(SLUG, no_checks))
    assert tests["invalid_arguments_raise"].status == "failed"
    assert "should raise ValueError" in tests["invalid_arguments_raise"].message
    assert tests["one_d_small"].status == "passed"
    # the heads only ever see the target (a hard lookup, no softmax): right limit, wrong blur,
    # which the limit test's check at alpha = 3 (not yet the limit) finds too
    hard = edit_source(src, ("scores -= scores.max(axis=-1, keepdims=True)",
                            "scores = np.where(scores == 0, 0.0, -np.inf)"))
    tests = by_name(grade_src(SLUG, hard))
    limit = tests["one_d_limit_is_cross_correlation"]
    assert limit.status == "failed" and "outside the tolerance" in limit.message, limit.message
    assert tests["one_d_small"].status == "failed"
    assert tests["one_d_small"].mistake is None
    assert "outside the tolerance" in tests["one_d_small"].message
    assert tests["seed_head_weights"].status == "failed"
