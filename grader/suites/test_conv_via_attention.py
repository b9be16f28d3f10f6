"""Hidden suite: conv_via_attention (and rho)."""

import math

import numpy as np

from grader.suite import GradeFailure, graded, mistake, probes, reference, region, source_rule

F = "conv_via_attention"
R = "rho"

# How close the learner must be to the circular cross-correlation once alpha is large: at
# alpha = 40 the off-target mass rho(40) is about 8e-18, far below float64 rounding of the sums.
LIMIT_TOL = dict(rtol=1e-9, atol=1e-9)


def _ref():
    return reference(F)


def _xcorr(X, W_conv):
    """The circular cross-correlation, written independently of the reference (np.roll)."""
    X, W_conv = np.asarray(X, float), np.asarray(W_conv, float)
    k = W_conv.shape[2]
    a = k // 2
    if X.ndim == 2:
        return sum(np.roll(X, a - u, axis=0) @ W_conv[:, :, u].T for u in range(k))
    return sum(np.roll(X, (a - u, a - v), axis=(0, 1)) @ W_conv[:, :, u, v].T
               for u in range(k) for v in range(k))


def _circular(j, q, d, n):
    """The circular distance from key j to the target q + d."""
    diff = (j - q - d) % n
    return np.minimum(diff, n - diff)


def _weights(n, k, alpha, dist):
    """P[u, q, j] = softmax_j(-alpha * dist(j, target)**2) for a given (wrong) distance rule."""
    a = k // 2
    q = np.arange(n)
    j = np.arange(n)
    D = np.stack([dist(j[None, :], q[:, None], u - a, n) for u in range(k)]).astype(float)
    s = -alpha * D**2
    s -= s.max(axis=-1, keepdims=True)
    P = np.exp(s)
    return P / P.sum(axis=-1, keepdims=True)


def _contract(X, W_conv, weights):
    """Sum over heads of (head weights) @ X @ W_delta, for per-axis weights(n) -> (k, n, n)."""
    X, W_conv = np.asarray(X, float), np.asarray(W_conv, float)
    if X.ndim == 2:
        return np.einsum("uqc,ocu->qo", np.einsum("uqj,jc->uqc", weights(X.shape[0]), X), W_conv)
    Z = np.einsum("uri,ijx->urjx", weights(X.shape[0]), X)
    Z = np.einsum("vcj,urjx->uvrcx", weights(X.shape[1]), Z)
    return np.einsum("uvrcx,oxuv->rco", Z, W_conv)


def _with_distance(X, W_conv, alpha, dist):
    k = np.asarray(W_conv).shape[2]
    return _contract(X, W_conv, lambda n: _weights(n, k, alpha, dist))


# -- known mistakes: conv_via_attention ---------------------------------------------------------

@mistake(F, "flipped_kernel",
         "Your output matches a true convolution, with the kernel flipped: the head for tap u "
         "reads the pixel at offset a - u. Deep-learning 'convolutions' are cross-correlations: "
         "tap (u, v) reads X[r + u - a, c + v - a].")
def _flipped(X, W_conv, alpha):
    W_conv = np.asarray(W_conv)
    flipped = W_conv[:, :, ::-1] if W_conv.ndim == 3 else W_conv[:, :, ::-1, ::-1]
    return _ref().conv_via_attention(X, flipped, alpha)


@mistake(F, "kernel_axes_swapped",
         "Your output matches the kernel with its two spatial axes swapped: tap (u, v) of "
         "W_conv[o, c', u, v] is the row offset u - a and the column offset v - a, in that order.")
def _swapped(X, W_conv, alpha):
    W_conv = np.asarray(W_conv)
    if W_conv.ndim != 4:
        raise ValueError("2-D only")
    return _ref().conv_via_attention(X, W_conv.transpose(0, 1, 3, 2), alpha)


@mistake(F, "channels_transposed",
         "Your output matches W_delta transposed: W_delta[c', o] = W_conv[o, c', ...] maps the C "
         "input channels to the C_out output channels, so X[j] @ W_delta, not X[j] @ "
         "W_conv[:, :, ...].")
def _transposed(X, W_conv, alpha):
    return _ref().conv_via_attention(X, np.swapaxes(np.asarray(W_conv), 0, 1), alpha)


