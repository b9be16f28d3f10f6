"""Hidden suite: positional_attention (forward pass, patch association, training by outcome).

The training tests grade what the trained model does on data generated here with fixed seeds:
held-out accuracy and patch association (diagonal excluded) above thresholds. The thresholds
come from bench/positional_attention_sweep.py: over 22 seeds the reference reaches held-out
accuracy 0.929 on average (min 0.922) and association 1.000 (min 1.000) on the 3-2-3-2 layout,
where a model with its attention frozen at Q0 reaches at most 0.879 and the chance level of the
association is 0.178.
"""

import numpy as np

from grader.suite import cached_input, graded, mistake, probes, reference

F_FWD = "positional_attention_forward"
F_ASSOC = "patch_association"
F_TRAIN = "train_positional_attention"
SLUG = "positional_attention"

# The grading task (the settings documented in the statement).
D_FEATURE, Q_NOISE, N_TRAIN, N_TEST, STEPS, LR = 20, 0.46, 2000, 5000, 2000, 0.3
ACC_MIN, ASSOC_MIN = 0.90, 0.75


def _ref():
    return reference(SLUG)


def _softmax(Q, axis):
    Z = np.exp(Q - Q.max(axis=axis, keepdims=True))
    return Z / Z.sum(axis=axis, keepdims=True)


def _sigma(H):
    return H ** _ref().POWER + _ref().LINEAR * H


# -- known mistakes: the forward pass ----------------------------------------------------------

@mistake(F_FWD, "softmax_over_columns",
         "Your logits match attention normalised over axis 0 (each column sums to 1). Row i of "
         "A holds the weights patch i gives to every patch j, so the softmax runs along each "
         "row: softmax(Q, axis=1).")
def _softmax_axis0(X, Q, v):
    H = (np.asarray(X) @ v) @ _softmax(np.asarray(Q, dtype=float), 0).T
    return _sigma(H).sum(axis=1)


@mistake(F_FWD, "attention_transposed",
         "Your logits match H = U @ A instead of H = U @ A.T (U[n, j] = <X[n, j], v>): patch i "
         "must read sum_j A[i, j] * U[n, j], the weights of row i, not of column i.")
def _transposed(X, Q, v):
    H = (np.asarray(X) @ v) @ _softmax(np.asarray(Q, dtype=float), 1)
    return _sigma(H).sum(axis=1)


@mistake(F_FWD, "no_linear_term",
         "Your logits match sigma(x) = x**p without the linear term. The activation is "
         "x**p + a*x: at the tiny initialisation the power has no gradient, and the a*x term "
         "is what starts learning.")
def _no_linear(X, Q, v):
    H = (np.asarray(X) @ v) @ _softmax(np.asarray(Q, dtype=float), 1).T
    return (H ** _ref().POWER).sum(axis=1)


@mistake(F_FWD, "mean_over_patches",
         "Your logits match the mean of sigma(H[n, i]) over the patches; the model sums them.")
def _mean(X, Q, v):
    return _ref().positional_attention_forward(X, Q, v) / np.asarray(Q).shape[0]


# A matched mistake must match again on this: N = 5 samples of D = 4 patches (not 2: the mean
# is not half the sum) of dimension 3, an asymmetric Q of logits up to a few units.
_PF = np.random.default_rng(90)
FWD_PROBES = probes(F_FWD, (_PF.standard_normal((5, 4, 3)), 2.0 * _PF.standard_normal((4, 4)),
                            _PF.standard_normal(3)))


# -- known mistakes: patch association --------------------------------------------------------

@mistake(F_ASSOC, "columns_not_rows",
         "Your association matches the one computed on the columns of A. Row i is where patch i "
         "looks (its attention weights); take the largest entries of row i.")
def _columns(A, groups, exclude_self=False):
    return _ref().patch_association(np.asarray(A).T, groups, exclude_self)


@mistake(F_ASSOC, "ties_broken_by_position",
         "Your association matches a top-s picked by argsort, which breaks ties by position. "
         "Ties at the cut-off get fractional credit: a row of equal weights must score the "
         "chance level s/D whatever the group's positions.")
