"""Hidden suite: grid_local_mask."""

import numpy as np

from grader.suite import graded, mistake, reference

F = "grid_local_mask"


def _ref():
    return reference(F)


@mistake(F, "inverted_convention",
         "Your mask matches the opposite convention: True where attention is blocked (that is "
         "nn.MultiheadAttention's attn_mask). Here True means 'may attend', as in "
         "scaled_dot_product_attention.")
def _inverted(H_p, W_p, radius, n_prefix=1):
    return ~_ref().grid_local_mask(H_p, W_p, radius, n_prefix)


@mistake(F, "manhattan_window",
         "Your mask matches a diamond window, |dr| + |dc| <= radius. The window here is a "
         "square: max(|dr|, |dc|) <= radius (the Chebyshev distance).")
def _manhattan(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    idx = np.arange(H_p * W_p)
    r, c = idx // W_p, idx % W_p
    mask[n_prefix:, n_prefix:] = (np.abs(r[:, None] - r) + np.abs(c[:, None] - c)) <= radius
    return mask


@mistake(F, "prefix_not_free",
         "Your mask matches one where the prefix tokens are masked like patches. The class "
         "token (and any register) must see every token and be seen by every token: its whole "
         "row and column are True.")
def _prefix_blocked(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    mask[:n_prefix, :] = False
    mask[:, :n_prefix] = False
    mask[np.arange(n_prefix), np.arange(n_prefix)] = True
    return mask


@mistake(F, "flattened_distance",
         "Your mask matches a 1-D sliding window on the flattened token order, |i - j| <= "
         "radius. Grid neighbours one row apart are W_p tokens apart in that order: compare "
         "rows and columns separately.")
def _flat(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    idx = np.arange(H_p * W_p)
    mask[n_prefix:, n_prefix:] = np.abs(idx[:, None] - idx) <= radius
    return mask


@mistake(F, "wraps_around",
         "Your mask matches a window that wraps around the grid's edges (circular distance). "
         "Here there is no wrap-around: the left column is not next to the right one.")
def _wrap(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    idx = np.arange(H_p * W_p)
    r, c = idx // W_p, idx % W_p
    dr = np.abs(r[:, None] - r)
    dc = np.abs(c[:, None] - c)
    dr, dc = np.minimum(dr, H_p - dr), np.minimum(dc, W_p - dc)
    mask[n_prefix:, n_prefix:] = np.maximum(dr, dc) <= radius
    return mask


@graded(1, "Patch (r, c) is token n_prefix + r*W_p + c. Which tokens are within one step?",
        visibility="public")
def test_square_grid_radius_1(check):
    """A 3x3 grid, radius 1, one class token."""
    check.call(F, 3, 3, 1, 1)


@graded(1, "With radius 0 a patch's only neighbour is itself, but prefix tokens stay free.")
def test_radius_0(check):
    """radius=0: each patch sees itself and the prefix tokens."""
    check.call(F, 4, 4, 0, 1)


@graded(1, "Rows and columns are counted separately: a non-square grid has W_p columns, so "
           "patch i sits at row i // W_p and column i % W_p.")
def test_non_square_grid(check):
    """A 2x5 grid (non-square), radius 1."""
    check.call(F, 2, 5, 1, 1)


@graded(1, "All n_prefix prefix tokens come first; patches start at index n_prefix.")
def test_several_prefix_tokens(check):
    """Three prefix tokens (class + two registers) on a 4x3 grid, radius 2."""
    check.call(F, 4, 3, 2, n_prefix=3)


@graded(1, "With n_prefix=0 the mask is the patch block alone, shape (H_p*W_p, H_p*W_p).")
def test_no_prefix(check):
    """n_prefix=0 on a 3x4 grid, radius 1."""
    check.call(F, 3, 4, 1, n_prefix=0)


@graded(1, "A radius at least as large as the grid lets every patch see every patch.")
def test_radius_covers_grid(check):
    """radius larger than the grid: nothing is masked."""
    check.call(F, 2, 3, 5, 1)


@graded(1, "The smallest grid is 1x1: T = n_prefix + 1.")
def test_smallest_grid(check):
    """A 1x1 grid with one class token."""
    check.call(F, 1, 1, 0, 1)


@graded(1, "Validate the arguments first and raise ValueError with a clear message.")
def test_invalid_arguments_raise(check):
    """Negative radius, empty grids and negative n_prefix raise ValueError; radius 0 and
    n_prefix=0, at the edge of the valid range, give the right mask."""
    check.raises("ValueError", F, 3, 3, -1)
    check.raises("ValueError", F, 0, 3, 1)
    check.raises("ValueError", F, 3, 0, 1)
    check.raises("ValueError", F, 3, 3, 1, n_prefix=-1)
    check.call(F, 2, 3, 0, n_prefix=0)


@graded(1, "Use broadcasting over all token pairs instead of Python loops: the 32x32 grid has "
           "over a million pairs.")
def test_large_grid(check):
    """A 32x32 grid (T = 1025), radius 3."""
    check.call(F, 32, 32, 3, 1)
