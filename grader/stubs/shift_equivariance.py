"""Exercise: shift_equivariance — which shifts a convolution and a ViT respect.

Read shift_equivariance.md, then replace the bodies below. Grade with: grade shift_equivariance
"""

import numpy as np


def equivariance_error(f, x, shift, stride=1):
    """How far ``f`` is from commuting with a circular shift of ``x``, relative to ``f(x)``.

    ``x`` is a numpy array ``(C, H, W)`` (PyTorch layout); ``f`` maps such an array to a
    feature map ``(C', H', W')``. ``shift`` is an int ``d`` (horizontal: along ``W``, i.e.
    ``(0, d)``) or a pair ``(dr, dc)``; the shifted input is ``np.roll(x, (dr, dc), axis=(1, 2))``.

    - When ``stride`` divides both ``dr`` and ``dc``: return
      ``max|f(shifted x) - roll(f(x), (dr/stride, dc/stride))| / max|f(x)|``
      (the roll on the output's axes 1 and 2).
    - Otherwise: the smallest such error over every output shift ``(u, v)``,
      ``0 <= u < H'``, ``0 <= v < W'``.
    - When ``f(x)`` is all zeros the denominator is 1.

    Returns a Python float. Raises ``ValueError`` when ``stride < 1``, when ``x`` is not 3-D,
    or when ``shift`` is neither an int nor a pair of ints.
    """
    raise NotImplementedError


def which_shifts_commute(f, x, stride=1, tol=1e-8):
    """The sorted horizontal shifts ``d`` in ``0..W-1`` with
    ``equivariance_error(f, x, d, stride) <= tol``, as a list of ints (``W = x.shape[2]``).
    """
    raise NotImplementedError


def patch_shift_permutation(H_p, W_p, dr, dc):
    """The permutation that a whole-patch circular shift applies to the patch tokens.

    Returns the ``(N_p, N_p)`` int64 array Π of 0s and 1s, ``N_p = H_p * W_p``, with
    ``Π[new, old] = 1`` where grid cell ``(r, c)`` (token ``old = r*W_p + c``, raster order)
    moves to ``((r + dr) mod H_p, (c + dc) mod W_p)``. Then, for a patch embedding ``PE`` with
    patch size ``P`` whose tokens are the rows of an ``(N_p, d)`` matrix,
    ``PE(np.roll(x, (dr*P, dc*P), axis=(1, 2))) == Π @ PE(x)``.

    ``dr`` and ``dc`` may be negative or larger than the grid. Raises ``ValueError`` when
    ``H_p < 1`` or ``W_p < 1``.
    """
    raise NotImplementedError