def _argsort_ties(A, groups, exclude_self=False):
    A, gid = np.asarray(A, dtype=float), _group_ids(groups)
    D = A.shape[0]
    shares = []
    for i in range(D):
        cand = [j for j in range(D) if not (exclude_self and j == i)]
        s = int((gid == gid[i]).sum()) - int(exclude_self)
        if s == 0:
            continue
        order = np.argsort(-A[i, cand], kind="stable")[:s]
        shares.append(np.mean([gid[cand[k]] == gid[i] for k in order]))
    return float(np.mean(shares))


@mistake(F_ASSOC, "exclude_self_ignored",
         "Your association with exclude_self=True matches the one with the diagonal included. "
         "Leave entry (i, i) out and take the s - 1 largest of the other entries.")
def _self_ignored(A, groups, exclude_self=False):
    if not exclude_self:
        raise ValueError("not this mistake")
    return _ref().patch_association(A, groups, False)


@mistake(F_ASSOC, "self_excluded_count_not_reduced",
         "Your association with exclude_self=True matches taking the s largest off-diagonal "
         "entries (s = the group's size). Without patch i itself only s - 1 group-mates are "
         "left to find: take the s - 1 largest, divide by s - 1, and skip patches alone in "
         "their group.")
def _count_not_reduced(A, groups, exclude_self=False):
    if not exclude_self:
        raise ValueError("not this mistake")
    A, gid = np.asarray(A, dtype=float), _group_ids(groups)
    D = A.shape[0]
    shares = []
    for i in range(D):
        others = np.arange(D) != i
        shares.append(_share(A[i, others], (gid == gid[i])[others], int((gid == gid[i]).sum())))
    return float(np.mean(shares))


@mistake(F_ASSOC, "average_over_groups",
         "Your association matches the average over groups of each group's mean share. The "
         "average runs over patches, so a group of 3 weighs 3/2 as much as a group of 2.")
def _group_mean(A, groups, exclude_self=False):
    shares = _patch_shares(A, groups, exclude_self)
    means = [shares[list(m)].mean() for m in groups if not np.isnan(shares[list(m)]).any()]
    return float(np.mean(means))


def _group_ids(groups):
    gid = np.empty(sum(len(g) for g in groups), dtype=int)
    for g, members in enumerate(groups):
        gid[list(members)] = g
    return gid


def _share(row, same, k):
    """Expected share of group-mates among the k largest of ``row`` (random tie-break)."""
    t = np.sort(row)[::-1][k - 1]
    above, tied = row > t, row == t
    return ((same & above).sum() + (k - above.sum()) * (same & tied).sum() / tied.sum()) / k


def _patch_shares(A, groups, exclude_self):
    """Each patch's share, NaN where skipped (a loop version of the reference)."""
    A, gid = np.asarray(A, dtype=float), _group_ids(groups)
    D = A.shape[0]
    out = np.full(D, np.nan)
    for i in range(D):
        keep = np.arange(D) != i if exclude_self else np.ones(D, dtype=bool)
        k = int((gid == gid[i]).sum()) - int(exclude_self)
        if k > 0:
            out[i] = _share(A[i, keep], (gid == gid[i])[keep], k)
    return out


# A matched mistake must match again on these: an asymmetric 8x8 matrix of weights 0.1..0.4
# with ties at the cut-off in most rows, groups of 3, 3 and 2 at scattered positions, with and
# without the diagonal.
_PA_A = np.random.default_rng(42).integers(1, 5, (8, 8)) * 0.1
_PA_GROUPS = [[0, 3, 7], [1, 4, 6], [2, 5]]
ASSOC_PROBES = probes(F_ASSOC, (_PA_A, _PA_GROUPS, False), (_PA_A, _PA_GROUPS, True))


# -- known mistakes: training (a short run from the seeded initialisation is deterministic) ----

def _flat(pair):
    """(Q, v) as one vector, Q row by row then v."""
    return np.concatenate([np.ravel(pair[0]), np.ravel(pair[1])])


