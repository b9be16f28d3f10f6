"""Hidden suite: inductive_bias_toy."""

import math

import numpy as np

from grader.suite import cached_input, graded, mistake, probes, reference

SLUG = "inductive_bias_toy"
TT, SK, FM = "toy_targets", "fit_shared_kernel", "fit_full_map"
PE, CR = "predicted_test_errors", "crossover_rows"


def _ref():
    return reference(SLUG)


def _slope(X, circular=True):
    X = np.asarray(X, float)
    if circular:
        return np.roll(X, 1, axis=1) - np.roll(X, -1, axis=1)
    P = np.pad(X, ((0, 0), (1, 1)))
    return P[:, :-2] - P[:, 2:]


def _gain(n, beta):
    return 1.0 + beta * np.cos(2 * np.pi * np.arange(n) / n)


# -- known mistakes: toy_targets --------------------------------------------------------------

@mistake(TT, "slope_sign_flipped",
         "Your targets match the slope with the opposite sign, X[:, t+1] - X[:, t-1]. The toy's "
         "slope is the left neighbour minus the right one, X[:, t-1] - X[:, t+1] (the kernel "
         "(1, 0, -1)).")
def _tt_sign(X, beta, sigma, noise):
    return -_gain(np.shape(X)[1], beta) * _slope(X) + sigma * np.asarray(noise, float)


@mistake(TT, "not_circular",
         "Your targets match zero padding at the row's ends. Indexing is circular: at t = 0 the "
         "left neighbour is X[:, n-1], and at t = n-1 the right neighbour is X[:, 0].")
def _tt_pad(X, beta, sigma, noise):
    return _gain(np.shape(X)[1], beta) * _slope(X, False) + sigma * np.asarray(noise, float)


@mistake(TT, "noise_times_gain",
         "Your targets match the gain applied to the noise as well. Only the slope is scaled: "
         "(1 + beta*g_t) * (x_{t-1} - x_{t+1}) + sigma * noise_t.")
def _tt_noise_gain(X, beta, sigma, noise):
    return _gain(np.shape(X)[1], beta) * (_slope(X) + sigma * np.asarray(noise, float))


# Seeded inputs for the probes: 4 rows of n = 7, targets and noise away from 0 and 1.
_PR = np.random.default_rng(50)
_PX, _PY, _PNOISE = (_PR.standard_normal((4, 7)) for _ in range(3))

# A matched mistake must match again on this: beta and sigma both non-zero (the slope's sign
# does not just negate the result, the gain is not 1, the noise counts).
TT_PROBES = probes(TT, (_PX, 0.4, 0.7, _PNOISE))


# -- known mistakes: fit_shared_kernel ----------------------------------------------------------

@mistake(SK, "taps_reversed",
         "Your kernel matches the right weights in reverse order. w[m] multiplies "
         "X[:, (t + m - k//2) mod n], so w[0] goes with the left neighbour x_{t-1} and w[-1] with "
         "the right one.", slip="flipped along axis 0")
def _sk_reversed(X, Y, k=3):
    return _ref().fit_shared_kernel(X, Y, k)[::-1]


@mistake(SK, "zero_padded_taps",
         "Your kernel matches a fit with zero padding at the row's ends. The taps wrap around: "
         "at t = 0 the left tap reads X[:, n-1].")
def _sk_padded(X, Y, k=3):
    X, Y = np.asarray(X, float), np.asarray(Y, float)
    N, n = X.shape
    a = k // 2
    P = np.pad(X, ((0, 0), (a, k - 1 - a)))
    A = np.stack([P[:, m:m + n] for m in range(k)], axis=-1).reshape(-1, k)
    return np.linalg.lstsq(A, Y.reshape(-1), rcond=None)[0]


# A matched mistake must match again on these: k = 3 and k = 5, rows whose ends wrap.
SK_PROBES = probes(SK, (_PX, _PY, 3), (_PX, _PY, 5))


# -- known mistakes: fit_full_map ---------------------------------------------------------------

@mistake(FM, "transposed_map",
         "Your W matches the transpose of the least-squares map: you fitted column vectors, "
         "y = W x. Here tokens are rows and the model is Yhat = X @ W, so W[i, j] is the weight "
         "of input i in output j.", slip="transposed")
def _fm_transposed(X, Y):
    return _ref().fit_full_map(X, Y).T


