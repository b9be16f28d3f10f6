"""Reference solution: which circular shifts a layer commutes with, measured and on the grid."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

ImageMap = Callable[[np.ndarray], np.ndarray]


def _as_pair(shift: int | tuple[int, int]) -> tuple[int, int]:
    """``d -> (0, d)`` (a horizontal shift); ``(dr, dc) -> (dr, dc)``."""
    if isinstance(shift, (int, np.integer)):
        return 0, int(shift)
    pair = tuple(shift)
    if len(pair) != 2 or not all(isinstance(s, (int, np.integer)) for s in pair):
        raise ValueError(f"shift must be an int or a pair of ints (dr, dc), got {shift!r}")
    return int(pair[0]), int(pair[1])


def _feature_map(f: ImageMap, x: np.ndarray) -> np.ndarray:
    out = np.asarray(f(x), dtype=np.float64)
    if out.ndim != 3:
        raise ValueError(f"f must return a (C', H', W') feature map, got shape {out.shape}")
    return out


def _min_error_over_shifts(shifted: np.ndarray, base: np.ndarray) -> float:
    """``min over (u, v)`` of ``max|shifted - roll(base, (u, v))|``, every output shift.

    One vectorised comparison per candidate shift: on maps of this size a loop of ``np.roll``
    beats building all ``H'W'`` rolled copies at once (that array does not fit in cache).
    """
    _, h, w = base.shape
    return min(float(np.abs(shifted - np.roll(base, (u, v), axis=(1, 2))).max())
               for u in range(h) for v in range(w))


def _check_args(x: np.ndarray, stride: int) -> np.ndarray:
    if int(stride) != stride or stride < 1:
        raise ValueError(f"stride must be a positive integer, got {stride!r}")
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 3:
        raise ValueError(f"x must be a (C, H, W) array, got shape {x.shape}")
    return x


def _relative_error(f: ImageMap, x: np.ndarray, base: np.ndarray, dr: int, dc: int,
                    stride: int) -> float:
    """The error of ``f`` at the shift ``(dr, dc)``, given ``base = f(x)``."""
    shifted = _feature_map(f, np.roll(x, (dr, dc), axis=(1, 2)))
    if shifted.shape != base.shape:
        raise ValueError(f"f changed its output shape under the shift: {base.shape} -> "
                         f"{shifted.shape}")
    if base.size == 0:
        return 0.0
    scale = float(np.abs(base).max())
    scale = scale if scale > 0 else 1.0
    if dr % stride == 0 and dc % stride == 0:
        expected = np.roll(base, (dr // stride, dc // stride), axis=(1, 2))
        err = float(np.abs(shifted - expected).max())
    else:
        err = _min_error_over_shifts(shifted, base)
    return err / scale


def equivariance_error(f: ImageMap, x: np.ndarray, shift: int | tuple[int, int],
                       stride: int = 1) -> float:
    """Relative error of ``f`` commuting with the circular shift ``shift`` of ``x`` ``(C, H, W)``.

    When ``stride`` divides ``dr`` and ``dc``: ``max|f(roll(x)) - roll(f(x), (dr/s, dc/s))|``
    over ``max|f(x)|``; otherwise the smallest such error over every output shift. The
    denominator is 1 when ``f(x)`` is all zeros.
    """
    x = _check_args(x, stride)
    dr, dc = _as_pair(shift)
    return _relative_error(f, x, _feature_map(f, x), dr, dc, int(stride))


def which_shifts_commute(f: ImageMap, x: np.ndarray, stride: int = 1,
                         tol: float = 1e-8) -> list[int]:
    """The sorted horizontal shifts ``d`` in ``0..W-1`` with ``equivariance_error <= tol``."""
    x = _check_args(x, stride)
    base = _feature_map(f, x)                                   # f(x) once for every shift
    return [d for d in range(x.shape[2])
            if _relative_error(f, x, base, 0, d, int(stride)) <= tol]


def patch_shift_permutation(H_p: int, W_p: int, dr: int, dc: int) -> np.ndarray:
    """The ``(N_p, N_p)`` int64 0/1 matrix Π with ``Π[new, old] = 1``, ``N_p = H_p*W_p``.

    Grid cell ``(r, c)`` (token ``r*W_p + c``) moves to ``((r+dr) mod H_p, (c+dc) mod W_p)``,
    so that ``PE(roll(x, (dr*P, dc*P))) == Π @ PE(x)`` for a patch embedding of patch ``P``.
    """
    if H_p < 1 or W_p < 1:
        raise ValueError(f"the grid must have at least one row and column, got {H_p}x{W_p}")
    old = np.arange(H_p * W_p)
    r, c = old // W_p, old % W_p
    new = ((r + dr) % H_p) * W_p + (c + dc) % W_p
    perm = np.zeros((H_p * W_p, H_p * W_p), dtype=np.int64)
    perm[new, old] = 1
    return perm
