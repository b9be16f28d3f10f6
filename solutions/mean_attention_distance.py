"""Reference solution: mean attention distance per head (the ViT paper's Figure 7 statistic)."""

from __future__ import annotations

import numpy as np


def mean_attention_distance(A: np.ndarray, H_p: int, W_p: int, P: float,
                            n_prefix: int) -> np.ndarray:
    """Per-head attention-weighted mean distance in pixels, shape ``(h,)``.

    ``A`` is ``(B, h, T, T)`` or ``(h, T, T)``. Patch queries and patch keys only, each query's
    row renormalised over the patch keys; distance ``P * sqrt(dr**2 + dc**2)``; averaged over
    patch queries and images.
    """
    A = np.asarray(A, dtype=np.float64)
    if A.ndim == 3:
        A = A[None]
    if n_prefix < 0:
        raise ValueError(f"n_prefix must be >= 0, got {n_prefix}")
    T = n_prefix + H_p * W_p
    if A.ndim != 4 or A.shape[-2:] != (T, T):
        raise ValueError(f"A has shape {A.shape}; expected (B, h, {T}, {T}) or (h, {T}, {T}) "
                         f"with T = n_prefix + H_p*W_p = {T}")
    patches = A[..., n_prefix:, n_prefix:]
    patches = patches / patches.sum(axis=-1, keepdims=True)
    idx = np.arange(H_p * W_p)
    rows, cols = idx // W_p, idx % W_p
    dist = P * np.sqrt((rows[:, None] - rows[None, :]) ** 2 + (cols[:, None] - cols[None, :]) ** 2)
    per_query = (patches * dist).sum(axis=-1)  # (B, h, N_p)
    return per_query.mean(axis=(0, 2))