@mistake(FM, "roles_swapped",
         "Your W matches a regression of X on Y. Least squares solves min ||X @ W - Y||: X is the "
         "design matrix, Y the targets (np.linalg.lstsq(X, Y)).")
def _fm_swapped(X, Y):
    return np.linalg.lstsq(np.asarray(Y, float), np.asarray(X, float), rcond=None)[0]


# A matched mistake must match again on this: 9 rows of n = 4 (more rows than inputs).
FM_PROBES = probes(FM, (_PR.standard_normal((9, 4)), _PR.standard_normal((9, 4))))


# -- known mistakes: predicted_test_errors, crossover_rows -------------------------------------

@mistake(PE, "N_minus_n",
         "Your full-map error matches sigma^2 n/(N - n). With p = n coefficients and a "
         "Gaussian design the excess is sigma^2 p/(N - p - 1): the denominator is N - n - 1, "
         "infinite once N <= n + 1.")
def _pe_off_by_one(N, n=32, k=3, sigma=0.5, beta=0.3):
    conv, _ = _ref().predicted_test_errors(N, n, k, sigma, beta)
    return conv, (sigma**2 + sigma**2 * n / (N - n) if N > n else math.inf)


@mistake(PE, "excess_without_beta",
         "Your convolution error matches an excess of sigma^2 k/(N n). The part of the target "
         "the shared kernel cannot represent acts like extra noise, so its excess uses "
         "sigma_eff^2 = sigma^2 + beta^2.")
def _pe_sigma_only(N, n=32, k=3, sigma=0.5, beta=0.3):
    _, full = _ref().predicted_test_errors(N, n, k, sigma, beta)
    return sigma**2 + beta**2 + sigma**2 * k / (N * n), full


# A matched mistake must match again on these: N well above n + 1, and N = n + 1 (the full
# map's excess is infinite), with sigma and beta unlike the defaults and unlike each other.
PE_PROBES = probes(PE, (20, 8, 3, 0.6, 0.4), (9, 8, 5, 0.6, 0.4))


@mistake(CR, "without_plus_one",
         "Your crossover matches n + sigma^2 n/beta^2: solve sigma^2 n/(N - n - 1) = beta^2 "
         "for N, which keeps the + 1.", slip="minus one")
def _cr_no_one(n=32, sigma=0.5, beta=0.3):
    return _ref().crossover_rows(n, sigma, beta) - 1.0


@mistake(CR, "not_squared",
         "Your crossover matches n + 1 + sigma n/beta: the error terms are variances, "
         "sigma^2 and beta^2.")
def _cr_not_squared(n=32, sigma=0.5, beta=0.3):
    return n + 1 + sigma * n / beta


# A matched mistake must match again on this: sigma/beta = 1.5 (squared it is 2.25).
CR_PROBES = probes(CR, (12, 0.6, 0.4))


# -- tests ----------------------------------------------------------------------------------------