def _train_variant(X, y, steps, lr, seed, *, jacobian=True, together=True, v_first=False,
                   transpose_du=False):
    X, y = np.asarray(X, dtype=float), np.asarray(y, dtype=float)
    N, D, d = X.shape
    p, a = _ref().POWER, _ref().LINEAR
    rng = np.random.default_rng(seed)
    if v_first:
        v = _ref().INIT_STD * rng.standard_normal(d)
        Q = _ref().Q_INIT_DIAG * np.eye(D) + _ref().INIT_STD * rng.standard_normal((D, D))
    else:
        Q = _ref().Q_INIT_DIAG * np.eye(D) + _ref().INIT_STD * rng.standard_normal((D, D))
        v = _ref().INIT_STD * rng.standard_normal(d)

    def grads(Q, v):
        A = _softmax(Q, 1)
        U = X @ v
        H = U @ A.T
        m = y * (H ** p + a * H).sum(axis=1)
        g = -y * np.exp(-np.logaddexp(0.0, m)) / N
        G = g[:, None] * (p * H ** (p - 1) + a)
        gA = G.T @ U
        gQ = A * (gA - (A * gA).sum(axis=1, keepdims=True)) if jacobian else gA
        dU = G @ A.T if transpose_du else G @ A          # H = U @ A.T, so dL/dU = G @ A
        return gQ, np.einsum("nj,njd->d", dU, X)

    for _ in range(int(steps)):
        gQ, gv = grads(Q, v)
        Q = Q - lr * gQ
        if not together:
            gv = grads(Q, v)[1]
        v = v - lr * gv
    return Q, v


@mistake(F_TRAIN, "no_softmax_jacobian",
         "Your (Q, v) match updating Q with dL/dA itself. Q reaches the loss through the row "
         "softmax: dL/dQ[i, j] = A[i, j] * (dL/dA[i, j] - sum_k A[i, k] * dL/dA[i, k]).")
def _no_jacobian(X, y, steps, lr, seed):
    return _train_variant(X, y, steps, lr, seed, jacobian=False)


@mistake(F_TRAIN, "score_gradient_transposed",
         "Your (Q, v) match dL/dU = G @ A.T, with G = dL/dH. The forward pass is H = U @ A.T, "
         "so the gradient flows back as dL/dU = G @ A (U[n, j] = <X[n, j], v> feeds every "
         "H[n, i] with weight A[i, j]).")
def _transposed_du(X, y, steps, lr, seed):
    return _train_variant(X, y, steps, lr, seed, transpose_du=True)


@mistake(F_TRAIN, "sequential_updates",
         "Your (Q, v) match updating Q first and then taking v's gradient at the new Q. Take "
         "both gradients at the same point, then update both.")
def _sequential(X, y, steps, lr, seed):
    return _train_variant(X, y, steps, lr, seed, together=False)


@mistake(F_TRAIN, "init_drawn_in_other_order",
         "Your (Q, v) match drawing v0 before the noise of Q0. Draw Q0's noise first "
         "(rng.standard_normal((D, D))), then v0 (rng.standard_normal(d)).")
def _v_first(X, y, steps, lr, seed):
    return _train_variant(X, y, steps, lr, seed, v_first=True)


def _probe_task(seed, N, groups, d):
    """A small task drawn as make_patch_data draws it (its recipe, written out here): the
    signal group carries y * w, the other patches -w, 0 or w, plus noise of std 1/sqrt(d)."""
    rng = np.random.default_rng(seed)
    w = rng.standard_normal(d)
    w /= np.linalg.norm(w)
    gid = np.empty(sum(len(g) for g in groups), dtype=int)
    for g, members in enumerate(groups):
        gid[members] = g
    y = rng.choice(np.array([-1.0, 1.0]), size=N)
    signal = rng.integers(len(groups), size=N)
    delta = rng.choice(np.array([-1.0, 0.0, 1.0]), p=[Q_NOISE / 2, 1 - Q_NOISE, Q_NOISE / 2],
                       size=(N, len(gid)))
    coef = np.where(gid[None, :] == signal[:, None], y[:, None], delta)
    return coef[:, :, None] * w + rng.normal(0.0, 1.0 / np.sqrt(d), size=(N, len(gid), d)), y


# A matched mistake must match again on this: 30 steps (lr 0.5) on 30 samples of D = 4 patches
# (groups {0, 2} and {1, 3}) of dimension 5, from seed 3. Every mistake moves (Q, v) by more
# than 1e4 times the test's tolerance there, and the run is far from diverging (a change of
# 1e-13 in X moves the result by less than 1e-5 of the tolerance).
TRAIN_PROBES = probes(F_TRAIN, (*_probe_task(91, 30, [[0, 2], [1, 3]], 5), 30, 0.5, 3))