@mistake(F, "averaged_heads",
         "Your output matches the heads' average instead of their sum. A convolution adds its k*k "
         "tap contributions; concatenating heads and applying W_O is a sum of per-head blocks.")
def _averaged(X, W_conv, alpha):
    W_conv = np.asarray(W_conv)
    n_heads = W_conv.shape[2] ** (W_conv.ndim - 2)
    return _ref().conv_via_attention(X, W_conv, alpha) / n_heads


@mistake(F, "non_circular_distance",
         "Your output matches the plain distance |j - t| to the wrapped target t = (q + delta) "
         "mod n. The distance must be circular too, min((j - t) mod n, (t - j) mod n): on a "
         "circular signal, position n - 1 is a neighbour of position 0.")
def _non_circular(X, W_conv, alpha):
    return _with_distance(X, W_conv, alpha, lambda j, q, d, n: np.abs(j - (q + d) % n))


@mistake(F, "no_wrap_around",
         "Your output matches offsets that never wrap: the target q + delta is not taken mod n "
         "and the distance is |j - (q + delta)|, so heads at the border read the nearest edge "
         "pixel. Indexing is circular here: the target is (q + delta) mod n, with the circular "
         "distance.")
def _no_wrap(X, W_conv, alpha):
    return _with_distance(X, W_conv, alpha, lambda j, q, d, n: np.abs(j - (q + d)))


@mistake(F, "unstable_softmax",
         "Your output has NaN or inf where the reference is finite: the softmax overflowed at "
         "large alpha. Subtract each row's largest score before exponentiating (it does not "
         "change the softmax), so that the largest term is exp(0) = 1.")
def _unstable(X, W_conv, alpha):
    # The paper's form drops the constant alpha*|delta|**2 from the scores (softmax does not
    # see it) and exponentiates without subtracting the maximum: exp(alpha*|delta|**2) overflows.
    k = np.asarray(W_conv).shape[2]
    off = np.arange(k) - k // 2

    def weights(n):
        j, q = np.arange(n)[None, :], np.arange(n)[:, None]
        D = np.stack([_circular(j, q, d, n) for d in off]).astype(float) ** 2
        with np.errstate(over="ignore", invalid="ignore"):
            E = np.exp(-alpha * D + alpha * (off**2)[:, None, None])
            return E / E.sum(axis=-1, keepdims=True)

    with np.errstate(invalid="ignore"):
        return _contract(X, W_conv, weights)


# A matched mistake must match again on these small 1-D and 2-D inputs (non-square, k = 3 and
# 5, C != C_out, moderate and large alpha; alpha = 800, where exp(alpha) overflows without the
# max subtracted), and rho's on two more alphas.
_P1, _P2 = np.random.default_rng(70), np.random.default_rng(71)
PROBES = probes(F, (_P1.standard_normal((7, 2)), _P1.standard_normal((3, 2, 3)), 1.5),
                (_P2.standard_normal((4, 6, 2)), _P2.standard_normal((3, 2, 5, 5)), 2.5),
                (_P1.standard_normal((6, 3)), _P1.standard_normal((2, 3, 5)), 40.0),
                (_P1.standard_normal((5, 2)), _P1.standard_normal((3, 2, 3)), 800.0),
                (_P2.standard_normal((3, 4, 2)), _P2.standard_normal((2, 2, 3, 3)), 800.0))
RHO_PROBES = probes(R, (0.5,), (3.0,))


# -- regions of conv_via_attention's result ----------------------------------------------------

@region(F, "at the positions whose kernel window reaches past an end of the signal",
        means="Only those outputs read pixels across the ends, where indices wrap around: "
              "there the neighbour of index 0 is index n - 1.")
def _window_wraps(X, W_conv, alpha):
    X, W_conv = np.asarray(X), np.asarray(W_conv)
    a = W_conv.shape[2] // 2
    near_end = [(np.arange(n) < a) | (np.arange(n) >= n - a) for n in X.shape[:-1]]
    if X.ndim == 2:
        wraps = near_end[0]
    else:
        wraps = near_end[0][:, None] | near_end[1][None, :]
    return np.broadcast_to(wraps[..., None], X.shape[:-1] + (W_conv.shape[0],)).copy()