@cached_input(shared=False)  # (a learner's file may write to its inputs: copies of its own)
def _rows(seed, N, n):
    """Two seeded (N, n) standard-normal arrays."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((N, n)), rng.standard_normal((N, n))


@graded(1, "Circular neighbours of every position at once: np.roll shifts a row by one place.",
        visibility="public",
        hint_for=("values",))
def test_toy_targets_small(check):
    """N = 3 rows of n = 8, beta = 0.3, sigma = 0.5."""
    X, noise = _rows(1, 3, 8)
    check.call(TT, X, 0.3, 0.5, noise)


@graded(1, "The gain 1 + beta*cos(2 pi t/n) is 1 + beta at t = 0, 1 at t = n/4 and 1 - beta "
           "at t = n/2.",
        hint_for=("values",))
def test_toy_targets_seed_gains(check, learner):
    """The seed's gains for n = 32, beta = 0.3: 1.3 at position 0, 1.0 at 8, 0.7 at 16 (read
    off with rows whose only non-zero entry is the left neighbour, x_{t-1} = 1)."""
    n = 32
    X = np.roll(np.eye(n), -1, axis=1)         # row t: X[t, t-1] = 1, so Y[t, t] = gain_t
    Y = check.call(TT, X, 0.3, 0.0, np.zeros((n, n)))
    got = [round(float(np.asarray(Y)[t, t]), 2) for t in (0, 8, 16)]
    check.that(got == [1.3, 1.0, 0.7], f"gains at positions 0, 8, 16: expected [1.3, 1.0, 0.7], "
               f"got {got}")


@graded(1, "Short rows wrap around: with n = 2 the left and right neighbours are the same "
           "position.",
        hint_for=("values", "shape", "raised"))
def test_toy_targets_short_rows(check):
    """One row, n = 1, 2, 3; beta = 0 and sigma = 0 (the bare slope); a negative beta."""
    for i, n in enumerate((1, 2, 3)):
        X, noise = _rows(10 + i, 1, n)
        check.call(TT, X, 0.3, 0.5, noise)
    X, noise = _rows(13, 4, 6)
    check.call(TT, X, 0.0, 0.0, noise)
    check.call(TT, X, -0.5, 1.5, noise)


@graded(1, "One equation per (row, position): stack the k taps of every position as the "
           "columns of an (N*n, k) design matrix.", visibility="public",
        hint_for=("values", "shape"))
def test_shared_kernel_small(check):
    """k = 3 on N = 5 rows of n = 8 with arbitrary targets."""
    X, Y = _rows(20, 5, 8)
    check.call(SK, X, Y, 3)


@graded(1, "Tap m reads X[:, (t + m - k//2) mod n]: k = 1 is the position itself, k = 5 reaches "
           "two places each way.",
        hint_for=("values", "shape", "raised"))
def test_shared_kernel_other_k(check):
    """k = 1 and k = 5 on toy targets, and k = 3 given by keyword."""
    X, noise = _rows(21, 6, 10)
    Y = check.expected(TT, X, 0.3, 0.5, noise)
    check.call(SK, X, Y, 1)
    check.call(SK, X, Y, 5)
    check.call(SK, X, Y, k=3)


@graded(1, "The drifting part beta*g_t averages to zero over positions, so with lots of data "
           "the best shared kernel is the true slope kernel.",
        hint_for=("values",))
def test_shared_kernel_finds_true_kernel(check, learner):
    """On 2,000 toy rows (n = 32) the fit is within 0.02 of (1, 0, -1), per weight."""
    X, noise = _rows(22, 2000, 32)
    Y = check.expected(TT, X, 0.3, 0.5, noise)
    w = check.call(SK, X, Y, 3)
    w = np.asarray(w, float)
    check.that(np.max(np.abs(w - [1.0, 0.0, -1.0])) <= 0.02,
               f"expected a kernel within 0.02 of (1, 0, -1), got {np.round(w, 4).tolist()}")


@graded(1, "Solve min ||X @ W - Y|| for all n outputs at once: each column of W is its own "
           "regression on the same design X.",
        hint_for=("values", "shape"))
def test_full_map_overdetermined(check):
    """N = 100 rows of n = 16 (more rows than coefficients)."""
    X, noise = _rows(30, 100, 16)
    check.call(FM, X, check.expected(TT, X, 0.3, 0.5, noise))


@graded(1, "With N < n many W fit exactly; the normal equations X^T X are singular. "
           "np.linalg.lstsq (or the pseudo-inverse) picks the minimum-norm one.",
        hint_for=("values", "raised", "nan", "inf"))
def test_full_map_underdetermined(check):
    """N = 10 rows of n = 16: the minimum-norm exact fit."""
    X, Y = _rows(31, 10, 16)
    check.call(FM, X, Y)


@graded(1, "Per output: the convolution pays beta^2 plus a tiny estimation term; the full map "
           "pays sigma^2 n/(N - n - 1).", visibility="public",
        hint_for=("values",))
def test_predicted_errors_defaults(check):
    """The defaults (n = 32, k = 3, sigma = 0.5, beta = 0.3) at N = 50, 122, 400, 1000."""
    for N in (50, 122, 400, 1000):
        check.call(PE, N)


@graded(1, "With N <= n + 1 the full map's excess is unbounded: return math.inf.",
        hint_for=("inf", "raised"))
def test_predicted_errors_edges(check):
    """N = 33 and 34 around n + 1, N = 1, and other n, k, sigma, beta."""
    for N in (1, 32, 33, 34):
        check.call(PE, N)
    check.call(PE, 50, n=16, k=5, sigma=1.0, beta=0.1)
    check.call(PE, 9, 8, 1, 0.2, 0.0)


@graded(1, "Set the full map's excess sigma^2 n/(N - n - 1) equal to the convolution's bias "
           "beta^2 and solve for N.",
        hint_for=("values",))
def test_crossover_rows(check, learner):
    """The seed's crossover 121.9 rows for the defaults, other settings, and beta = 0 (inf)."""
    got = check.call(CR)
    check.that(round(float(got), 1) == 121.9, f"the defaults should cross at 121.9 rows, got "
               f"{got}")
    check.call(CR, 64, 0.5, 0.3)
    check.call(CR, n=16, sigma=1.0, beta=0.5)
    check.call(CR, 32, 0.5, 0.0)


