"""Reference solution: one attention head per kernel tap computes a convolution as alpha grows."""

from __future__ import annotations

import math

import numpy as np


def _sq_dist_to_targets(n: int, k: int) -> np.ndarray:
    """``D[u, q, j] = d_n(j, q + u - a)**2``: squared circular distance from key ``j`` to the
    target of head ``u`` (offset ``u - a``, ``a = k // 2``) for query ``q``; shape ``(k, n, n)``."""
    a = k // 2
    target = (np.arange(n)[None, :] + np.arange(k)[:, None] - a) % n          # (k, n)
    diff = (np.arange(n)[None, None, :] - target[:, :, None]) % n            # (k, n, n)
    return np.minimum(diff, n - diff) ** 2


def _head_weights(n: int, k: int, alpha: float) -> np.ndarray:
    """``P[u, q, j]``: softmax over keys ``j`` of ``-alpha * D[u, q, j]``, computed stably."""
    scores = -alpha * _sq_dist_to_targets(n, k).astype(np.float64)
    scores -= scores.max(axis=-1, keepdims=True)
    P = np.exp(scores)
    return P / P.sum(axis=-1, keepdims=True)


def _validate(X: np.ndarray, W_conv: np.ndarray, alpha: float) -> int:
    if X.ndim not in (2, 3) or W_conv.ndim != X.ndim + 1:
        raise ValueError(f"expected X (n, C) with W_conv (C_out, C, k), or X (H, W, C) with "
                         f"W_conv (C_out, C, k, k); got X {X.shape} and W_conv {W_conv.shape}")
    if W_conv.shape[1] != X.shape[-1]:
        raise ValueError(f"W_conv has {W_conv.shape[1]} input channels, X has {X.shape[-1]}")
    k = W_conv.shape[2]
    if X.ndim == 3 and W_conv.shape[3] != k:
        raise ValueError(f"the kernel must be square, got {W_conv.shape[2:]}")
    if k % 2 == 0:
        raise ValueError(f"the kernel size must be odd, got {k}")
    if min(X.shape[:-1]) < 1:
        raise ValueError(f"X must have at least one position, got shape {X.shape}")
    if not math.isfinite(alpha) or alpha < 0:
        raise ValueError(f"alpha must be finite and >= 0, got {alpha}")
    return k


def conv_via_attention(X: np.ndarray, W_conv: np.ndarray, alpha: float) -> np.ndarray:
    """Sum over the k (1-D) or k*k (2-D) offset heads of softmax-weighted ``X[j] @ W_delta``.

    1-D: ``X`` (n, C), ``W_conv`` (C_out, C, k) -> (n, C_out).
    2-D: ``X`` (H, W, C), ``W_conv`` (C_out, C, k, k) -> (H, W, C_out).
    """
    X = np.asarray(X, dtype=np.float64)
    W_conv = np.asarray(W_conv, dtype=np.float64)
    k = _validate(X, W_conv, float(alpha))
    if X.ndim == 2:
        P = _head_weights(X.shape[0], k, alpha)                              # (k, n, n)
        Z = np.einsum("uqj,jc->uqc", P, X)                  # head u's weighted inputs
        # times W_delta[c', o] = W_conv[o, c', u], summed over the heads u
        return np.einsum("uqc,ocu->qo", Z, W_conv)
    # 2-D scores -alpha*(d_H**2 + d_W**2) are a sum over the two axes, so each head's softmax
    # over all H*W keys is the product of a softmax over rows and a softmax over columns.
    PH = _head_weights(X.shape[0], k, alpha)                                 # (k, H, H)
    PW = _head_weights(X.shape[1], k, alpha)                                 # (k, W, W)
    Z = np.einsum("uri,ijx->urjx", PH, X)                  # rows mixed by the row softmax
    Z = np.einsum("vcj,urjx->uvrcx", PW, Z)                # then columns: head (u, v) output
    return np.einsum("uvrcx,oxuv->rco", Z, W_conv)         # times W_delta, summed over heads


def rho(alpha: float) -> float:
    """``2 * sum_{z>=1} exp(-alpha * z**2)``, the 1-D off-target attention mass bound."""
    alpha = float(alpha)
    if not alpha > 0:
        raise ValueError(f"rho needs alpha > 0 (the sum diverges otherwise), got {alpha}")
    # terms below exp(-40) (relative 1e-17 of the first) no longer change the sum
    z = np.arange(1, int(math.ceil(math.sqrt(40.0 / alpha))) + 2, dtype=np.float64)
    return float(2.0 * np.exp(-alpha * z**2).sum())