# -- known mistakes: rho -----------------------------------------------------------------------

@mistake(R, "leading_term_only",
         "Your rho matches the leading term 2*exp(-alpha) alone. That is the large-alpha "
         "approximation; rho is the whole sum 2 * sum_{z>=1} exp(-alpha z^2), and for small alpha "
         "many terms matter.")
def _rho_leading(alpha):
    return 2.0 * math.exp(-alpha)


@mistake(R, "one_sided",
         "Your rho matches half the bound: one side of the target only. The off-target keys lie on "
         "both sides (offsets +z and -z), hence the factor 2.", slip="halved")
def _rho_one_sided(alpha):
    return _ref().rho(alpha) / 2.0


@mistake(R, "includes_target",
         "Your rho matches a sum that starts at z = 0, which counts the target itself. rho is the "
         "off-target mass bound: the sum starts at z = 1.")
def _rho_from_zero(alpha):
    return _ref().rho(alpha) + 2.0


# -- tests ---------------------------------------------------------------------------------------

def _data(seed, x_shape, w_shape):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(x_shape), rng.standard_normal(w_shape)


@graded(1, "One head per tap u, aimed at offset u - a. Score every key by -alpha times its "
           "squared circular distance to the head's target, softmax over keys, then multiply by "
           "that tap's (C, C_out) matrix and add the heads.", visibility="public",
        hint_for=("values", "shape"))
def test_one_d_small(check):
    """1-D, n = 8, C = C_out = 3, k = 3, alpha = 2 (blurry heads)."""
    X, W = _data(1, (8, 3), (3, 3, 3))
    check.call(F, X, W, 2.0)


@graded(1, "In 2-D the head for tap (u, v) aims at (r + u - a, c + v - a); its score adds the "
           "squared circular row distance and the squared circular column distance.",
        visibility="public",
        hint_for=("values", "shape"))
def test_two_d_small(check):
    """2-D, H = 5, W = 6, C = 2, C_out = 3, k = 3, alpha = 1.5."""
    X, W = _data(2, (5, 6, 2), (3, 2, 3, 3))
    check.call(F, X, W, 1.5)


def _probe(n, alpha, learner):
    """One head's attention weights, read off with X = I and a kernel whose only non-zero tap
    is the identity at offset +1: the output is then that head's (n, n) weight matrix."""
    X = np.eye(n)
    W = np.zeros((n, n, 3))
    W[:, :, 2] = np.eye(n)
    return X, W, learner.conv_via_attention(X, W, alpha)


@graded(1, "With alpha = 2 the target's score is 0 and each neighbour's is -2: the target gets "
           "1/(1 + 2e^-2 + ...) of the weight.",
        hint_for=("values",))
def test_seed_head_weights(check, learner):
    """The seed's figures: alpha = 2 puts ~0.79 on the target and ~0.11 on each neighbour;
    alpha = 10 puts 0.99991 on the target."""
    n, q = 16, 5
    X, W, A = _probe(n, 2.0, learner)
    check.equal(A, check.expected(F, X, W, 2.0),
                confirms="conv_via_attention", what="the head's weights at alpha = 2",
                mistake_call=(F, (X, W, 2.0), {}))
    A = np.asarray(A)
    check.that(round(float(A[q, q + 1]), 2) == 0.79 and round(float(A[q, q]), 2) == 0.11
               and round(float(A[q, q + 2]), 2) == 0.11,
               f"at alpha = 2 the offset +1 head of query {q} should put about 0.79 on key "
               f"{q + 1} and 0.11 on keys {q} and {q + 2}; yours: {A[q, q + 1]:.4f}, "
               f"{A[q, q]:.4f}, {A[q, q + 2]:.4f}")
    X, W, A = _probe(n, 10.0, learner)
    check.equal(A, check.expected(F, X, W, 10.0),
                confirms="conv_via_attention", what="the head's weights at alpha = 10",
                mistake_call=(F, (X, W, 10.0), {}))
    target = float(np.asarray(A)[q, q + 1])
    check.that(round(target, 5) == 0.99991,
               f"at alpha = 10 the target should get 0.99991 of the weight; yours: {target:.6f}")