@graded(1, "Validate shapes and parameters before computing, and raise ValueError.",
        hint_for=("not_raised", "wrong_exception"))
def test_invalid_arguments_raise(check):
    """Shape mismatches, non-2-D inputs, k out of range, N < 1, sigma < 0 raise ValueError;
    valid arguments at the edges (k = 1 and k = n, N = 1, sigma = 0) give the right values."""
    X = np.ones((2, 4))
    check.raises("ValueError", TT, X, 0.3, 0.5, np.ones((2, 5)))
    check.raises("ValueError", TT, np.ones(4), 0.3, 0.5, np.ones(4))
    check.raises("ValueError", SK, X, np.ones((3, 4)), 3)
    check.raises("ValueError", SK, X, X, 0)
    check.raises("ValueError", SK, X, X, 5)
    check.raises("ValueError", FM, X, np.ones((2, 3)))
    check.raises("ValueError", PE, 0)
    check.raises("ValueError", PE, 50, sigma=-0.5)
    check.raises("ValueError", CR, 0)
    X, noise = _rows(41, 6, 4)
    check.call(TT, X, 0.3, 0.5, noise)
    Y = check.expected(TT, X, 0.3, 0.5, noise)
    check.call(SK, X, Y, 1)
    check.call(SK, X, Y, 4)
    check.call(FM, X, Y)
    check.call(PE, 1, sigma=0.0)
    check.call(CR, 1, 0.0)


@graded(1, "Build the design matrix with one fancy-indexing step (or np.roll per tap), not a "
           "Python loop over rows and positions.", timeout=30,
        hint_for=("timeout",))
def test_large_inputs(check):
    """5,000 rows of n = 64: the targets and the shared kernel (320,000 equations)."""
    X, noise = _rows(40, 5000, 64)
    Y = check.call(TT, X, 0.3, 0.5, noise, timed=True)
    check.call(SK, X, Y, 3, timed=True)


N_TRIALS, N_TEST, Z_MAX, REL_SLACK = 20, 500, 4.0, 0.01


@graded(3, "Both fits are plain least squares on the training rows; the test error is "
           "measured on fresh rows. If your fits pass the other tests, check that you return "
           "w in tap order and W for Yhat = X @ W.", timeout=60,
        hint_for=("values", "shape"))
def test_measured_errors_track_predictions(check, learner):
    """The seed's claim: fitted on fresh toy data (n = 32, sigma = 0.5, beta = 0.3), the two
    models' measured test errors per output track the predictions at N = 60, 122 and 400.

    Tolerance: for each N and each model, the mean over 20 independent trials (each tested on
    500 fresh rows) must lie within 4 standard errors (the trials' sample standard deviation
    over sqrt(20)) plus 1% of the prediction, which covers the first-order formulas. The
    full map must be measurably worse than the shared kernel at N = 60 and better at N = 400.
    The reference meets this with margin on every one of 300 grader seeds tried. The first
    trial's w and W must be the least-squares fits of its rows (a fixed kernel, such as the
    true one, is no fit)."""
    n, sigma, beta = 32, 0.5, 0.3
    means, ses, firsts = {}, {}, {}
    trials = _error_trials(n, sigma, beta)
    for N in (60, 122, 400):
        errs = []
        for trial, (X, Y, Xt, Yt, taps) in enumerate(trials[N]):
            w = check.array(learner.fit_shared_kernel(X, Y, 3), "fit_shared_kernel's w")
            W = check.array(learner.fit_full_map(X, Y), "fit_full_map's W")
            check.that(w.shape == (3,) and W.shape == (n, n),
                       f"expected w of shape (3,) and W of shape ({n}, {n}), got {w.shape} "
                       f"and {W.shape}", kind="shape")
            if trial == 0:
                firsts[N] = X, Y, w, W
            errs.append((np.mean((Yt - taps @ w) ** 2), np.mean((Yt - Xt @ W) ** 2)))
        errs = np.array(errs)
        means[N] = errs.mean(axis=0)
        ses[N] = errs.std(axis=0, ddof=1) / math.sqrt(N_TRIALS)
    _draw_errors_against_N(check, means, ses, n, sigma, beta)
    for N, mean in means.items():
        se = ses[N]
        for j, model in enumerate(("shared kernel", "full map")):
            pred = check.expected(PE, N, n, 3, sigma, beta)[j]
            tol = Z_MAX * se[j] + REL_SLACK * pred
            check.that(bool(abs(mean[j] - pred) <= tol),
                       f"{model} at N = {N}: measured test error {mean[j]:.4f} ± {se[j]:.4f} "
                       f"(mean ± standard error over {N_TRIALS} trials), predicted {pred:.4f}; "
                       f"allowed difference {tol:.4f} (4 standard errors + 1% of the "
                       f"prediction)")
    check.that(bool(means[60][1] > means[60][0] and means[400][1] < means[400][0]),
               f"the full map should be worse than the shared kernel at N = 60 "
               f"({means[60][1]:.3f} vs {means[60][0]:.3f}) and better at N = 400 "
               f"({means[400][1]:.3f} vs {means[400][0]:.3f})")
    for N, (X, Y, w, W) in firsts.items():
        check.equal(w, check.expected(SK, X, Y, 3),
                    confirms="fit_shared_kernel", rtol=1e-6, atol=1e-9,
                    what=f"fit_shared_kernel's w on the first trial, N = {N}")
        check.equal(W, check.expected(FM, X, Y), confirms="fit_full_map", rtol=1e-6, atol=1e-9,
                    what=f"fit_full_map's W on the first trial, N = {N}")
    check.notes.append("measured test errors (shared kernel, full map): " + "; ".join(
        f"N = {N}: {m[0]:.3f}, {m[1]:.3f}" for N, m in means.items()))


