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
    r, c = np.arange(H_p), np.arange(W_p)
    near_rows = np.abs(r[:, None] - r[None, :]) <= radius  # (H_p, H_p)
    near_cols = np.abs(c[:, None] - c[None, :]) <= radius  # (W_p, W_p)
    # patch r * W_p + c sits at row r, column c: two patches are in each other's square
    # window when their rows are and their columns are, so the (P, P) window is the
    # Kronecker product of the two (no (P, P) array of distances is built)
    near = np.kron(near_rows, near_cols)
    T = n_prefix + H_p * W_p
    mask = np.ones((T, T), dtype=bool)
    mask[n_prefix:, n_prefix:] = near
    return mask
