"""conv_via_attention through the real grader: reference, stub, every known mistake, and the
seed's figures reproduced by the reference."""

import numpy as np
import pytest
from conftest import by_name, edit_source, reference_source

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


SRC = {
    "target": "target = (np.arange(n)[None, :] + np.arange(k)[:, None] - a) % n",
    "diff": "diff = (np.arange(n)[None, None, :] - target[:, :, None]) % n",
    "circ": "return np.minimum(diff, n - diff) ** 2",
    "out1": 'return np.einsum("uqc,ocu->qo", Z, W_conv)',
    "out2": 'return np.einsum("uvrcx,oxuv->rco", Z, W_conv)',
    "max": "scores -= scores.max(axis=-1, keepdims=True)",
    "rho": "return float(2.0 * np.exp(-alpha * z**2).sum())",
    "z": "z = np.arange(1, ",
}


@pytest.mark.parametrize("edits, test, mistake", [
    ([("target", "target = (np.arange(n)[None, :] - np.arange(k)[:, None] + a) % n")],
     "two_d_small", "flipped_kernel"),
    ([("out2", 'return np.einsum("uvrcx,oxvu->rco", Z, W_conv)')],
     "two_d_small", "kernel_axes_swapped"),
    ([("out1", 'return np.einsum("uqc,cou->qo", Z, W_conv)')],
     "one_d_small", "channels_transposed"),
    ([("out1", 'return np.einsum("uqc,ocu->qo", Z, W_conv) / k')],
     "one_d_small", "averaged_heads"),
    ([("diff", "diff = np.abs(np.arange(n)[None, None, :] - target[:, :, None])"),
      ("circ", "return diff ** 2")],
     "one_d_small", "non_circular_distance"),
    ([("target", "target = np.arange(n)[None, :] + np.arange(k)[:, None] - a"),
      ("diff", "diff = np.abs(np.arange(n)[None, None, :] - target[:, :, None])"),
      ("circ", "return diff ** 2")],
     "one_d_limit_is_cross_correlation", "no_wrap_around"),
    ([("max", "scores += alpha * (np.arange(k) - k // 2)[:, None, None] ** 2")],
     "large_alpha_stays_finite", "unstable_softmax"),
    ([("rho", "return 2.0 * math.exp(-alpha)")], "rho_values", "leading_term_only"),
    ([("rho", "return float(np.exp(-alpha * z**2).sum())")], "rho_values", "one_sided"),
    ([("z", "z = np.arange(0, ")], "rho_values", "includes_target"),
])
def test_known_mistakes_are_named(grade_src, edits, test, mistake):
    src = reference_source(SLUG)
    for key, new in edits:
        assert SRC[key] in src
        src = edit_source(src, (SRC[key], new))
    result = grade_src(SLUG, src)
    tests = by_name(result)
    assert tests[test].status == "failed"
    assert tests[test].mistake == mistake
    assert tests[test].mistake_message.startswith("Your ")
    assert result.score < result.max_score


def test_unstable_softmax_only_fails_at_large_alpha(grade_src):
    src = edit_source(reference_source(SLUG), (
        SRC["max"], "scores += alpha * (np.arange(k) - k // 2)[:, None, None] ** 2"))
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
    hard = edit_source(src, (SRC["max"], "scores = np.where(scores == 0, 0.0, -np.inf)"))
    tests = by_name(grade_src(SLUG, hard))
    limit = tests["one_d_limit_is_cross_correlation"]
    assert limit.status == "failed" and "outside the tolerance" in limit.message, limit.message
    assert tests["one_d_small"].status == "failed"
    assert tests["one_d_small"].mistake is None
    assert "outside the tolerance" in tests["one_d_small"].message
    assert tests["seed_head_weights"].status == "failed"