# -- inputs -----------------------------------------------------------------------------------

@cached_input
def _model_inputs(seed, N, D, d, q_scale=1.0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((N, D, d)), q_scale * rng.standard_normal((D, D)),
            rng.standard_normal(d))


def _random_partition(rng, D, sizes):
    perm = rng.permutation(D)
    return [sorted(int(i) for i in g) for g in np.split(perm, np.cumsum(sizes)[:-1])]


HAND_A = np.array([[0.50, 0.10, 0.20, 0.15, 0.05],
                   [0.30, 0.20, 0.25, 0.10, 0.15],
                   [0.10, 0.30, 0.30, 0.20, 0.10],
                   [0.40, 0.10, 0.10, 0.30, 0.10],
                   [0.20, 0.20, 0.20, 0.20, 0.20]])
HAND_GROUPS = [[0, 3], [1, 2, 4]]   # association 103/150 = 0.68667; 0.5 without the diagonal


@cached_input
def _task(seed, sizes):
    """The grader's task: groups at random positions, a unit feature w, train and test sets
    (built once per grading process: the reference's make_patch_data took 190 ms a
    submission)."""
    rng = np.random.default_rng(seed)
    groups = _random_partition(rng, sum(sizes), sizes)
    w = rng.standard_normal(D_FEATURE)
    w /= np.linalg.norm(w)
    X, y = _ref().make_patch_data(N_TRAIN, groups, w, Q_NOISE, rng)
    Xt, yt = _ref().make_patch_data(N_TEST, groups, w, Q_NOISE, rng)
    return groups, X, y, Xt, yt


# -- forward ----------------------------------------------------------------------------------

@graded(1, "A = softmax(Q) row by row; every patch's score is <X[n, j], v>; then mix the scores "
           "with A and sum sigma over the patches.", visibility="public",
        hint_for=("values", "shape"))
def test_forward_small(check):
    """4 samples, D=3 patches of dimension 2, random Q and v."""
    check.call(F_FWD, *_model_inputs(0, 4, 3, 2))


@graded(1, "Which index of A is the query patch and which the key? Row i mixes the scores of "
           "all patches j for patch i.",
        hint_for=("values",))
def test_forward_asymmetric_q(check):
    """An asymmetric Q with large entries (D=5, d=7), where rows and columns differ a lot."""
    X, Q, v = _model_inputs(1, 6, 5, 7, q_scale=3.0)
    check.call(F_FWD, X, Q, v)


@graded(1, "exp(1000) overflows: subtract each row's maximum before exponentiating.",
        hint_for=("nan", "inf"))
def test_forward_large_logits(check):
    """Q with entries in the thousands: the softmax must be computed stably."""
    X, Q, v = _model_inputs(2, 5, 4, 3)
    check.call(F_FWD, X, 1000.0 * Q, v)


@graded(1, "With one patch the attention is [[1.0]]: the logit is sigma(<x, v>).",
        hint_for=("values", "shape", "raised"))
def test_forward_one_patch(check):
    """D=1, a single sample: A = [[1]]."""
    check.call(F_FWD, *_model_inputs(3, 1, 1, 5))


@graded(1, "Use matrix products over the whole batch (X @ v, then one product with A.T) rather "
           "than Python loops over samples and patches.",
        hint_for=("timeout",))
def test_forward_large(check):
    """A large batch: N=3000 samples, D=16 patches, d=64."""
    check.call(F_FWD, *_model_inputs(4, 3000, 16, 64), timed=True)


@graded(1, "Check the shapes first: X is (N, D, d), Q is (D, D), v is (d,).",
        hint_for=("not_raised", "wrong_exception"))
def test_forward_invalid_shapes(check):
    """Mismatched shapes raise ValueError; the matching shapes give the right logits."""
    X, Q, v = _model_inputs(5, 3, 4, 2)
    check.raises("ValueError", F_FWD, X[0], Q, v)
    check.raises("ValueError", F_FWD, X, Q[:3], v)
    check.raises("ValueError", F_FWD, X, Q[:, :3], v)
    check.raises("ValueError", F_FWD, X, Q, np.ones(3))
    check.call(F_FWD, X, Q, v)


# -- patch association ------------------------------------------------------------------------

@graded(1, "For each row take as many largest entries as the patch's group has members, and "
           "count how many of them are group-mates.", visibility="public",
        hint_for=("values",))