@graded(2, "As alpha grows each head reads exactly one pixel: tap u of a cross-correlation "
           "reads X[(q + u - a) mod n]. Check the direction of the offset and the kernel layout "
           "(C_out, C, k).",
        hint_for=("values", "shape", "raised"))
def test_one_d_limit_is_cross_correlation(check, learner):
    """1-D, alpha = 40: equal to the circular cross-correlation for k = 1, 3, 5 and several
    channel counts (1 -> 1, 3 -> 2, 4 -> 4); at alpha = 3, not yet the limit, the reference's
    blur."""
    for i, (n, C, C_out, k) in enumerate([(9, 1, 1, 3), (10, 3, 2, 5), (7, 4, 4, 3),
                                          (6, 2, 3, 1), (11, 4, 4, 5)]):
        X, W = _data(10 + i, (n, C), (C_out, C, k))
        check.equal(learner.conv_via_attention(X, W, 40.0), _xcorr(X, W),
                    confirms="conv_via_attention", **LIMIT_TOL,
                    what=f"n={n}, C={C}, C_out={C_out}, k={k}, alpha=40 against the circular "
                         f"cross-correlation", mistake_call=(F, (X, W, 40.0), {}))
    check.call(F, X, W, 3.0)


@graded(2, "In 2-D tap (u, v) of W_conv[o, c', u, v] reads X[(r + u - a) mod H, (c + v - a) "
           "mod W, c']: rows first, columns second, with separate wrap-around on each axis.",
        hint_for=("values", "shape", "raised"))
def test_two_d_limit_is_cross_correlation(check, learner):
    """2-D, alpha = 40, non-square images: equal to the circular cross-correlation for
    k = 1, 3, 5 and several channel counts; at alpha = 3, not yet the limit, the reference's
    blur."""
    for i, (H, Wd, C, C_out, k) in enumerate([(5, 7, 1, 1, 3), (6, 4, 3, 2, 3),
                                              (7, 6, 2, 2, 5), (4, 5, 2, 3, 1),
                                              (6, 8, 4, 4, 3)]):
        X, W = _data(20 + i, (H, Wd, C), (C_out, C, k, k))
        check.equal(learner.conv_via_attention(X, W, 40.0), _xcorr(X, W),
                    confirms="conv_via_attention", **LIMIT_TOL,
                    what=f"H={H}, W={Wd}, C={C}, C_out={C_out}, k={k}, alpha=40 against the "
                         f"circular cross-correlation", mistake_call=(F, (X, W, 40.0), {}))
    check.call(F, X, W, 3.0)


@graded(1, "Each head's error is its off-target mass times a difference of pixels, and the "
           "off-target mass is at most rho(alpha) ~ 2e^-alpha.",
        hint_for=("values",))
def test_error_tracks_rho(check, learner):
    """The seed's decay on a random 1-D signal (n = 32, one channel, k = 3): the max error
    against the cross-correlation is order 1 at alpha = 1, in the 1e-4 range at 10, about 1e-8
    at 20, and from 10 to 20 it falls by the factor rho(20)/rho(10) (within 5%)."""
    X, W = _data(2, (32, 1), (1, 1, 3))
    Y = _xcorr(X, W)
    err = {}
    for alpha in (1.0, 10.0, 20.0):
        out = learner.conv_via_attention(X, W, alpha)
        check.equal(out, check.expected(F, X, W, alpha),
                    confirms="conv_via_attention", what=f"alpha = {alpha:g}",
                    mistake_call=(F, (X, W, alpha), {}))
        err[alpha] = float(np.max(np.abs(np.asarray(out) - Y)))
    _draw_error_against_rho(check, X, W, Y)
    shown = ", ".join(f"{e:.2e} at alpha = {a:g}" for a, e in err.items())
    check.that(0.1 <= err[1.0] <= 10 and 1e-5 <= err[10.0] <= 1e-3 and 1e-9 <= err[20.0] <= 1e-7,
               f"max errors against the convolution: {shown}; expected order 1, 1e-4, 1e-8")
    want = check.expected(R, 20.0) / check.expected(R, 10.0)
    got = err[20.0] / err[10.0]
    check.that(abs(got / want - 1) <= 0.05,
               f"from alpha = 10 to 20 the error fell by {got:.3g}, rho by {want:.3g}")


