"""Hidden suite: grid_local_mask."""

import numpy as np

from grader.suite import graded, mistake, probes, reference, region

F = "grid_local_mask"


def _ref():
    return reference(F)


def _gaps(H_p, W_p, row_length=None):
    """The row and column gaps |dr|, |dc| between every pair of patches, (N_p, N_p) each, in
    rows of ``row_length`` patches (W_p unless a mistake says otherwise)."""
    n = W_p if row_length is None else row_length
    idx = np.arange(H_p * W_p)
    r, c = idx // n, idx % n
    return np.abs(r[:, None] - r), np.abs(c[:, None] - c)


def _circular_gap(H_p, W_p):
    """The larger of the row and column gaps on a grid that wraps around its edges."""
    dr, dc = _gaps(H_p, W_p)
    return np.maximum(np.minimum(dr, H_p - dr), np.minimum(dc, W_p - dc))


@mistake(F, "inverted_convention",
         "Your mask matches the opposite convention: True where attention is blocked (that is "
         "nn.MultiheadAttention's attn_mask). Here True means 'may attend', as in "
         "scaled_dot_product_attention.", slip="negated")
def _inverted(H_p, W_p, radius, n_prefix=1):
    return ~_ref().grid_local_mask(H_p, W_p, radius, n_prefix)


@mistake(F, "manhattan_window",
         "Your mask matches a diamond window, |dr| + |dc| <= radius. The window here is a "
         "square: max(|dr|, |dc|) <= radius (the Chebyshev distance).")