def test_association_hand_made(check):
    """A hand-made 5x5 matrix with groups {0, 3} and {1, 2, 4} (answer 0.68667)."""
    check.call(F_ASSOC, HAND_A, HAND_GROUPS)


@graded(1, "Leave the diagonal out and look for the s - 1 group-mates among the other entries.",
        hint_for=("values",))
def test_association_hand_made_without_self(check):
    """The same matrix with exclude_self=True (answer 0.5)."""
    check.call(F_ASSOC, HAND_A, HAND_GROUPS, exclude_self=True)


@graded(1, "When entries tie at the cut-off, share the remaining slots among the tied entries: "
           "the expected count under a random tie-break.",
        hint_for=("values",))
def test_association_uniform_is_chance(check):
    """Uniform attention scores the chance level: s/D with the diagonal, (s-1)/(D-1) without."""
    A = np.full((10, 10), 0.1)
    groups = [[0, 1, 2], [3, 4], [5, 6, 7], [8, 9]]
    check.call(F_ASSOC, A, groups)
    check.call(F_ASSOC, A, groups, exclude_self=True)


@graded(1, "At the initialisation Q0 = 3*I every off-diagonal entry of a row is tied: only "
           "patch i itself stands out.",
        hint_for=("values",))
def test_association_at_initialisation(check):
    """softmax(3*I) with groups at scattered positions: only the diagonal is informative."""
    D = 10
    A = _softmax(3.0 * np.eye(D), 1)
    groups = [[0, 4, 7], [1, 9], [2, 5, 8], [3, 6]]
    check.call(F_ASSOC, A, groups)
    check.call(F_ASSOC, A, groups, exclude_self=True)


@graded(1, "Only the order within each row matters, so the logits Q give the same answer as "
           "softmax(Q). Groups may sit anywhere and have different sizes.",
        hint_for=("values",))
def test_association_random_logits(check):
    """Random logits (negative entries too), D=12, groups of sizes 4, 3, 3, 2 at random places;
    the same logits moved below 0, without the diagonal."""
    rng = np.random.default_rng(6)
    groups = _random_partition(rng, 12, [4, 3, 3, 2])
    Q = rng.standard_normal((12, 12))
    check.call(F_ASSOC, Q, groups)
    check.call(F_ASSOC, Q, groups, exclude_self=True)
    check.call(F_ASSOC, Q - (Q.max() + 1.0), groups, exclude_self=True)


@graded(1, "A patch alone in its group has s = 1 (only itself) with the diagonal, and nothing to "
           "find without it: skip it then.",
        hint_for=("values", "nan", "raised"))
def test_association_singletons(check):
    """Groups of one next to larger groups, with and without the diagonal."""
    rng = np.random.default_rng(7)
    groups = [[0], [1, 2, 3], [4], [5, 6]]
    A = rng.random((7, 7))
    check.call(F_ASSOC, A, groups)
    check.call(F_ASSOC, A, groups, exclude_self=True)


@graded(1, "Sort every row at once (np.sort on axis 1) and build the group-mate mask by "
           "broadcasting, instead of looping over rows in Python.",
        hint_for=("timeout",))
def test_association_large(check):
    """D=800 patches in 200 groups of 4, random weights with a bonus inside each group."""
    A, groups = _large_association()
    check.call(F_ASSOC, A, groups, exclude_self=True, timed=True)


@cached_input(shared=False)  # (a learner's file may write to its inputs: copies of its own)
def _large_association():
    """``(A, groups)`` of test_association_large."""
    rng = np.random.default_rng(8)
    groups = _random_partition(rng, 800, [4] * 200)
    gid = _group_ids(groups)
    return rng.random((800, 800)) + 0.6 * (gid[:, None] == gid[None, :]), groups


@graded(1, "Validate that A is square and finite and that the groups cover 0..D-1 exactly once.",
        hint_for=("not_raised", "wrong_exception"))