def _draw_error_against_rho(check, X, W, Y):
    """The report's curve, from the learner's own outputs: the max error against the
    cross-correlation and the learner's rho(alpha), on a log scale."""
    alphas = np.arange(1.0, 31.0, 2.0)
    errors, bounds = [], []
    for alpha in alphas:
        out = check.optional(F, X, W, float(alpha))
        errors.append(float(np.max(np.abs(np.asarray(out, dtype=float) - Y)))
                      if out is not None and np.shape(out) == Y.shape else math.nan)
        r = check.optional(R, float(alpha))
        bounds.append(float(r) if isinstance(r, (int, float)) else math.nan)
    check.curve("Your heads approach the convolution as alpha grows",
                [{"name": "max |your output - cross-correlation|", "x": alphas, "y": errors,
                  "style": "line"},
                 {"name": "your rho(alpha), the off-target mass", "x": alphas, "y": bounds,
                  "style": "dashed"}],
                x_label="alpha (sharpness)", y_label="error / mass", log_y=True,
                note="1-D signal, n = 32, k = 3. The error follows rho(alpha) ~ 2e^-alpha "
                     "down to float64 rounding.")


@graded(1, "At moderate alpha every key gets some weight: the distance must be circular in "
           "both directions, and all k*k heads are added.",
        hint_for=("values",))
def test_blurry_heads_k5(check):
    """k = 5 with small alpha (0.3 and 0.7), where the far keys and the wrap-around matter."""
    X, W = _data(30, (7, 3), (3, 3, 5))
    check.call(F, X, W, 0.3)
    X, W = _data(31, (6, 5, 2), (2, 2, 5, 5))
    check.call(F, X, W, 0.7)


@graded(1, "alpha = 0 makes every score 0: each head averages all pixels.",
        hint_for=("values", "nan", "raised"))
def test_alpha_zero_averages(check):
    """alpha = 0: uniform attention, every pixel gets mean(X) @ (sum of the taps)."""
    X, W = _data(40, (4, 5, 2), (3, 2, 3, 3))
    check.call(F, X, W, 0.0)
    X, W = _data(41, (6, 2), (2, 2, 3))
    check.call(F, X, W, 0.0)


@graded(1, "The circular distance handles any n, even when the kernel is wider than the "
           "signal: offsets wrap around several times.",
        hint_for=("values", "shape", "raised"))
def test_smallest_sizes(check):
    """n = 1, n = 2 (ties in the circular distance), a 1x1 image, and k = 5 on n = 3."""
    for i, (xs, ws) in enumerate([((1, 2), (3, 2, 3)), ((2, 1), (2, 1, 3)),
                                  ((1, 1, 2), (2, 2, 3, 3)), ((3, 2), (2, 2, 5)),
                                  ((2, 3, 1), (1, 1, 3, 3))]):
        X, W = _data(50 + i, xs, ws)
        check.call(F, X, W, 1.0)


@graded(1, "Subtract each row's largest score before exp: exp of a large positive number is "
           "inf, and inf/inf is NaN.",
        hint_for=("nan", "inf"))
def test_large_alpha_stays_finite(check, learner):
    """alpha = 1e4 in 1-D and 2-D: finite, and equal to the cross-correlation; the same
    inputs at alpha = 4 give the reference's blur."""
    for i, (xs, ws) in enumerate([((9, 2), (3, 2, 3)), ((5, 6, 2), (2, 2, 3, 3))]):
        X, W = _data(60 + i, xs, ws)
        out = check.array(learner.conv_via_attention(X, W, 1e4), "conv_via_attention's "
                          "result for alpha = 1e4")
        expected = check.expected(F, X, W, 1e4)
        if out.shape == expected.shape and not np.all(np.isfinite(out)):
            bad = int(np.sum(~np.isfinite(out)))
            known = _unstable.__known_mistake__
            raise GradeFailure(f"alpha = 1e4: {bad} of {out.size} values are NaN or inf, the "
                               f"reference's are all finite", mistake=known, kind="nan")
        check.equal(out, _xcorr(X, W),
                    confirms="conv_via_attention", **LIMIT_TOL,
                    what="alpha = 1e4 against the circular cross-correlation",
                    mistake_call=(F, (X, W, 1e4), {}))
        check.call(F, X, W, 4.0)