def _manhattan(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    dr, dc = _gaps(H_p, W_p)
    mask[n_prefix:, n_prefix:] = dr + dc <= radius
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
    mask[n_prefix:, n_prefix:] = _circular_gap(H_p, W_p) <= radius
    return mask


@mistake(F, "prefix_column_blocked",
         "Your mask matches one where the prefix tokens see every token but no patch sees "
         "them: their rows are True, their columns False below the prefix rows. Attention "
         "goes both ways: a prefix token must also be seen by every token, so its whole "
         "column is True too.")
def _prefix_column_blocked(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    mask[n_prefix:, :n_prefix] = False
    return mask


@mistake(F, "prefix_row_blocked",
         "Your mask matches one where every token sees the prefix tokens but they see no "
         "patch: their columns are True, their rows False right of the prefix columns. "
         "Attention goes both ways: a prefix token must also see every token, so its whole "
         "row is True too.")
def _prefix_row_blocked(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    mask[:n_prefix, n_prefix:] = False
    return mask


@mistake(F, "radius_exclusive",
         "Your mask matches the window max(|dr|, |dc|) < radius, which leaves out the patches "
         "exactly radius away (and with radius 0, each patch itself). The window includes "
         "its edge: max(|dr|, |dc|) <= radius.")
def _radius_exclusive(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    dr, dc = _gaps(H_p, W_p)
    mask[n_prefix:, n_prefix:] = np.maximum(dr, dc) < radius
    return mask


@mistake(F, "rows_of_length_H_p",
         "Your mask matches grid coordinates computed with H_p as the row length (i // H_p, "
         "i % H_p). In raster order each row holds W_p patches: patch i sits at row i // W_p "
         "and column i % W_p.")
def _rows_of_length_h(H_p, W_p, radius, n_prefix=1):
    mask = _ref().grid_local_mask(H_p, W_p, radius, n_prefix)
    dr, dc = _gaps(H_p, W_p, row_length=H_p)
    mask[n_prefix:, n_prefix:] = np.maximum(dr, dc) <= radius
    return mask


# A matched mistake must match again on these (non-square, several prefix tokens, radius 1
# and 2): on one small grid a window too wide and one that wraps around can look alike.
PROBES = probes(F, (4, 5, 1, 2), (5, 3, 2, 1))


# -- regions: parts of the mask that mean something, named when all wrong values lie in one --

def _in_patch_block(block, n_prefix):
    T = n_prefix + block.shape[0]
    mask = np.zeros((T, T), dtype=bool)
    mask[n_prefix:, n_prefix:] = block
    return mask


@region(F, "in the rows and columns of the prefix tokens",
        means="Those values belong to the prefix tokens alone: a prefix token sees every "
              "token and is seen by every token, whatever the grid.")
def _prefix_lines(H_p, W_p, radius, n_prefix=1):
    return ~_in_patch_block(np.ones((H_p * W_p, H_p * W_p), dtype=bool), n_prefix)


@region(F, "in the patch block (the prefix tokens' rows and columns are right)")
def _patch_block(H_p, W_p, radius, n_prefix=1):
    return _in_patch_block(np.ones((H_p * W_p, H_p * W_p), dtype=bool), n_prefix)


@region(F, "on the diagonal (each token and itself)")
def _diagonal(H_p, W_p, radius, n_prefix=1):
    return np.eye(n_prefix + H_p * W_p, dtype=bool)


@region(F, "at pairs of patches exactly radius apart (the larger of the row and the column "
           "gap)")
def _at_radius(H_p, W_p, radius, n_prefix=1):
    dr, dc = _gaps(H_p, W_p)
    return _in_patch_block(np.maximum(dr, dc) == radius, n_prefix)


@region(F, "at pairs of patches radius + 1 apart (the larger of the row and the column gap)")
def _past_radius(H_p, W_p, radius, n_prefix=1):
    dr, dc = _gaps(H_p, W_p)
    return _in_patch_block(np.maximum(dr, dc) == radius + 1, n_prefix)


@region(F, "at pairs of patches that are neighbours only if the grid wraps around its edges")
def _wrap_pairs(H_p, W_p, radius, n_prefix=1):
    dr, dc = _gaps(H_p, W_p)
    return _in_patch_block((_circular_gap(H_p, W_p) <= radius) & (np.maximum(dr, dc) > radius),
                           n_prefix)


@graded(1, "Patch (r, c) is token n_prefix + r*W_p + c. Which tokens are within one step?",
        visibility="public",
        hint_for=("values",))
def test_square_grid_radius_1(check):
    """A 3x3 grid, radius 1, one class token."""
    check.call(F, 3, 3, 1, 1)


@graded(1, "With radius 0 a patch's only neighbour is itself, but prefix tokens stay free.",
        hint_for=("values",))
def test_radius_0(check):
    """radius=0: each patch sees itself and the prefix tokens."""
    check.call(F, 4, 4, 0, 1)


@graded(1, "Rows and columns are counted separately: a non-square grid has W_p columns, so "
           "patch i sits at row i // W_p and column i % W_p.",
        hint_for=("values", "raised"))
def test_non_square_grid(check):
    """A 2x5 grid (non-square), radius 1."""
    check.call(F, 2, 5, 1, 1)


@graded(1, "All n_prefix prefix tokens come first; patches start at index n_prefix.",
        hint_for=("values", "shape"))
def test_several_prefix_tokens(check):
    """Three prefix tokens (class + two registers) on a 4x3 grid, radius 2."""
    check.call(F, 4, 3, 2, n_prefix=3)


@graded(1, "With n_prefix=0 the mask is the patch block alone, shape (H_p*W_p, H_p*W_p).",
        hint_for=("shape", "values"))
def test_no_prefix(check):
    """n_prefix=0 on a 3x4 grid, radius 1."""
    check.call(F, 3, 4, 1, n_prefix=0)


@graded(1, "A radius at least as large as the grid lets every patch see every patch.",
        hint_for=("values", "raised"))
def test_radius_covers_grid(check):
    """radius larger than the grid: nothing is masked; one short of the widest gap: only the
    farthest pairs are."""
    check.call(F, 2, 3, 5, 1)
    check.call(F, 2, 4, 2, 1)


@graded(1, "The smallest grid is 1x1: T = n_prefix + 1.",
        hint_for=("shape", "values", "raised"))
def test_smallest_grid(check):
    """A 1x1 grid with one class token, and a 1x2 grid at radius 0."""
    check.call(F, 1, 1, 0, 1)
    check.call(F, 1, 2, 0, 1)


@graded(1, "Validate the arguments first and raise ValueError with a clear message.",
        hint_for=("not_raised", "wrong_exception"))
def test_invalid_arguments_raise(check):
    """Negative radius, empty grids and negative n_prefix raise ValueError; radius 0 and
    n_prefix=0, at the edge of the valid range, give the right mask."""
    check.raises("ValueError", F, 3, 3, -1)
    check.raises("ValueError", F, 0, 3, 1)
    check.raises("ValueError", F, 3, 0, 1)
    check.raises("ValueError", F, 3, 3, 1, n_prefix=-1)
    check.call(F, 2, 3, 0, n_prefix=0)


@graded(1, "Use broadcasting over all token pairs instead of Python loops: the 32x32 grid has "
           "over a million pairs.",
        hint_for=("timeout",))
def test_large_grid(check):
    """A 32x32 grid (T = 1025), radius 3."""
    check.call(F, 32, 32, 3, 1)