def test_association_invalid(check):
    """Non-square A, non-finite A, and groups that are not a partition raise ValueError; a
    valid A and partition give the right association."""
    A = np.full((4, 4), 0.25)
    check.raises("ValueError", F_ASSOC, A[:3], [[0, 1], [2]])
    bad = A.copy()
    bad[0, 1] = np.nan
    check.raises("ValueError", F_ASSOC, bad, [[0, 1], [2, 3]])
    check.raises("ValueError", F_ASSOC, A, [[0, 1], [2]])            # 3 missing
    check.raises("ValueError", F_ASSOC, A, [[0, 1], [1, 2, 3]])      # 1 twice
    check.raises("ValueError", F_ASSOC, A, [[0, 1], [2, 3, 4]])      # 4 out of range
    check.raises("ValueError", F_ASSOC, A, [[0, 1], [], [2, 3]])     # empty group
    check.raises("ValueError", F_ASSOC, A, [[0], [1], [2], [3]], exclude_self=True)
    rng = np.random.default_rng(9)
    check.call(F_ASSOC, rng.random((4, 4)), [[0, 2], [1, 3]])


# -- training ---------------------------------------------------------------------------------

def _trained(check, learner, X, y, steps, lr, seed):
    out = learner.train_positional_attention(X, y, steps, lr, seed)
    N, D, d = X.shape
    check.that(isinstance(out, (tuple, list)) and len(out) == 2,
               f"train_positional_attention must return a pair (Q, v), got {type(out).__name__}",
               kind="type")
    Q, v = (check.array(a, f"train_positional_attention's {name}")
            for a, name in zip(out, "Qv"))
    check.that(Q.shape == (D, D) and v.shape == (d,),
               f"expected Q of shape {(D, D)} and v of shape {(d,)}, got {Q.shape} and {v.shape}",
               kind="shape")
    check.that(bool(np.isfinite(Q).all() and np.isfinite(v).all()),
               "the trained Q or v contains NaN or inf: training diverged. Use the mean loss "
               "(not the sum), a stable log(1 + exp(-m)), and the learning rate you are given.",
               kind="nan")
    return Q, v


def _accuracy(X, y, Q, v):
    return float(np.mean(np.sign(_ref().positional_attention_forward(X, Q, v)) == y))


def _grade_training(check, learner, seed, sizes):
    groups, X, y, Xt, yt = _task(seed, sizes)
    Q, v = _trained(check, learner, X, y, STEPS, LR, seed)
    acc = _accuracy(Xt, yt, Q, v)
    assoc = _ref().patch_association(_softmax(Q, 1), groups, exclude_self=True)
    D = sum(sizes)
    chance = np.mean([(s - 1) / (D - 1) for s in sizes for _ in range(s) if s > 1])
    seen = (f"held-out accuracy {acc:.3f} (at least {ACC_MIN}; the reference about 0.93), "
            f"patch association without the diagonal {assoc:.3f} (at least {ASSOC_MIN}; chance "
            f"{chance:.3f}, the reference 1.0)")
    if acc >= ACC_MIN and assoc >= ASSOC_MIN:
        return
    if acc < ACC_MIN and np.linalg.norm(v) < 0.05:
        why = ("v has barely moved from its initialisation: with v0 this small, x**p has almost "
               "no gradient, and the linear term a*x must start the learning")
    elif assoc < ASSOC_MIN:
        why = ("the attention did not learn the groups. Is Q updated every step with the "
               "gradient through the row softmax, and does it start at 3*I?")
    else:
        why = ("the attention found the groups but the model does not generalise: check the "
               "gradient of v (sign, mean over samples, the chain rule through sigma and A)")
    check.that(False, f"{seen}: {why}")


@graded(1, "With steps=0 nothing is trained: return the documented initialisation.",
        visibility="public",
        hint_for=("values", "shape", "type"))
def test_training_zero_steps_is_the_init(check, learner):
    """steps=0 returns Q0 = 3*I + tiny noise and a tiny v0, with the right shapes: the noise
    drawn from default_rng(seed) as documented (Q's first, then v's)."""
    groups, X, y, _, _ = _task(11, (3, 2, 3, 2))
    args = (X[:50], y[:50], 0, LR, 11)
    Q, v = _trained(check, learner, *args)
    err = float(np.abs(Q - _ref().Q_INIT_DIAG * np.eye(Q.shape[0])).max())
    check.that(err <= 0.01, f"Q0 should be {_ref().Q_INIT_DIAG}*I plus noise of standard "
                            f"deviation 1e-3, but it is {err:.3g} away from it")
    check.that(float(np.abs(v).max()) <= 0.01,
               f"v0 should be noise of standard deviation 1e-3, but max|v0| = "
               f"{float(np.abs(v).max()):.3g}")
    check.equal(_flat((Q, v)), _flat(_ref().train_positional_attention(*args)),
                confirms="train_positional_attention", rtol=0.0,
                atol=1e-12, what="Q0 and v0 (flattened: Q row by row, then v)")