@graded(1, "Check the arguments before computing: X and W_conv must agree on the number of "
           "spatial axes and on C, and the kernel must be odd (and square in 2-D).",
        hint_for=("not_raised", "wrong_exception"))
def test_invalid_arguments_raise(check):
    """Even k, channel mismatch, a non-square 2-D kernel, mismatched dimensions and a negative
    alpha raise ValueError; valid 1-D and 2-D arguments still give the right output."""
    X1, X2 = np.ones((3, 1)), np.ones((3, 2, 1))
    check.raises("ValueError", F, X1, np.ones((1, 1, 2)), 1.0)        # even k
    check.raises("ValueError", F, X2, np.ones((1, 1, 2, 2)), 1.0)     # even k, 2-D
    check.raises("ValueError", F, X1, np.ones((1, 2, 3)), 1.0)        # C mismatch
    check.raises("ValueError", F, X2, np.ones((1, 2, 3, 3)), 1.0)     # C mismatch, 2-D
    check.raises("ValueError", F, X2, np.ones((1, 1, 3, 1)), 1.0)     # kernel not square
    check.raises("ValueError", F, X1, np.ones((1, 1, 3, 3)), 1.0)     # 1-D X, 2-D kernel
    check.raises("ValueError", F, X2, np.ones((1, 1, 3)), 1.0)        # 2-D X, 1-D kernel
    check.raises("ValueError", F, X1, np.ones((1, 1, 3)), -1.0)       # alpha < 0
    check.call(F, *_data(90, (5, 2), (3, 2, 3)), 1.0)
    check.call(F, *_data(91, (4, 3, 2), (2, 2, 3, 3)), 2.0)


@graded(1, "Build each head's (n, n) weight matrix with broadcasting and contract with einsum "
           "or matmul; Python loops over queries, keys and heads are slow.", timeout=30,
        hint_for=("timeout",))
def test_large_input(check):
    """A 16x20 image with 8 -> 8 channels and k = 3 (2,880 head-query pairs over 320 keys)."""
    X, W = _data(80, (16, 20, 8), (8, 8, 3, 3))
    check.call(F, X, W, 3.0, timed=True)


@graded(1, "rho(alpha) = 2 * (e^-alpha + e^-4alpha + e^-9alpha + ...).", visibility="public",
        hint_for=("values", "precision"))
def test_rho_values(check):
    """rho at alpha = 1, 2, 10, 20 to 1e-12 relative."""
    for alpha in (1.0, 2.0, 10.0, 20.0):
        check.call(R, alpha, rtol=1e-12, atol=0.0)


@graded(1, "For small alpha the terms decay slowly: keep adding until exp(-alpha z^2) is "
           "negligible next to the sum. alpha <= 0 makes the sum diverge.",
        hint_for=("values", "precision", "timeout", "not_raised", "wrong_exception"))
def test_rho_extremes(check):
    """Small alpha (1e-3, 0.05) needs hundreds of terms; large alpha (60, 1e4) is tiny or 0;
    alpha <= 0 raises ValueError."""
    for alpha in (1e-3, 0.05, 60.0, 1e4):
        check.call(R, alpha, rtol=1e-12, atol=0.0)
    check.raises("ValueError", R, 0.0)
    check.raises("ValueError", R, -1.0)


@source_rule("Each head is a softmax over keys aimed at one kernel offset; the convolution "
             "comes out of adding the heads, so no convolution routine is needed.",
             statement="conv_via_attention must compute the convolution with attention heads, "
                       "not with a convolution routine (np.convolve, scipy.signal, torch's conv "
                       "layers, an FFT).",
             forbid=("numpy.convolve", "numpy.correlate", "numpy.fft", "scipy.signal",
                     "scipy.ndimage", "scipy.fft", "scipy.fftpack", "torch.nn.functional.conv*",
                     "torch.nn.Conv*", "torch.conv*", "torch.fft", "torch.nn.functional.unfold",
                     "torch.nn.Unfold"),
             functions=("conv_via_attention",))
def test_rule_no_convolution_routine():
    """Your source calls no convolution routine: the attention heads do the work."""
