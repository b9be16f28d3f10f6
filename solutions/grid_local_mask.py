"""Reference solution: a local attention mask on the patch grid, prefix tokens left free."""

from __future__ import annotations

import numpy as np


def grid_local_mask(H_p: int, W_p: int, radius: int, n_prefix: int = 1) -> np.ndarray:
    """Boolean ``(T, T)`` mask, ``T = n_prefix + H_p*W_p``; True where query i may attend key j."""
    if H_p < 1 or W_p < 1:
        raise ValueError(f"the grid must have at least one row and column, got {H_p}x{W_p}")
    if radius < 0:
        raise ValueError(f"radius must be >= 0, got {radius}")
    if n_prefix < 0:
        raise ValueError(f"n_prefix must be >= 0, got {n_prefix}")
    idx = np.arange(H_p * W_p)
    rows, cols = idx // W_p, idx % W_p
    near = np.maximum(np.abs(rows[:, None] - rows[None, :]),
                      np.abs(cols[:, None] - cols[None, :])) <= radius
    T = n_prefix + H_p * W_p
    mask = np.ones((T, T), dtype=bool)
    mask[n_prefix:, n_prefix:] = near
    return mask