@cached_input
def _error_trials(n, sigma, beta):
    """For N = 60, 122, 400: N_TRIALS tuples (X, Y, Xt, Yt, taps) of fresh toy data,
    training and test rows, from one seeded generator; ``taps``: the test rows' three
    circular taps at each position (``taps @ w`` is the shared kernel's prediction)."""
    ref, rng = _ref(), np.random.default_rng(20240611)
    idx = (np.arange(n)[:, None] + np.arange(3)[None, :] - 1) % n
    trials = {}
    for N in (60, 122, 400):
        trials[N] = []
        for _ in range(N_TRIALS):
            X = rng.standard_normal((N, n))
            Y = ref.toy_targets(X, beta, sigma, rng.standard_normal((N, n)))
            Xt = rng.standard_normal((N_TEST, n))
            Yt = ref.toy_targets(Xt, beta, sigma, rng.standard_normal((N_TEST, n)))
            trials[N].append((X, Y, Xt, Yt, Xt[:, idx]))
    return trials


def _draw_errors_against_N(check, means, ses, n, sigma, beta):
    """The report's curve, from the learner's own outputs: the measured test errors of the
    learner's fits, the learner's predicted errors against N, and its crossover."""
    Ns = sorted(means)
    grid = np.unique(np.geomspace(n + 4, 1000, 40).astype(int))
    predicted = [check.optional(PE, int(N), n, 3, sigma, beta) for N in grid]
    ok = [p is not None and np.shape(p) == (2,) for p in predicted]
    series = [
        {"name": "shared kernel, measured (your fits)", "x": Ns, "y": [means[N][0] for N in Ns],
         "err": [ses[N][0] for N in Ns], "style": "points", "colour": 0},
        {"name": "full map, measured (your fits)", "x": Ns, "y": [means[N][1] for N in Ns],
         "err": [ses[N][1] for N in Ns], "style": "points", "colour": 1},
    ]
    if all(ok):
        series += [
            {"name": "shared kernel, your prediction", "x": grid,
             "y": [float(p[0]) for p in predicted], "style": "line", "colour": 0},
            {"name": "full map, your prediction", "x": grid,
             "y": [float(p[1]) for p in predicted], "style": "dashed", "colour": 1},
        ]
    crossover = check.optional(CR, n, sigma, beta)
    marks = [{"x": float(crossover), "label": f"your crossover N* = {float(crossover):.1f}"}] \
        if isinstance(crossover, (int, float)) and math.isfinite(crossover) else []
    check.curve("Test error per output against the number of training rows", series,
                x_label="N (training rows)", y_label="test MSE per output", log_x=True,
                log_y=True, marks=marks,
                note=f"n = {n}, sigma = {sigma}, beta = {beta}; measured: mean ± standard error "
                     f"over {N_TRIALS} trials of {N_TEST} fresh test rows.")