@graded(1, "Draw the initialisation from np.random.default_rng(seed) and nothing else random: "
           "the same arguments must give the same (Q, v).", timeout=30,
        hint_for=("values",))
def test_training_is_deterministic(check, learner):
    """Two runs with the same seed (30 steps) return the same Q and v; a run with another seed
    starts, and so ends, elsewhere."""
    _, X, y, _, _ = _task(12, (3, 2, 3, 2))
    first = _trained(check, learner, X[:400], y[:400], 30, LR, 5)
    second = _trained(check, learner, X[:400], y[:400], 30, LR, 5)
    check.equal(second[0], first[0], rtol=0.0, atol=0.0, what="Q from the second run")
    check.equal(second[1], first[1], rtol=0.0, atol=0.0, what="v from the second run")
    other = _trained(check, learner, X[:400], y[:400], 30, LR, 6)
    check.that(not np.array_equal(_flat(other), _flat(first)),
               "seeds 5 and 6 gave the same (Q, v): the initialisation must be drawn from "
               "np.random.default_rng(seed)")


@graded(2, "From the seeded initialisation, gradient descent is deterministic: compare your "
           "gradients with finite differences on a tiny problem.", timeout=30,
        hint_for=("values",))
def test_training_first_steps_exact(check, learner):
    """50 steps from seed 7 on 300 samples match exact gradient descent (rtol 1e-6), and 20
    steps from seed 8 at a quarter of the learning rate on 100 samples too."""
    _, X, y, _, _ = _task(14, (3, 2, 3, 2))
    for args in ((X[:300], y[:300], 50, LR, 7), (X[:100], y[:100], 20, LR / 4, 8)):
        Q, v = _trained(check, learner, *args)
        check.equal((Q, v), _ref().train_positional_attention(*args),
                    confirms="train_positional_attention", rtol=1e-6, atol=1e-9,
                    what=f"(Q, v) after {args[2]} steps at lr = {args[3]:g} (item 0: Q, item "
                         "1: v)", mistake_call=(F_TRAIN, args, {}))


@graded(3, "Full-batch gradient descent on the mean logistic loss, both Q and v from the same "
           "point each step. The model must generalise and its attention must single out each "
           "patch's group.", timeout=60,
        hint_for=("values", "nan"))
def test_training_learns_the_groups(check, learner):
    """D=10 patches in groups of 3, 2, 3, 2 at random positions, d=20, 2000 samples, 2000 steps:
    held-out accuracy >= 0.90 and association (diagonal excluded) >= 0.75."""
    _grade_training(check, learner, 20221013, (3, 2, 3, 2))


@graded(2, "Nothing in training may assume D = 10 or a group layout: the same code must find "
           "other groups.", timeout=60,
        hint_for=("values",))
def test_training_other_layout(check, learner):
    """D=12 patches in four groups of 3 at random positions: the same thresholds."""
    _grade_training(check, learner, 2210, (3, 3, 3, 3))


@graded(1, "Validate X, y, steps and lr before training.",
        hint_for=("not_raised", "wrong_exception"))
def test_training_invalid(check):
    """A 2-D X, labels other than -1/+1, a wrong-length y, negative steps, lr <= 0 raise
    ValueError; valid arguments train as gradient descent does."""
    _, X, y, _, _ = _task(13, (3, 2, 3, 2))
    X, y = X[:20], y[:20]
    check.raises("ValueError", F_TRAIN, X[:, 0], y, 10, LR, 0)
    check.raises("ValueError", F_TRAIN, X, (y + 1) / 2, 10, LR, 0)
    check.raises("ValueError", F_TRAIN, X, y[:10], 10, LR, 0)
    check.raises("ValueError", F_TRAIN, X, y, -1, LR, 0)
    check.raises("ValueError", F_TRAIN, X, y, 10, 0.0, 0)
    check.call(F_TRAIN, X, y, 10, LR, 0, rtol=1e-6, atol=1e-9)
