"""Exercise: positional_attention — attention from positions alone learns which patches belong
together (a reconstruction of Jelassi, Sander & Li, 2022).

Read positional_attention.md, then replace the bodies below that raise NotImplementedError.
``make_patch_data`` is provided, to make data for your own experiments.
Grade with: grade positional_attention
"""

import numpy as np

POWER = 3          # p: sigma(x) = x**POWER + LINEAR * x
LINEAR = 0.03      # a
Q_INIT_DIAG = 3.0  # Q0 = Q_INIT_DIAG * I + N(0, INIT_STD**2) noise
INIT_STD = 1e-3    # v0 ~ N(0, INIT_STD**2 I)


def positional_attention_forward(X, Q, v):
    """The model's logits.

    ``X``: ``(N, D, d)``, N samples of D patches of dimension d. ``Q``: ``(D, D)`` attention
    logits (positions only). ``v``: ``(d,)``.

    ``A = softmax(Q, axis=1)`` (each row sums to 1; subtract the row max first),
    ``H[n, i] = sum_j A[i, j] * <X[n, j], v>``, and the logit of sample n is
    ``sum_i sigma(H[n, i])`` with ``sigma(x) = x**POWER + LINEAR*x``.
    Returns a float64 array of shape ``(N,)``.

    Raises ``ValueError`` unless X is 3-D, Q is ``(D, D)`` and v is ``(d,)``.
    """
    raise NotImplementedError


def patch_association(A, groups, exclude_self=False):
    """How much each patch attends to its own group, as a float in [0, 1].

    ``A``: a finite ``(D, D)`` real matrix (attention weights, or logits: only the order of
    each row matters). ``groups``: a list of lists of patch indices, a partition of 0..D-1.

    For patch i in a group of size s: take the s largest entries of row i and count the
    fraction that lie in i's group (i itself counts). With ``exclude_self=True``, entry (i, i)
    is left out, the s - 1 largest of the other entries are taken, and patches alone in their
    group are skipped. Ties at the cut-off get fractional credit: the expected fraction when
    the tie is broken uniformly at random (a row of equal entries scores s/D, the chance level).
    Returns the average over patches.

    Raises ``ValueError`` if A is not square and finite, if ``groups`` is not a partition of
    0..D-1 (an index out of range, repeated, missing, or an empty group), or if
    ``exclude_self`` leaves no patch to average over.
    """
    raise NotImplementedError


def train_positional_attention(X, y, steps, lr, seed):
    """Train ``(Q, v)`` by full-batch gradient descent; return them as ``(Q, v)``.

    ``X``: ``(N, D, d)``; ``y``: ``(N,)`` labels in {-1, +1}. Initialise with
    ``rng = np.random.default_rng(seed)``, in this order:
    ``Q0 = Q_INIT_DIAG * np.eye(D) + INIT_STD * rng.standard_normal((D, D))``, then
    ``v0 = INIT_STD * rng.standard_normal(d)``. Then take exactly ``steps`` steps
    ``Q -= lr * dL/dQ``, ``v -= lr * dL/dv``, both gradients taken at the same point, on the
    mean logistic loss ``L = mean_n log(1 + exp(-y[n] * F(X[n])))``, F being
    ``positional_attention_forward``. Same arguments, same result.

    Returns ``Q`` of shape ``(D, D)`` and ``v`` of shape ``(d,)``, float64.

    Raises ``ValueError`` if X is not ``(N, D, d)`` with N >= 1, y is not ``(N,)`` of -1/+1,
    steps is negative or not an integer, or lr <= 0.
    """
    raise NotImplementedError


# Provided: the data of the statement, for your own experiments (the grader uses its own copy).
def make_patch_data(n, groups, w, q, rng):
    """Sample ``(X, y)``: X ``(n, D, d)``, y ``(n,)`` in {-1, +1}; w a unit vector ``(d,)``.

    Each sample draws y and one signal group uniformly; the signal group's patches are
    ``y*w + xi``, every other patch is ``delta*w + xi`` with delta = -1, 0, +1 with
    probabilities q/2, 1-q, q/2, and xi ~ N(0, I/d).
    """
    w = np.asarray(w, dtype=np.float64)
    D, d = sum(len(g) for g in groups), w.shape[0]
    gid = np.empty(D, dtype=int)
    for g, members in enumerate(groups):
        gid[list(members)] = g
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    signal = rng.integers(len(groups), size=n)
    delta = rng.choice(np.array([-1.0, 0.0, 1.0]), p=[q / 2, 1 - q, q / 2], size=(n, D))
    coef = np.where(gid[None, :] == signal[:, None], y[:, None], delta)
    X = coef[:, :, None] * w + rng.normal(0.0, 1.0 / np.sqrt(d), size=(n, D, d))
    return X, y
