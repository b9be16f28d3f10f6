"""Reference solution: attention rollout (Abnar & Zuidema 2020), last layer on the left."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def attention_rollout(A_layers: Sequence[np.ndarray], n_prefix: int, H_p: int,
                      W_p: int) -> np.ndarray:
    """Class-token rollout over the patches, shape ``(H_p, W_p)``.

    Per layer: average the heads, ``Â = 0.5*Ā + 0.5*I``, divide each row by its sum; then
    ``R = Â_L @ ... @ Â_1`` and return ``R[0, n_prefix:]`` reshaped to ``(H_p, W_p)``.
    """
    if n_prefix < 1:
        raise ValueError(f"rollout needs a class token: n_prefix must be >= 1, got {n_prefix}")
    layers = list(A_layers)
    if not layers:
        raise ValueError("A_layers is empty: rollout needs at least one layer")
    T = n_prefix + H_p * W_p
    R = np.eye(T)
    for index, A in enumerate(layers):
        A = np.asarray(A, dtype=np.float64)
        if A.ndim == 2:
            A = A[None]
        if A.ndim != 3 or A.shape[1:] != (T, T):
            raise ValueError(f"layer {index} has shape {A.shape}; expected (h, {T}, {T}) with "
                             f"T = n_prefix + H_p*W_p = {T}")
        A_hat = 0.5 * A.mean(axis=0) + 0.5 * np.eye(T)
        A_hat /= A_hat.sum(axis=-1, keepdims=True)
        R = A_hat @ R
    return R[0, n_prefix:].reshape(H_p, W_p)
