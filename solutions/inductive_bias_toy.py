"""Reference solution: a shared 3-tap kernel against a full linear map on a drifting-gain toy."""

from __future__ import annotations

import math

import numpy as np


def _check_rows(X: np.ndarray, Y: np.ndarray, what: str) -> None:
    if X.ndim != 2 or X.shape[1] < 1 or X.shape[0] < 1:
        raise ValueError(f"X must be a non-empty (N, n) array, got shape {X.shape}")
    if Y.shape != X.shape:
        raise ValueError(f"{what} must have the shape of X {X.shape}, got {Y.shape}")


def toy_targets(X: np.ndarray, beta: float, sigma: float, noise: np.ndarray) -> np.ndarray:
    """``Y[:, t] = (1 + beta*cos(2 pi t/n)) * (X[:, t-1] - X[:, t+1]) + sigma*noise[:, t]``,
    circular in ``t``; all arrays ``(N, n)``."""
    X = np.asarray(X, dtype=np.float64)
    noise = np.asarray(noise, dtype=np.float64)
    _check_rows(X, noise, "noise")
    n = X.shape[1]
    gain = 1.0 + beta * np.cos(2 * np.pi * np.arange(n) / n)
    slope = np.roll(X, 1, axis=1) - np.roll(X, -1, axis=1)     # X[:, t-1] - X[:, t+1]
    return gain * slope + sigma * noise


def _taps(X: np.ndarray, k: int) -> np.ndarray:
    """``F[i, t, m] = X[i, (t + m - k//2) mod n]``, shape ``(N, n, k)``."""
    n = X.shape[1]
    idx = (np.arange(n)[:, None] + np.arange(k)[None, :] - k // 2) % n
    return X[:, idx]


def fit_shared_kernel(X: np.ndarray, Y: np.ndarray, k: int = 3) -> np.ndarray:
    """Least-squares ``w`` (k,) for ``Y[:, t] ~ sum_m w[m] X[:, (t + m - k//2) mod n]``, fitted
    on all ``N*n`` equations."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    _check_rows(X, Y, "Y")
    if not 1 <= k <= X.shape[1]:
        raise ValueError(f"k must be between 1 and n = {X.shape[1]}, got {k}")
    A = _taps(X, k).reshape(-1, k)                              # one equation per (row, t)
    return np.linalg.lstsq(A, Y.reshape(-1), rcond=None)[0]


def fit_full_map(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Least-squares ``W`` (n, n) for ``Y ~ X @ W`` (minimum-norm when ``N < n``)."""
    X = np.asarray(X, dtype=np.float64)
    Y = np.asarray(Y, dtype=np.float64)
    _check_rows(X, Y, "Y")
    return np.linalg.lstsq(X, Y, rcond=None)[0]


def predicted_test_errors(N: int, n: int = 32, k: int = 3, sigma: float = 0.5,
                          beta: float = 0.3) -> tuple[float, float]:
    """Per-output test MSE ``(conv, full)`` predicted for ``N`` training rows."""
    if N < 1 or n < 1 or k < 1:
        raise ValueError(f"N, n and k must be >= 1, got N={N}, n={n}, k={k}")
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    s2, b2 = sigma**2, beta**2
    conv = s2 + b2 + (s2 + b2) * k / (N * n)
    full = s2 + s2 * n / (N - n - 1) if N > n + 1 else math.inf
    return float(conv), float(full)


def crossover_rows(n: int = 32, sigma: float = 0.5, beta: float = 0.3) -> float:
    """``N* = n + 1 + sigma**2 n / beta**2``: where the full map's excess meets beta**2."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    if sigma < 0:
        raise ValueError(f"sigma must be >= 0, got {sigma}")
    if beta == 0:
        return math.inf
    return float(n + 1 + sigma**2 * n / beta**2)
