"""Reference solution: positional attention (a reconstruction of Jelassi, Sander & Li, 2022).

The attention matrix depends on positions only, ``A = softmax(Q, axis=1)``; the model is
``F(X) = sum_i sigma((A @ (X @ v))_i)`` with ``sigma(x) = x**POWER + LINEAR*x``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

POWER = 3          # p: the odd power of the activation
LINEAR = 0.03      # a: the slope of its linear term
Q_INIT_DIAG = 3.0  # Q0 = Q_INIT_DIAG * I + noise
INIT_STD = 1e-3    # standard deviation of the noise in Q0 and of v0


def _softmax_rows(Q: np.ndarray) -> np.ndarray:
    Z = Q - Q.max(axis=1, keepdims=True)
    E = np.exp(Z)
    return E / E.sum(axis=1, keepdims=True)


def _check_model(X: np.ndarray, Q: np.ndarray, v: np.ndarray) -> None:
    if X.ndim != 3:
        raise ValueError(f"X must have shape (N, D, d), got {X.shape}")
    _, D, d = X.shape
    if Q.shape != (D, D):
        raise ValueError(f"Q must have shape ({D}, {D}) for X of shape {X.shape}, got {Q.shape}")
    if v.shape != (d,):
        raise ValueError(f"v must have shape ({d},) for X of shape {X.shape}, got {v.shape}")


def positional_attention_forward(X: np.ndarray, Q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Logits ``(N,)``: ``sum_i sigma(H[n, i])`` with ``H[n] = softmax(Q, axis=1) @ (X[n] @ v)``."""
    X, Q, v = (np.asarray(a, dtype=np.float64) for a in (X, Q, v))
    _check_model(X, Q, v)
    H = (X @ v) @ _softmax_rows(Q).T          # (N, D): H[n, i] = sum_j A[i, j] <X[n, j], v>
    return (H ** POWER + LINEAR * H).sum(axis=1)


def _group_ids(groups: Sequence[Sequence[int]], D: int) -> np.ndarray:
    gid = np.full(D, -1)
    for g, members in enumerate(groups):
        members = [int(i) for i in members]
        if not members:
            raise ValueError(f"group {g} is empty")
        for i in members:
            if not 0 <= i < D:
                raise ValueError(f"patch index {i} in group {g} is outside 0..{D - 1}")
            if gid[i] != -1:
                raise ValueError(f"patch {i} is in more than one group")
            gid[i] = g
    if (gid == -1).any():
        raise ValueError(f"patches {np.flatnonzero(gid == -1).tolist()} are in no group: the "
                         "groups must partition 0..D-1")
    return gid


def patch_association(A: np.ndarray, groups: Sequence[Sequence[int]],
                      exclude_self: bool = False) -> float:
    """Average over patches of the share of row i's ``s`` largest entries inside i's group.

    ``s`` is the size of i's group (``s - 1`` with ``exclude_self``, where entry ``(i, i)`` is
    left out and patches alone in their group are skipped). Ties at the threshold get
    fractional credit: the expected share under a uniformly random tie-break.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise ValueError(f"A must be a non-empty square matrix, got shape {A.shape}")
    if not np.isfinite(A).all():
        raise ValueError("A must be finite")
    D = A.shape[0]
    gid = _group_ids(groups, D)
    same = gid[:, None] == gid[None, :]                  # (D, D): j is in i's group
    k = same.sum(axis=1)                                 # group size of each patch
    scores = A.copy()
    if exclude_self:
        k = k - 1
        same[np.arange(D), np.arange(D)] = False
        scores[np.arange(D), np.arange(D)] = -np.inf     # never among the top entries
    keep = k > 0
    if not keep.any():
        raise ValueError("no patch has another patch in its group")
    ordered = -np.sort(-scores, axis=1)                  # each row in decreasing order
    thresh = ordered[np.arange(D), np.maximum(k, 1) - 1][:, None]   # the k-th largest
    above = scores > thresh
    tied = scores == thresh
    free = k - above.sum(axis=1)                         # top slots left for the tied entries
    credit = (same & above).sum(axis=1) + free * (same & tied).sum(axis=1) / tied.sum(axis=1)
    return float(np.mean(credit[keep] / k[keep]))


def make_patch_data(n: int, groups: Sequence[Sequence[int]], w: np.ndarray, q: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``(X, y)``: ``X`` is ``(n, D, d)``, ``y`` in {-1, +1}; see the statement."""
    w = np.asarray(w, dtype=np.float64)
    D, d = sum(len(g) for g in groups), w.shape[0]
    gid = _group_ids(groups, D)
    y = rng.choice(np.array([-1.0, 1.0]), size=n)
    signal = rng.integers(len(groups), size=n)           # the signal group of each sample
    delta = rng.choice(np.array([-1.0, 0.0, 1.0]), p=[q / 2, 1 - q, q / 2], size=(n, D))
    coef = np.where(gid[None, :] == signal[:, None], y[:, None], delta)
    X = coef[:, :, None] * w + rng.normal(0.0, 1.0 / np.sqrt(d), size=(n, D, d))
    return X, y


def _train(X: np.ndarray, y: np.ndarray, steps: int, lr: float, seed: int, *,
           Q0: np.ndarray | None = None, learn_q: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Full-batch gradient descent on the mean logistic loss (``Q0``/``learn_q`` for studies)."""
    N, D, d = X.shape
    rows = X.reshape(N * D, d)                           # every patch of every sample
    rng = np.random.default_rng(seed)
    noise = INIT_STD * rng.standard_normal((D, D))
    v = INIT_STD * rng.standard_normal(d)
    Q = Q_INIT_DIAG * np.eye(D) + noise if Q0 is None else np.array(Q0, dtype=np.float64)
    for _ in range(steps):
        A = _softmax_rows(Q)
        U = (rows @ v).reshape(N, D)                     # patch scores U[n, j] = <X[n, j], v>
        H = U @ A.T                                      # (N, D) attention outputs
        margin = y * (H ** POWER + LINEAR * H).sum(axis=1)
        g = -y * np.exp(-np.logaddexp(0.0, margin)) / N  # dLoss/dF: -y * sigmoid(-margin) / N
        G = g[:, None] * (POWER * H ** (POWER - 1) + LINEAR)   # dLoss/dH
        grad_v = (G @ A).reshape(-1) @ rows              # dLoss/dU = G @ A, and U = X @ v
        if learn_q:
            gA = G.T @ U                                 # dLoss/dA
            Q = Q - lr * A * (gA - (A * gA).sum(axis=1, keepdims=True))   # softmax backward
        v = v - lr * grad_v
    return Q, v


def train_positional_attention(X: np.ndarray, y: np.ndarray, steps: int, lr: float,
                               seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Train ``(Q, v)`` from the documented initialisation by full-batch gradient descent."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 3 or X.shape[0] == 0:
        raise ValueError(f"X must have shape (N, D, d) with N >= 1, got {X.shape}")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), got {y.shape}")
    if not np.isin(y, (-1.0, 1.0)).all():
        raise ValueError("labels y must be -1 or +1")
    if int(steps) != steps or steps < 0:
        raise ValueError(f"steps must be a non-negative integer, got {steps}")
    if not lr > 0:
        raise ValueError(f"lr must be positive, got {lr}")
    return _train(X, y, int(steps), float(lr), seed)
